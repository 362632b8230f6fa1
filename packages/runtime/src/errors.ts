/**
 * Strata's errors: one small hierarchy, each class with a stable `code` and a `name` equal to
 * the class name. Match on `code` (it survives bundlers and realm boundaries); `instanceof`
 * works too.
 *
 * @module
 */

/**
 * Every error code `@strata/runtime` raises. Stable across releases. Other packages add their own
 * (`AgentErrorCode` in `@strata/agent`), each through `StrataError`'s `Code` parameter.
 */
export type StrataErrorCode =
  | 'ERR_STRATA'
  | 'ERR_STRATA_JS'
  | 'ERR_STRATA_TIMEOUT'
  | 'ERR_STRATA_HEAP_LIMIT'
  | 'ERR_STRATA_NOT_TRANSFERABLE'
  | 'ERR_STRATA_RESULT_TOO_LARGE'
  | 'ERR_STRATA_MODULE_NOT_FOUND'
  | 'ERR_STRATA_NODE_VERSION'
  | 'ERR_STRATA_CLOSED'
  | 'ERR_STRATA_INVALID_OPTION'
  | 'ERR_STRATA_NEVER_SETTLED'
  | 'ERR_STRATA_WORKER_CRASHED'
  | 'ERR_STRATA_SANDBOX_UNAVAILABLE'
  | 'ERR_STRATA_THREAD_UNAVAILABLE'
  | 'ERR_STRATA_LAYER_FAILED'
  | 'ERR_STRATA_LAYER_CONFIG'
  | 'ERR_STRATA_CRASH_BUDGET'
  | 'ERR_STRATA_HOST_FULL'
  | 'ERR_STRATA_EGRESS_REFUSED'
  | 'ERR_STRATA_EGRESS_FAILED';

// Each class's name, as errors carry it (over the wire, too): set from this table, filled at the
// end of the module, rather than read from the class, which a bundler may rename (esbuild names a
// class it wraps `_LayerFailed`; an application that bundles Strata may do the same).
const CLASS_NAMES = new WeakMap<object, string>();

/**
 * Base class of every error Strata raises. `Code` is the package's own set of codes: the
 * runtime's by default, so each package owns the codes it raises.
 */
export class StrataError<Code extends string = StrataErrorCode> extends Error {
  /** Stable, machine-readable code; match on this. */
  readonly code: Code | 'ERR_STRATA';

  constructor(message: string, options?: { cause?: unknown; code?: Code }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = CLASS_NAMES.get(new.target) ?? new.target.name;
    this.code = options?.code ?? 'ERR_STRATA';
  }
}

/**
 * The guest threw. `guestName`, `message` and `guestStack` are the guest's own (for example
 * `TypeError`); the runtime stays usable.
 */
export class JsError extends StrataError {
  /** The thrown error's `name` inside the guest, e.g. `'TypeError'`; `'Error'` for a non-Error throw. */
  readonly guestName: string;
  /** The guest's stack trace, as the guest's V8 printed it. */
  readonly guestStack: string | undefined;

  constructor(guestName: string, message: string, guestStack?: string) {
    super(`${guestName}: ${message}`, { code: 'ERR_STRATA_JS' });
    this.guestName = guestName;
    this.guestStack = guestStack;
  }
}

/**
 * Which time limit ended a command, as `RuntimeTimeout.limit`: the soft `timeout` (the runtime
 * stays usable), or one the worker's supervisor enforces by killing the worker (the runtime is
 * closed): `requestTimeout`, `maxHostWait`, `cpu` (the CPU time cap of a command, twice
 * `requestTimeout`), or `startTimeout` (a start, or `SandboxPool.waitReady`).
 */
export type TimeoutLimit = 'timeout' | 'requestTimeout' | 'maxHostWait' | 'startTimeout' | 'cpu';

/**
 * The guest ran too long. After the soft `timeout` (`limit: 'timeout'`) the runtime stays usable;
 * after any other limit the worker was killed and the runtime is closed. Which of two limits that
 * are near each other ends a run can depend on the machine's load; the class does not.
 */
export class RuntimeTimeout extends StrataError {
  /** The limit that fired. */
  readonly limit: TimeoutLimit;

  constructor(message: string, limit: TimeoutLimit = 'timeout') {
    super(message, { code: 'ERR_STRATA_TIMEOUT' });
    this.limit = limit;
  }
}

/** The guest's heap grew past `maxHeapSize`. V8 disposed the isolate: the runtime is closed. */
export class HeapLimitExceeded extends StrataError {
  constructor(message: string) {
    super(message, { code: 'ERR_STRATA_HEAP_LIMIT' });
  }
}

/**
 * A value could not cross the boundary: it is (or contains) a function, symbol, class
 * instance, Proxy, accessor, cycle, sparse array or another kind outside the closed set.
 */
export class ValueNotTransferable extends StrataError {
  constructor(message: string) {
    super(message, { code: 'ERR_STRATA_NOT_TRANSFERABLE' });
  }
}

/** The result's encoding is larger than `maxResultBytes`. */
export class ResultTooLarge extends StrataError {
  constructor(message: string) {
    super(message, { code: 'ERR_STRATA_RESULT_TOO_LARGE' });
  }
}

/** An `import` named a specifier the host did not register (or its resolver/loader refused). */
export class ModuleNotFound extends StrataError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, { code: 'ERR_STRATA_MODULE_NOT_FOUND', ...(options?.cause === undefined ? {} : { cause: options.cause }) });
  }
}

/** The runtime was closed (by `close()`, or because its heap can no longer be trusted). */
export class RuntimeClosed extends StrataError {
  constructor(message: string) {
    super(message, { code: 'ERR_STRATA_CLOSED' });
  }
}

/** A SandboxHost holds its `maxIsolates` already: close one of its isolates, or open in another host. */
export class SandboxHostFull extends StrataError {
  constructor(message: string) {
    super(message, { code: 'ERR_STRATA_HOST_FULL' });
  }
}

/** An option is invalid; the message says which and what is accepted. */
export class InvalidOption extends StrataError {
  constructor(message: string) {
    super(message, { code: 'ERR_STRATA_INVALID_OPTION' });
  }
}

/**
 * The guest's promise can never settle: nothing is pending that could settle it (no host call
 * in flight, no timer). Node would exit with "unsettled top-level await" here.
 */
export class PromiseNeverSettled extends StrataError {
  constructor(message: string) {
    super(message, { code: 'ERR_STRATA_NEVER_SETTLED' });
  }
}

/**
 * What ended a worker: a limit Strata enforces (named after its option), a signal, the
 * protocol, or the worker itself.
 */
export type CrashReason =
  | 'maxMemory'
  | 'maxHostCalls'
  | 'threads'
  | 'cpu'
  | 'signal'
  | 'exit'
  | 'protocol'
  | 'writeStallTimeout'
  | 'start'
  | 'worker'
  | 'stuck';

/**
 * The worker process died or was killed (a V8 abort, out of memory, a limit, a protocol
 * violation). The runtime is closed and never reused: start a new one. Your process is fine.
 */
export class WorkerCrashed extends StrataError {
  /** Which limit or event ended the worker. */
  readonly reason: CrashReason;

  constructor(message: string, reason: CrashReason, options?: { cause?: unknown }) {
    super(message, { code: 'ERR_STRATA_WORKER_CRASHED', ...(options?.cause === undefined ? {} : { cause: options.cause }) });
    this.reason = reason;
  }
}

/**
 * A worker thread Strata runs parent-side work in (the type stripper of `language: 'typescript'`)
 * could not be started: the process may be at its thread or memory limit. Nothing ran; retry
 * once the process has room, or pass JavaScript.
 */
export class ThreadUnavailable extends StrataError {
  constructor(message: string) {
    super(message, { code: 'ERR_STRATA_THREAD_UNAVAILABLE' });
  }
}

/** `sandbox: 'require'` asked for protection this platform (or this build) cannot provide. */
export class SandboxUnavailable extends StrataError {
  constructor(message: string) {
    super(message, { code: 'ERR_STRATA_SANDBOX_UNAVAILABLE' });
  }
}

/**
 * A pool refused a checkout: this tenant's runtimes crashed more often than the pool's crash
 * budget allows within its window. Other tenants are unaffected; the tenant is accepted again
 * once its oldest counted crash leaves the window (`retryAfterMs`).
 */
export class CrashBudgetExceeded extends StrataError {
  readonly tenant: string;
  readonly retryAfterMs: number;
  constructor(tenant: string, message: string, retryAfterMs: number) {
    super(message, { code: 'ERR_STRATA_CRASH_BUDGET' });
    this.tenant = tenant;
    this.retryAfterMs = retryAfterMs;
  }
}

/** The hooks of a layer, as named in errors. */
export type LayerHook = 'probe' | 'launch' | 'apply' | 'seal' | 'selfTest' | 'load';

/**
 * A layer's hook threw, or its self-test let something through. Fatal in every sandbox mode:
 * a bug is never downgraded to a warning. `layer` and `hook` say where; `cause` is the original.
 */
export class LayerFailed extends StrataError {
  readonly layer: string;
  readonly hook: LayerHook;

  constructor(layer: string, hook: LayerHook, reason: string, options?: { cause?: unknown }) {
    super(`layer ${layer}: ${hook} failed: ${reason}`, { code: 'ERR_STRATA_LAYER_FAILED', ...(options?.cause === undefined ? {} : { cause: options.cause }) });
    this.layer = layer;
    this.hook = hook;
  }

  /** The error again from its message (as it crossed from the worker). */
  static fromMessage(message: string): LayerFailed {
    const match = /^layer (.+?): (probe|launch|apply|seal|selfTest|load) failed: ([\s\S]*)$/.exec(message);
    return match === null ? new LayerFailed('unknown', 'apply', message) : new LayerFailed(match[1]!, match[2] as LayerHook, match[3]!);
  }
}

/** A layer was misconfigured: a duplicate name, a missing hook, a module that does not export a layer. */
export class LayerConfigError extends StrataError {
  readonly layer: string;

  constructor(layer: string, reason: string, options?: { cause?: unknown }) {
    super(`layer ${layer}: ${reason}`, { code: 'ERR_STRATA_LAYER_CONFIG', ...(options?.cause === undefined ? {} : { cause: options.cause }) });
    this.layer = layer;
  }

  /** The error again from its message (as it crossed from the worker). */
  static fromMessage(message: string): LayerConfigError {
    const match = /^layer (.+?): ([\s\S]*)$/.exec(message);
    return match === null ? new LayerConfigError('unknown', message) : new LayerConfigError(match[1]!, match[2]!);
  }
}

/** Which rule of the egress policy refused a request, as `EgressRefused.rule`. */
export type EgressRule = 'request' | 'url' | 'scheme' | 'userinfo' | 'path' | 'allow' | 'method' | 'header' | 'body' | 'address';

/**
 * The egress policy refused a request (or a redirect it led to) before anything was sent to
 * that URL. `rule` says which part of the policy; the message says what to change. Never
 * contains a credential the policy adds.
 */
export class EgressRefused extends StrataError {
  readonly rule: EgressRule;

  constructor(message: string, rule: EgressRule) {
    super(message, { code: 'ERR_STRATA_EGRESS_REFUSED' });
    this.rule = rule;
  }
}

/** What ended an allowed request, as `EgressFailed.reason`: a limit (named after its policy field) or the network. */
export type EgressFailure = 'timeoutMs' | 'maxResponseBytes' | 'maxRedirects' | 'aborted' | 'dns' | 'network' | 'onResponse';

/**
 * An allowed request did not complete: a policy limit cut it (`timeoutMs`, `maxResponseBytes`,
 * `maxRedirects`), the caller aborted it, DNS or the network failed, or the policy's
 * `onResponse` hook threw or returned no valid response. Never contains a
 * credential the policy adds; `cause` is a redacted copy of the network error, if any.
 */
export class EgressFailed extends StrataError {
  readonly reason: EgressFailure;

  constructor(message: string, reason: EgressFailure, options?: { cause?: unknown }) {
    super(message, { code: 'ERR_STRATA_EGRESS_FAILED', ...(options?.cause === undefined ? {} : { cause: options.cause }) });
    this.reason = reason;
  }
}

for (const [name, errorClass] of Object.entries({
  StrataError,
  JsError,
  RuntimeTimeout,
  HeapLimitExceeded,
  ValueNotTransferable,
  ResultTooLarge,
  ModuleNotFound,
  RuntimeClosed,
  SandboxHostFull,
  InvalidOption,
  PromiseNeverSettled,
  WorkerCrashed,
  ThreadUnavailable,
  SandboxUnavailable,
  CrashBudgetExceeded,
  LayerFailed,
  LayerConfigError,
  EgressRefused,
  EgressFailed,
})) {
  CLASS_NAMES.set(errorClass, name);
}
