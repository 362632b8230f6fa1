/**
 * `@strata/runtime`: the engine (`Runtime`, an isolate in this process), the isolated, sandboxed
 * worker built on it (`IsolatedRuntime`, `SandboxPool`), their options, results and errors. What a
 * layer author needs is in `@strata/runtime/layers`, test helpers in `@strata/runtime/testing`,
 * the worker thread that runs parent-side work on untrusted input in
 * `@strata/runtime/bounded-worker`; nothing else is public.
 *
 * @packageDocumentation
 */
// First: an unsupported Node.js fails with Strata's error, before isolated-vm is loaded.
import './require-node.js';

export { ENGINE_NODE_MAJOR, MIN_NODE_MAJOR, UnsupportedNode } from './node-version.js';
export { Runtime } from './runtime.js';
export type { RuntimeSnapshot, RuntimeSnapshotOptions, RuntimeStartOptions } from './runtime.js';
export { IsolatedRuntime } from './isolated/isolated-runtime.js';
export { SandboxPool } from './isolated/sandbox-pool.js';
export { SandboxHost, ISOLATE_OPTIONS } from './isolated/sandbox-host.js';
export type { SandboxHostOptions, IsolateOptions } from './isolated/sandbox-host.js';
export type { SandboxPoolOptions, CheckoutOptions, PoolStats } from './isolated/sandbox-pool.js';
export type { CrashBudgetOptions } from './isolated/crash-budget.js';
export type { SandboxReport } from './isolated/isolated-runtime.js';
export type { OutsideView } from './isolated/verify-worker.js';
export type { FrozenClock, IsolatedRuntimeOptions, SandboxMode } from './isolated/isolated-options.js';
export { SESSION_OPTIONS } from './isolated/isolated-options.js';
export {
  configureDefaultRuntime,
  eval,
  execute,
  evalModule,
  bindFunction,
  bindObject,
  addModule,
  setModuleResolver,
  setModuleLoader,
  closeDefaultRuntime,
} from './default-runtime.js';
export type { DefaultRuntimeOptions } from './default-runtime.js';
export type { StrataRuntime, HostFunction, EvalOptions, EvalModuleOptions, ExecutionResult } from './runtime-contract.js';
export type { ModuleLoader, ModuleResolver } from './module-registry.js';
export type { RuntimeOptions, ResolvedRuntimeOptions, OptionalGlobal } from './options.js';
export type { ConsoleCapture, ConsoleEntry } from './console-capture.js';
export { stripTypes, MAX_TYPESCRIPT_CHARS, MAX_TYPESCRIPT_NESTING, STRIP_TIMEOUT_MS } from './typescript-input.js';
export { egressHandler } from './egress/guest-fetch.js';
export type { EgressContext, EgressHandler, EgressHandlerOptions } from './egress/guest-fetch.js';
export type { EgressPolicy } from './egress/egress-policy.js';
export type { EgressRequest, ResolvedAddress } from './egress/check-request.js';
export type { EgressResponse, HostLookup } from './egress/perform-request.js';
export type { EgressResponseHook, EgressResponseContext } from './egress/response-body.js';
export type { Transferable } from './values.js';
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
  WorkerCrashed,
  SandboxUnavailable,
  ThreadUnavailable,
  CrashBudgetExceeded,
  SandboxHostFull,
  EgressRefused,
  EgressFailed,
} from './errors.js';
export type { StrataErrorCode, CrashReason, TimeoutLimit, LayerHook, EgressRule, EgressFailure } from './errors.js';
export { LayerFailed, LayerConfigError } from './errors.js';
// Layers as an application passes and reads them; what a layer author needs is in
// `@strata/runtime/layers`.
export type { LayerDescriptor, LayerReport, LayerRequirement } from './layers/layer.js';
export { defaultLayers } from './layers/default-layers.js';
