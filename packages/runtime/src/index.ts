/**
 * `@strata/runtime`: the engine (`Runtime`, an isolate in this process) and, in later
 * releases, the isolated, sandboxed worker built on it.
 *
 * @packageDocumentation
 */
export { Runtime } from './runtime.js';
export type { HostFunction, ModuleLoader, ModuleResolver, EvalOptions, EvalModuleOptions } from './runtime.js';
export { DEFAULT_RUNTIME_OPTIONS, resolveRuntimeOptions } from './options.js';
export type { RuntimeOptions, ResolvedRuntimeOptions, OptionalGlobal } from './options.js';
export { ConsoleCapture, TRUNCATED_MARKER } from './console-capture.js';
export type { ConsoleEntry } from './console-capture.js';
export type { ExecutionResult } from './execution-result.js';
export type { Transferable } from './values.js';
export { assertTransferable } from './values.js';
export {
  StrataError,
  JsError,
  RuntimeTimeout,
  HeapLimitExceeded,
  ValueNotTransferable,
  ResultTooLarge,
  ModuleNotFound,
  RuntimeClosed,
  InvalidOption,
  PromiseNeverSettled,
} from './errors.js';
export type { StrataErrorCode } from './errors.js';
