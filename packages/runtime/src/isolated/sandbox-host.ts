/**
 * SandboxHost: one sandboxed worker process of one tenant, holding many isolates. Each isolate
 * is an `IsolatedRuntime` of its own (its context, limits, host functions, console, bootstrap);
 * they share the process's OS sandbox, CPU cap and fate.
 *
 * @module
 */
import type { Message, MessageOf } from '@strata/wire';
import { InvalidOption, RuntimeClosed, SandboxHostFull, StrataError, WorkerCrashed } from '../errors.js';
import { fromErrorPayload } from '../error-codec.js';
import type { SandboxReport } from '../layers/pipeline.js';
import { resolveIsolatedOptions, type IsolatedRuntimeOptions, type ResolvedIsolatedOptions } from './isolated-options.js';
import { internals, MAX_WORKER_THREADS, workerEntryForTests, type IsolatedRuntime } from './isolated-runtime.js';
import { takeWorker } from './prewarm.js';
import { FIRST_REQUEST_ID, configureOptions, endUnverified, finishLaunch, isolateOptions, prepareLaunch } from './worker-launch.js';
import { WorkerEndedWhileChecked } from './verify-worker.js';
import type { WorkerActivity } from './worker-end.js';
import type { WorkerPort } from './worker-port.js';
import { sampleMainThreadCpuMs, sampleProcess, type WorkerProcess } from './worker-process.js';

/** The options of a SandboxHost: its tenant, how many isolates it holds, and the worker's and every isolate's defaults. */
export interface SandboxHostOptions extends IsolatedRuntimeOptions {
  /**
   * Whose isolates this worker holds. Required: a worker only ever holds isolates of one tenant,
   * because they share its OS sandbox and its fate (a V8 escape in one reaches the others).
   */
  tenant: string;
  /**
   * Isolates open at once, at most. Default 100; from 1 to 10 000. `maxMemory` (default 1 GiB) is
   * the whole worker's ceiling, not an isolate's: size it for what the isolates may hold together
   * (each up to its `maxHeapSize` and `maxBufferBytes`). Past it the worker is killed, and every
   * isolate in it.
   */
  maxIsolates?: number;
  /**
   * Isolates kept made ahead, so that an open is a hand-over rather than a new isolate (5–12 ms
   * of the worker's thread with `WEB_POLYFILLS`, from its snapshot). Default 2; from 0 to 64. One
   * of them the host opens ahead: an `open()` with no options of its own takes it without writing
   * to the worker, and its first command is the worker's first word of it. The others the worker
   * keeps, for opens that come faster or carry options. Each costs an idle isolate's memory
   * (about 3 MiB with `WEB_POLYFILLS`); isolates made ahead and open ones are never more than
   * `maxIsolates`, and the host opens none ahead in the last place. The worker makes them one at
   * a time when it has been idle for 20 ms, or, kept busy, one per 100 ms between two commands:
   * raise it for opens that come in bursts.
   */
  spareIsolates?: number;
}

/**
 * What may differ per isolate of one worker: the isolate's own limits and what only the parent
 * enforces. The rest (the layers, `sandbox`, `maxMemory`, `jitless`, `strictEval`, V8 flags,
 * `workerNode`, `clock`, `writeStallTimeout`) is the process's, set on {@link SandboxHost.start}.
 */
export type IsolateOptions = Pick<
  IsolatedRuntimeOptions,
  | 'timeout'
  | 'maxHeapSize'
  | 'maxBufferBytes'
  | 'bootstrap'
  | 'allowGlobals'
  | 'maxOutputBytes'
  | 'maxResultBytes'
  | 'redactHostErrors'
  | 'egress'
  | 'requestTimeout'
  | 'timeoutGrace'
  | 'maxHostCalls'
  | 'maxHostWait'
  | 'maxInflightHostCalls'
>;

/** The keys of {@link IsolateOptions}: what `open` accepts. */
export const ISOLATE_OPTIONS = Object.freeze([
  'timeout',
  'maxHeapSize',
  'maxBufferBytes',
  'bootstrap',
  'allowGlobals',
  'maxOutputBytes',
  'maxResultBytes',
  'redactHostErrors',
  'egress',
  'requestTimeout',
  'timeoutGrace',
  'maxHostCalls',
  'maxHostWait',
  'maxInflightHostCalls',
] as const);

const DEFAULT_MAX_ISOLATES = 100;
const MAX_MAX_ISOLATES = 10_000;
const SUPERVISOR_TICK_MS = 50;
/** The shortest wait for the worker to confirm an isolate's disposal before the process is deemed stuck. */
const MIN_DISPOSE_GRACE_MS = 2_000;
/** The id of the parent's own commands to an isolate (open, dispose): a runtime's own ids start at 1. */
const HOST_COMMAND_ID = 0;
const TENANT_MAX_CHARS = 256;
/** After the worker refused an open ahead (no spare), the next try waits this long: the worker makes a spare after idling 20 ms. */
const AHEAD_RETRY_MS = 25;
/** How long an open waits for the worker to confirm the isolate opened ahead before it opens its own. */
const AHEAD_WAIT_MS = 5;
/** Each isolate's request ids are a range of their own (2^32 of them; isolate ids stay below 2^21, in safe integers). */
const REQUEST_IDS_PER_ISOLATE = 2 ** 32;
/** Isolates one worker opens in its life, at most (then it is full for good: start another). */
const MAX_LIFETIME_ISOLATES = 2 ** 20;
/** The tenant of a pool's spare until its first checkout claims it (never a valid tenant: too long). */
const UNCLAIMED = '(unclaimed)'.padEnd(TENANT_MAX_CHARS + 1, '.');

/** How many isolates a host's worker holds at most, and keeps made ahead. */
export interface HostIsolates {
  readonly maxIsolates: number;
  readonly spareIsolates: number;
}

/** The default and the ceiling of `spareIsolates`. */
const DEFAULT_SPARE_ISOLATES = 2;
const MAX_SPARE_ISOLATES = 64;

/** `spareIsolates` checked: an integer from 0 to 64 (`undefined`: the default). */
export function checkSpareIsolates(value: unknown, where: string): number {
  const spares = value ?? DEFAULT_SPARE_ISOLATES;
  if (typeof spares !== 'number' || !Number.isSafeInteger(spares) || spares < 0 || spares > MAX_SPARE_ISOLATES) {
    throw new InvalidOption(`${where}: spareIsolates must be an integer from 0 to ${MAX_SPARE_ISOLATES} (got ${String(value)})`);
  }
  return spares;
}

/** What SandboxPool needs of a host beyond its public API. Not exported from the package. */
export interface HostInternals {
  /** A host for a pool, started before any tenant claims it. */
  startSpare(options: IsolatedRuntimeOptions, isolates: HostIsolates): Promise<SandboxHost>;
  /** Gives a pool's spare host (started for no one yet) to its first tenant; refuses another tenant once claimed. */
  claim(host: SandboxHost, tenant: string): void;
}

export let hostInternals: HostInternals;

// Proves that a construction comes from this module (the factory): `new SandboxHost()` from JavaScript
// gets a clear error instead of a half-made host.
const FACTORY = Symbol('SandboxHost.start');

/**
 * One sandboxed worker process of one tenant, holding many isolates: the same launch chain,
 * layers, self-tests and outside verification as an `IsolatedRuntime` of its own, at the cost of
 * an isolate (a few MiB) per session instead of a process (tens of MiB).
 *
 * What one isolate does ends that isolate only: its soft timeout, heap limit, output and result
 * caps, host-call limits (`maxHostCalls`, `maxHostWait`), and its `close()`. What the process
 * does ends every isolate in it, each with `WorkerCrashed` naming the cause: a V8 fatal error,
 * `maxMemory` (the whole worker's), too many threads, the CPU cap, a protocol violation, and a
 * thread stuck in code V8 cannot interrupt past `requestTimeout` (reason `'stuck'`). The isolates
 * run on the worker's one thread: a guest that spins delays its neighbours' commands until its
 * soft timeout stops it.
 *
 * ```ts
 * await using host = await SandboxHost.start({ tenant: 'acme', maxIsolates: 50 });
 * await using rt = await host.open({ timeout: 1_000 });
 * await rt.eval('1 + 1'); // 2
 * ```
 */
export class SandboxHost {
  #tenant: string;
  readonly #maxIsolates: number;
  readonly #spareIsolates: number;
  /**
   * An isolate opened ahead (one of the spares), handed to the next open with no options of its
   * own once the worker has confirmed it (`ready`; the worker refuses one when it has no spare):
   * that open then writes nothing, and its first command is the worker's first word of it.
   */
  #ahead: { readonly port: IsolatePort; ready: boolean; opened: Promise<void> } | undefined;
  #aheadWanted = false;
  /** Opens waiting for the worker to confirm the isolate opened ahead. */
  #waitingForAhead = 0;
  /** After a refusal (the worker had no spare), no open ahead before this (performance.now()). */
  #aheadNotBefore = 0;
  readonly #options: Readonly<Record<string, unknown>>;
  readonly #resolved: ResolvedIsolatedOptions;
  readonly #worker: WorkerProcess;
  #report: SandboxReport;
  // Whether an isolate of a tenant was opened (a pool's spare is claimed by its first tenant).
  #claimed = false;
  readonly #ports = new Map<number, IsolatePort>();
  #nextIsolate = 1;
  // Ports that are ending (disposal asked, not confirmed): in #ports, but not open.
  #ending = 0;
  // How many isolates run guest code, and how many the parent's own commands.
  readonly #busy = { guest: 0, host: 0 };
  #closed = false;
  #closing = false;
  #closeReason: StrataError | undefined;
  #ticker: NodeJS.Timeout | undefined;
  // The CPU time of the worker's main thread when its last frame arrived: read lazily, on the first tick after it.
  #cpuAtLastFrame: number | undefined;
  // Since when the worker has been seen stopped while isolates were busy.
  #stoppedSince: number | undefined;
  readonly #closeListeners: ((reason: StrataError) => void)[] = [];

  static {
    hostInternals = {
      startSpare: (options, isolates) => SandboxHost.#launch(options, UNCLAIMED, isolates),
      claim: (host, tenant) => {
        if (host.#claimed && host.#tenant !== tenant)
          throw new StrataError(`this worker holds tenant ${JSON.stringify(host.#tenant)}'s isolates; it never takes another's`);
        host.#claimed = true;
        host.#tenant = tenant;
        host.#report = Object.freeze({ ...host.#report, tenant });
      },
    };
  }

  private constructor(
    token: symbol,
    tenant: string,
    isolates: HostIsolates,
    options: Record<string, unknown>,
    resolved: ResolvedIsolatedOptions,
    worker: WorkerProcess,
    report: SandboxReport,
  ) {
    if (token !== FACTORY) throw new InvalidOption('SandboxHost has no public constructor: use `await SandboxHost.start(options)`');
    this.#tenant = tenant;
    this.#maxIsolates = isolates.maxIsolates;
    this.#spareIsolates = isolates.spareIsolates;
    this.#options = options;
    this.#resolved = resolved;
    this.#worker = worker;
    this.#report = Object.freeze({ ...report, tenant });
    worker.setMessageHandler((message) => this.#route(message));
    worker.onExit((error) => this.#onWorkerExit(error));
  }

  /**
   * Starts a worker for `tenant` (or takes the prewarmed spare), applies and verifies its layers,
   * and returns once isolates can be opened in it.
   *
   * @throws {@link InvalidOption}, {@link SandboxUnavailable}, {@link WorkerCrashed}, as `IsolatedRuntime.start`.
   */
  static async start(options: SandboxHostOptions): Promise<SandboxHost> {
    if (options === null || typeof options !== 'object' || Array.isArray(options))
      throw new InvalidOption('SandboxHost.start(options): options must be an object');
    const { tenant, maxIsolates: requested, spareIsolates: requestedSpares, ...rest } = options;
    if (typeof tenant !== 'string' || tenant.length === 0 || tenant.length > TENANT_MAX_CHARS) {
      throw new InvalidOption(
        `SandboxHost.start: tenant must be a non-empty string of at most ${TENANT_MAX_CHARS} characters (a worker holds one tenant's isolates only)`,
      );
    }
    const maxIsolates = requested ?? DEFAULT_MAX_ISOLATES;
    if (!Number.isSafeInteger(maxIsolates) || maxIsolates < 1 || maxIsolates > MAX_MAX_ISOLATES) {
      throw new InvalidOption(`SandboxHost.start: maxIsolates must be an integer from 1 to ${MAX_MAX_ISOLATES} (got ${String(requested)})`);
    }
    const spareIsolates = checkSpareIsolates(requestedSpares, 'SandboxHost.start');
    const host = await SandboxHost.#launch(rest, tenant, { maxIsolates, spareIsolates });
    host.#claimed = true;
    return host;
  }

  static async #launch(rest: IsolatedRuntimeOptions, tenant: string, isolates: HostIsolates): Promise<SandboxHost> {
    const resolved = resolveIsolatedOptions(rest);
    const launch = await prepareLaunch(resolved, workerEntryForTests());
    // Known before the worker is: a new worker is sent it at spawn (a spare when it is taken).
    const configuration: MessageOf<'configure'> = { type: 'configure', id: FIRST_REQUEST_ID, options: configureOptions(resolved, launch, isolates) };
    const { worker, firstSent } = await takeWorker(launch.plan, resolved.prewarm, resolved.startTimeout, configuration);
    let report: SandboxReport;
    try {
      const layers = await configure(worker, configuration, firstSent, Math.max(resolved.startTimeout, resolved.requestTimeout ?? 0));
      // Only then may guest code run: what the worker claims is checked from outside (in /proc).
      report = finishLaunch(launch, worker.pid, layers);
    } catch (error) {
      if (error instanceof WorkerEndedWhileChecked) throw await endUnverified(worker, error);
      await killAndWait(worker, error instanceof StrataError ? error : new WorkerCrashed('the worker failed to start', 'start'));
      throw error;
    }
    const host = new SandboxHost(FACTORY, tenant, isolates, rest as Record<string, unknown>, resolved, worker, report);
    await host.#warmUp();
    host.#openAhead();
    return host;
  }

  /** The tenant whose isolates this worker holds. */
  get tenant(): string {
    return this.#tenant;
  }

  /** The worker's process id. */
  get pid(): number {
    return this.#worker.pid;
  }

  /** The worker's layer report (every isolate's report is this one, with its `sharedWith`). */
  get report(): SandboxReport {
    return this.#report;
  }

  /** Isolates open now (opening included). */
  get isolates(): number {
    return this.#ports.size - this.#ending - (this.#ahead === undefined ? 0 : 1) + this.#waitingForAhead;
  }

  /** How many isolates this worker may hold at once. */
  get maxIsolates(): number {
    return this.#maxIsolates;
  }

  /** Whether the worker is gone (closed, or it died). */
  get closed(): boolean {
    return this.#closed;
  }

  /** Whether `open()` would find room now: the host is not closing, and holds fewer than `maxIsolates`. */
  get hasRoom(): boolean {
    return !this.#closing && this.#nextIsolate < MAX_LIFETIME_ISOLATES && this.isolates < this.#maxIsolates;
  }

  /**
   * Opens an isolate in this worker: an `IsolatedRuntime` with the full API, whose options are
   * the host's with `options` over them.
   *
   * @throws {@link InvalidOption} for an option that is the process's (set it on `start`),
   * {@link SandboxHostFull} when `maxIsolates` are open, the reason the host closed when it has.
   */
  async open(options: IsolateOptions = {}): Promise<IsolatedRuntime> {
    if (options === null || typeof options !== 'object' || Array.isArray(options)) throw new InvalidOption('open(options): options must be an object');
    for (const key of Object.keys(options)) {
      if (!(ISOLATE_OPTIONS as readonly string[]).includes(key)) {
        throw new InvalidOption(
          `open(options): ${key} is the worker's, not an isolate's: set it on SandboxHost.start (an isolate may set ${ISOLATE_OPTIONS.join(', ')})`,
        );
      }
    }
    const own = Object.keys(options).length > 0;
    // An isolate opened ahead that the worker has not confirmed yet: its answer is near (one
    // round trip), and an open sent now would find the worker one spare short. Not for long: a
    // worker kept busy by a neighbour answers late, and the open goes to it meanwhile. Counted as
    // open while it waits: the host is not empty (a pool closes an empty one).
    if (!own && this.#ahead?.ready === false) {
      this.#waitingForAhead++;
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([this.#ahead.opened, new Promise((resolve) => (timer = setTimeout(resolve, AHEAD_WAIT_MS)))]);
      } finally {
        clearTimeout(timer);
        this.#waitingForAhead--;
      }
    }
    if (this.#closed) throw this.#closeReason!;
    if (this.#closing) throw new RuntimeClosed('the SandboxHost is closing');
    if (this.isolates >= this.#maxIsolates)
      throw new SandboxHostFull(`this worker holds its maximum of ${this.#maxIsolates} isolates; close one, or start another SandboxHost`);
    const ahead = this.#ahead;
    if (ahead?.ready === true && !own) {
      this.#ahead = undefined;
      this.#openAheadSoon();
      return this.#attach(this.#resolved, ahead.port);
    }
    if (this.#nextIsolate >= MAX_LIFETIME_ISOLATES) {
      throw new SandboxHostFull(`this worker has opened the ${MAX_LIFETIME_ISOLATES} isolates a worker opens in its life; start another SandboxHost`);
    }
    // An open ahead the worker refused (it had no spare then) is tried again after each open.
    this.#openAheadSoon();
    const resolved = !own ? this.#resolved : resolveIsolatedOptions({ ...this.#options, ...options });
    const port = this.#newPort(resolved.requestTimeout);
    const ownBootstrap = options.bootstrap !== undefined;
    // No options of its own: the worker's own (it made its spares with them), sent as none.
    const sent = !own ? undefined : isolateOptions(resolved, ownBootstrap);
    const opening = port.open(sent, Math.max(resolved.startTimeout, resolved.requestTimeout ?? 0), !ownBootstrap);
    // With the worker's own bootstrap (a spare, or its snapshot), the handle is given at once:
    // the worker runs the isolate's commands after its open, in turn, and an open that fails ends
    // the handle with its error. An isolate's own bootstrap is awaited, so that its errors are open()'s.
    if (ownBootstrap) await opening;
    else opening.catch(() => undefined);
    return this.#attach(resolved, port);
  }

  /** The port of the next isolate id, registered. */
  #newPort(requestTimeout: number | undefined): IsolatePort {
    const id = this.#nextIsolate++;
    const port = new IsolatePort(this, id, this.#worker, requestTimeout);
    this.#ports.set(id, port);
    return port;
  }

  #attach(resolved: ResolvedIsolatedOptions, port: IsolatePort): IsolatedRuntime {
    return internals.attach(resolved, port, this.#report, {
      tenant: this.#tenant,
      firstRequestId: port.id * REQUEST_IDS_PER_ISOLATE + 1,
      sharedWith: () => Math.max(0, this.isolates - 1),
    });
  }

  /**
   * Opens an isolate ahead, when the host keeps spares, has none opened ahead, and has room for it
   * beside one more open (the last place is left to an open with options of its own, which an
   * isolate opened ahead cannot serve).
   */
  #openAhead(): void {
    if (this.#spareIsolates === 0 || this.#ahead !== undefined || this.#closing || this.#closed) return;
    if (this.#nextIsolate >= MAX_LIFETIME_ISOLATES || this.#ports.size + 2 > this.#maxIsolates) return;
    const port = this.#newPort(this.#resolved.requestTimeout);
    const ahead = { port, ready: false, opened: Promise.resolve() };
    this.#ahead = ahead;
    // A refusal ends the port (forget() lets go of it): opens go to the worker until the next
    // try, once the worker has had time to make a spare.
    ahead.opened = port.open(undefined, 0, true, true).then(
      () => {
        ahead.ready = true;
        this.#aheadNotBefore = 0;
      },
      () => {
        this.#aheadWanted = true;
        this.#aheadNotBefore = performance.now() + AHEAD_RETRY_MS;
      },
    );
  }

  /**
   * {@link #openAhead} once the worker next answers (see #route), not now: written behind the
   * first command of the isolate just handed out, the open would wait in the pipe with it and
   * cost it the worker's work on both (measured: 0.1–0.3 ms more per open with a worker that slept).
   */
  #openAheadSoon(): void {
    if (this.#spareIsolates !== 0) this.#aheadWanted = true;
  }

  /** Calls `listener` once, with the reason, when the worker is gone (soon, if it already is). */
  onClosed(listener: (reason: StrataError) => void): void {
    if (this.#closed) queueMicrotask(() => listener(this.#closeReason!));
    else this.#closeListeners.push(listener);
  }

  /** Kills the worker: every isolate in it ends with `RuntimeClosed`. Resolves once the process is gone. */
  async close(): Promise<void> {
    this.#closing = true;
    await killAndWait(this.#worker, new RuntimeClosed('the SandboxHost is closed'));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  // --- for the ports -----------------------------------------------------------------------

  /** @internal Ends the whole process, for a reason no isolate of it survives. */
  killWorker(reason: StrataError): void {
    this.#worker.kill(reason);
  }

  /** @internal An isolate's activity changed from `from` to `to`: the process's is the busiest of its isolates'. */
  activityChanged(from: WorkerActivity, to: WorkerActivity): void {
    if (from === to) return;
    if (from !== 'idle') this.#busy[from]--;
    if (to !== 'idle') this.#busy[to]++;
    const activity: WorkerActivity = this.#busy.guest > 0 ? 'guest' : this.#busy.host > 0 ? 'host' : 'idle';
    this.#worker.setActivity(activity);
    if (activity === 'idle') {
      clearInterval(this.#ticker);
      this.#ticker = undefined;
    } else if (this.#ticker === undefined) {
      this.#ticker = setInterval(() => this.#supervise(), SUPERVISOR_TICK_MS);
      this.#ticker.unref();
    }
  }

  /** @internal An isolate is ending: it no longer counts as open. */
  isolateEnding(): void {
    this.#ending++;
  }

  /** @internal How long the worker may take to confirm a disposal: as long as any isolate's command may legitimately run. */
  disposeGraceMs(): number {
    let grace = MIN_DISPOSE_GRACE_MS;
    for (const port of this.#ports.values()) grace = Math.max(grace, port.requestTimeout ?? 0);
    return grace;
  }

  /** @internal The port is gone from the worker too. */
  forget(id: number, wasEnding: boolean): void {
    if (this.#ports.delete(id) && wasEnding) this.#ending--;
    if (this.#ahead?.port.id === id) this.#ahead = undefined;
    // A place freed: an isolate may be opened ahead in it.
    else if (this.#ahead === undefined && !this.#closed) this.#openAheadSoon();
  }

  // --- internals ---------------------------------------------------------------------------

  /** The host-call path once, both halves, before any isolate is handed out (the worker runs jitless). */
  async #warmUp(): Promise<void> {
    try {
      const rt = await this.open();
      try {
        rt.bindFunction('__strataWarmUp', async () => 0);
        await rt.eval('__strataWarmUp()');
      } finally {
        await rt.close();
      }
    } catch (error) {
      await this.close();
      throw error;
    }
  }

  #route(message: Message): void {
    this.#cpuAtLastFrame = undefined;
    if (this.#aheadWanted && (this.#aheadNotBefore === 0 || performance.now() >= this.#aheadNotBefore)) {
      // once the answer is delivered, and what its caller does at once with it is sent
      this.#aheadWanted = false;
      setImmediate(() => this.#openAhead());
    }
    const isolate = 'isolate' in message ? message.isolate : undefined;
    if (isolate === undefined || isolate >= this.#nextIsolate) {
      return this.killWorker(
        new WorkerCrashed(
          `protocol violation: the worker sent a ${message.type} message for ${isolate === undefined ? 'no isolate' : `isolate ${isolate}, which was never opened`}; it was killed`,
          'protocol',
        ),
      );
    }
    const port = this.#ports.get(isolate);
    if (port === undefined) return answerForGone(this.#worker, message);
    port.receive(message);
  }

  /** The process, from outside, while any isolate is busy: memory, threads, pipes, a stuck thread. */
  #supervise(): void {
    const o = this.#resolved;
    const now = performance.now();
    const sample = sampleProcess(this.#worker.pid);
    if (sample !== undefined) {
      if (o.maxMemory !== undefined && sample.rssBytes > o.maxMemory) {
        return this.killWorker(
          new WorkerCrashed(
            `the worker's resident memory (${sample.rssBytes} bytes) passed maxMemory (${o.maxMemory} bytes); it was killed, and every isolate in it`,
            'maxMemory',
          ),
        );
      }
      if (sample.threads > MAX_WORKER_THREADS) {
        return this.killWorker(
          new WorkerCrashed(`the worker started ${sample.threads} threads, more than ${MAX_WORKER_THREADS}; it was killed, and every isolate in it`, 'threads'),
        );
      }
      // A stopped worker (SIGSTOP) runs nothing, so it spends no CPU either: stopped past every
      // busy isolate's requestTimeout, it is killed as a stuck one is.
      const { busyFor, stuckAfter } = this.#stuckLimits();
      if (sample.stopped && busyFor !== undefined) {
        this.#stoppedSince ??= now;
        if (now - this.#stoppedSince > busyFor) {
          return this.killWorker(
            new WorkerCrashed(
              `the worker was stopped for over requestTimeout (${busyFor} ms) with commands in flight; it was killed, and every isolate in it`,
              'stuck',
            ),
          );
        }
      } else this.#stoppedSince = undefined;
      // The worker's thread runs one guest at a time, and every command ends in a frame: CPU time
      // of that thread since the last frame past every busy isolate's requestTimeout is a guest
      // that its soft timeout could not stop (a native builtin V8 cannot interrupt). Only killing
      // helps. The main thread's time alone: the GC's helper threads run beside a guest that allocates.
      const threadCpuMs = stuckAfter === undefined ? undefined : sampleMainThreadCpuMs(this.#worker.pid);
      if (threadCpuMs !== undefined) this.#cpuAtLastFrame ??= threadCpuMs;
      if (stuckAfter !== undefined && threadCpuMs !== undefined && threadCpuMs - this.#cpuAtLastFrame! > stuckAfter) {
        return this.killWorker(
          new WorkerCrashed(
            `an isolate of this worker ran past requestTimeout (${stuckAfter} ms of CPU without a word) in code that could not be interrupted; the worker was killed, and every isolate in it`,
            'stuck',
          ),
        );
      }
    }
    if (this.#worker.reader.isStalled(o.writeStallTimeout ?? 10_000, now)) {
      return this.killWorker(new WorkerCrashed('the worker started a frame and stopped sending it; it was killed, and every isolate in it', 'protocol'));
    }
    const stalledSince = this.#worker.writeStalledSince();
    if (o.writeStallTimeout !== undefined && stalledSince !== undefined && now - stalledSince > o.writeStallTimeout) {
      return this.killWorker(
        new WorkerCrashed(
          `the worker stopped reading its pipe for over writeStallTimeout (${o.writeStallTimeout} ms); it was killed, and every isolate in it`,
          'writeStallTimeout',
        ),
      );
    }
  }

  /**
   * In one pass over the isolates: the longest requestTimeout of those busy at all (`busyFor`)
   * and of those running guest code (`stuckAfter`); each undefined when none is, or one of them
   * has no requestTimeout.
   */
  #stuckLimits(): { busyFor: number | undefined; stuckAfter: number | undefined } {
    let busy: number | undefined = 0;
    let guest: number | undefined = 0;
    let anyBusy = false;
    let anyGuest = false;
    for (const port of this.#ports.values()) {
      if (port.activity === 'idle') continue;
      anyBusy = true;
      busy = port.requestTimeout === undefined || busy === undefined ? undefined : Math.max(busy, port.requestTimeout);
      if (port.activity !== 'guest') continue;
      anyGuest = true;
      guest = port.requestTimeout === undefined || guest === undefined ? undefined : Math.max(guest, port.requestTimeout);
    }
    return { busyFor: anyBusy ? busy : undefined, stuckAfter: anyGuest ? guest : undefined };
  }

  #onWorkerExit(error: StrataError): void {
    this.#closed = true;
    this.#closeReason = error;
    clearInterval(this.#ticker);
    this.#ticker = undefined;
    for (const port of [...this.#ports.values()]) port.gone(error);
    this.#ports.clear();
    for (const listener of this.#closeListeners.splice(0)) queueMicrotask(() => listener(error));
  }
}

/** One isolate of a SandboxHost's worker, as its IsolatedRuntime sees it. */
class IsolatePort implements WorkerPort {
  readonly #host: SandboxHost;
  readonly id: number;
  readonly #worker: WorkerProcess;
  state: 'opening' | 'open' | 'ending' | 'gone' = 'opening';
  activity: WorkerActivity = 'idle';
  requestTimeout: number | undefined;
  // Until a runtime takes the port (an isolate opened ahead has none): the worker has no reason
  // to say anything of an isolate that ran no command, so anything it says is a lie.
  #handler: (message: Message) => void = (message) =>
    this.#host.killWorker(
      new WorkerCrashed(
        `protocol violation: the worker sent a ${message.type} message for isolate ${this.id}, which has run no command; it was killed, and every isolate in it`,
        'protocol',
      ),
    );
  #exitListeners: ((error: StrataError) => void)[] = [];
  #endReason: StrataError | undefined;
  #pendingHostCommand: { resolve: () => void; reject: (error: unknown) => void } | undefined;
  #graceTimer: NodeJS.Timeout | undefined;
  // The call or module request the worker's thread is blocked on, until it is answered.
  #awaitingReply: number | undefined;

  constructor(host: SandboxHost, id: number, worker: WorkerProcess, requestTimeout: number | undefined) {
    this.#host = host;
    this.id = id;
    this.#worker = worker;
    this.requestTimeout = requestTimeout;
  }

  get pid(): number {
    return this.#worker.pid;
  }

  get exited(): boolean {
    return this.state === 'gone';
  }

  /**
   * Opens the isolate in the worker (`options` undefined: the worker's own); a worker that does not answer within `deadlineMs` is stuck
   * and is killed. `early`: the port is open at once (its runtime may send behind the open, which
   * the worker serves first); a failed open then ends the port with its error. `ahead`: opened
   * before anyone asked for it (the worker counts it among its spares until its first command),
   * with no deadline.
   */
  async open(options: MessageOf<'command'>['params'] | undefined, deadlineMs: number, early: boolean, ahead = false): Promise<void> {
    // An open ahead waits for no one: it keeps no process alive, and has no deadline (the worker
    // serves it when its thread is free, which a neighbour's long command may not be for a while).
    const release = ahead ? () => {} : this.#worker.hold();
    const timer = ahead
      ? undefined
      : setTimeout(
          () =>
            this.#host.killWorker(
              new WorkerCrashed(`the worker did not open an isolate within ${deadlineMs} ms; it was killed, and every isolate in it`, 'stuck'),
            ),
          deadlineMs,
        );
    // Busy while it opens (unless the runtime's own commands say so): the host's supervision
    // covers a worker that stops answering meanwhile.
    if (early) this.state = 'open';
    else this.setActivity('host');
    try {
      await new Promise<void>((resolve, reject) => {
        this.#pendingHostCommand = { resolve, reject };
        const params = options === undefined ? (ahead ? { ahead } : {}) : { options };
        this.#worker.send({ type: 'command', id: HOST_COMMAND_ID, name: 'open', params, isolate: this.id });
      });
      if (!early) this.state = 'open';
    } catch (error) {
      const reason = error instanceof StrataError ? error : new WorkerCrashed(`the worker could not open an isolate: ${String(error)}`, 'worker');
      this.gone(reason, reason);
      throw error;
    } finally {
      clearTimeout(timer);
      release();
      if (!early) this.setActivity('idle');
    }
  }

  setMessageHandler(handler: (message: Message) => void): void {
    this.#handler = handler;
  }

  onExit(listener: (error: StrataError) => void): void {
    if (this.state === 'gone') listener(this.#endReason!);
    else this.#exitListeners.push(listener);
  }

  setActivity(activity: WorkerActivity): void {
    const from = this.activity;
    this.activity = activity;
    this.#host.activityChanged(from, activity);
  }

  send(message: Message): void {
    if (this.state !== 'open') return;
    this.#worker.send({ ...message, isolate: this.id } as Message);
  }

  /** Exactly one answer per call the worker's thread waits on: a late one, after the port answered for itself, is dropped. */
  reply(message: Message): void {
    if (!('id' in message) || message.id !== this.#awaitingReply) return;
    this.#awaitingReply = undefined;
    this.#worker.reply(message);
  }

  settle(message: Message): void {
    if (this.state !== 'open') return;
    this.#worker.settle(message);
  }

  hold(): () => void {
    return this.#worker.hold();
  }

  /** Ends the isolate: the worker disposes it; one that cannot (its thread is stuck) is killed. */
  kill(reason: StrataError, scope: 'isolate' | 'worker' = 'isolate'): void {
    if (scope === 'worker') return this.#host.killWorker(reason);
    if (this.state !== 'open') return;
    this.state = 'ending';
    this.#host.isolateEnding();
    this.#endReason = reason;
    this.setActivity('idle');
    const release = this.#worker.hold();
    const grace = this.#host.disposeGraceMs();
    this.#graceTimer = setTimeout(() => {
      this.#host.killWorker(
        new WorkerCrashed(`the worker did not dispose an isolate within ${grace} ms (its thread is stuck); it was killed, and every isolate in it`, 'stuck'),
      );
    }, grace);
    this.#pendingHostCommand = {
      resolve: () => {
        release();
        this.gone(reason);
      },
      reject: () => {
        release();
        this.gone(reason);
      },
    };
    // The call that made the runtime end this isolate (past maxHostCalls) is still unanswered,
    // and the worker's thread waits for it: answered here, so the worker can read the dispose.
    if (this.#awaitingReply !== undefined) {
      refuseCall(this.#worker, this.#awaitingReply);
      this.#awaitingReply = undefined;
    }
    this.#worker.send({ type: 'command', id: HOST_COMMAND_ID, name: 'dispose', params: {}, isolate: this.id });
  }

  /** A message from the worker for this isolate. */
  receive(message: Message): void {
    if ((message.type === 'result' || message.type === 'error') && message.id === HOST_COMMAND_ID && this.#pendingHostCommand !== undefined) {
      const pending = this.#pendingHostCommand;
      this.#pendingHostCommand = undefined;
      if (message.type === 'result') pending.resolve();
      else pending.reject(fromErrorPayload(message.error));
      return;
    }
    if (this.state === 'open') {
      if (message.type === 'call' || message.type === 'moduleRequest') this.#awaitingReply = message.id;
      return this.#handler(message);
    }
    answerForGone(this.#worker, message);
  }

  /** The isolate is gone: disposed in the worker, or the worker with it (or, `ownReason`, its open failed). */
  gone(processError: StrataError, ownReason?: StrataError): void {
    if (this.state === 'gone') return;
    clearTimeout(this.#graceTimer);
    const wasEnding = this.state === 'ending';
    this.setActivity('idle');
    this.state = 'gone';
    this.#endReason ??= ownReason ?? processError;
    this.#pendingHostCommand?.reject(processError);
    this.#pendingHostCommand = undefined;
    this.#host.forget(this.id, wasEnding);
    for (const listener of this.#exitListeners.splice(0)) listener(this.#endReason);
  }
}

/**
 * A message from an isolate that is ending or gone: a call the worker's thread waits on is
 * answered with a refusal (or the thread would wait forever); everything else is dropped.
 */
function answerForGone(worker: WorkerProcess, message: Message): void {
  if (message.type === 'call' || message.type === 'moduleRequest') refuseCall(worker, message.id);
}

/** Answers the call (or module request) `id` the worker's thread waits on: the runtime is closed. */
function refuseCall(worker: WorkerProcess, id: number): void {
  worker.reply({ type: 'callResult', id, outcome: { ok: false, error: { class: 'StrataError', name: 'Error', message: 'the runtime is closed' } } });
}

/**
 * Sends `configure` (unless it was written at spawn: `sent`) and waits for the worker's answer,
 * within `deadlineMs` (a worker that does not answer is killed).
 */
async function configure(worker: WorkerProcess, configuration: MessageOf<'configure'>, sent: boolean, deadlineMs: number): Promise<SandboxReport['layers']> {
  const release = worker.hold();
  try {
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => worker.kill(new WorkerCrashed(`the worker did not apply its layers within its start deadline (${deadlineMs} ms); it was killed`, 'start')),
        deadlineMs,
      );
      worker.onExit((error) => {
        clearTimeout(timer);
        reject(error);
      });
      worker.setMessageHandler((message) => {
        clearTimeout(timer);
        if (message.type === 'result' && message.id === configuration.id) {
          const value = message.value as { layers?: SandboxReport['layers'] } | undefined;
          resolve(value?.layers ?? []);
        } else if (message.type === 'error' && message.id === configuration.id) {
          const error = fromErrorPayload(message.error);
          reject(error);
        } else {
          worker.kill(new WorkerCrashed(`protocol violation: the worker answered configure with a ${message.type} message; it was killed`, 'protocol'));
        }
      });
      if (sent) worker.deliverKeptMessages();
      else worker.send(configuration);
    });
  } finally {
    release();
  }
}

async function killAndWait(worker: WorkerProcess, reason: StrataError): Promise<void> {
  if (worker.exited) return;
  const release = worker.hold();
  const gone = new Promise<void>((resolve) => worker.onExit(() => resolve()));
  worker.kill(reason);
  await gone;
  release();
}
