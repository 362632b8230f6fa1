/**
 * How an error crosses the wire: the name of one of a closed set of exception classes
 * plus capped text. The wire package never constructs these classes; the receiver maps
 * the validated name to its own class.
 *
 * @module
 */

import { ProtocolError, quote } from './protocol-error.js';
import { isWireObject } from './wire-value.js';

/**
 * Every exception class an error payload may name. Anything else is a protocol error,
 * never a fallback: the receiver can switch over this list exhaustively.
 */
export const EXCEPTION_CLASSES = Object.freeze([
  'JsError',
  'RuntimeTimeout',
  'HeapLimitExceeded',
  'ValueNotTransferable',
  'ResultTooLarge',
  'WorkerCrashed',
  'HostFunctionError',
  'ModuleNotFound',
  'StrataError',
  'SandboxUnavailable',
  'LayerFailed',
  'LayerConfigError',
] as const);

/** One of {@link EXCEPTION_CLASSES}. */
export type ExceptionClass = (typeof EXCEPTION_CLASSES)[number];

/** An error as sent between parent and worker. */
export interface ErrorPayload {
  /** Which Strata exception class the receiver should raise. */
  class: ExceptionClass;
  /** The error message, at most {@link ERROR_TEXT_LIMITS}.message characters. */
  message: string;
  /** The stack trace, at most {@link ERROR_TEXT_LIMITS}.stack characters. */
  stack?: string;
  /** The guest's own error name, e.g. `'TypeError'`; at most {@link ERROR_TEXT_LIMITS}.name characters. */
  name?: string;
}

/** Longest text (in UTF-16 code units) of each error payload field; the decoder refuses longer. */
export const ERROR_TEXT_LIMITS = Object.freeze({
  message: 4096,
  stack: 16384,
  name: 128,
});

/** Appended to text cut by {@link capText}, inside the limit. */
export const TRUNCATION_MARKER = '…[truncated]';

const classSet: ReadonlySet<string> = new Set(EXCEPTION_CLASSES);

/** Whether `name` is one of {@link EXCEPTION_CLASSES}. */
export function isExceptionClass(name: unknown): name is ExceptionClass {
  return typeof name === 'string' && classSet.has(name);
}

/**
 * Make text safe to send: lone surrogates replaced, and cut to at most `maxChars`
 * UTF-16 code units with {@link TRUNCATION_MARKER} at the end when it was longer.
 * A surrogate pair is never split.
 */
export function capText(text: string, maxChars: number): string {
  const wellFormed = text.toWellFormed();
  if (wellFormed.length <= maxChars) return wellFormed;
  let cut = Math.max(0, maxChars - TRUNCATION_MARKER.length);
  // do not leave the high half of a pair at the end
  const last = wellFormed.charCodeAt(cut - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut -= 1;
  return (wellFormed.slice(0, cut) + TRUNCATION_MARKER).slice(0, maxChars);
}

/**
 * Build an {@link ErrorPayload} from untrusted text, capping every field.
 *
 * @param cls - the exception class; must be one of {@link EXCEPTION_CLASSES}.
 * @param message - the message; cut to {@link ERROR_TEXT_LIMITS}.message.
 * @param extra - optional stack and guest error name, cut likewise.
 * @throws ProtocolError for an unknown class.
 */
export function errorPayload(cls: ExceptionClass, message: string, extra: { stack?: string | undefined; name?: string | undefined } = {}): ErrorPayload {
  if (!isExceptionClass(cls)) throw new ProtocolError(`unknown exception class ${quote(String(cls))}`);
  const payload: ErrorPayload = { class: cls, message: capText(String(message), ERROR_TEXT_LIMITS.message) };
  if (extra.stack !== undefined) payload.stack = capText(String(extra.stack), ERROR_TEXT_LIMITS.stack);
  if (extra.name !== undefined) payload.name = capText(String(extra.name), ERROR_TEXT_LIMITS.name);
  return payload;
}

/**
 * Check that `value` is a well-formed {@link ErrorPayload}: a plain object with exactly
 * the known fields, a known class and text within {@link ERROR_TEXT_LIMITS}.
 *
 * @param value - a decoded (or about-to-be-encoded) value.
 * @param where - path for the refusal reason, e.g. `'$.error'`.
 * @throws ProtocolError otherwise.
 */
export function validateErrorPayload(value: unknown, where: string): asserts value is ErrorPayload {
  if (!isWireObject(value)) throw new ProtocolError(`${where} must be an error payload object`);
  for (const key of Object.keys(value)) {
    if (key !== 'class' && key !== 'message' && key !== 'stack' && key !== 'name') {
      throw new ProtocolError(`${where} has unexpected field ${quote(key)}`);
    }
  }
  const cls = value['class'];
  if (typeof cls !== 'string') throw new ProtocolError(`${where}.class must be a string`);
  if (!classSet.has(cls)) throw new ProtocolError(`${where}.class ${quote(cls)} is not a known exception class`);
  checkText(value, 'message', where, true);
  checkText(value, 'stack', where, false);
  checkText(value, 'name', where, false);
}

function checkText(record: Readonly<Record<string, unknown>>, field: keyof typeof ERROR_TEXT_LIMITS, where: string, required: boolean): void {
  if (!Object.hasOwn(record, field)) {
    if (required) throw new ProtocolError(`${where}.${field} is missing`);
    return;
  }
  const text = record[field];
  if (typeof text !== 'string') throw new ProtocolError(`${where}.${field} must be a string`);
  if (text.length > ERROR_TEXT_LIMITS[field]) {
    throw new ProtocolError(`${where}.${field} is longer than ${ERROR_TEXT_LIMITS[field]} characters`);
  }
}
