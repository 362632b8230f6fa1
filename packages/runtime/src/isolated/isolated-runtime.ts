import { AsyncLocalStorage } from 'node:async_hooks';
import { types } from 'node:util';
import { ProtocolError } from '@strata/wire';
import type { Message, MessageOf, WireObject } from '@strata/wire';
import type { CodeCacheEntry } from '../bootstrap-code-cache.js';
import type { ConsoleCapture, ConsoleEntry } from '../console-capture.js';
import { ConsoleHub } from '../console-hub.js';
import { splitFunctions } from '../bound-functions.js';
import { fromErrorPayload, toErrorPayload } from '../error-codec.js';
import { FETCH_CANCEL_GLOBAL, FETCH_GLOBAL, GuestFetches } from '../egress/guest-fetch.js';
import { describeHostError, thenableOf } from '../host-errors.js';
import { HeapLimitExceeded, InvalidOption, RuntimeClosed, RuntimeTimeout, SandboxUnavailable, StrataError, WorkerCrashed } from '../errors.js';
import { execute } from '../execution-result.js';
import { ModuleRegistry, type ModuleLoader, type ModuleResolver, type ResolvedModule } from '../module-registry.js';
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
} from '../runtime-contract.js';
import { assertTransferable } from '../values.js';
import { stripIfTypeScript } from '../typescript-input.js';
import { resolveIsolatedOptions, type IsolatedRuntimeOptions, type ResolvedIsolatedOptions } from './isolated-options.js';
import type { ResolvedRuntimeOptions } from '../options.js';
import type { LayerReport } from '../layers/layer.js';
import type { SandboxReport } from '../layers/pipeline.js';
import { takeWorker } from './prewarm.js';
import { sampleProcess, type WorkerProcess } from './worker-process.js';
import type { WorkerPort } from './worker-port.js';
import { FIRST_REQUEST_ID, configureOptions, endUnverified, finishLaunch, prepareLaunch } from './worker-launch.js';
import { cpuCapExceeded, type WorkerActivity } from './worker-end.js';
import { chargeTick } from './tick-charge.js';
import { mark, type TimelineMark } from '../timeline.js';

/** The parent kills a worker with more threads than this: a thread bomb stays under any memory ceiling. */
export const MAX_WORKER_THREADS = 64;
// Bound, called and revoked by internals.warmUp (a pool's spare, before anyone waits for it).
const WARM_UP_GLOBAL = '__strataWarmUp';
/**
 * How many commands internals.warmUp runs. V8 gives a function its inline caches only after its
 * first 8 calls, and a --jitless worker interprets everything: a pooled worker warmed by one
 * command ran its first commands for a session several times slower than warm ones.
 */
const WARM_UP_COMMANDS = 20;
// How often the parent checks a busy worker from outside (the worker checks itself every 20 ms).
const SUPERVISOR_TICK_MS = 50;

// The report is the layer pipeline's (layers/pipeline.ts finishes it); exported here, where it always was.
export type { SandboxReport } from '../layers/pipeline.js';

interface Command {
  readonly id: number;
  /** The hard deadline of this request, in guest milliseconds. */
  readonly deadline: number | undefined;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
  hostCalls: number;
  guestMs: number;
  hostWaitMs: number;
  lastTick: number;
  syncHostMs: number;
  cpuAtStart: number | undefined;
  /** Whether the command runs guest code; decides how a CPU cap that stops it is named. */
  readonly activity: WorkerActivity;
  /** The worker's CPU time at the last tick, to tell a guest that runs from one that waits. */
  lastCpuMs?: number;
}

interface Bound {
  readonly fn: HostFunction;
  /** Declared `async` (read once, at bind time, without touching the function's properties). */
  readonly async: boolean;
  revoked: boolean;
  returnedPromise: boolean;
}

const insideHostFunction = new AsyncLocalStorage<IsolatedRuntime>();

/** What SandboxPool needs of a runtime beyond its public API; set by IsolatedRuntime's static block. Not exported from the package. */
export interface RuntimeInternals {
  /** Calls `listener` once, with the reason, when the runtime closes (soon, if it already has). */
  onClosed(rt: IsolatedRuntime, listener: (reason: StrataError) => void): void;
  /** Replaces the options the parent enforces (a pool's per-checkout session options). */
  setSessionOptions(rt: IsolatedRuntime, options: ResolvedIsolatedOptions): void;
  /** The runtime's resolved options. */
  options(rt: IsolatedRuntime): ResolvedIsolatedOptions;
  /** A runtime on one isolate of a SandboxHost's worker (the host supervises the process). */
  attach(options: ResolvedIsolatedOptions, port: WorkerPort, report: SandboxReport, sharing: SharingView): IsolatedRuntime;
  /** The worker's timeline marks so far (the bench's breakdowns; see timeline.ts), taken from the worker. */
  workerTimeline(rt: IsolatedRuntime): Promise<TimelineMark[]>;
  /**
   * The host-call path once, both halves (an eval that awaits an async host function), for a
   * runtime made ahead of its use (a pool's spare): the worker runs jitless and a fresh process
   * pays its first wake-ups, so its first host call costs about 1 ms more than later ones. Not in
   * start(): there the caller waits, and the three messages cost a cold start about 6 ms, more
   * than they save its first host call. Nothing of it stays in the guest.
   */
  warmUp(rt: IsolatedRuntime): Promise<void>;
  /** A V8 code cache of the worker's bundle as compiled so far (scripts/make-worker-cache.mjs). */
  workerCodeCache(rt: IsolatedRuntime): Promise<{ worker: Uint8Array; bootstraps: CodeCacheEntry[]; layers: CodeCacheEntry[] }>;
}

/** What a runtime on a shared worker says about the sharing, in its report. */
export interface SharingView {
  readonly tenant: string;
  /**
   * The runtime's first request id. Each isolate of a worker has its own range, so that an answer
   * the worker sends to the wrong isolate never matches a request in flight there.
   */
  readonly firstRequestId: number;
  /** How many other isolates share the worker now. */
  sharedWith(): number;
}

export let internals: RuntimeInternals;

// Proves that a construction comes from this module (the factory): `new IsolatedRuntime()` from JavaScript
// gets a clear error instead of a half-made runtime.
const FACTORY = Symbol('IsolatedRuntime.start');

/**
 * A `Runtime` in a worker process that this process supervises and can kill: the API of
 * `Runtime`, over a pipe. Whatever the guest does — abort V8, exhaust memory, spin in a native
 * builtin, flood output or host calls — ends in an error for that runtime, never a crash or a
 * hang here. A crashed or killed runtime is closed and never reused.
 *
 * ```ts
 * await using rt = await IsolatedRuntime.start({ timeout: 2_000 });
 * rt.bindFunction('lookup', (sku: string) => ({ A1: 3.5 })[sku]);
 * await rt.eval("lookup('A1') * 2"); // 7
 * ```
 */
export class IsolatedRuntime implements StrataRuntime {
  #options: ResolvedIsolatedOptions;
  readonly #worker: WorkerPort;
  // The process, when the worker is this runtime's alone; a shared worker's is its host's to supervise.
  readonly #process: WorkerProcess | undefined;
  // Set for an isolate of a shared worker: how many others share it, and whose worker it is.
  readonly #sharing: SharingView | undefined;
  // Set once by start, when the layer pipeline has finished it.
  #report: SandboxReport;
  readonly #modules = new ModuleRegistry();
  // When the command in flight asked for its first import: its imports share its timeout.
  #linking: { readonly commandId: number | undefined; readonly since: number } | undefined;
  readonly #functions = new Map<string, Bound>();
  readonly #globals = new Map<string, string[]>();
  readonly #console: ConsoleHub;
  #current: Command | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  #queued = 0;
  #nextId = 1;
  #inflightHostCalls = 0;
  #ticker: NodeJS.Timeout | undefined;
  #releaseHold: (() => void) | undefined;
  #closed = false;
  #closeReason: StrataError | undefined;
  #closeListeners: ((reason: StrataError) => void)[] = [];
  readonly #egressAbort = new AbortController();
  // Set while a start waits for the worker's layer report (see start()).
  #onReport: ((report: WireObject) => void) | undefined;

  static {
    // For SandboxPool, in this package only (not exported from the index).
    internals = {
      onClosed: (rt, listener) => {
        if (rt.#closed) queueMicrotask(() => listener(rt.#closeReason!));
        else rt.#closeListeners.push(listener);
      },
      setSessionOptions: (rt, options) => {
        rt.#options = options;
      },
      options: (rt) => rt.#options,
      attach: (options, port, report, sharing) => new IsolatedRuntime(FACTORY, options, port, report, undefined, sharing),
      workerTimeline: (rt) => rt.#command({ type: 'command', id: 0, name: 'timeline', params: {} }) as Promise<TimelineMark[]>,
      warmUp: async (rt) => {
        rt.bindFunction(WARM_UP_GLOBAL, async () => 0);
        try {
          // Half call an async host function (its settle path is the longer one), half are plain evals.
          for (let i = 0; i < WARM_UP_COMMANDS; i++) await rt.eval(i % 2 === 0 ? `${WARM_UP_GLOBAL}()` : `${i} + 1`);
        } finally {
          rt.revoke(WARM_UP_GLOBAL);
        }
      },
      workerCodeCache: (rt) =>
        rt.#command({ type: 'command', id: 0, name: 'codeCache', params: {} }) as Promise<{
          worker: Uint8Array;
          bootstraps: CodeCacheEntry[];
          layers: CodeCacheEntry[];
        }>,
    };
  }

  private constructor(
    token: symbol,
    options: ResolvedIsolatedOptions,
    worker: WorkerPort,
    report: SandboxReport,
    process: WorkerProcess | undefined,
    sharing?: SharingView,
  ) {
    if (token !== FACTORY) throw new InvalidOption('IsolatedRuntime has no public constructor: use `await IsolatedRuntime.start(options)`');
    this.#options = options;
    this.#console = new ConsoleHub(options.runtime.maxOutputBytes);
    this.#worker = worker;
    this.#process = process;
    this.#sharing = sharing;
    if (sharing !== undefined) this.#nextId = sharing.firstRequestId;
    this.#report = report;
    worker.setMessageHandler((message) => this.#onMessage(message));
    worker.onExit((error) => this.#onWorkerExit(error));
    // The guest's fetch: every worker asks here, and the egress of the options in force (a pool
    // may set it per checkout) answers, or refuses when there is none.
    const fetches = new GuestFetches(() => this.#egressAbort.signal);
    const fetch = (request: unknown, id: unknown) => fetches.answer(this.#options.runtime.egress, request, id, this.#options.runtime.redactHostErrors);
    this.#functions.set(FETCH_GLOBAL, { fn: fetch, async: true, revoked: false, returnedPromise: true });
    this.#functions.set(FETCH_CANCEL_GLOBAL, { fn: (id: unknown) => fetches.cancel(id), async: false, revoked: false, returnedPromise: false });
  }

  /**
   * Starts a worker (or takes the prewarmed spare), configures its Runtime and returns once it
   * is ready for guest code.
   *
   * @throws {@link InvalidOption}, {@link SandboxUnavailable} (`sandbox: 'require'` on a platform
   * that cannot provide it, or with layers that leave out its OS sandbox or a default layer),
   * {@link WorkerCrashed} (the worker failed to start).
   */
  static async start(options: IsolatedRuntimeOptions = {}): Promise<IsolatedRuntime> {
    mark('start');
    const resolved = resolveIsolatedOptions(options);
    const launch = await prepareLaunch(resolved, testEntry);
    mark('planned');
    // The configuration is known before the worker is: a new worker is sent it at once (a spare
    // that said hello long ago, when it is taken). `earlyReport`: the worker reports its layers
    // as soon as they are applied and self-tested, before it makes the guest's isolate, so the
    // check from outside runs while it does.
    const configure: MessageOf<'configure'> = {
      type: 'configure',
      id: FIRST_REQUEST_ID,
      options: { ...configureOptions(resolved, launch), earlyReport: true },
    };
    const { worker, firstSent } = await takeWorker(launch.plan, resolved.prewarm, resolved.startTimeout, configure);
    mark('hello');
    // Nothing is in force until the pipeline has finished the report (nobody sees it before).
    const runtime = new IsolatedRuntime(FACTORY, resolved, worker, { sandbox: 'none', sandboxExtras: [], layers: [], base: launch.base }, worker);
    runtime.#nextId = FIRST_REQUEST_ID + 1;
    let verified = false;
    // the worker's end, when its check from outside failed: the start fails with it
    let unverified: Promise<StrataError> | undefined;
    try {
      // Only once the worker's layers are in force may guest code run: what the worker claims
      // is checked from outside (in /proc), and a broken promise kills it before its isolate is
      // even made. A worker that reports twice, after its configure or not at all is killed too.
      const onReport = (report: WireObject) => {
        // before the configure's answer, never after it
        if (runtime.#current?.id !== FIRST_REQUEST_ID) return runtime.#violation('a report after its configuration was answered');
        mark('reported');
        const layers = (Array.isArray(report['layers']) ? report['layers'] : []) as unknown as LayerReport[];
        try {
          runtime.#report = finishLaunch(launch, worker.pid, layers);
          verified = true;
          mark('verified');
        } catch (error) {
          unverified = endUnverified(worker, error);
        }
      };
      runtime.#onReport = onReport;
      // Configuring runs the layer pipeline (probes, self-tests): bounded by a start deadline of
      // its own, not by requestTimeout, which is meant for the guest's commands.
      const startDeadline = Math.max(resolved.startTimeout, resolved.requestTimeout ?? 0);
      const configuring = runtime.#request(configure, startDeadline, firstSent);
      // What came with the hello (this process was busy: a report, even the answer), now that the
      // request is registered.
      worker.deliverKeptMessages();
      await configuring.catch(async (error) => {
        throw unverified === undefined ? error : await unverified;
      });
      runtime.#onReport = undefined;
      if (unverified !== undefined) throw await unverified;
      mark('configured');
      if (!verified) {
        const reason = new WorkerCrashed(
          'protocol violation: the worker answered its configuration without reporting its layers first; it was killed',
          'protocol',
        );
        runtime.#kill(reason);
        throw reason;
      }
      mark('ready');
    } catch (error) {
      await runtime.close();
      throw error;
    }
    return runtime;
  }

  /** The worker's process id. */
  get pid(): number {
    return this.#worker.pid;
  }

  /** The OS sandbox in force: `'landlock+seccomp'` (Linux), `'seatbelt'` (macOS) or `'none'`. */
  get sandbox(): string {
    return this.#report.sandbox;
  }

  /** Extra protections in force, such as `'emptyroot'`. */
  get sandboxExtras(): readonly string[] {
    return this.#report.sandboxExtras;
  }

  /**
   * The whole layer report, frozen and JSON-serialisable. On a SandboxHost's worker it also says
   * whose worker it is (`tenant`) and how many other isolates share it now (`sharedWith`).
   */
  get report(): SandboxReport {
    if (this.#sharing === undefined) return this.#report;
    return Object.freeze({ ...this.#report, tenant: this.#sharing.tenant, sharedWith: this.#sharing.sharedWith() });
  }

  /** {@inheritDoc StrataRuntime.closed} */
  get closed(): boolean {
    return this.#closed;
  }

  /** {@inheritDoc StrataRuntime.options} */
  get options(): ResolvedRuntimeOptions {
    return this.#options.runtime;
  }

  /**
   * {@inheritDoc StrataRuntime.eval}
   *
   * @throws {@link WorkerCrashed}, and a hard {@link RuntimeTimeout} (past `requestTimeout`), as
   * well: the worker is killed and the runtime is closed.
   */
  eval(code: string, options: EvalOptions = {}): Promise<unknown> {
    if (typeof code !== 'string') return Promise.reject(new InvalidOption('eval(code): code must be a string'));
    let stripping: Promise<string> | undefined;
    try {
      stripping = stripIfTypeScript(code, options.language, options.filename ?? '<eval>', 'eval');
    } catch (error) {
      return Promise.reject(error);
    }
    const message: MessageOf<'eval'> = { type: 'eval', id: 0, code };
    if (options.filename !== undefined) message.options = { filename: options.filename };
    return this.#command(message, stripping);
  }

  /**
   * {@inheritDoc StrataRuntime.evalModule}
   *
   * @throws {@link WorkerCrashed}, and a hard {@link RuntimeTimeout} (past `requestTimeout`), as
   * well: the worker is killed and the runtime is closed.
   */
  evalModule(source: string, options: EvalModuleOptions = {}): Promise<Record<string, unknown>> {
    if (typeof source !== 'string') return Promise.reject(new InvalidOption('evalModule(source): source must be a string'));
    let stripping: Promise<string> | undefined;
    try {
      stripping = stripIfTypeScript(source, options.language, options.specifier ?? 'strata:main', 'evalModule');
    } catch (error) {
      return Promise.reject(error);
    }
    const message: MessageOf<'evalModule'> = { type: 'evalModule', id: 0, code: source };
    if (options.specifier !== undefined) message.specifier = options.specifier;
    return this.#command(message, stripping) as Promise<Record<string, unknown>>;
  }

  /** {@inheritDoc StrataRuntime.execute} */
  async execute(code: string, options: EvalOptions = {}): Promise<ExecutionResult> {
    if (typeof code !== 'string') throw new InvalidOption('execute(code): code must be a string');
    return execute(this, code, options);
  }

  /** {@inheritDoc StrataRuntime.bindFunction} */
  bindFunction(name: string, fn: HostFunction): void {
    assertHostFunction(name, fn);
    this.#bind(name, fn, 'bindFunction');
  }

  /** {@inheritDoc StrataRuntime.bindObject} */
  bindObject(name: string, object: Record<string, unknown>): void {
    assertBindableObject(name, object);
    this.#bind(name, object, 'bindObject');
  }

  /** {@inheritDoc StrataRuntime.revoke} */
  revoke(name: string): void {
    // The functions stop working here at once, before the worker hears of it.
    this.#assertUsable();
    const labels = this.#globals.get(name);
    if (labels === undefined) throw new InvalidOption(`revoke(${JSON.stringify(name)}): nothing is bound under that name`);
    for (const label of labels) this.#functions.get(label)!.revoked = true;
    this.#globals.delete(name);
    // Queued like any command; a failure to deliver it closes the runtime, which the next call reports.
    void this.#command({ type: 'command', id: 0, name: 'revoke', params: { name } }).catch(() => undefined);
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
    if (!this.#closed) this.#shutDown(new RuntimeClosed('the runtime is closed'));
    if (!this.#worker.exited) {
      // Held while we wait, or an otherwise idle process would exit before the worker is reaped.
      const release = this.#worker.hold();
      await new Promise<void>((resolve) => this.#worker.onExit(() => resolve()));
      release();
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  // --- commands ------------------------------------------------------------------------------

  #assertUsable(): void {
    if (this.#closed) throw this.#closeReason ?? new RuntimeClosed('the runtime is closed');
    if (insideHostFunction.getStore() === this) {
      throw new StrataError('a host function cannot call back into its own runtime (it would wait on itself); use another runtime');
    }
  }

  #bind(name: string, value: HostFunction | Record<string, unknown>, method: 'bindFunction' | 'bindObject'): void {
    this.#assertUsable();
    assertBindName(name, method);
    const { data, sites } = splitFunctions(value, name, MAX_VALUE_DEPTH);
    assertTransferable(data, name, MAX_VALUE_DEPTH);
    for (const label of this.#globals.get(name) ?? []) this.#functions.get(label)!.revoked = true;
    // Each binding gets fresh labels, so a revoked function can never be reached again.
    const labelled = sites.map(({ path, label, fn }): [readonly string[], string] => {
      const unique = `${label}#${this.#nextId++}`;
      this.#functions.set(unique, { fn, async: types.isAsyncFunction(fn), revoked: false, returnedPromise: false });
      return [path, unique];
    });
    this.#globals.set(
      name,
      labelled.map(([, label]) => label),
    );
    // A bind the worker refuses (guest code made the global non-configurable) must not pass
    // silently: the runtime closes, and every later call reports why.
    void this.#command({ type: 'command', id: 0, name: 'bind', params: { name, value: data as never, functions: labelled as never } }).catch(
      (error: unknown) => {
        if (this.#closed) return;
        const why = error instanceof Error ? error.message : String(error);
        this.#shutDown(new StrataError(`binding ${JSON.stringify(name)} failed in the worker (${why}); the runtime is closed`));
      },
    );
  }

  /**
   * Sends a command and waits for its answer, one command at a time. `code` (the message's code
   * being stripped of its types) is awaited in the command's turn and replaces the message's.
   */
  #command(message: Message, code?: Promise<string>): Promise<unknown> {
    try {
      this.#assertUsable();
    } catch (error) {
      return Promise.reject(error);
    }
    // Awaited in turn; until then its rejection is not unhandled.
    code?.catch(() => undefined);
    const send = async () => {
      const stripped = code === undefined ? {} : { code: await code };
      if (this.#closed) throw this.#closeReason ?? new RuntimeClosed('the runtime is closed');
      return this.#request({ ...message, ...stripped, id: this.#nextId++ } as Message);
    };
    // An idle runtime sends at once; otherwise the command waits its turn.
    const run = this.#queued === 0 ? send() : this.#queue.then(send);
    this.#queued++;
    this.#queue = run.then(
      () => void this.#queued--,
      () => void this.#queued--,
    );
    return run;
  }

  /** `sent`: the message is on its way already (a start's configure, written at spawn): only its answer is awaited. */
  #request(message: Message, deadline = this.#options.requestTimeout, sent = false): Promise<unknown> {
    const activity = activityOf(message);
    return new Promise((resolve, reject) => {
      // Idle again as soon as the answer is in: a death after it is not this command's.
      const settle =
        <T>(done: (value: T) => void) =>
        (value: T) => {
          this.#current = undefined;
          this.#worker.setActivity('idle');
          done(value);
        };
      this.#current = {
        id: (message as { id: number }).id,
        deadline,
        activity,
        resolve: settle(resolve),
        reject: settle(reject),
        hostCalls: 0,
        guestMs: 0,
        hostWaitMs: 0,
        lastTick: performance.now(),
        syncHostMs: 0,
        // Taken at the first tick: reading /proc costs ~50 µs, too much for every command.
        cpuAtStart: undefined,
      };
      this.#superviseWhileBusy();
      this.#worker.setActivity(activity);
      if (!sent) this.#worker.send(message);
    });
  }

  /**
   * The supervisor's clock, and a hold on the worker (this process stays alive while a command
   * is in flight), from a command until a tick finds the runtime idle: commands back to back
   * share them instead of each setting up and tearing down its own (the round trip's cost).
   */
  #superviseWhileBusy(): void {
    if (this.#ticker !== undefined) return;
    this.#releaseHold = this.#worker.hold();
    this.#ticker = setInterval(() => {
      if (this.#current === undefined) this.#stopSupervising();
      else this.#supervise();
    }, SUPERVISOR_TICK_MS);
  }

  #stopSupervising(): void {
    clearInterval(this.#ticker);
    this.#ticker = undefined;
    this.#releaseHold?.();
    this.#releaseHold = undefined;
  }

  #finish(id: number | undefined, settle: (command: Command) => void): void {
    const current = this.#current;
    if (current === undefined || current.id !== id) {
      this.#violation(`an answer for request ${String(id)}, which is not the one in flight`);
      return;
    }
    settle(current);
  }

  // --- the supervisor ------------------------------------------------------------------------

  /** Checks a busy worker from outside, on a clock: deadlines, memory, threads, CPU, stalls. */
  #supervise(): void {
    const current = this.#current;
    if (current === undefined) return;
    const now = performance.now();
    const elapsed = now - current.lastTick - current.syncHostMs;
    current.lastTick = now;
    current.syncHostMs = 0;
    // A shared worker's process (its memory, threads, CPU, pipes, a stuck thread) is its host's
    // to supervise; what is left here is this isolate's own: its host calls and their wait.
    if (this.#process === undefined) return this.#superviseIsolate(current, elapsed);
    const sample = sampleProcess(this.#worker.pid);
    const workerCpuMs = sample === undefined || current.lastCpuMs === undefined ? 0 : sample.cpuMs - current.lastCpuMs;
    if (sample !== undefined) current.lastCpuMs = sample.cpuMs;
    // Time in host functions is not charged to the guest; it is counted against maxHostWait. A
    // call in flight does not make the guest idle, though: the guest is charged what the worker
    // ran meanwhile (its CPU time), so it meets requestTimeout however loaded the machine is.
    const charge = chargeTick({ elapsedMs: elapsed, workerCpuMs, hostCallsInFlight: this.#inflightHostCalls });
    current.guestMs += charge.guestMs;
    current.hostWaitMs += charge.hostWaitMs;
    const o = this.#options;
    if (current.deadline !== undefined && current.guestMs > current.deadline) {
      const isRequestTimeout = current.deadline === o.requestTimeout;
      const what = isRequestTimeout ? `requestTimeout (${o.requestTimeout} ms)` : `its start deadline (${current.deadline} ms)`;
      return this.#kill(
        new RuntimeTimeout(
          `the command ran past ${what}; the worker was killed and the runtime is closed`,
          isRequestTimeout ? 'requestTimeout' : 'startTimeout',
        ),
      );
    }
    if (o.maxHostWait !== undefined && current.hostWaitMs > o.maxHostWait) {
      return this.#kill(
        new RuntimeTimeout(`the command waited on host functions past maxHostWait (${o.maxHostWait} ms); the worker was killed`, 'maxHostWait'),
      );
    }
    if (sample !== undefined) {
      if (o.maxMemory !== undefined && sample.rssBytes > o.maxMemory) {
        return this.#kill(
          new WorkerCrashed(`the worker's resident memory (${sample.rssBytes} bytes) passed maxMemory (${o.maxMemory} bytes); it was killed`, 'maxMemory'),
        );
      }
      if (sample.threads > MAX_WORKER_THREADS) {
        return this.#kill(new WorkerCrashed(`the worker started ${sample.threads} threads, more than ${MAX_WORKER_THREADS}; it was killed`, 'threads'));
      }
      current.cpuAtStart ??= sample.cpuMs;
      if (o.requestTimeout !== undefined && sample.cpuMs - current.cpuAtStart > 2 * o.requestTimeout) {
        return this.#kill(cpuCapExceeded(current.activity, `its CPU time cap (${2 * o.requestTimeout} ms of CPU: twice requestTimeout)`));
      }
    }
    if (this.#process.reader.isStalled(o.writeStallTimeout ?? 10_000, now)) {
      return this.#kill(new WorkerCrashed('the worker started a frame and stopped sending it; it was killed', 'protocol'));
    }
    const stalledSince = this.#process.writeStalledSince();
    if (o.writeStallTimeout !== undefined && stalledSince !== undefined && now - stalledSince > o.writeStallTimeout) {
      return this.#kill(
        new WorkerCrashed(`the worker stopped reading its pipe for over writeStallTimeout (${o.writeStallTimeout} ms); it was killed`, 'writeStallTimeout'),
      );
    }
  }

  /** What a limit of this runtime's ends: the worker, or (on a shared worker) the isolate alone. */
  #endedWhat(): string {
    return this.#process === undefined ? 'the isolate was disposed (its worker lives on)' : 'the worker was killed';
  }

  /** The per-isolate part of the supervisor, for an isolate of a shared worker. */
  #superviseIsolate(current: Command, elapsed: number): void {
    const charge = chargeTick({ elapsedMs: elapsed, workerCpuMs: 0, hostCallsInFlight: this.#inflightHostCalls });
    current.hostWaitMs += charge.hostWaitMs;
    const o = this.#options;
    if (o.maxHostWait !== undefined && current.hostWaitMs > o.maxHostWait) {
      this.#kill(new RuntimeTimeout(`the command waited on host functions past maxHostWait (${o.maxHostWait} ms); ${this.#endedWhat()}`, 'maxHostWait'));
    }
  }

  #kill(reason: StrataError): void {
    this.#worker.kill(reason);
  }

  /**
   * A host call or an import from guest code that ran after its command had ended: in a worker of
   * many isolates, the continuation of an async host call the command did not await runs as soon
   * as the call settles. Host functions and the module loader answer only during a command (its
   * limits, its deadline and its host-call count hold them), so the guest gets an error it can
   * catch, and the worker and its other isolates go on. Not a protocol violation: a careless guest
   * causes it, and answering it with an error gives a compromised worker nothing.
   */
  #refuseOutsideCommand(id: number, what: string): void {
    const message = `${what} was called by guest code that ran after its command had ended (a promise the command did not await); the host answers only during a command: await it in the command that started it`;
    try {
      this.#worker.reply({ type: 'callResult', id, outcome: { ok: false, error: { class: 'StrataError', name: 'Error', message: message.slice(0, 4096) } } });
    } catch (error) {
      this.#kill(new WorkerCrashed(`a refusal could not be sent to the worker: ${describeHostError(error, false).message}`, 'protocol', { cause: error }));
    }
  }

  #violation(what: string): void {
    this.#worker.kill(new WorkerCrashed(`protocol violation: the worker sent ${what}; it was killed`, 'protocol'), 'worker');
  }

  #onWorkerExit(error: StrataError): void {
    this.#shutDown(error);
  }

  #shutDown(reason: StrataError): void {
    if (!this.#closed) {
      this.#closed = true;
      this.#closeReason = reason;
      this.#egressAbort.abort(reason);
      this.#console.stopCaptures();
      const listeners = this.#closeListeners;
      this.#closeListeners = [];
      for (const listener of listeners) queueMicrotask(() => listener(reason));
    }
    this.#worker.kill(reason);
    this.#current?.reject(reason);
    this.#stopSupervising();
  }

  // --- messages from the worker --------------------------------------------------------------

  #onMessage(message: Message): void {
    switch (message.type) {
      case 'result':
        return this.#finish(message.id, (c) => c.resolve(message.value));
      case 'error': {
        const error = fromErrorPayload(message.error);
        if (message.id === undefined) return this.#violation('an error outside any request');
        return this.#finish(message.id, (c) => {
          c.reject(error);
          // The worker's heap was disposed: this runtime is over.
          if (error instanceof HeapLimitExceeded) this.#shutDown(error);
        });
      }
      case 'console':
        return this.#onConsole(message);
      case 'call':
        return this.#onCall(message);
      case 'moduleRequest':
        return void this.#onModuleRequest(message);
      case 'report': {
        // One, during its start, which takes it.
        const onReport = this.#onReport;
        if (onReport === undefined) return this.#violation('a report outside its start');
        this.#onReport = undefined;
        return onReport(message.report);
      }
      default:
        return this.#violation(`a ${message.type} message, which workers never send`);
    }
  }

  #onConsole(message: MessageOf<'console'>): void {
    const stream = message.level === 'warn' || message.level === 'error' || message.level === 'trace' ? 'stderr' : 'stdout';
    this.#console.emit({ level: message.level, stream, text: message.text });
  }

  #onCall(message: MessageOf<'call'>): void {
    const current = this.#current;
    if (current === undefined) return this.#refuseOutsideCommand(message.id, `host function ${message.name.replace(/#\d+$/, '').slice(0, 100)}`);
    const bound = this.#functions.get(message.name);
    if (bound === undefined) return this.#violation(`a call to host function ${JSON.stringify(message.name.slice(0, 100))}, which it was never given`);
    current.hostCalls++;
    const o = this.#options;
    if (o.maxHostCalls !== undefined && current.hostCalls > o.maxHostCalls) {
      return this.#kill(
        new WorkerCrashed(`the guest made more than maxHostCalls (${o.maxHostCalls}) host calls in one command; ${this.#endedWhat()}`, 'maxHostCalls'),
      );
    }
    const fail = (name: string, text: string) =>
      this.#worker.reply({ type: 'callResult', id: message.id, outcome: { ok: false, error: { class: 'StrataError', name, message: text } } });
    if (bound.revoked) return fail('Error', `host function ${message.name.replace(/#\d+$/, '')} was revoked`);
    // Only calls that may run concurrently are limited: functions declared async, and those seen
    // returning a promise before. (The first promise from a plain function is counted, not refused.)
    const concurrent = bound.async || bound.returnedPromise;
    if (concurrent && this.#inflightHostCalls >= o.maxInflightHostCalls) {
      const refusal = `too many host calls in flight (maxInflightHostCalls is ${o.maxInflightHostCalls}); this call did not run`;
      // The caller expects a promise: give it a rejected one, as the function would.
      this.#worker.reply({ type: 'callPending', id: message.id });
      this.#worker.settle({ type: 'callResult', id: message.id, outcome: { ok: false, error: { class: 'StrataError', name: 'Error', message: refusal } } });
      return;
    }
    const started = performance.now();
    let result: unknown;
    try {
      result = insideHostFunction.run(this, () => bound.fn(...message.args));
    } catch (error) {
      current.syncHostMs += performance.now() - started;
      return this.#answer(message.id, message.name, { ok: false, error: this.#hostError(error) }, 'reply');
    }
    current.syncHostMs += performance.now() - started;
    const { thenable, error: thenError } = thenableOf(result);
    if (thenError !== undefined) return this.#answer(message.id, message.name, { ok: false, error: this.#hostError(thenError) }, 'reply');
    if (thenable) {
      bound.returnedPromise = true;
      this.#inflightHostCalls++;
      this.#worker.reply({ type: 'callPending', id: message.id });
      // Promise.resolve runs a thenable's `then`: whatever it throws becomes the rejection.
      Promise.resolve(result as PromiseLike<unknown>).then(
        (value) => this.#settleAsync(message.id, message.name, { settled: 'fulfilled', value }),
        (error: unknown) => this.#settleAsync(message.id, message.name, { settled: 'rejected', error }),
      );
      return;
    }
    this.#answer(message.id, message.name, this.#outcome(result), 'reply');
  }

  #settleAsync(id: number, label: string, settlement: { settled: 'fulfilled'; value: unknown } | { settled: 'rejected'; error: unknown }): void {
    this.#inflightHostCalls--;
    if (this.#closed) return;
    const outcome = settlement.settled === 'fulfilled' ? this.#outcome(settlement.value) : { ok: false as const, error: this.#hostError(settlement.error) };
    this.#answer(id, label, outcome, 'settle');
  }

  /**
   * Sends a host call's outcome. A value the wire cannot carry (over its frame size, node count or
   * depth) becomes an error the guest can catch, naming the limit; it never throws here, where it
   * would reach this process's event loop.
   */
  #answer(id: number, label: string, outcome: MessageOf<'callResult'>['outcome'], via: 'reply' | 'settle'): void {
    const send = (o: MessageOf<'callResult'>['outcome']) => {
      const message: Message = { type: 'callResult', id, outcome: o };
      if (via === 'reply') this.#worker.reply(message);
      else this.#worker.settle(message);
    };
    let reason: string;
    try {
      return send(outcome);
    } catch (error) {
      reason = error instanceof ProtocolError ? error.message : describeHostError(error, false).message;
    }
    const fn = label.replace(/#\d+$/, '');
    const refusal = `${fn}() returned a value that cannot cross to the worker: ${reason}`;
    try {
      send({ ok: false, error: { class: 'StrataError', name: 'RangeError', message: refusal.slice(0, 4096) } });
    } catch (error) {
      this.#kill(new WorkerCrashed(`the answer to a host call could not be sent: ${describeHostError(error, false).message}`, 'protocol', { cause: error }));
    }
  }

  #outcome(value: unknown): MessageOf<'callResult'>['outcome'] {
    try {
      assertTransferable(value, 'the host function returned a value that', MAX_VALUE_DEPTH);
      return { ok: true, value: value as never };
    } catch (error) {
      return { ok: false, error: { class: 'StrataError', name: 'TypeError', message: (error as Error).message } };
    }
  }

  #hostError(error: unknown): MessageOf<'callResult'>['outcome'] extends infer O ? (O extends { ok: false; error: infer E } ? E : never) : never {
    const { name, message } = describeHostError(error, this.#options.runtime.redactHostErrors);
    return { ...toErrorPayload(new StrataError(message)), name };
  }

  /**
   * Answers one import of the command in flight, within what is left of its `timeout` since its
   * first import: the worker waits for the answer, so a resolver or loader that never answers
   * would otherwise hold the command until the hard deadline kills the worker.
   */
  async #loadWithinTimeout(message: MessageOf<'moduleRequest'>): Promise<ResolvedModule> {
    const commandId = this.#current?.id;
    if (this.#linking?.commandId !== commandId) this.#linking = { commandId, since: performance.now() };
    const timeout = this.#options.runtime.timeout;
    const loading = this.#modules.load(message.specifier, message.referrer);
    if (timeout === Infinity) return loading;
    loading.catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      const left = Math.max(0, timeout - (performance.now() - this.#linking!.since));
      timer = setTimeout(
        () =>
          reject(new RuntimeTimeout(`the module graph did not link within the timeout (${timeout} ms): a module resolver or loader did not answer in time`)),
        left,
      );
    });
    try {
      return await Promise.race([loading, expired]);
    } finally {
      clearTimeout(timer);
    }
  }

  async #onModuleRequest(message: MessageOf<'moduleRequest'>): Promise<void> {
    if (this.#current === undefined) return this.#refuseOutsideCommand(message.id, `import ${JSON.stringify(message.specifier.slice(0, 200))}`);
    let outcome: MessageOf<'callResult'>['outcome'];
    try {
      const resolved = await this.#loadWithinTimeout(message);
      outcome = { ok: true, value: { specifier: resolved.specifier, source: resolved.source } };
    } catch (error) {
      outcome = { ok: false, error: toErrorPayload(error) };
    }
    // Answered even once closed: a shared worker's thread waits for it (a worker of its own is
    // being killed then, and the answer goes nowhere).
    if (this.#closed) outcome = { ok: false, error: toErrorPayload(this.#closeReason ?? new RuntimeClosed('the runtime is closed')) };
    try {
      this.#worker.reply({ type: 'callResult', id: message.id, outcome });
    } catch (error) {
      const reason = error instanceof ProtocolError ? error.message : describeHostError(error, false).message;
      const refusal = {
        class: 'ModuleNotFound' as const,
        message: `module ${JSON.stringify(message.specifier.slice(0, 200))} cannot cross to the worker: ${reason}`.slice(0, 4096),
      };
      try {
        this.#worker.reply({ type: 'callResult', id: message.id, outcome: { ok: false, error: refusal } });
      } catch (second) {
        this.#kill(
          new WorkerCrashed(`the answer to a module request could not be sent: ${describeHostError(second, false).message}`, 'protocol', { cause: second }),
        );
      }
    }
  }
}

// --- helpers -------------------------------------------------------------------------------

/** Guest code runs in `eval` and `evalModule`; the parent's own commands (configure, bind, revoke) run none. */
function activityOf(message: Message): WorkerActivity {
  return message.type === 'eval' || message.type === 'evalModule' ? 'guest' : 'host';
}

let testEntry: string | undefined;
/** @internal The worker entry tests set, if any. */
export function workerEntryForTests(): string | undefined {
  return testEntry;
}
/** @internal Tests run a compromised worker entry in place of the real one. */
export function setWorkerEntryForTests(entry: string | undefined): void {
  testEntry = entry;
}
