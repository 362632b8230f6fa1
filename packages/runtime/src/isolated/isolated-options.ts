import { InvalidOption } from '../errors.js';
import { resolveRuntimeOptions, type ResolvedRuntimeOptions, type RuntimeOptions } from '../options.js';

/** How much OS protection `IsolatedRuntime.start` insists on. */
export type SandboxMode = 'require' | 'auto' | 'none';

/**
 * Options of `IsolatedRuntime.start`: every {@link RuntimeOptions} (they configure the
 * Runtime inside the worker) plus what the parent enforces from outside. Times in
 * milliseconds, sizes in bytes; `null` removes a limit where that is allowed.
 */
export interface IsolatedRuntimeOptions extends RuntimeOptions {
  /** `'require'` refuses to start unless every OS layer is in force; `'auto'` warns; `'none'` skips them. Default `'auto'`. */
  sandbox?: SandboxMode;
  /** Hard wall-clock limit per command; the worker is SIGKILLed past it (`RuntimeTimeout`). Time in host functions is not charged. Default: `timeout` + `timeoutGrace`, or 60 s when `timeout` is `Infinity`; `null` removes it. */
  requestTimeout?: number | null;
  /** Added to `timeout` for the default `requestTimeout`. Default 2 000. */
  timeoutGrace?: number;
  /** Ceiling on the worker's resident memory; past it the worker is killed (`WorkerCrashed`, reason `maxMemory`). Default 1 GiB; `null` removes it. */
  maxMemory?: number | null;
  /** Host-function calls allowed per command; past it the worker is killed (`WorkerCrashed`, reason `maxHostCalls`). Default 100 000; `null` removes it. */
  maxHostCalls?: number | null;
  /** Total time one command may spend waiting on host functions (`RuntimeTimeout`, worker killed). Default 600 000; `null` removes it. */
  maxHostWait?: number | null;
  /** Host calls in flight at once, across commands; more get an error reply and never reach your function. Default 64. */
  maxInflightHostCalls?: number;
  /** A worker that stops reading its pipe for this long is killed (`WorkerCrashed`, reason `writeStallTimeout`). Default 10 000; `null` removes it. */
  writeStallTimeout?: number | null;
  /** V8 without its JIT compilers (and without WebAssembly). Default true. */
  jitless?: boolean;
  /** Extra V8 flags for the worker; unknown or unsafe flags are refused. */
  v8Flags?: readonly string[];
  /** Keep one started spare worker to hand to the next runtime. Default true. */
  prewarm?: boolean;
}

/** {@link IsolatedRuntimeOptions} with every default filled in; `undefined` limits are off. */
export interface ResolvedIsolatedOptions {
  readonly runtime: ResolvedRuntimeOptions;
  readonly sandbox: SandboxMode;
  readonly requestTimeout: number | undefined;
  readonly maxMemory: number | undefined;
  readonly maxHostCalls: number | undefined;
  readonly maxHostWait: number | undefined;
  readonly maxInflightHostCalls: number;
  readonly writeStallTimeout: number | undefined;
  readonly jitless: boolean;
  readonly v8Flags: readonly string[];
  readonly prewarm: boolean;
}

const GiB = 1024 * 1024 * 1024;
const ISOLATED_KEYS = [
  'sandbox',
  'requestTimeout',
  'timeoutGrace',
  'maxMemory',
  'maxHostCalls',
  'maxHostWait',
  'maxInflightHostCalls',
  'writeStallTimeout',
  'jitless',
  'v8Flags',
  'prewarm',
] as const;

/** The options only the parent enforces: a pool may set them per checkout. */
export const SESSION_OPTIONS = Object.freeze([
  'requestTimeout',
  'timeoutGrace',
  'maxHostCalls',
  'maxHostWait',
  'maxInflightHostCalls',
  'writeStallTimeout',
  'redactHostErrors',
] as const);

function limit(name: string, value: unknown, fallback: number | undefined): number | undefined {
  if (value === undefined) return fallback;
  if (value === null) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new InvalidOption(`${name} must be a positive integer, or null for no limit (got ${String(value)})`);
  }
  return value;
}

/** Validates the options of `IsolatedRuntime.start` and fills in defaults. */
export function resolveIsolatedOptions(options: IsolatedRuntimeOptions = {}): ResolvedIsolatedOptions {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) throw new InvalidOption('options must be an object');
  const runtimeOnly: Record<string, unknown> = { ...options };
  for (const key of ISOLATED_KEYS) delete runtimeOnly[key];
  const maxMemory = limit('maxMemory', options.maxMemory, GiB);
  // A buffer cap under the memory ceiling turns `new Uint8Array(2 ** 31)` into a catchable
  // RangeError instead of a killed worker.
  if (runtimeOnly['maxBufferBytes'] === undefined && maxMemory !== undefined) {
    runtimeOnly['maxBufferBytes'] = Math.max(1, Math.floor(maxMemory / 4));
  }
  const runtime = resolveRuntimeOptions(runtimeOnly as RuntimeOptions);
  const sandbox = options.sandbox ?? 'auto';
  if (sandbox !== 'require' && sandbox !== 'auto' && sandbox !== 'none') {
    throw new InvalidOption(`sandbox must be 'require', 'auto' or 'none' (got ${String(sandbox)})`);
  }
  const grace = limit('timeoutGrace', options.timeoutGrace, 2_000) ?? 0;
  const requestDefault = runtime.timeout === Infinity ? 60_000 : runtime.timeout + grace;
  const maxInflight = limit('maxInflightHostCalls', options.maxInflightHostCalls ?? 64, 64);
  if (maxInflight === undefined) throw new InvalidOption('maxInflightHostCalls must be a positive integer');
  for (const key of ['jitless', 'prewarm'] as const) {
    if (options[key] !== undefined && typeof options[key] !== 'boolean') throw new InvalidOption(`${key} must be true or false`);
  }
  const v8Flags = options.v8Flags ?? [];
  if (!Array.isArray(v8Flags) || v8Flags.some((f) => typeof f !== 'string')) throw new InvalidOption('v8Flags must be an array of strings');
  return Object.freeze({
    runtime,
    sandbox,
    requestTimeout: limit('requestTimeout', options.requestTimeout, requestDefault),
    maxMemory,
    maxHostCalls: limit('maxHostCalls', options.maxHostCalls, 100_000),
    maxHostWait: limit('maxHostWait', options.maxHostWait, 600_000),
    maxInflightHostCalls: maxInflight,
    writeStallTimeout: limit('writeStallTimeout', options.writeStallTimeout, 10_000),
    jitless: options.jitless ?? true,
    v8Flags: Object.freeze([...v8Flags]),
    prewarm: options.prewarm ?? true,
  });
}

