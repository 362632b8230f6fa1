import { types } from 'node:util';
import { capText, ERROR_TEXT_LIMITS, isExceptionClass, type ErrorPayload } from '@strata/wire';
import { describeHostError } from './host-errors.js';
import {
  HeapLimitExceeded,
  InvalidOption,
  JsError,
  LayerConfigError,
  LayerFailed,
  SandboxUnavailable,
  ModuleNotFound,
  PromiseNeverSettled,
  ResultTooLarge,
  RuntimeClosed,
  RuntimeTimeout,
  StrataError,
  ValueNotTransferable,
  WorkerCrashed,
} from './errors.js';

/** Strata errors that travel as `StrataError` payloads and are told apart by `name`. */
const BY_NAME: Readonly<Record<string, (message: string) => StrataError>> = {
  PromiseNeverSettled: (m) => new PromiseNeverSettled(m),
  RuntimeClosed: (m) => new RuntimeClosed(m),
  InvalidOption: (m) => new InvalidOption(m),
};

/** An error as the wire carries it: a class from the closed set and capped text. */
export function toErrorPayload(error: unknown): ErrorPayload {
  if (types.isProxy(error)) return { class: 'StrataError', name: 'StrataError', message: 'a Proxy was thrown' };
  if (error instanceof JsError) {
    const message = error.message.startsWith(`${error.guestName}: `) ? error.message.slice(error.guestName.length + 2) : error.message;
    const payload: ErrorPayload = {
      class: 'JsError',
      name: capText(error.guestName, ERROR_TEXT_LIMITS.name),
      message: capText(message, ERROR_TEXT_LIMITS.message),
    };
    if (error.guestStack !== undefined) payload.stack = capText(error.guestStack, ERROR_TEXT_LIMITS.stack);
    return payload;
  }
  if (error instanceof StrataError) {
    const cls = isExceptionClass(error.name) ? error.name : 'StrataError';
    return { class: cls, name: capText(error.name, ERROR_TEXT_LIMITS.name), message: capText(error.message, ERROR_TEXT_LIMITS.message) };
  }
  // Anything else, whatever it is (a revoked Proxy, a getter that throws): described, never thrown.
  return { class: 'StrataError', name: 'StrataError', message: capText(describeHostError(error, false).message, ERROR_TEXT_LIMITS.message) };
}

/**
 * The error a payload stands for. The class comes from a closed table on this side: a
 * payload can only ever name one of Strata's own error classes.
 */
export function fromErrorPayload(payload: ErrorPayload): StrataError {
  switch (payload.class) {
    case 'JsError':
      return new JsError(payload.name ?? 'Error', payload.message, payload.stack);
    case 'RuntimeTimeout':
      return new RuntimeTimeout(payload.message);
    case 'HeapLimitExceeded':
      return new HeapLimitExceeded(payload.message);
    case 'ValueNotTransferable':
      return new ValueNotTransferable(payload.message);
    case 'ResultTooLarge':
      return new ResultTooLarge(payload.message);
    case 'ModuleNotFound':
      return new ModuleNotFound(payload.message);
    case 'WorkerCrashed':
      return new WorkerCrashed(payload.message, 'worker');
    case 'SandboxUnavailable':
      return new SandboxUnavailable(payload.message);
    case 'LayerFailed':
      return LayerFailed.fromMessage(payload.message);
    case 'LayerConfigError':
      return LayerConfigError.fromMessage(payload.message);
    default: {
      const make = payload.name === undefined ? undefined : BY_NAME[payload.name];
      return make === undefined ? new StrataError(payload.message) : make(payload.message);
    }
  }
}
