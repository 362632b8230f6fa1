/**
 * The closed set of messages between the parent and the worker, as one table: each
 * message type and the kinds of its fields. The TypeScript union {@link Message} and the
 * runtime validator are both derived from {@link MESSAGE_SPECS}, so adding a message
 * means adding one line there.
 *
 * @module
 */

import { validateErrorPayload, type ErrorPayload } from './error-payload.js';
import { ProtocolError, quote } from './protocol-error.js';
import { isWireObject, type WireObject, type WireValue } from './wire-value.js';

/** Version the worker announces in `hello`; bump on any incompatible change to the table. */
export const PROTOCOL_VERSION = 2;

/** Levels of a `console` message. */
export const CONSOLE_LEVELS = Object.freeze(['log', 'info', 'warn', 'error', 'debug', 'trace'] as const);

/** One of {@link CONSOLE_LEVELS}. */
export type ConsoleLevel = (typeof CONSOLE_LEVELS)[number];

/** Names a `command` message can carry: the parent's requests that are not evaluations. */
export const COMMAND_NAMES = Object.freeze(['bind', 'revoke', 'addModule', 'dispose', 'open', 'timeline', 'codeCache'] as const);

/** One of {@link COMMAND_NAMES}. */
export type CommandName = (typeof COMMAND_NAMES)[number];

/** How a host function call ended: a value, or an error to raise in the guest. */
export type Outcome = { ok: true; value: WireValue } | { ok: false; error: ErrorPayload };

/** The TypeScript type each field kind of {@link MESSAGE_SPECS} stands for. */
export interface FieldTypes {
  /** A non-negative safe integer (ids, versions). */
  uint: number;
  /** Any string. */
  string: string;
  /** `true` or `false`. */
  boolean: boolean;
  /** Any {@link WireValue}, `undefined` included. */
  value: WireValue;
  /** A plain object of wire values. */
  object: WireObject;
  /** An array of wire values. */
  array: WireValue[];
  /** A valid {@link ErrorPayload}. */
  error: ErrorPayload;
  /** `{ ok: true, value }` or `{ ok: false, error }`, nothing else. */
  outcome: Outcome;
  /** One of {@link CONSOLE_LEVELS}. */
  consoleLevel: ConsoleLevel;
  /** One of {@link COMMAND_NAMES}. */
  commandName: CommandName;
}

/** A field kind; a trailing `?` makes the field optional (absent or `undefined`). */
export type FieldSpec = keyof FieldTypes | `${keyof FieldTypes}?`;

/**
 * Every message type and its fields besides `type`. Direction is noted per line;
 * requests carry an `id` that the matching `result`/`error`/`callResult` echoes. In a worker that
 * hosts many isolates, `isolate` names the one a request is for or a message comes from (absent:
 * the worker's only isolate); call ids are the worker's, unique across its isolates, so answers
 * to calls need none.
 */
export const MESSAGE_SPECS = deepFreeze({
  /** worker → parent: the worker is up and speaks this protocol version. */
  hello: { version: 'uint' },
  /** parent → worker: runtime options, sent once before anything else. */
  configure: { id: 'uint', options: 'object' },
  /** parent → worker: evaluate a script. */
  eval: { id: 'uint', code: 'string', options: 'object?', isolate: 'uint?' },
  /** parent → worker: evaluate an ES module. */
  evalModule: { id: 'uint', code: 'string', specifier: 'string?', options: 'object?', isolate: 'uint?' },
  /** worker → parent: the guest called a host function (`sync` if the guest blocks on it). */
  call: { id: 'uint', name: 'string', args: 'array', sync: 'boolean', isolate: 'uint?' },
  /** parent → worker: answer to `call` with the same id. */
  callResult: { id: 'uint', outcome: 'outcome' },
  /** parent → worker: the host function of `call` with this id returned a promise; its `callResult` follows on the command stream. */
  callPending: { id: 'uint' },
  /** worker → parent: the guest imports `specifier` from `referrer`; answered by `callResult` with `{ specifier, source }`. */
  moduleRequest: { id: 'uint', specifier: 'string', referrer: 'string', isolate: 'uint?' },
  /** worker → parent: a request finished with a value. */
  result: { id: 'uint', value: 'value', isolate: 'uint?' },
  /** either way: a request failed (with its id), or the sender failed outside any request. */
  error: { id: 'uint?', error: 'error', isolate: 'uint?' },
  /** worker → parent: guest console output, with the id of the evaluation that printed it. */
  console: { id: 'uint?', level: 'consoleLevel', text: 'string', isolate: 'uint?' },
  /** worker → parent: a security layer's report. */
  report: { report: 'object' },
  /** parent → worker: a named request from {@link COMMAND_NAMES}. */
  command: { id: 'uint', name: 'commandName', params: 'object', isolate: 'uint?' },
} as const satisfies Record<string, Readonly<Record<string, FieldSpec>>>);

/** Every message type name. */
export type MessageType = keyof typeof MESSAGE_SPECS;

/** Every message type name, in table order. */
export const MESSAGE_TYPES: readonly MessageType[] = Object.freeze(Object.keys(MESSAGE_SPECS) as MessageType[]);

/** The required fields of a table entry `S` of {@link MESSAGE_SPECS}, as an object type. */
export type RequiredFields<S> = {
  -readonly [F in keyof S as S[F] extends `${string}?` ? never : F]: S[F] extends keyof FieldTypes ? FieldTypes[S[F]] : never;
};

/** The optional fields (kind ending in `?`) of a table entry `S` of {@link MESSAGE_SPECS}, as an object type. */
export type OptionalFields<S> = {
  -readonly [F in keyof S as S[F] extends `${string}?` ? F : never]?: S[F] extends `${infer K extends keyof FieldTypes}?` ? FieldTypes[K] : never;
};

/** The message of one type, e.g. `MessageOf<'eval'>` is `{ type: 'eval'; id: number; code: string; options?: WireObject }`. */
export type MessageOf<T extends MessageType> = { type: T } & RequiredFields<(typeof MESSAGE_SPECS)[T]> & OptionalFields<(typeof MESSAGE_SPECS)[T]>;

/** Any protocol message: a union discriminated by `type`. */
export type Message = { [T in MessageType]: MessageOf<T> }[MessageType];

type Check = (value: unknown, where: string) => void;

const uintCheck: Check = (v, where) => {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
    throw new ProtocolError(`${where} must be a non-negative safe integer`);
  }
};

const oneOf = (names: readonly string[], what: string): Check => {
  const set: ReadonlySet<string> = new Set(names);
  return (v, where) => {
    if (typeof v !== 'string') throw new ProtocolError(`${where} must be a string`);
    if (!set.has(v)) throw new ProtocolError(`${where} ${quote(v)} is not a known ${what}`);
  };
};

const CHECKS: { readonly [K in keyof FieldTypes]: Check } = {
  uint: uintCheck,
  string: (v, where) => {
    if (typeof v !== 'string') throw new ProtocolError(`${where} must be a string`);
  },
  boolean: (v, where) => {
    if (typeof v !== 'boolean') throw new ProtocolError(`${where} must be a boolean`);
  },
  // the codec has already confined it to the closed set of value kinds
  value: () => {},
  object: (v, where) => {
    if (!isWireObject(v)) throw new ProtocolError(`${where} must be a plain object`);
  },
  array: (v, where) => {
    if (!Array.isArray(v)) throw new ProtocolError(`${where} must be an array`);
  },
  error: validateErrorPayload,
  outcome: (v, where) => {
    if (!isWireObject(v)) throw new ProtocolError(`${where} must be an outcome object`);
    const ok = v['ok'];
    if (typeof ok !== 'boolean') throw new ProtocolError(`${where}.ok must be a boolean`);
    const field = ok ? 'value' : 'error';
    for (const key of Object.keys(v)) {
      if (key !== 'ok' && key !== field) throw new ProtocolError(`${where} has unexpected field ${quote(key)}`);
    }
    if (!Object.hasOwn(v, field)) throw new ProtocolError(`${where}.${field} is missing`);
    if (!ok) validateErrorPayload(v['error'], `${where}.error`);
  },
  consoleLevel: oneOf(CONSOLE_LEVELS, 'console level'),
  commandName: oneOf(COMMAND_NAMES, 'command name'),
};

interface CompiledField {
  readonly name: string;
  readonly check: Check;
  readonly optional: boolean;
  readonly where: string;
}

// The table, parsed once into per-type field lists.
const COMPILED = new Map<string, readonly CompiledField[]>(
  MESSAGE_TYPES.map((type) => [
    type,
    Object.entries(MESSAGE_SPECS[type] as Readonly<Record<string, FieldSpec>>).map(([name, spec]) => {
      const optional = spec.endsWith('?');
      const kind = (optional ? spec.slice(0, -1) : spec) as keyof FieldTypes;
      return { name, check: CHECKS[kind], optional, where: `$.${name}` };
    }),
  ]),
);

// Each type's field names, `type` included: the check for a field outside the table.
const ALLOWED = new Map<string, ReadonlySet<string>>([...COMPILED].map(([type, fields]) => [type, new Set(['type', ...fields.map((field) => field.name)])]));

/**
 * Check that a decoded value is a protocol message: a plain object whose `type` is in
 * {@link MESSAGE_TYPES}, with every required field, no field outside the table, and
 * each field of the right kind.
 *
 * @param value - a value from {@link decodeValue} (or one about to be encoded).
 * @returns the same value, typed.
 * @throws ProtocolError otherwise.
 */
export function validateMessage(value: unknown): Message {
  if (!isWireObject(value)) throw new ProtocolError('message must be a plain object');
  const type = value['type'];
  if (typeof type !== 'string') throw new ProtocolError('message type must be a string');
  const fields = COMPILED.get(type);
  if (fields === undefined) throw new ProtocolError(`unknown message type ${quote(type)}`);
  // Plain loops, no closures: every frame of a round trip passes here, in the worker's interpreter.
  const allowed = ALLOWED.get(type)!;
  const keys = Object.keys(value);
  for (let i = 0; i < keys.length; i++) {
    if (!allowed.has(keys[i]!)) throw new ProtocolError(`${type} message has unexpected field ${quote(keys[i]!)}`);
  }
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i]!;
    if (!Object.hasOwn(value, field.name) || (field.optional && value[field.name] === undefined)) {
      if (field.optional) continue;
      throw new ProtocolError(`${type} message is missing ${field.where}`);
    }
    field.check(value[field.name], field.where);
  }
  return value as Message;
}

function deepFreeze<T extends object>(table: T): T {
  for (const inner of Object.values(table)) Object.freeze(inner);
  return Object.freeze(table);
}
