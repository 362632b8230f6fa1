import type { EgressPolicy } from './egress/egress-policy.js';
import { resolveEgressOption, type EgressHandler } from './egress/guest-fetch.js';
import { InvalidOption } from './errors.js';

/** Globals removed from the guest by default; list one in `allowGlobals` to keep it. */
export type OptionalGlobal = 'SharedArrayBuffer' | 'Atomics' | 'WeakRef' | 'FinalizationRegistry';

const OPTIONAL_GLOBALS: readonly OptionalGlobal[] = ['SharedArrayBuffer', 'Atomics', 'WeakRef', 'FinalizationRegistry'];

/** Options of {@link Runtime.start}. Times are in milliseconds and sizes in bytes. */
export interface RuntimeOptions {
  /**
   * Soft limit on the guest's time per command (script, microtasks and timers it drives).
   * Past it the command fails with `RuntimeTimeout` and the runtime stays usable.
   * Default 30 000; `Infinity` removes it.
   */
  timeout?: number;
  /**
   * Limit of the guest's JavaScript heap, checked after every garbage collection. Past it the
   * guest is stopped: `HeapLimitExceeded`, runtime closed (whatever it allocated; one allocation
   * may overshoot before the check). Default 128 MiB.
   */
  maxHeapSize?: number;
  /**
   * Limit of live ArrayBuffer bytes (resizable ones charged at their committed size). An
   * allocation past it throws a catchable `RangeError` in the guest. Default: `maxHeapSize`.
   * Exact when the process runs with `--expose-gc` (IsolatedRuntime's worker always does);
   * otherwise buffers V8 has not yet collected count too.
   */
  maxBufferBytes?: number;
  /** Scripts run in every new context before guest code, in order (for example `WEB_POLYFILLS`). Host code: trusted. */
  bootstrap?: string | readonly string[];
  /** Forbid code generation from strings: `eval`, `new Function` and friends throw `EvalError`. Default false. */
  strictEval?: boolean;
  /** Globals to keep that are removed by default (shared memory and weak references). Default none. */
  allowGlobals?: readonly OptionalGlobal[];
  /** Cap on each of `stdout` and `stderr` collected by `execute` and `captureConsole`. Default 64 KiB. */
  maxOutputBytes?: number;
  /** Cap on the encoded size of a result. Default 1 MiB. */
  maxResultBytes?: number;
  /** The guest sees a host function's error class but only "host function failed" as its message. Default true. */
  redactHostErrors?: boolean;
  /**
   * What the guest's `fetch` (from `WEB_POLYFILLS`) may reach: a policy, performed by the host
   * (`{ allow: ['https://api.example.com/v1/*'], methods, headers, maxResponseBytes, timeoutMs, … }`,
   * see {@link EgressPolicy}), or your own {@link EgressHandler}. Without it the guest's `fetch`
   * rejects, saying why. Default none.
   */
  egress?: EgressPolicy | EgressHandler;
}

/** {@link RuntimeOptions} with every default filled in, as `Runtime.options` gives them. */
export interface ResolvedRuntimeOptions {
  timeout: number;
  maxHeapSize: number;
  maxBufferBytes: number;
  bootstrap: readonly string[];
  strictEval: boolean;
  allowGlobals: readonly OptionalGlobal[];
  maxOutputBytes: number;
  maxResultBytes: number;
  redactHostErrors: boolean;
  /** The `egress` option as the handler that answers the guest's `fetch` (a policy becomes `egressHandler(policy)`). */
  egress: EgressHandler | undefined;
}

const MiB = 1024 * 1024;

/** The defaults, frozen. */
export const DEFAULT_RUNTIME_OPTIONS: Readonly<ResolvedRuntimeOptions> = Object.freeze({
  timeout: 30_000,
  maxHeapSize: 128 * MiB,
  maxBufferBytes: 128 * MiB,
  bootstrap: Object.freeze([]) as readonly string[],
  strictEval: false,
  allowGlobals: Object.freeze([]) as readonly OptionalGlobal[],
  maxOutputBytes: 64 * 1024,
  maxResultBytes: MiB,
  redactHostErrors: true,
  egress: undefined,
});

const KNOWN_KEYS = new Set(Object.keys(DEFAULT_RUNTIME_OPTIONS));

/** V8 cannot run a heap smaller than this; isolated-vm refuses less than 8 MiB. */
const MIN_HEAP = 8 * MiB;

function positive(name: string, value: unknown, { allowInfinity = false, min = 1 } = {}): number {
  const ok = typeof value === 'number' && ((allowInfinity && value === Infinity) || (Number.isSafeInteger(value) && value >= min));
  if (!ok) {
    const range = allowInfinity ? `an integer >= ${min}, or Infinity` : `an integer >= ${min}`;
    throw new InvalidOption(`${name} must be ${range} (got ${describe(value)})`);
  }
  return value;
}

function bool(name: string, value: unknown): boolean {
  if (typeof value !== 'boolean') throw new InvalidOption(`${name} must be true or false (got ${describe(value)})`);
  return value;
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'bigint') return `${value}n`;
  if (value === null || typeof value !== 'object') return String(value);
  return Array.isArray(value) ? 'an array' : 'an object';
}

/**
 * Validates options and fills in defaults. Unknown keys are refused, so a typo never silently
 * leaves a limit at its default.
 */
export function resolveRuntimeOptions(options: RuntimeOptions = {}): ResolvedRuntimeOptions {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new InvalidOption(`options must be an object (got ${describe(options)})`);
  }
  for (const key of Object.keys(options)) {
    if (!KNOWN_KEYS.has(key)) {
      throw new InvalidOption(`unknown option ${JSON.stringify(key)}; known options: ${[...KNOWN_KEYS].join(', ')}`);
    }
  }
  const d = DEFAULT_RUNTIME_OPTIONS;
  const maxHeapSize = options.maxHeapSize === undefined ? d.maxHeapSize : positive('maxHeapSize', options.maxHeapSize, { min: MIN_HEAP });
  const bootstrap = options.bootstrap === undefined ? d.bootstrap : typeof options.bootstrap === 'string' ? [options.bootstrap] : options.bootstrap;
  if (!Array.isArray(bootstrap) || bootstrap.some((s) => typeof s !== 'string')) {
    throw new InvalidOption('bootstrap must be a string of JavaScript or an array of them');
  }
  const allowGlobals = options.allowGlobals ?? d.allowGlobals;
  if (!Array.isArray(allowGlobals) || allowGlobals.some((g) => !OPTIONAL_GLOBALS.includes(g))) {
    throw new InvalidOption(`allowGlobals may list only ${OPTIONAL_GLOBALS.join(', ')}`);
  }
  return Object.freeze({
    timeout: options.timeout === undefined ? d.timeout : positive('timeout', options.timeout, { allowInfinity: true }),
    maxHeapSize,
    maxBufferBytes: options.maxBufferBytes === undefined ? maxHeapSize : positive('maxBufferBytes', options.maxBufferBytes),
    bootstrap: Object.freeze([...bootstrap]),
    strictEval: options.strictEval === undefined ? d.strictEval : bool('strictEval', options.strictEval),
    allowGlobals: Object.freeze([...allowGlobals]),
    maxOutputBytes: options.maxOutputBytes === undefined ? d.maxOutputBytes : positive('maxOutputBytes', options.maxOutputBytes),
    maxResultBytes: options.maxResultBytes === undefined ? d.maxResultBytes : positive('maxResultBytes', options.maxResultBytes),
    redactHostErrors: options.redactHostErrors === undefined ? d.redactHostErrors : bool('redactHostErrors', options.redactHostErrors),
    egress: resolveEgressOption(options.egress),
  });
}
