/**
 * The tool shape `AgentSandbox` (and, next, `ToolBridge`) takes: a plain function, or an object
 * with `execute` and what a session needs to know about it. The guest calls each as a global
 * function named by its key, with its own arguments.
 *
 * @module
 */
import { InvalidOption } from '@strata/runtime';
import { isAsciiIdentifier } from '@strata/wire';
import type { RecordedError } from './journal.js';

/** A tool as a function: called with the guest's arguments; its (awaited) return value is the guest's answer. */
export type ToolFunction = (...args: any[]) => unknown;

/** A tool as an object. */
export interface ToolObject {
  /** Runs the tool: called with the guest's arguments; its (awaited) return value is the guest's answer. */
  execute: ToolFunction;
  /** What the tool does, for people and models reading the session. */
  description?: string;
  /**
   * Stop the cell before this tool runs until the host approves the call (`approve(seq)`) or
   * denies it (`deny(seq, reason)`). `true`, or a function of the guest's arguments deciding per
   * call. Default `false`.
   */
  needsApproval?: boolean | ((...args: any[]) => boolean | Promise<boolean>);
}

/** One tool. */
export type Tool = ToolFunction | ToolObject;

/** Tools by the global name the guest calls them by. */
export type ToolSet = Readonly<Record<string, Tool>>;

/** A tool as a session uses it. */
export interface SessionTool {
  readonly name: string;
  readonly description: string | undefined;
  readonly execute: ToolFunction;
  readonly needsApproval: (args: readonly unknown[]) => Promise<boolean>;
  /** How a failure of `execute` is journaled and told to the guest; default `describeThrown` (its kind and message). */
  readonly describeFailure?: (thrown: unknown) => RecordedError;
}

/** What answers the guest's tool wrapper (see {@link guestToolFunctions}). */
export type ToolAnswer = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly name: string; readonly message: string };

// Words a global function cannot be named: reserved words, and names the guest's JavaScript needs.
const RESERVED = new Set(
  (
    'break case catch class const continue debugger default delete do else enum export extends false finally for function if import in ' +
    'instanceof new null return super switch this throw true try typeof var void while with yield let static implements interface package ' +
    'private protected public await arguments eval undefined NaN Infinity globalThis'
  ).split(' '),
);

/** Checks `tools` and gives each its session form, in key order. */
export function sessionTools(tools: unknown): SessionTool[] {
  if (tools === undefined) return [];
  if (tools === null || typeof tools !== 'object' || Array.isArray(tools))
    throw new InvalidOption('tools must be an object of tools by name ({ lookup: async (sku) => …, send: { execute, needsApproval } })');
  return Object.entries(tools as Record<string, unknown>).map(([name, tool]) => {
    if (!isAsciiIdentifier(name) || RESERVED.has(name)) {
      throw new InvalidOption(`tool name ${JSON.stringify(name)} is not a name the guest can call: use a JavaScript identifier that is not a reserved word`);
    }
    if (typeof tool === 'function') return { name, description: undefined, execute: tool as ToolFunction, needsApproval: async () => false };
    if (tool === null || typeof tool !== 'object' || typeof (tool as ToolObject).execute !== 'function') {
      throw new InvalidOption(`tools.${name} must be a function or an object with an execute function`);
    }
    const object = tool as ToolObject;
    const { execute, description, needsApproval } = object;
    if (description !== undefined && typeof description !== 'string') throw new InvalidOption(`tools.${name}.description must be a string`);
    if (needsApproval !== undefined && typeof needsApproval !== 'boolean' && typeof needsApproval !== 'function') {
      throw new InvalidOption(`tools.${name}.needsApproval must be true, false or a function of the call's arguments`);
    }
    // Called as methods of the tool object (a class instance's methods read its fields).
    const decide =
      typeof needsApproval === 'function'
        ? async (args: readonly unknown[]) => (await Reflect.apply(needsApproval, object, args)) === true
        : async () => needsApproval === true;
    return { name, description, execute: (...args: unknown[]) => Reflect.apply(execute, object, args), needsApproval: decide };
  });
}

/** Tools the guest reaches one way: as globals (no namespace), or as the members of one. */
export interface ToolGroup {
  readonly namespace?: string;
  /** The members' names; the host function is called with `namespace.name` (or `name`). */
  readonly names: readonly string[];
}

/**
 * The guest's tool functions, as source to evaluate in the guest before any of its code: each
 * calls the host through one bound function (`hidden`, taken from the global and deleted) with its
 * qualified name (`tools.weather`, or `lookup` for a global) and its arguments; the host answers
 * `{ ok: true, value }` or `{ ok: false, name, message }`, and a failure is thrown as an error of
 * its kind, with its message (never a stack). A namespace is one frozen global object.
 */
export function guestToolFunctions(hidden: string, groups: readonly ToolGroup[]): string {
  const h = JSON.stringify(hidden);
  return `(() => {
  const call = globalThis[${h}];
  delete globalThis[${h}];
  const kinds = { Error, TypeError, RangeError, SyntaxError, ReferenceError, EvalError, URIError };
  const define = Object.defineProperty;
  const make = (label) => {
    const tool = async function (...args) {
      let answer;
      try {
        answer = await call(label, args);
      } catch (error) {
        // Arguments the boundary refuses (a sparse array, a function): say so by the tool's name.
        if (error instanceof Error) error.message = String(error.message).split(${h}).join(label);
        throw error;
      }
      if (answer.ok) return answer.value;
      const Kind = Object.hasOwn(kinds, answer.name) ? kinds[answer.name] : Error;
      const error = new Kind(answer.message);
      if (error.name !== answer.name) define(error, 'name', { value: answer.name, writable: true, configurable: true });
      throw error;
    };
    define(tool, 'name', { value: label.slice(label.lastIndexOf('.') + 1) });
    return tool;
  };
  for (const group of ${JSON.stringify(groups)}) {
    if (group.namespace === undefined) {
      for (const name of group.names) define(globalThis, name, { value: make(name), writable: true, configurable: true, enumerable: false });
      continue;
    }
    const members = {};
    for (const name of group.names) define(members, name, { value: make(group.namespace + '.' + name), enumerable: true });
    define(globalThis, group.namespace, { value: Object.freeze(members), writable: true, configurable: true, enumerable: false });
  }
})()`;
}
