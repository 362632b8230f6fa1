/**
 * `ToolBridge`: tools described by schemas, turned into a namespaced API in the guest
 * (`await tools.weather({ city: 'Oslo' })`) and into TypeScript declarations for the model's
 * prompt. Every call's input is validated in the parent before the tool runs (JSON Schema with
 * ajv, draft-07 and 2020-12, or any Standard Schema: zod, valibot, arktype); an invalid call
 * rejects in the guest saying which field is wrong, and the tool never runs. An answer is checked
 * against `outputSchema` when there is one.
 *
 * @module
 */
import { currentToolCall, type ToolCallContext } from './tool-call-context.js';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { InvalidOption, type StrataRuntime } from '@strata/runtime';
import { isAsciiIdentifier } from '@strata/wire';
import { renderDeclarations } from './declarations.js';
import { describeThrown } from './describe.js';
import { linearFormats } from './formats.js';
import { linearRegExp, UnsupportedPattern } from './linear-regexp.js';
import type { ToolCall } from './journal.js';
import { guestToolFunctions, type SessionTool } from './tools.js';
import { typecheck, type TypecheckOptions, type TypeDiagnostic } from './typecheck.js';

/** A JSON Schema (draft-07 or 2020-12, by its `$schema`; draft-07 rules when it has none). */
export type JsonSchema = Readonly<Record<string, unknown>> | boolean;

/** The Standard Schema interface (zod 4, valibot, arktype implement it), as far as a bridge uses it. */
export interface StandardSchemaV1 {
  readonly '~standard': {
    readonly version: 1;
    readonly vendor: string;
    validate(value: unknown): StandardResult | Promise<StandardResult>;
    /** Standard JSON Schema, where the library has it: the schema as JSON Schema, for declarations. */
    readonly jsonSchema?: { readonly input?: (options: { target: string }) => unknown; readonly output?: (options: { target: string }) => unknown };
  };
}
/** What a Standard Schema's validate gives: the value, or the issues. */
export type StandardResult =
  | { readonly value: unknown; readonly issues?: undefined }
  | { readonly issues: readonly { readonly message: string; readonly path?: readonly unknown[] }[] };

/** A tool of a bridge: it takes one input, described by `inputSchema`. */
export interface BridgeTool {
  /** What the tool does: the JSDoc of its declaration, for the model. */
  description?: string;
  /** The input, as JSON Schema or a Standard Schema. Without one the tool takes no input. */
  inputSchema?: JsonSchema | StandardSchemaV1;
  /** The answer, checked when given; in the declaration's return type. */
  outputSchema?: JsonSchema | StandardSchemaV1;
  /**
   * Runs the tool with the validated input (called as a method of this object). In an
   * `AgentSandbox`, the second argument is the call's {@link ToolCallContext}: its stable id (an
   * idempotency key), its abort signal, whether it is a retry.
   */
  execute(input: any, context?: ToolCallContext): unknown;
  /** In an `AgentSandbox`: stop the cell before this tool runs until the host approves the call. */
  needsApproval?: boolean | ((input: any) => boolean | Promise<boolean>);
}

/** Options of `new ToolBridge`. */
export interface ToolBridgeOptions {
  /** The global the guest reaches the tools by. Default `'tools'`. */
  namespace?: string;
  /** The tools, by name; a name that is not an identifier becomes one (`get-time` → `get_time`). */
  tools: Readonly<Record<string, BridgeTool>>;
}

/** Options of {@link ToolBridge.bind}. */
export interface BindOptions {
  /** Called after each call ends, with its record: the same shape as a session's `calls` (a listener that throws is ignored). */
  readonly onCall?: (call: ToolCall) => void;
  /**
   * Decides a call of a tool whose `needsApproval` asks for approval, after its input is checked
   * and before it runs: `true` runs it; `false` or `{ approved: false, reason }` refuses it with an
   * Error in the guest (which the code may catch). The guest waits meanwhile (the runtime's
   * timeouts still count). Without it, such a call is refused: a bound runtime has no journal to
   * pause on. To pause the code until someone decides, run it in an `AgentSandbox` session.
   */
  readonly approve?: (request: ApprovalRequest) => boolean | ApprovalDecision | Promise<boolean | ApprovalDecision>;
}

/** A call that asks for approval, as {@link BindOptions.approve} sees it. */
export interface ApprovalRequest {
  /** `namespace.name`. */
  readonly tool: string;
  /** Its input, checked against the tool's schema. */
  readonly input: unknown;
}

/** A decision of {@link BindOptions.approve}. */
export interface ApprovalDecision {
  readonly approved: boolean;
  /** Why it was refused, for the guest's error. */
  readonly reason?: string;
}

/** A tool as the bridge exposes it. */
export interface BridgedTool {
  /** The identifier the guest calls it by (`tools.<name>`). */
  readonly name: string;
  /** Its name as given. */
  readonly originalName: string;
  readonly description: string | undefined;
  /** Its input and output as JSON Schema, where they have one (for declarations and MCP). */
  readonly inputJsonSchema: unknown;
  readonly outputJsonSchema: unknown;
}

interface Checker {
  /** Why `value` does not match, naming the field (`input.city must be string`), or undefined; the value to use when it does. */
  check(value: unknown): Promise<{ ok: true; value: unknown } | { ok: false; problem: string }>;
  readonly jsonSchema: unknown;
}

interface Entry extends BridgedTool {
  readonly tool: BridgeTool;
  readonly input: Checker | undefined;
  readonly output: Checker | undefined;
}

const RESERVED = new Set(
  (
    'break case catch class const continue debugger default delete do else enum export extends false finally for function if import in ' +
    'instanceof new null return super switch this throw true try typeof var void while with yield let static implements interface package ' +
    'private protected public await arguments eval undefined NaN Infinity globalThis'
  ).split(' '),
);

/** `name` as an identifier: other characters become `_`, a leading digit gets one, a reserved word gets a trailing `_`. */
export function toIdentifier(name: string): string {
  let id = name.replace(/[^A-Za-z0-9_$]/g, '_');
  if (id === '' || /^[0-9]/.test(id)) id = `_${id}`;
  return RESERVED.has(id) ? `${id}_` : id;
}

/**
 * Tools with schemas, as a namespaced API in the guest and as declarations for the model.
 *
 * ```ts
 * const bridge = new ToolBridge({ tools: { weather: { description: 'Current weather', inputSchema: { type: 'object',
 *   properties: { city: { type: 'string' } }, required: ['city'] }, execute: async ({ city }) => ({ tempC: 21, city }) } } });
 * bridge.declarations();   // declare const tools: { /** Current weather *\/ weather(input: { city: string }): Promise<unknown>; };
 * await bridge.bind(rt);   // the guest: await tools.weather({ city: 'Oslo' })
 * await AgentSandbox.start({ tools: bridge });
 * ```
 */
export class ToolBridge {
  /** The global the guest reaches the tools by. */
  readonly namespace: string;
  readonly #entries: ReadonlyMap<string, Entry>;
  #declarations: string | undefined;

  constructor(options: ToolBridgeOptions) {
    if (options === null || typeof options !== 'object') throw new InvalidOption('ToolBridge options must be an object ({ namespace?, tools })');
    const namespace = options.namespace ?? 'tools';
    if (typeof namespace !== 'string' || !isAsciiIdentifier(namespace) || RESERVED.has(namespace)) {
      throw new InvalidOption(`namespace must be a JavaScript identifier that is not a reserved word (got ${JSON.stringify(namespace)})`);
    }
    this.namespace = namespace;
    const tools = options.tools;
    if (tools === null || typeof tools !== 'object' || Array.isArray(tools)) throw new InvalidOption('tools must be an object of tools by name');
    const entries = new Map<string, Entry>();
    for (const [originalName, tool] of Object.entries(tools)) {
      const name = toIdentifier(originalName);
      const where = `tools[${JSON.stringify(originalName)}]`;
      if (entries.has(name))
        throw new InvalidOption(`${where} and tools[${JSON.stringify(entries.get(name)!.originalName)}] both become ${namespace}.${name}: rename one`);
      if (tool === null || typeof tool !== 'object' || typeof tool.execute !== 'function')
        throw new InvalidOption(`${where} must be an object with an execute function`);
      if (tool.description !== undefined && typeof tool.description !== 'string') throw new InvalidOption(`${where}.description must be a string`);
      if (tool.needsApproval !== undefined && typeof tool.needsApproval !== 'boolean' && typeof tool.needsApproval !== 'function') {
        throw new InvalidOption(`${where}.needsApproval must be true, false or a function of the input`);
      }
      const input = tool.inputSchema === undefined ? undefined : checker(tool.inputSchema, 'input', `${where}.inputSchema`);
      const output = tool.outputSchema === undefined ? undefined : checker(tool.outputSchema, 'answer', `${where}.outputSchema`);
      entries.set(name, {
        name,
        originalName,
        description: tool.description,
        tool,
        input,
        output,
        inputJsonSchema: input?.jsonSchema,
        outputJsonSchema: output?.jsonSchema,
      });
    }
    this.#entries = entries;
  }

  /** The tools, by the identifiers the guest calls them by. */
  get tools(): readonly BridgedTool[] {
    return [...this.#entries.values()].map(({ name, originalName, description, inputJsonSchema, outputJsonSchema }) => ({
      name,
      originalName,
      description,
      inputJsonSchema,
      outputJsonSchema,
    }));
  }

  /** @internal Whether a tool may need approval (`needsApproval` true or a function): a code tool then runs its code in a session. */
  get mayNeedApproval(): boolean {
    return [...this.#entries.values()].some(({ tool }) => tool.needsApproval !== undefined && tool.needsApproval !== false);
  }

  /** TypeScript declarations of the namespace, for the model's prompt (`declare const tools: { … }`). They compile with `tsc`. */
  declarations(): string {
    // The tools do not change: rendered once (a type check asks for them on every cell).
    return (this.#declarations ??= renderDeclarations(
      this.namespace,
      [...this.#entries.values()].map((e) => ({
        name: e.name,
        ...(e.description === undefined ? {} : { description: e.description }),
        ...(e.input === undefined ? {} : { inputSchema: e.inputJsonSchema ?? {} }),
        ...(e.outputJsonSchema === undefined ? {} : { outputSchema: e.outputJsonSchema }),
      })),
    ));
  }

  /**
   * Type-checks the model's code against {@link ToolBridge.declarations} before it runs (the
   * TypeScript compiler, an optional peer dependency): a hallucinated tool, a missing field, a
   * wrong argument come back as diagnostics at the code's lines; none when it checks. Runs in
   * the checker's worker thread within `options.timeout` (see `typecheck`).
   */
  typecheck(code: string, language: 'javascript' | 'typescript' = 'javascript', options: TypecheckOptions = {}): Promise<TypeDiagnostic[]> {
    return typecheck(code, this.declarations(), language, options);
  }

  /**
   * Calls a tool as the guest would: validates the input (a `TypeError` naming the field, and
   * the tool does not run), runs the tool, checks the answer against `outputSchema`.
   */
  async call(name: string, input: unknown): Promise<unknown> {
    const entry = this.#entry(name);
    return this.#execute(entry, await this.#checkedInput(entry, input));
  }

  #entry(name: string): Entry {
    const entry = this.#entries.get(name);
    if (entry === undefined) throw new TypeError(`${this.namespace}.${String(name)} is not a tool`);
    return entry;
  }

  async #checkedInput(entry: Entry, input: unknown): Promise<unknown> {
    if (entry.input !== undefined) {
      const checked = await entry.input.check(input);
      if (!checked.ok) throw new TypeError(`${this.namespace}.${entry.name}: ${checked.problem}; the tool was not called`);
      return checked.value;
    }
    if (input !== undefined) throw new TypeError(`${this.namespace}.${entry.name} takes no input`);
    return input;
  }

  /** Whether the tool's `needsApproval` asks for approval of this (checked) input. */
  async #needsApproval(entry: Entry, value: unknown): Promise<boolean> {
    const rule = entry.tool.needsApproval;
    return typeof rule === 'function' ? (await Reflect.apply(rule, entry.tool, [value])) === true : rule === true;
  }

  /** A bound call: checked, approved where the tool asks for it, run. */
  async #boundCall(name: string, input: unknown, approve: BindOptions['approve']): Promise<unknown> {
    const entry = this.#entry(name);
    const value = await this.#checkedInput(entry, input);
    if (await this.#needsApproval(entry, value)) {
      const tool = `${this.namespace}.${entry.name}`;
      if (approve === undefined) {
        throw new Error(`${tool} needs approval, and this runtime cannot ask for it (bind has no approve hook); the tool was not called`);
      }
      const decision = await approve({ tool, input: value });
      const approved = decision === true || (typeof decision === 'object' && decision !== null && decision.approved === true);
      if (!approved) {
        const reason = typeof decision === 'object' && decision !== null && typeof decision.reason === 'string' ? `: ${decision.reason}` : '';
        throw new Error(`${tool} was not approved${reason}; the tool was not called`);
      }
    }
    return this.#execute(entry, value);
  }

  async #execute(entry: Entry, value: unknown): Promise<unknown> {
    const name = entry.name;
    // In a session, the call's context (its id, signal) is the second argument, as the AI SDK gives its tools theirs.
    const context = currentToolCall();
    const answer = await Reflect.apply(entry.tool.execute, entry.tool, context === undefined ? [value] : [value, context]);
    if (entry.output === undefined) return answer;
    const checked = await entry.output.check(answer);
    if (!checked.ok) throw new TypeError(`${this.namespace}.${name}: the tool's ${checked.problem} (its outputSchema)`);
    return checked.value;
  }

  /**
   * Puts the namespace into a runtime (either engine: any {@link StrataRuntime}): `await tools.<name>(input)` in the guest calls the tool
   * through {@link ToolBridge.call}. Validation errors and the tools' own errors reach the guest
   * by kind and message (never a stack), whatever `redactHostErrors` says: they are for the model.
   */
  async bind(rt: StrataRuntime, options: BindOptions = {}): Promise<void> {
    const hidden = `__strataBridge_${this.namespace}`;
    const report = (call: ToolCall) => {
      try {
        options.onCall?.(call);
      } catch {
        // A listener's bug is not the call's.
      }
    };
    rt.bindFunction(hidden, async (name: unknown, args: unknown) => {
      const given: unknown[] = Array.isArray(args) ? args : [];
      const tool = typeof name === 'string' ? name : String(name);
      const member = tool.startsWith(`${this.namespace}.`) ? tool.slice(this.namespace.length + 1) : '';
      const seq = nextSeq(rt);
      const started = performance.now();
      try {
        const value = await this.#boundCall(member, given[0], options.approve);
        report({ seq, tool, args: given, status: 'completed', result: value, ms: Math.round(performance.now() - started) });
        return { ok: true, value };
      } catch (error) {
        const described = describeThrown(error);
        report({ seq, tool, args: given, status: 'failed', error: described, ms: Math.round(performance.now() - started) });
        return { ok: false, ...described };
      }
    });
    await rt.eval(guestToolFunctions(hidden, [{ namespace: this.namespace, names: [...this.#entries.keys()] }]), {
      filename: `strata:bridge-${this.namespace}`,
    });
  }

  /** @internal The bridge's tools as an `AgentSandbox` runs them (journaled calls), by qualified name (`tools.weather`). */
  sessionTools(): SessionTool[] {
    return [...this.#entries.values()].map((entry) => ({
      name: `${this.namespace}.${entry.name}`,
      description: entry.description,
      execute: (...args: unknown[]) => this.call(entry.name, args[0]),
      needsApproval: (args: readonly unknown[]) => this.#needsApproval(entry, args[0]),
    }));
  }
}

// Calls through bind are numbered per runtime, across all the bridges bound to it, as a session numbers its calls.
const bindSeqs = new WeakMap<StrataRuntime, number>();
function nextSeq(rt: StrataRuntime): number {
  const seq = (bindSeqs.get(rt) ?? 0) + 1;
  bindSeqs.set(rt, seq);
  return seq;
}

// One validator per dialect, for the process: compiled schemas are cached by ajv.
let draft07: Ajv | undefined;
let draft2020: Ajv2020 | undefined;

/** A checker for a schema given by a tool: JSON Schema compiled by ajv, or a Standard Schema. */
function checker(schema: JsonSchema | StandardSchemaV1, what: 'input' | 'answer', where: string): Checker {
  if (schema !== null && typeof schema === 'object' && '~standard' in schema) {
    const standard = (schema as StandardSchemaV1)['~standard'];
    if (standard === null || typeof standard !== 'object' || typeof standard.validate !== 'function')
      throw new InvalidOption(`${where} has a ~standard property but is not a Standard Schema`);
    let jsonSchema: unknown;
    try {
      jsonSchema = (what === 'input' ? standard.jsonSchema?.input : standard.jsonSchema?.output)?.({ target: 'draft-2020-12' });
    } catch {
      jsonSchema = undefined; // a schema JSON Schema cannot say (a transform): declared as unknown
    }
    return {
      jsonSchema,
      check: async (value) => {
        const result = await standard.validate(value);
        if (result.issues === undefined) return { ok: true, value: result.value };
        return {
          ok: false,
          problem: result.issues
            .slice(0, 3)
            .map((issue) => `${what}${pathText(issue.path ?? [])}: ${issue.message}`)
            .join('; '),
        };
      },
    };
  }
  if (typeof schema !== 'boolean' && (schema === null || typeof schema !== 'object' || Array.isArray(schema))) {
    throw new InvalidOption(`${where} must be a JSON Schema (an object) or a Standard Schema`);
  }
  refuseNonLinearPatterns(schema, where);
  let validate: ValidateFunction;
  try {
    const is2020 = typeof schema === 'object' && typeof schema['$schema'] === 'string' && schema['$schema'].includes('2020-12');
    const ajv = is2020 ? (draft2020 ??= withFormats(new Ajv2020(AJV_OPTIONS))) : (draft07 ??= withFormats(new Ajv(AJV_OPTIONS)));
    validate = ajv.compile(schema as Record<string, unknown>);
  } catch (error) {
    throw new InvalidOption(`${where} is not a valid JSON Schema: ${(error as Error).message}`);
  }
  return {
    jsonSchema: schema,
    check: async (value) =>
      validate(value)
        ? { ok: true, value }
        : {
            ok: false,
            problem: (validate.errors ?? [])
              .slice(0, 3)
              .map((e) => ajvProblem(e, what))
              .join('; '),
          },
  };
}

// `pattern` and `patternProperties` run on the linear engine: the host's backtracking one would let
// a guest string stall the parent (`^([a-z0-9]+)+$` against 30 characters takes seconds).
const linearEngine = Object.assign((pattern: string, flags: string) => linearRegExp(pattern, flags), { code: 'linearRegExp' });
const AJV_OPTIONS = { strict: false, allErrors: true, code: { regExp: linearEngine } } as const;

/** The formats JSON Schema names (date-time, email, uri, uuid, …) validated, not ignored with a warning, each in linear time or under a length cap. */
function withFormats<T extends Ajv | Ajv2020>(ajv: T): T {
  for (const [name, format] of Object.entries(linearFormats())) ajv.addFormat(name, format);
  return ajv;
}

// Keywords whose values are data, not schemas: a `pattern` inside an `enum` is nobody's regex.
const DATA_KEYWORDS = new Set(['enum', 'const', 'default', 'examples', 'example']);

/**
 * Refuses, before ajv compiles anything, a `pattern` or `patternProperties` key the linear engine
 * cannot run, naming the schema path (`tools["slug"].inputSchema.properties.slug.pattern`). An
 * iterative walk with a visited set: a deep or cyclic schema object cannot overflow the stack here.
 */
function refuseNonLinearPatterns(schema: JsonSchema, where: string): void {
  const seen = new Set<object>();
  const stack: { node: unknown; path: string }[] = [{ node: schema, path: where }];
  while (stack.length > 0) {
    const { node, path } = stack.pop()!;
    if (node === null || typeof node !== 'object' || seen.has(node)) continue;
    seen.add(node);
    for (const [key, value] of Object.entries(node)) {
      const at = Array.isArray(node) ? `${path}[${key}]` : `${path}${segment(key)}`;
      if (key === 'pattern' && typeof value === 'string' && !Array.isArray(node)) checkPattern(value, at);
      else if (key === 'patternProperties' && value !== null && typeof value === 'object' && !Array.isArray(value)) {
        for (const pattern of Object.keys(value)) checkPattern(pattern, `${at}[${JSON.stringify(pattern)}]`);
      }
      if (!DATA_KEYWORDS.has(key) || Array.isArray(node)) stack.push({ node: value, path: at });
    }
  }
}

function checkPattern(pattern: string, at: string): void {
  try {
    linearRegExp(pattern, 'u');
  } catch (error) {
    if (!(error instanceof UnsupportedPattern)) throw error;
    throw new InvalidOption(
      `${at}: ${error.message}. Strata checks guest input with a linear-time engine (RE2 syntax, no lookaround or backreferences): rewrite the pattern, or check the field in the tool`,
    );
  }
}

/** `input.city must be string`, `input.days is required`, `input has an unknown field "x"`. */
function ajvProblem(error: ErrorObject, what: string): string {
  const at =
    what +
    error.instancePath
      .split('/')
      .slice(1)
      .map((part) => segment(part.replace(/~1/g, '/').replace(/~0/g, '~')))
      .join('');
  const params = error.params as Record<string, unknown>;
  if (error.keyword === 'required') return `${at}${segment(String(params['missingProperty']))} is required`;
  if (error.keyword === 'additionalProperties') return `${at} has an unknown field ${JSON.stringify(params['additionalProperty'])}`;
  if (error.keyword === 'enum') return `${at} must be one of ${JSON.stringify(params['allowedValues'])}`;
  return `${at} ${error.message ?? 'is invalid'}`;
}

function pathText(path: readonly unknown[]): string {
  return path.map((part) => segment(String(typeof part === 'object' && part !== null && 'key' in part ? (part as { key: unknown }).key : part))).join('');
}

const segment = (key: string) => (/^\d+$/.test(key) ? `[${key}]` : isAsciiIdentifier(key) ? `.${key}` : `[${JSON.stringify(key)}]`);
