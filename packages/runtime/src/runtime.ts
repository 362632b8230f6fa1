import { AsyncLocalStorage, AsyncResource } from 'node:async_hooks';
import { types } from 'node:util';
import { loadEngine, type IsolatedVm } from './engine.js';
import type { ConsoleCapture, ConsoleEntry } from './console-capture.js';
import { ConsoleHub } from './console-hub.js';
import { splitFunctions } from './bound-functions.js';
import {
  HeapLimitExceeded,
  InvalidOption,
  JsError,
  PromiseNeverSettled,
  ResultTooLarge,
  RuntimeClosed,
  RuntimeTimeout,
  StrataError,
  ValueNotTransferable,
} from './errors.js';
import { execute } from './execution-result.js';
import { ENTROPY_GLOBAL } from '@strata/polyfills/constants';
import type { PreludeSetup } from './guest/prelude.js';
import { DEADLINE_FIRED, GuestDeadline, REJECTIONS_LEFT } from './guest-deadline.js';
import { encodedSize, kindOutsideCopy, measureCopy } from './encoded-size.js';
import { FETCH_CANCEL_GLOBAL, FETCH_GLOBAL, GuestFetches } from './egress/guest-fetch.js';
import { describeHostError, thenableOf } from './host-errors.js';
import { resolveRuntimeOptions, type ResolvedRuntimeOptions, type RuntimeOptions } from './options.js';
import {
  ATTACH_GLOBAL,
  bootstrapFilename,
  makeRuntimeSnapshot,
  preludeSetup,
  preludeSource,
  type RuntimeSnapshot,
  SNAPSHOT_MAX_BUFFER_BYTES,
  snapshotBlob,
  type RuntimeSnapshotOptions,
} from './runtime-snapshot.js';
import { assertTransferable, MAX_VALUE_NODES } from './values.js';
import { ModuleRegistry, type ModuleLoader, type ModuleResolver, type ModuleSource } from './module-registry.js';
import {
  assertBindableObject,
  assertBindName,
  assertHostFunction,
  MAX_VALUE_DEPTH,
  type EvalModuleOptions,
  type EvalOptions,
  type ExecutionResult,
  type HostFunction,
  type StrataRuntime,
} from './runtime-contract.js';
import { stripIfTypeScript } from './typescript-input.js';
import { mark } from './timeline.js';
import { monotonicMs } from './monotonic.js';
import { digestKey, preludeKey } from './bootstrap-code-cache.js';

export type { ModuleLoader, ModuleResolver } from './module-registry.js';
export { RuntimeSnapshot, type RuntimeSnapshotOptions } from './runtime-snapshot.js';

/** Options of {@link Runtime.start}: a runtime's options, and the snapshot it may start from. */
export interface RuntimeStartOptions extends RuntimeOptions {
  /**
   * Start from this snapshot ({@link Runtime.createSnapshot}) instead of running the prelude and
   * the bootstrap scripts: the isolate deserializes them. The snapshot fixes `bootstrap` and
   * `strictEval`: leave them out (the runtime's `options` report the snapshot's), or pass the
   * same values; anything else is an `InvalidOption`. Every other option is this runtime's own.
   */
  snapshot?: RuntimeSnapshot;
}

/**
 * The bounds of the trial run {@link Runtime.createSnapshot} makes of the bootstrap scripts in an
 * ordinary isolate first (V8's snapshot creator has neither a timeout nor a heap limit): each
 * script's time, and the heap.
 */
const SNAPSHOT_BOOTSTRAP_TIMEOUT_MS = 10_000;
const SNAPSHOT_MAX_HEAP_SIZE = 128 * 1024 * 1024;
const SNAPSHOT_OPTIONS: ReadonlySet<string> = new Set(['bootstrap', 'strictEval']);

// isolated-vm, set by Runtime.start before the first Runtime exists (it is loaded on first use:
// engine.ts); every `new ivm.…` below runs in a Runtime's methods.
let ivm: typeof IsolatedVm;

/**
 * V8's code cache of each bootstrap script, for the process: the first isolate that compiles a
 * script produces it, later ones (another Runtime here, a layer's self-test isolate in a worker)
 * deserialize instead of parsing: `WEB_POLYFILLS` takes 0.8 ms instead of 5.4 ms. This process's
 * own compiles fill it, and, in a worker, the caches the build made for the prelude and
 * `WEB_POLYFILLS` ({@link usePrebuiltCodeCaches}); a cache V8 rejects (other flags) is compiled
 * afresh and replaced. Bounded: the oldest entries go past {@link MAX_CACHED_BOOTSTRAPS}.
 */
const bootstrapCache = new Map<string, IsolatedVm.ExternalCopy<ArrayBuffer>>();
const MAX_CACHED_BOOTSTRAPS = 16;

// What compileScriptSync sets on the script beside it (isolated-vm's typings leave it out).
type CompiledScript = IsolatedVm.Script & { cachedData?: IsolatedVm.ExternalCopy<ArrayBuffer>; cachedDataRejected?: boolean };

/** Caches made at build time, by key ({@link usePrebuiltCodeCaches}); none outside a worker. */
let prebuiltCodeCaches: Map<string, ArrayBuffer> | undefined;
/** The key of each script whose cache may have been made at build time (src/bootstrap-code-cache.ts). Bounded as the cache is. */
const keyOfSource = new Map<string, string>();

/** @internal The worker's build-time code caches of its prelude and bootstrap scripts, by key, consulted when the process has made none of its own. */
export function usePrebuiltCodeCaches(caches: Map<string, ArrayBuffer>): void {
  prebuiltCodeCaches = caches;
}

/**
 * @internal The SHA-256 of each bootstrap script, as the parent computed it: the key a worker
 * finds the script's build-time code cache under. Each must be a 64-digit hex string.
 */
export function useBootstrapDigests(sources: readonly string[], digests: readonly unknown[]): Set<string> {
  const keys = new Set<string>();
  for (const [i, source] of sources.entries()) {
    const digest = digests[i];
    if (typeof digest !== 'string' || !/^[0-9a-f]{64}$/.test(digest)) continue;
    setKey(source, digestKey(digest));
    keys.add(digestKey(digest));
  }
  return keys;
}

function setKey(source: string, key: string): void {
  keyOfSource.set(source, key);
  if (keyOfSource.size > MAX_CACHED_BOOTSTRAPS) keyOfSource.delete(keyOfSource.keys().next().value!);
}

/** @internal The code caches this process made for scripts with a key (the build's worker gives them for the package's file). */
export function bootstrapCodeCaches(): { key: string; cache: Uint8Array }[] {
  return [...bootstrapCache].flatMap(([source, cache]) => {
    const key = keyOfSource.get(source);
    return key === undefined ? [] : [{ key, cache: new Uint8Array(cache.copy()) }];
  });
}

function compileBootstrap(isolate: IsolatedVm.Isolate, source: string, filename: string): IsolatedVm.Script {
  let cachedData = bootstrapCache.get(source);
  const key = cachedData === undefined ? keyOfSource.get(source) : undefined;
  const prebuilt = key === undefined ? undefined : prebuiltCodeCaches?.get(key);
  if (prebuilt !== undefined) cachedData = new ivm.ExternalCopy(prebuilt);
  if (cachedData !== undefined) {
    const script = isolate.compileScriptSync(source, { filename, cachedData }) as CompiledScript;
    if (script.cachedDataRejected !== true) {
      if (prebuilt !== undefined) {
        mark(`build's code cache used: ${filename}`);
        remember(source, cachedData);
      }
      return script;
    }
    if (prebuilt !== undefined) mark(`build's code cache refused: ${filename}`);
    bootstrapCache.delete(source);
    if (key !== undefined) prebuiltCodeCaches?.delete(key);
  }
  const script = isolate.compileScriptSync(source, { filename, produceCachedData: true }) as CompiledScript;
  if (script.cachedData !== undefined) remember(source, script.cachedData);
  return script;
}

function remember(source: string, cache: IsolatedVm.ExternalCopy<ArrayBuffer>): void {
  bootstrapCache.set(source, cache);
  if (bootstrapCache.size > MAX_CACHED_BOOTSTRAPS) bootstrapCache.delete(bootstrapCache.keys().next().value!);
}

/** @internal How a worker points its runtime's imports at the parent. */
export const kModuleSource = Symbol('strata.moduleSource');
/** @internal How a worker says its host functions need no async context of their own (see Runtime#[kPlainHostCalls]). */
export const kPlainHostCalls = Symbol('strata.plainHostCalls');

// Why a completion that is a function or a symbol does not cross.
const FUNCTION_REFUSAL = '$ is a function; only data can cross';
const SYMBOL_REFUSAL = '$ is a symbol; it cannot cross to the host';
// isolated-vm's own message for a command stopped at its timeout.
const IVM_TIMEOUT = 'Script execution timed out.';
const IVM_MEMORY = 'Isolate was disposed during execution due to memory limit';
// The most one call of the host's entropy for bootstrap scripts (Runtime.#offerEntropy, offered as
// ENTROPY_GLOBAL) returns, as Web Crypto's getRandomValues allows.
const MAX_ENTROPY_BYTES = 65_536;
// The specifier under which a completion wrapper imports the module being evaluated.
const MODULE_UNDER_EVALUATION = 'strata:module-under-evaluation';

// Which runtime's host function is running, so that a host function calling back into its own
// runtime gets an error instead of a deadlock.
const insideHostFunction = new AsyncLocalStorage<Runtime>();

interface BoundFunction {
  readonly name: string;
  readonly fn: HostFunction;
  revoked: boolean;
}

/** What {@link Runtime.#takeOut} or an eval took from the guest. */
type TakenOut =
  | { readonly kind: 'value'; readonly value: unknown }
  | { readonly kind: 'refused'; readonly problem: string }
  | { readonly kind: 'uncopyable'; readonly error: unknown }
  | { readonly kind: 'promise' };

/** The prelude's `exportValue` answer (`[0, value]`, `[1, problem]`, `[2]`: a promise it watches) as a {@link TakenOut}. */
function fromExportValue(reply: [number, unknown]): TakenOut {
  if (reply[0] === 2) return { kind: 'promise' };
  if (reply[0] === 1) return { kind: 'refused', problem: reply[1] as string };
  return { kind: 'value', value: reply[1] };
}

interface Delivery {
  readonly callId: number;
  readonly ok: boolean;
  readonly value: unknown;
}

/**
 * Time the guest may still spend on the current command. Each entry into the isolate arms the
 * isolate's deadline with what is left and charges what it used; time in host functions is not
 * the guest's (the clock stops while one runs).
 */
class GuestBudget {
  /**
   * The async context the command's host functions run in: the command's own, marked as inside
   * a host function of this runtime. Made at the first host call; entering it costs ~8 ns where
   * `AsyncLocalStorage.run` costs ~190 ns per call (it copies the context each time).
   */
  hostScope: AsyncResource | undefined;
  #remaining: number;
  readonly #deadline: GuestDeadline;
  #since = 0;
  constructor(timeout: number, deadline: GuestDeadline) {
    this.#remaining = timeout;
    this.#deadline = deadline;
  }
  /** Arms the deadline for one entry into the isolate; throws when nothing is left. */
  start(): void {
    if (this.#remaining <= 0) throw new RuntimeTimeout('the guest ran past its timeout');
    this.#since = monotonicMs();
    if (this.#remaining !== Infinity) this.#deadline.arm(this.#remaining);
  }
  /**
   * Disarms after the entry returned: the deadline's flags ({@link DEADLINE_FIRED}: it stopped the
   * entry, and the termination is cleared; {@link REJECTIONS_LEFT}).
   */
  stop(): number {
    this.#remaining -= monotonicMs() - this.#since;
    const flags = this.#deadline.disarm();
    if ((flags & DEADLINE_FIRED) !== 0) this.#deadline.cancel();
    return flags;
  }
  /**
   * A host function starts: the guest's clock stops. The deadline stays armed (a disarm per call
   * would cost a native call); {@link resume} clears it if it fired meanwhile.
   */
  pause(): void {
    this.#remaining -= monotonicMs() - this.#since;
  }
  /** The host function returned: the guest's clock runs again from what was left at {@link pause}. */
  resume(): void {
    this.#since = monotonicMs();
    if (this.#remaining !== Infinity) this.#deadline.resume(Math.max(this.#remaining, 0));
  }
}

// Entries outside any command (binding a function, removing a global, finishing the setup) run
// only the prelude's own code; the bound is there in case anything ever makes them run more.
const HOST_OPERATION_MS = 5_000;

// Proves that a construction comes from this module (the factory): `new Runtime()` from JavaScript
// gets a clear error instead of a half-made runtime.
const FACTORY = Symbol('Runtime.start');

/**
 * A V8 isolate in this process: the engine every Strata worker hosts.
 *
 * **For buggy code, not hostile code.** The isolate shares this process: some JavaScript makes
 * V8 abort the whole process or sit in a native builtin that `timeout` cannot interrupt
 * (`new Array(2 ** 32 - 1).fill(0)`), memory outside the V8 heap (WebAssembly, resizable
 * buffers) escapes `maxHeapSize`, and a guest that escapes V8 gets this process's authority.
 * For code you did not write, use `IsolatedRuntime`, which runs a `Runtime` in a supervised,
 * sandboxed worker process.
 *
 * ```ts
 * await using rt = await Runtime.start({ timeout: 1_000 });
 * rt.bindFunction('lookup', (sku: string) => ({ A1: 3.5 })[sku]);
 * await rt.eval("lookup('A1') * 2"); // 7
 * ```
 */
export class Runtime implements StrataRuntime {
  readonly #options: ResolvedRuntimeOptions;
  readonly #isolate: IsolatedVm.Isolate;
  readonly #context: IsolatedVm.Context;
  // Set by the prelude's attach step (#attach), before anything else uses it.
  #internals!: {
    checkValue: IsolatedVm.Reference;
    exportValue: IsolatedVm.Reference;
    evalFinished: IsolatedVm.Reference;
    namespaceToObject: IsolatedVm.Reference;
    argumentHolder: IsolatedVm.Reference;
    describeError: IsolatedVm.Reference;
    defineGlobal: IsolatedVm.Reference;
    deleteGlobal: IsolatedVm.Reference;
    settleHostCall: IsolatedVm.Reference;
    takeOutcome: IsolatedVm.Reference;
    finalize: IsolatedVm.Reference;
    takeRejections: IsolatedVm.Reference;
  };
  // The eval in one entry (GuestDeadline.bindScriptRunner), bound to the prelude's finishEval by #attach.
  #runScript!: IsolatedVm.Reference;
  // While the unhandled rejections are being taken out (their report may leave more: the next entry reports them).
  #reportingRejections = false;
  // Unhandled rejections reported so far, and the last one (see #reportRejections).
  #rejections = 0;
  #lastRejection: unknown;
  readonly #deadline: GuestDeadline;
  // The budget of the entry in progress, so that a host function can stop the guest's clock.
  #activeBudget: GuestBudget | undefined;
  #eventLoop: IsolatedVm.Reference | undefined;
  #runNext: IsolatedVm.Reference | undefined;
  readonly #functions = new Map<number, BoundFunction>();
  readonly #globals = new Map<string, number[]>();
  readonly #console: ConsoleHub;
  readonly #settled = new Map<number, boolean>();
  readonly #deliveries: Delivery[] = [];
  #wakeDriver: (() => void) | undefined;
  #plainHostCalls = false;
  #inflightHostCalls = 0;
  // Made at the first request: a worker's first AbortController loads Node's module for it, about
  // a millisecond of every cold start under --jitless, and most runtimes never fetch.
  #egressAbort: AbortController | undefined;
  #nextId = 1;
  #queue: Promise<unknown> = Promise.resolve();
  #queued = 0;
  #busy = false;
  #closed = false;
  #closeReason: StrataError | undefined;
  readonly #modules = new ModuleRegistry();
  #moduleSource: ModuleSource = this.#modules;
  // Modules that linked, by canonical specifier: later imports of the same specifier get the same
  // instance, as a realm's module map does. What an evaluation compiled joins only once its whole
  // graph linked, so a graph that failed or timed out leaves nothing half-linked behind.
  readonly #linkedModules = new Map<string, IsolatedVm.Module>();
  readonly #moduleSpecifiers = new WeakMap<IsolatedVm.Module, string>();

  /**
   * The isolate, its context and deadline; then the prelude, unless the isolate is restored from
   * a snapshot (which holds it). The prelude's attach step is left for {@link #attach}.
   */
  private constructor(
    token: symbol,
    options: ResolvedRuntimeOptions,
    from: { readonly setup: PreludeSetup } | { readonly snapshot: IsolatedVm.ExternalCopy<ArrayBuffer> },
  ) {
    if (token !== FACTORY) throw new InvalidOption('Runtime has no public constructor: use `await Runtime.start(options)`');
    this.#options = options;
    this.#console = new ConsoleHub(options.maxOutputBytes);
    // isolated-vm's memory limit counts the heap and array buffers together, and past it V8 may
    // abort the process (an allocation that cannot fit during a collection). It is set to the
    // sum of the two caps, maxHeapSize (the deadline addon's heap check) and maxBufferBytes (the
    // prelude's), so that it is only ever the outer bound.
    const memoryLimit = Math.ceil((options.maxHeapSize + options.maxBufferBytes) / (1024 * 1024));
    this.#isolate = new ivm.Isolate('snapshot' in from ? { memoryLimit, snapshot: from.snapshot } : { memoryLimit });
    let deadline: GuestDeadline | undefined;
    try {
      // With --expose-gc (as every Strata worker runs), the context has V8's gc(), which the
      // prelude's attach step takes and hides. Flags are never changed at run time: V8 reads them
      // from other threads, and a change under a running isolate can crash the process.
      this.#context = this.#isolate.createContextSync();
      deadline = GuestDeadline.attach(this.#context);
      deadline.limitHeap(options.maxHeapSize);
      this.#deadline = deadline;
      if ('setup' in from) {
        const source = preludeSource(from.setup);
        if (!keyOfSource.has(source)) setKey(source, preludeKey(JSON.stringify(from.setup)));
        compileBootstrap(this.#isolate, source, 'strata:prelude').runSync(this.#context);
      }
    } catch (error) {
      deadline?.release();
      this.#isolate.dispose();
      throw error;
    }
  }

  /**
   * Creates a runtime: a fresh isolate and context, the prelude (with `strictEval`, code
   * generation is tamed there, so bootstrap scripts never hold a working `eval` or `Function`),
   * then each `bootstrap` script, then the removal of optional globals.
   *
   * With `snapshot`, the isolate is restored from it instead ({@link Runtime.createSnapshot}):
   * the prelude and the bootstrap scripts are already in its heap; the host's callbacks (console,
   * host functions, entropy, the fetch transport) are attached once, then optional globals are
   * removed as in a fresh runtime. Guest code sees the same globals either way.
   *
   * @throws {@link InvalidOption} for a bad option (or a `bootstrap` or `strictEval` other than
   * the snapshot's); {@link JsError} if a bootstrap script throws.
   */
  static async start(options?: RuntimeStartOptions): Promise<Runtime> {
    ivm = loadEngine();
    const { resolved, snapshot } = resolveStartOptions(options);
    const runtime =
      snapshot === undefined
        ? new Runtime(FACTORY, resolved, { setup: preludeSetup(resolved.strictEval, resolved.egress !== undefined, resolved.maxBufferBytes) })
        : new Runtime(FACTORY, resolved, { snapshot });
    try {
      // A snapshot always offers the fetch transport's forwarders: the egress is each runtime's own.
      runtime.#attach(snapshot !== undefined || resolved.egress !== undefined);
      if (snapshot === undefined) await runtime.#runBootstrap();
      runtime.#finalize();
    } catch (error) {
      runtime.#dispose(undefined);
      throw error;
    }
    return runtime;
  }

  /**
   * Makes a V8 startup snapshot of the prelude and `bootstrap` scripts, for
   * `Runtime.start({ snapshot })`: each runtime started from it deserializes them (about 3 ms
   * with `WEB_POLYFILLS` instead of 20, and less memory per isolate). Host work, from trusted
   * scripts only: never put guest code in a snapshot.
   *
   * Bounded: the scripts first run in an ordinary isolate in the snapshot's order, each within
   * 10 s, in a heap of 128 MiB and 64 MiB of buffers (V8's snapshot creator has no such limits);
   * then they run again inside V8's snapshot creator. What fails there is what `Runtime.start`
   * would say for that script ({@link JsError} for one that throws, {@link RuntimeTimeout},
   * {@link HeapLimitExceeded}); a failure of the snapshot itself is a {@link StrataError}.
   *
   * Inside a snapshot a bootstrap script runs before the host is attached: it may capture
   * `__strataEntropy` and the fetch transport (they forward to the host once a runtime is
   * restored), but not call them while it loads; its console output is dropped. Lazy installers
   * stay lazy. Math.random is seeded anew in each restored isolate. The fetch transport is always
   * offered inside a snapshot: a restored runtime without `egress` refuses each request from the
   * host, saying how to allow one (as an `IsolatedRuntime` does), where a fresh one has no transport.
   *
   * @throws {@link InvalidOption} for a bad option.
   */
  static async createSnapshot(options: RuntimeSnapshotOptions = {}): Promise<RuntimeSnapshot> {
    ivm = loadEngine();
    if (options === null || typeof options !== 'object' || Array.isArray(options))
      throw new InvalidOption('Runtime.createSnapshot(options): options must be an object');
    const unknown = Object.keys(options).find((key) => !SNAPSHOT_OPTIONS.has(key));
    if (unknown !== undefined) {
      throw new InvalidOption(
        `Runtime.createSnapshot: unknown option ${JSON.stringify(unknown)}; a snapshot fixes only bootstrap and strictEval (pass the others to Runtime.start)`,
      );
    }
    const resolved = resolveRuntimeOptions({
      ...(options.bootstrap === undefined ? {} : { bootstrap: options.bootstrap }),
      ...(options.strictEval === undefined ? {} : { strictEval: options.strictEval }),
      timeout: SNAPSHOT_BOOTSTRAP_TIMEOUT_MS,
      maxHeapSize: SNAPSHOT_MAX_HEAP_SIZE,
      maxBufferBytes: SNAPSHOT_MAX_BUFFER_BYTES,
    });
    const setup = preludeSetup(resolved.strictEval, true, SNAPSHOT_MAX_BUFFER_BYTES);
    const trial = new Runtime(FACTORY, resolved, { setup });
    try {
      await trial.#runBootstrap();
    } finally {
      trial.#dispose(undefined);
    }
    let blob: IsolatedVm.ExternalCopy<ArrayBuffer>;
    try {
      blob = ivm.Isolate.createSnapshot([
        { code: preludeSource(setup), filename: 'strata:prelude' },
        ...resolved.bootstrap.map((code, index) => ({ code, filename: bootstrapFilename(index) })),
      ]);
    } catch (error) {
      const detail = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      throw new StrataError(`Runtime.createSnapshot: V8 could not make a snapshot of the bootstrap scripts (${detail})`, { cause: error });
    }
    return makeRuntimeSnapshot(blob, resolved.bootstrap, resolved.strictEval);
  }

  /** Runs each bootstrap script, in order, each under the command timeout. */
  async #runBootstrap(): Promise<void> {
    for (const [index, source] of this.#options.bootstrap.entries()) {
      await this.#run(async (budget) => {
        const script = compileBootstrap(this.#isolate, source, bootstrapFilename(index));
        this.#enter(budget, () => script.runSync(this.#context));
      });
    }
  }

  /**
   * The prelude's attach step, once: the host's callbacks, this runtime's limits, the entropy
   * source and (`offerFetch`) the fetch transport, by the ids of two host functions that are no
   * bindings (`revoke` cannot reach them, a `bindFunction` of the same name does not replace
   * them). The step deletes its global as it runs, before any guest code exists; a second call
   * (a bootstrap that kept it) throws.
   */
  #attach(offerFetch: boolean): void {
    const attach = this.#context.global.getSync(ATTACH_GLOBAL, { reference: true }) as IsolatedVm.Reference;
    if (attach.typeof !== 'function') {
      throw new StrataError(`Runtime.start: the prelude's attach step is missing (a bootstrap script deleted or replaced globalThis.${ATTACH_GLOBAL})`);
    }
    const fetchIds = offerFetch ? this.#fetchTransport() : undefined;
    let internals: IsolatedVm.Reference;
    try {
      internals = this.#enterBounded('Runtime.start', () =>
        attach.applySync(
          undefined,
          [
            new ivm.Callback((id: number, viaHolder: boolean, ...args: unknown[]) => this.#dispatch(id, args, viaHolder)),
            new ivm.Callback((level: string, stream: 'stdout' | 'stderr', text: string) => this.#console.emit({ level, stream, text })),
            new ivm.Callback((id: number, ok: boolean) => void this.#settled.set(id, ok)),
            new ivm.Callback(() => this.#isolate.getHeapStatisticsSync().externally_allocated_size),
            this.#deadline.takeRejections.derefInto(),
            new ivm.Callback(hostEntropy),
            new ivm.ExternalCopy({
              maxBufferBytes: this.#options.maxBufferBytes,
              maxDepth: MAX_VALUE_DEPTH,
              maxNodes: MAX_VALUE_NODES,
              maxConsoleChars: 1024 * 1024,
              fetchIds,
            }).copyInto(),
          ],
          { result: { reference: true } },
        ),
      ) as IsolatedVm.Reference;
    } catch (error) {
      if (error instanceof StrataError) throw error;
      throw new StrataError(`Runtime.start: the prelude's attach step failed (${error instanceof Error ? error.message : String(error)})`, { cause: error });
    }
    const get = (name: string) => internals.getSync(name, { reference: true }) as IsolatedVm.Reference;
    this.#internals = {
      checkValue: get('checkValue'),
      exportValue: get('exportValue'),
      evalFinished: get('evalFinished'),
      namespaceToObject: get('namespaceToObject'),
      argumentHolder: get('argumentHolder'),
      describeError: get('describeError'),
      defineGlobal: get('defineGlobal'),
      deleteGlobal: get('deleteGlobal'),
      settleHostCall: get('settleHostCall'),
      takeOutcome: get('takeOutcome'),
      finalize: get('finalize'),
      takeRejections: get('takeRejections'),
    };
    this.#runScript = this.#enterBounded('Runtime.start', () =>
      this.#deadline.bindScriptRunner.applySync(undefined, [get('finishEval').derefInto()], { result: { reference: true } }),
    ) as IsolatedVm.Reference;
  }

  /** Removes the optional globals, and whatever host hook no bootstrap took; takes the event loop hook. */
  #finalize(): void {
    const removeGlobals: string[] = (['SharedArrayBuffer', 'Atomics', 'WeakRef', 'FinalizationRegistry'] as const).filter(
      (name) => !this.#options.allowGlobals.includes(name),
    );
    // Whatever no bootstrap took: guest code never sees the host's entropy source, fetch transport or the attach step.
    removeGlobals.push(ENTROPY_GLOBAL, FETCH_GLOBAL, FETCH_CANCEL_GLOBAL, ATTACH_GLOBAL);
    const loop = this.#enterBounded('Runtime.start', () =>
      this.#internals.finalize.applySync(undefined, [new ivm.ExternalCopy(removeGlobals).copyInto()], { result: { reference: true } }),
    ) as IsolatedVm.Reference;
    this.#eventLoop = loop.typeof === 'object' ? loop : undefined;
    this.#runNext = this.#eventLoop?.getSync('runNext', { reference: true }) as IsolatedVm.Reference | undefined;
  }

  /**
   * The host functions behind the bootstrap's `globalThis.__strataFetch(request, id)`, an async
   * host function that answers with the runtime's `egress` (without one it refuses, saying how to
   * allow a URL), and `__strataFetchCancel(id)`, which stops that request (`WEB_POLYFILLS`'
   * `fetch` captures both and deletes the globals; the finalize step deletes them otherwise).
   * Requests in flight are aborted when the runtime closes. Returns their ids.
   */
  #fetchTransport(): [number, number] {
    const fetches = new GuestFetches(() => this.#egressClosing());
    const egress = this.#options.egress;
    const transport = this.#nextId++;
    const cancel = this.#nextId++;
    this.#functions.set(transport, {
      name: FETCH_GLOBAL,
      fn: (request: unknown, id: unknown) => fetches.answer(egress, request, id, this.#options.redactHostErrors),
      revoked: false,
    });
    this.#functions.set(cancel, { name: FETCH_CANCEL_GLOBAL, fn: (id: unknown) => fetches.cancel(id), revoked: false });
    return [transport, cancel];
  }

  /** The signal that aborts this runtime's requests when it closes (already aborted once it has). */
  #egressClosing(): AbortSignal {
    if (this.#egressAbort === undefined) {
      this.#egressAbort = new AbortController();
      if (this.#closed) this.#egressAbort.abort(this.#closeReason ?? new Error('the runtime is closed'));
    }
    return this.#egressAbort.signal;
  }

  /** {@inheritDoc StrataRuntime.options} */
  get options(): ResolvedRuntimeOptions {
    return this.#options;
  }

  /** {@inheritDoc StrataRuntime.closed} */
  get closed(): boolean {
    return this.#closed;
  }

  /** {@inheritDoc StrataRuntime.eval} */
  eval(code: string, options: EvalOptions = {}): Promise<unknown> {
    if (typeof code !== 'string') return Promise.reject(new InvalidOption('eval(code): code must be a string'));
    const filename = options.filename ?? '<eval>';
    let stripping: Promise<string> | undefined;
    try {
      stripping = stripIfTypeScript(code, options.language, filename, 'eval');
    } catch (error) {
      return Promise.reject(error);
    }
    if (stripping === undefined && this.#idle()) {
      try {
        const outcome = this.#evalNow(code, filename);
        return outcome instanceof Promise ? outcome : Promise.resolve(outcome);
      } catch (error) {
        return Promise.reject(error);
      }
    }
    return this.#command(async (budget) => this.#evalIn(budget, stripping === undefined ? code : await stripping, filename), stripping);
  }

  /**
   * @internal The worker's eval (src/worker/worker-session.ts): {@link eval} of JavaScript, with
   * no promise when the guest's completion is not one. Returns the result, or a promise of it;
   * throws what `eval` would reject with.
   */
  evalNow(code: string, filename: string | undefined): unknown {
    if (!this.#idle()) return this.eval(code, filename === undefined ? {} : { filename });
    return this.#evalNow(code, filename ?? '<eval>');
  }

  /** Whether a command may run now, on the caller's stack: nothing queued or to deliver, open, not called from its own host function. */
  #idle(): boolean {
    return this.#queued === 0 && this.#deliveries.length === 0 && !this.#closed && insideHostFunction.getStore() !== this;
  }

  /**
   * An eval run on this call's stack, the runtime being {@link #idle}: a command's turn is a chain
   * of promises, which in a `--jitless` worker cost microseconds of every round trip. Counted as
   * queued while it runs, as {@link #command} does, so that a command sent meanwhile (a settled
   * host call's delivery) waits for its turn.
   */
  #evalNow(code: string, filename: string): unknown {
    this.#queued++;
    this.#busy = true;
    let outcome: unknown;
    try {
      outcome = this.#evalIn(new GuestBudget(this.#options.timeout, this.#deadline), code, filename);
    } catch (error) {
      this.#busy = false;
      this.#queued--;
      throw this.#translate(error);
    }
    if (!(outcome instanceof Promise)) {
      this.#busy = false;
      this.#queued--;
      return outcome;
    }
    const run = outcome.then(
      (value) => {
        this.#busy = false;
        return value;
      },
      (error: unknown) => {
        this.#busy = false;
        throw this.#translate(error);
      },
    );
    this.#queue = run.then(
      () => void this.#queued--,
      () => void this.#queued--,
    );
    return run;
  }

  /**
   * An eval's work in its command's turn: the result, or a promise of it when the completion is a
   * promise. A returned promise is watched in the script's own task, so that it has a handler
   * before the task ends and is never reported as an unhandled rejection. An object is checked and
   * copied (or watched) in the same entry as the script ran.
   */
  #evalIn(budget: GuestBudget, script: string, filename: string): unknown {
    const watchId = this.#nextId++;
    let reply: unknown;
    try {
      reply = this.#enter(budget, () => this.#runScript.applySync(undefined, [script, filename, watchId], { result: { copy: true } }));
    } catch (error) {
      // The script completed and its answer did not copy: what only the copy refuses (the walk
      // that would name its path has run, and passed).
      if (!(error instanceof StrataError) && !isEngineFailure(error) && this.#evalFinished(watchId, budget)) {
        return this.#taken(undefined, { kind: 'uncopyable', error }, budget);
      }
      throw error;
    }
    if (reply === null || typeof reply !== 'object') return this.#withinResultSize(reply);
    const [kind] = reply as [number];
    if (kind === 3) throw new ValueNotTransferable(FUNCTION_REFUSAL);
    if (kind === 4) throw new ValueNotTransferable(SYMBOL_REFUSAL);
    const taken = fromExportValue(reply as [number, unknown]);
    return taken.kind === 'promise' ? this.#awaitPromise(watchId, budget) : this.#taken(undefined, taken, budget);
  }

  /** Whether the eval `id`'s script completed (its completion reached the prelude's finishEval). */
  #evalFinished(id: number, budget: GuestBudget): boolean {
    if (this.#closed || this.#isolate.isDisposed) return false;
    return this.#enter(budget, () => this.#internals.evalFinished.applySync(undefined, [id])) === true;
  }

  /** {@inheritDoc StrataRuntime.execute} */
  async execute(code: string, options: EvalOptions = {}): Promise<ExecutionResult> {
    if (typeof code !== 'string') throw new InvalidOption('execute(code): code must be a string');
    return execute(this, code, options);
  }

  /** {@inheritDoc StrataRuntime.bindFunction} */
  bindFunction(name: string, fn: HostFunction): void {
    assertHostFunction(name, fn);
    this.#bindGlobal(name, fn, 'bindFunction');
  }

  /** {@inheritDoc StrataRuntime.bindObject} */
  bindObject(name: string, object: Record<string, unknown>): void {
    assertBindableObject(name, object);
    this.#bindGlobal(name, object, 'bindObject');
  }

  /** {@inheritDoc StrataRuntime.revoke} */
  revoke(name: string): void {
    this.#assertUsable('revoke');
    const ids = this.#globals.get(name);
    if (ids === undefined) throw new InvalidOption(`revoke(${JSON.stringify(name)}): nothing is bound under that name`);
    for (const id of ids) {
      const entry = this.#functions.get(id);
      if (entry !== undefined) entry.revoked = true;
    }
    this.#globals.delete(name);
    this.#enterBounded('revoke', () => this.#internals.deleteGlobal.applySync(undefined, [name]));
  }

  /** {@inheritDoc StrataRuntime.addModule} */
  addModule(specifier: string, source: string): void {
    this.#modules.add(specifier, source);
  }

  /** {@inheritDoc StrataRuntime.setModuleResolver} */
  setModuleResolver(resolver: ModuleResolver | undefined): void {
    this.#modules.setResolver(resolver);
  }

  /** {@inheritDoc StrataRuntime.setModuleLoader} */
  setModuleLoader(loader: ModuleLoader | undefined): void {
    this.#modules.setLoader(loader);
  }

  /** @internal Used by the worker: imports are answered by the parent. */
  [kModuleSource](source: ModuleSource): void {
    this.#moduleSource = source;
  }

  /**
   * @internal Used by the worker, whose host functions are stand-ins that ask the parent: they
   * never call back into this runtime and keep no async context, so they run as they are, without
   * the scope a command's first host call makes (a microsecond or two of every such command in a
   * `--jitless` worker).
   */
  [kPlainHostCalls](): void {
    this.#plainHostCalls = true;
  }

  /** {@inheritDoc StrataRuntime.evalModule} */
  evalModule(source: string, options: EvalModuleOptions = {}): Promise<Record<string, unknown>> {
    if (typeof source !== 'string') return Promise.reject(new InvalidOption('evalModule(source): source must be a string'));
    const specifier = options.specifier ?? 'strata:main';
    let stripping: Promise<string> | undefined;
    try {
      stripping = stripIfTypeScript(source, options.language, specifier, 'evalModule');
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#command(async (budget) => {
      const module = this.#compileModule(stripping === undefined ? source : await stripping, specifier);
      await this.#link(module, specifier);
      // isolated-vm does not hand out the promise of a module's top-level await, so a wrapper
      // imports the module: the wrapper's binding leaves its temporal dead zone only once the
      // module has finished evaluating.
      const wrapper = this.#isolate.compileModuleSync(`import * as ns from ${JSON.stringify(MODULE_UNDER_EVALUATION)}; export const namespace = ns;`, {
        filename: `${specifier} (completion)`,
      });
      await wrapper.instantiate(this.#context, () => module);
      const rejectionsBefore = this.#rejections;
      this.#enter(budget, () => wrapper.evaluateSync());
      const wrapperNamespace = wrapper.namespace;
      let namespace: IsolatedVm.Reference | undefined;
      const finished = () => {
        try {
          namespace = wrapperNamespace.getSync('namespace', { reference: true }) as IsolatedVm.Reference;
          return true;
        } catch {
          return false;
        }
      };
      try {
        await this.#drive(finished, budget, "the module's top-level await");
      } catch (error) {
        // isolated-vm hands out no module's evaluation promise: a module that threw (before or
        // after an await) is known by the rejection it left unhandled, the last one reported.
        if (error instanceof PromiseNeverSettled && this.#rejections !== rejectionsBefore) throw this.#translate(this.#lastRejection);
        throw error;
      }
      const exportsObject = this.#enter(budget, () =>
        this.#internals.namespaceToObject.applySync(undefined, [namespace!.derefInto()], { result: { reference: true } }),
      ) as IsolatedVm.Reference;
      return this.#export(exportsObject, budget) as Record<string, unknown>;
    }, stripping);
  }

  /** {@inheritDoc StrataRuntime.onConsole} */
  onConsole(listener: (entry: ConsoleEntry) => void): () => void {
    return this.#console.listen(listener);
  }

  /** {@inheritDoc StrataRuntime.captureConsole} */
  captureConsole(): ConsoleCapture {
    return this.#console.capture();
  }

  /** {@inheritDoc StrataRuntime.close} */
  async close(): Promise<void> {
    this.#dispose(undefined);
  }

  /** `await using rt = await Runtime.start()` closes it at the end of the scope. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  // --- commands ------------------------------------------------------------------------------

  #assertUsable(method: string): void {
    if (this.#closed) throw this.#closeReason ?? new RuntimeClosed(`${method}: the runtime is closed`);
    if (insideHostFunction.getStore() === this) {
      throw new StrataError(`${method}: a host function cannot call back into its own runtime (it would wait on itself); use another runtime`);
    }
  }

  /**
   * Runs commands one at a time: the isolate has one thread and one event loop. `input` (code
   * being stripped of its types) is awaited in the command's turn, before its budget starts.
   */
  #command<T>(task: (budget: GuestBudget) => Promise<T>, input?: Promise<unknown>): Promise<T> {
    try {
      this.#assertUsable('command');
    } catch (error) {
      return Promise.reject(error);
    }
    // Awaited in turn; until then its rejection is not unhandled.
    input?.catch(() => undefined);
    // An idle runtime starts the command at once; otherwise it waits its turn.
    const run = this.#queued === 0 ? this.#run(task, input) : this.#queue.then(() => this.#run(task, input));
    this.#queued++;
    const settled = run.then(
      () => void this.#queued--,
      () => void this.#queued--,
    );
    this.#queue = settled;
    return run;
  }

  async #run<T>(task: (budget: GuestBudget) => Promise<T>, input?: Promise<unknown>): Promise<T> {
    // The strip's own refusal (the guest's SyntaxError) is thrown as it is.
    if (input !== undefined) await input;
    if (this.#closed) throw this.#closeReason ?? new RuntimeClosed('the runtime is closed');
    this.#busy = true;
    try {
      const budget = new GuestBudget(this.#options.timeout, this.#deadline);
      this.#deliver(budget);
      return await task(budget);
    } catch (error) {
      throw this.#translate(error);
    } finally {
      this.#busy = false;
    }
  }

  /**
   * Enters the isolate synchronously under the command's deadline and charges the time to its
   * budget. A deadline that fired is a {@link RuntimeTimeout}, whatever the entry returned (a
   * termination inside the microtasks that run as it returns is not reported by isolated-vm).
   *
   * A promise the guest left rejected with no handler does not replace the step's outcome (the
   * deadline addon keeps those in place of isolated-vm): it is reported as browsers do, on the
   * console (`Uncaught (in promise) …`, level `error`), after the entry, and the outcome stands.
   */
  #enter<T>(budget: GuestBudget, step: () => T): T {
    mark('enter isolate');
    budget.start();
    const outer = this.#activeBudget;
    this.#activeBudget = budget;
    let outcome: { ok: true; value: T } | { ok: false; error: unknown };
    try {
      outcome = { ok: true, value: step() };
    } catch (error) {
      outcome = { ok: false, error };
    }
    this.#activeBudget = outer;
    const flags = budget.stop();
    mark('left isolate');
    if (this.#deadline.heapExceeded()) throw this.#heapLimitExceeded();
    if ((flags & DEADLINE_FIRED) !== 0) throw new RuntimeTimeout(`the guest ran past its timeout (${this.#options.timeout} ms)`);
    if ((flags & REJECTIONS_LEFT) !== 0 && !this.#reportingRejections && !this.#isolate.isDisposed) this.#reportRejections(budget);
    if (!outcome.ok) throw outcome.error;
    return outcome.value;
  }

  /**
   * Takes the guest's unhandled rejections out (their descriptions, read by the prelude: a getter
   * there is guest code, under the command's budget) and reports each on the console.
   */
  #reportRejections(budget: GuestBudget): void {
    this.#reportingRejections = true;
    let taken: [Array<[name: string, message: string, stack: string | undefined, text: string]>, more: number];
    try {
      taken = this.#enter(budget, () => this.#internals.takeRejections.applySync(undefined, [], { result: { copy: true } })) as typeof taken;
    } finally {
      this.#reportingRejections = false;
    }
    const [described, more] = taken;
    for (const [name, message, stack, text] of described) {
      this.#rejections++;
      this.#lastRejection = new JsError(name, message, stack);
      this.#console.emit({ level: 'error', stream: 'stderr', text: `Uncaught (in promise) ${text}` });
    }
    if (more > 0) {
      this.#rejections++;
      this.#console.emit({ level: 'error', stream: 'stderr', text: `Uncaught (in promise): ${more} more promises rejected with no handler (not shown)` });
    }
  }

  #heapLimitExceeded(): HeapLimitExceeded {
    return new HeapLimitExceeded(`the guest's heap grew past maxHeapSize (${this.#options.maxHeapSize} bytes); the runtime is closed`);
  }

  /** An entry outside any command, bounded by {@link HOST_OPERATION_MS}; past it the runtime is closed. */
  #enterBounded<T>(what: string, step: () => T): T {
    const budget = new GuestBudget(HOST_OPERATION_MS, this.#deadline);
    try {
      return this.#enter(budget, step);
    } catch (error) {
      if (error instanceof RuntimeTimeout) {
        const reason = new StrataError(`${what}: the guest's side did not finish within ${HOST_OPERATION_MS} ms; the runtime is closed`);
        this.#dispose(reason);
        throw reason;
      }
      throw error;
    }
  }

  async #awaitPromise(id: number, budget: GuestBudget): Promise<unknown> {
    await this.#drive(() => this.#settled.has(id), budget, 'the promise');
    const ok = this.#settled.get(id)!;
    this.#settled.delete(id);
    const outcome = this.#enter(budget, () => this.#internals.takeOutcome.applySync(undefined, [id], { result: { reference: true } })) as IsolatedVm.Reference;
    if (ok) return this.#export(outcome, budget);
    throw this.#guestError(outcome, budget);
  }

  /**
   * Runs the guest's event loop until `finished()`: settled host calls are handed in first;
   * while host calls are in flight it waits for them; only when nothing else can make progress
   * does virtual time advance to the next timer.
   */
  async #drive(finished: () => boolean, budget: GuestBudget, what: string): Promise<void> {
    while (!finished()) {
      if (this.#closed) throw this.#closeReason ?? new RuntimeClosed('the runtime was closed while the guest was waiting');
      if (this.#deliveries.length > 0) {
        this.#deliver(budget);
      } else if (this.#inflightHostCalls > 0) {
        await new Promise<void>((resolve) => (this.#wakeDriver = resolve));
        this.#wakeDriver = undefined;
      } else if (this.#eventLoop === undefined || !this.#runTimer(budget)) {
        throw new PromiseNeverSettled(`${what} can never settle: no host call is pending and no timer is scheduled`);
      }
    }
  }

  #runTimer(budget: GuestBudget): boolean {
    const loop = this.#eventLoop!;
    const runNext = this.#runNext!;
    return this.#enter(budget, () => runNext.applySync(loop.derefInto(), []) === true);
  }

  /** Copies a guest value out, refusing anything outside the transferable set. */
  #export(reference: IsolatedVm.Reference, budget: GuestBudget): unknown {
    const type = reference.typeof;
    if (type === 'function') throw new ValueNotTransferable(FUNCTION_REFUSAL);
    if (type === 'symbol') throw new ValueNotTransferable(SYMBOL_REFUSAL);
    if (type === 'object')
      return this.#taken(
        reference,
        this.#enter(budget, () => this.#takeOut(reference)),
        budget,
      );
    let value: unknown;
    try {
      value = reference.copySync();
    } catch (error) {
      throw new ValueNotTransferable(this.#whyNotCopied(reference, '$', error, budget));
    }
    return this.#withinResultSize(value);
  }

  /**
   * An object taken out of the guest in one call, inside an entry: the guest's descriptor walk
   * (`exportValue`) refuses what the native copy would silently change (class instances losing
   * their class, holes becoming undefined…), then isolated-vm copies it as the call returns. What
   * only the copy refuses comes back as `uncopyable`.
   */
  #takeOut(reference: IsolatedVm.Reference): TakenOut {
    try {
      return fromExportValue(this.#internals.exportValue.applySync(undefined, [reference.derefInto()], { result: { copy: true } }) as [number, unknown]);
    } catch (error) {
      if (isEngineFailure(error)) throw error;
      return { kind: 'uncopyable', error };
    }
  }

  /**
   * The command's result from what {@link Runtime.#takeOut} or an eval took, or the refusal that
   * names why not (with the value's `reference`, the path of the part the copy refused).
   */
  #taken(reference: IsolatedVm.Reference | undefined, taken: TakenOut, budget: GuestBudget): unknown {
    switch (taken.kind) {
      case 'value':
        return this.#withinResultSize(taken.value);
      case 'refused':
        throw new ValueNotTransferable(`${taken.problem}; it cannot cross to the host`);
      case 'uncopyable':
        throw new ValueNotTransferable(
          reference === undefined ? `the value cannot cross: ${copyFailure(taken.error)}` : this.#whyNotCopied(reference, '$', taken.error, budget),
        );
      case 'promise':
        throw new StrataError('a promise was taken out where none was watched');
    }
  }

  /**
   * Why a guest value the native copy refused cannot cross, naming the path of the part that
   * stopped it (`$.items[3].fn is a function`): the guest's descriptor walk finds it without
   * running guest code. The copy's own words remain for what the walk cannot place.
   */
  #whyNotCopied(reference: IsolatedVm.Reference, root: string, copyError: unknown, budget: GuestBudget): string {
    const problem = this.#enter(budget, () => this.#internals.checkValue.applySync(undefined, [reference.derefInto(), root])) as string | undefined;
    return problem === undefined ? `the value cannot cross: ${copyFailure(copyError)}` : `${problem}; it cannot cross to the host`;
  }

  /**
   * Checks a copied result: its kinds (the copy keeps a brand the guest hid behind another
   * prototype: `Object.setPrototypeOf(new ArrayBuffer(8), null)` copies as an ArrayBuffer), then
   * `maxResultBytes`.
   */
  #withinResultSize(value: unknown): unknown {
    const max = this.#options.maxResultBytes;
    if (typeof value === 'object' && value !== null) {
      const { bytes, outside } = measureCopy(value, max);
      if (outside !== undefined) throw new ValueNotTransferable(hiddenKindRefusal('$', outside));
      if (bytes > max) throw new ResultTooLarge(`the result is larger than maxResultBytes (${max} bytes encoded)`);
    } else if (typeof value === 'string' && value.length * 3 > max && encodedSize(value, max) > max) {
      // Most results are small: a string shorter than max/3 characters cannot encode to more than max bytes.
      throw new ResultTooLarge(`the result is larger than maxResultBytes (${max} bytes encoded)`);
    }
    return value;
  }

  #guestError(thrown: IsolatedVm.Reference, budget: GuestBudget): JsError {
    const [name, message, stack] = this.#enter(budget, () =>
      this.#internals.describeError.applySync(undefined, [thrown.derefInto()], { result: { copy: true } }),
    ) as [string, string, string | undefined];
    return new JsError(name, message, stack);
  }

  /** Maps what isolated-vm throws to Strata's errors. */
  #translate(error: unknown): unknown {
    // A host callback (a module loader) may have thrown anything; `instanceof` on a Proxy runs its traps.
    if (types.isProxy(error)) return new StrataError('a host callback threw a Proxy');
    if (error instanceof StrataError) {
      if (error instanceof HeapLimitExceeded) this.#dispose(error);
      return error;
    }
    if ((this.#isolate.isDisposed || this.#deadline.heapExceeded()) && !this.#closed) {
      const reason = this.#heapLimitExceeded();
      this.#dispose(reason);
      return reason;
    }
    if (error instanceof Error) {
      if (error.message === IVM_TIMEOUT) return new RuntimeTimeout(`the guest ran past its timeout (${this.#options.timeout} ms)`);
      if (error.message === IVM_MEMORY) {
        const reason = this.#heapLimitExceeded();
        this.#dispose(reason);
        return reason;
      }
      return new JsError(error.name, error.message, error.stack);
    }
    // A non-Error thrown by guest code (isolated-vm passes primitives through).
    return new JsError('Error', `Uncaught ${typeof error === 'string' ? error : String(error)}`);
  }

  #dispose(reason: StrataError | undefined): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#closeReason = reason;
    this.#egressAbort?.abort(reason ?? new Error('the runtime is closed'));
    this.#console.stopCaptures();
    this.#wakeDriver?.();
    // Before the isolate goes: the watcher must never touch a disposed isolate.
    this.#deadline.release();
    if (!this.#isolate.isDisposed) this.#isolate.dispose();
  }

  // --- host functions ------------------------------------------------------------------------

  #bindGlobal(name: string, value: HostFunction | Record<string, unknown>, method: string): void {
    this.#assertUsable(method);
    assertBindName(name, method);
    if (this.#globals.has(name)) this.revoke(name);
    const { data, sites } = splitFunctions(value, name, MAX_VALUE_DEPTH);
    assertTransferable(data, name, MAX_VALUE_DEPTH);
    const functions = sites.map(({ path, label, fn }): [readonly string[], number, string] => {
      const id = this.#nextId++;
      this.#functions.set(id, { name: label, fn, revoked: false });
      return [path, id, label];
    });
    const problem = this.#enterBounded(method, () =>
      this.#internals.defineGlobal.applySync(undefined, [name, new ivm.ExternalCopy(data).copyInto(), new ivm.ExternalCopy(functions).copyInto()]),
    ) as string | undefined;
    if (problem !== undefined) {
      for (const [, id] of functions) this.#functions.get(id)!.revoked = true;
      throw new InvalidOption(`${method}(${JSON.stringify(name)}): ${problem}; bind it under another name`);
    }
    this.#globals.set(
      name,
      functions.map(([, id]) => id),
    );
  }

  /** Called by the guest (synchronously) for every host function call. */
  #dispatch(id: number, passed: unknown[], viaHolder: boolean): unknown {
    const entry = this.#functions.get(id);
    if (entry === undefined || entry.revoked) return [1, 'Error', `host function ${entry?.name ?? '#' + id} was revoked`];
    let args = passed;
    if (viaHolder) {
      // The guest's walk refused what it can name before calling (the prelude's host function);
      // isolated-vm's copy runs no getter and no Proxy trap, and refuses the rest.
      try {
        args = this.#internals.argumentHolder.getSync('args', { copy: true }) as unknown[];
      } catch (error) {
        return [1, 'TypeError', `${entry.name}: an argument cannot cross to the host: ${copyFailure(error)}`];
      }
      // The copy keeps a brand the guest hid behind another prototype (see #withinResultSize).
      const outside = kindOutsideCopy(args);
      if (outside !== undefined) return [1, 'TypeError', `${entry.name}: ${hiddenKindRefusal('arguments', outside)}`];
    }
    let result: unknown;
    const budget = this.#activeBudget;
    budget?.pause();
    try {
      if (this.#plainHostCalls) result = Reflect.apply(entry.fn, undefined, args);
      else {
        // Every host call of a command comes from the command's own context, so one scope serves them all.
        const scope = budget === undefined ? this.#hostScope() : (budget.hostScope ??= this.#hostScope());
        result = scope.runInAsyncScope(entry.fn, undefined, ...args);
      }
    } catch (error) {
      return [1, ...this.#hostErrorForGuest(error)];
    } finally {
      budget?.resume();
    }
    const { thenable, error: thenError } = thenableOf(result);
    if (thenError !== undefined) return [1, ...this.#hostErrorForGuest(thenError)];
    if (thenable) {
      const callId = this.#nextId++;
      this.#inflightHostCalls++;
      // Promise.resolve runs a thenable's `then`: whatever it throws becomes the rejection.
      Promise.resolve(result as PromiseLike<unknown>).then(
        (value) => this.#queueDelivery({ callId, ok: true, value }),
        (error: unknown) => this.#queueDelivery({ callId, ok: false, value: error }),
      );
      return [2, callId];
    }
    // Primitives come back as they are; anything else inside a [kind, …] reply.
    if (result === null || typeof result !== 'object') {
      if (typeof result === 'function' || typeof result === 'symbol') {
        return [1, 'TypeError', `${entry.name}() returned a ${typeof result}; only data can cross`];
      }
      return result as unknown[];
    }
    try {
      assertTransferable(result, `${entry.name}() returned a value that`, MAX_VALUE_DEPTH);
    } catch (error) {
      return [1, 'TypeError', (error as Error).message];
    }
    return [0, result];
  }

  /** The current async context, marked as inside a host function of this runtime (see {@link #assertUsable}). */
  #hostScope(): AsyncResource {
    return insideHostFunction.run(this, () => new AsyncResource('StrataHostFunction'));
  }

  #hostErrorForGuest(error: unknown): [string, string] {
    const { name, message } = describeHostError(error, this.#options.redactHostErrors);
    return [name, message];
  }

  #queueDelivery(delivery: Delivery): void {
    this.#inflightHostCalls--;
    if (this.#closed) return;
    this.#deliveries.push(delivery);
    if (this.#busy) this.#wakeDriver?.();
    else void this.#command(async () => undefined).catch(() => undefined);
  }

  /** Hands settled async host calls to the guest (their continuations run as microtasks). */
  #deliver(budget: GuestBudget): void {
    while (this.#deliveries.length > 0) {
      const { callId, ok, value } = this.#deliveries.shift()!;
      let args: unknown[];
      if (ok) {
        try {
          assertTransferable(value, 'the host function resolved to a value that', MAX_VALUE_DEPTH);
          args = [callId, true, new ivm.ExternalCopy(value).copyInto(), '', ''];
        } catch (error) {
          args = [callId, false, undefined, 'TypeError', describeHostError(error, false).message];
        }
      } else {
        args = [callId, false, undefined, ...this.#hostErrorForGuest(value)];
      }
      this.#enter(budget, () => this.#internals.settleHostCall.applySync(undefined, args));
    }
  }

  // --- modules -------------------------------------------------------------------------------

  #compileModule(source: string, specifier: string): IsolatedVm.Module {
    const module = this.#isolate.compileModuleSync(source, { filename: specifier });
    this.#moduleSpecifiers.set(module, specifier);
    return module;
  }

  /**
   * Links `module` and its graph. isolated-vm's linker walks the graph itself and asks for each
   * import once: the answer is a compiled module, never one awaiting its own linking, so a cycle
   * (legal ECMAScript) links as the specification says instead of waiting on itself. The whole
   * walk, the host's resolver and loader included, is bounded by the command's `timeout`.
   */
  async #link(module: IsolatedVm.Module, specifier: string): Promise<void> {
    const compiling = new Map<string, Promise<IsolatedVm.Module>>();
    const linking = module.instantiate(this.#context, (request, referrer) =>
      // The module under evaluation may import itself by its own specifier, which no registry knows.
      request === specifier ? module : this.#resolveImport(request, this.#moduleSpecifiers.get(referrer) ?? specifier, compiling),
    );
    const timeout = this.#options.timeout;
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      if (timeout !== Infinity) {
        timer = setTimeout(
          () =>
            reject(new RuntimeTimeout(`the module graph did not link within the timeout (${timeout} ms): a module resolver or loader did not answer in time`)),
          timeout,
        );
      }
    });
    // A linker that lost the race may still settle later; nothing waits for it then.
    linking.catch(() => undefined);
    try {
      await Promise.race([linking, expired]);
    } finally {
      clearTimeout(timer);
    }
    for (const [canonical, compiled] of compiling) this.#linkedModules.set(canonical, await compiled);
  }

  /** The module `request` names, compiled once per canonical specifier for the evaluation in `compiling`. */
  async #resolveImport(request: string, referrer: string, compiling: Map<string, Promise<IsolatedVm.Module>>): Promise<IsolatedVm.Module> {
    const { specifier, source } = await this.#moduleSource.load(request, referrer);
    const linked = this.#linkedModules.get(specifier);
    if (linked !== undefined) return linked;
    let compiled = compiling.get(specifier);
    if (compiled === undefined) {
      compiled = Promise.resolve().then(() => this.#compileModule(source, specifier));
      compiling.set(specifier, compiled);
    }
    return compiled;
  }
}

/** What isolated-vm throws for itself (a memory limit, a timeout, a disposed isolate), never a guest value. */
function isEngineFailure(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  return error.message === IVM_MEMORY || error.message === IVM_TIMEOUT || /isolate.*disposed/i.test(error.message);
}

/** A copy that held an object of a kind outside the set, whose brand the guest hid behind another prototype. */
function hiddenKindRefusal(root: string, kind: string): string {
  return `${root} holds an object of the kind ${kind} behind a replaced prototype (outside the transferable set); it cannot cross to the host`;
}

/** Why isolated-vm's serializer refused a value, in words a user can act on. */
function copyFailure(error: unknown): string {
  const detail = error instanceof Error ? error.message : String(error);
  const shown = detail.length > 120 ? `${detail.slice(0, 120)}…` : detail;
  return `it is or contains a function, symbol, Proxy, getter or another kind outside the transferable set (${shown})`;
}

/**
 * The host's entropy for the bootstrap's `globalThis.__strataEntropy(byteLength)` (the prelude's
 * forwarder calls it): that many bytes from the host's CSPRNG, a `RangeError` in the guest for a
 * length that is not an integer from 0 to 65 536. A bootstrap (`WEB_POLYFILLS`' `crypto`)
 * captures the forwarder and deletes the global; the finalize step deletes it otherwise.
 * `randomFillSync` reads OpenSSL's generator, which uses the `getrandom` syscall: no file is
 * opened, so it works under the worker's Landlock and seccomp rules.
 */
function hostEntropy(byteLength: unknown): Uint8Array {
  if (typeof byteLength !== 'number' || !Number.isInteger(byteLength) || byteLength < 0 || byteLength > MAX_ENTROPY_BYTES) {
    throw new RangeError(`${ENTROPY_GLOBAL}(byteLength): byteLength must be an integer from 0 to ${MAX_ENTROPY_BYTES}`);
  }
  // isolated-vm copies a returned Uint8Array into the isolate as a Uint8Array of the guest's realm.
  // node:crypto is loaded on the first call: a worker whose guest never asks pays nothing for it
  return process.getBuiltinModule('node:crypto').randomFillSync(new Uint8Array(byteLength));
}

/** The options checked, and the snapshot's blob; `bootstrap` and `strictEval` are the snapshot's. */
function resolveStartOptions(options: RuntimeStartOptions | undefined): {
  resolved: ResolvedRuntimeOptions;
  snapshot: IsolatedVm.ExternalCopy<ArrayBuffer> | undefined;
} {
  // Not an object: resolveRuntimeOptions says what is wrong with it.
  if (options === null || typeof options !== 'object' || Array.isArray(options)) return { resolved: resolveRuntimeOptions(options), snapshot: undefined };
  const { snapshot, ...rest } = options;
  if (snapshot === undefined) return { resolved: resolveRuntimeOptions(rest), snapshot: undefined };
  const blob = snapshotBlob(snapshot);
  const resolved = resolveRuntimeOptions(rest);
  if (rest.bootstrap !== undefined && !sameScripts(resolved.bootstrap, snapshot.bootstrap)) {
    throw new InvalidOption('bootstrap: the snapshot holds its own bootstrap scripts; leave bootstrap out, or pass the very scripts it was made from');
  }
  if (rest.strictEval !== undefined && rest.strictEval !== snapshot.strictEval) {
    throw new InvalidOption(
      `strictEval: the snapshot was made with strictEval: ${snapshot.strictEval}; leave strictEval out, or make a snapshot with strictEval: ${rest.strictEval}`,
    );
  }
  return { resolved: Object.freeze({ ...resolved, bootstrap: snapshot.bootstrap, strictEval: snapshot.strictEval }), snapshot: blob };
}

const sameScripts = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((script, index) => script === b[index]);
