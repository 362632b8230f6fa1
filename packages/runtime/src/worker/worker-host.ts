import type { Message, MessageOf, WireObject } from '@strata/wire';
import { toErrorPayload } from '../error-codec.js';
import { StrataError } from '../errors.js';
import { applyPipeline, type PipelineResult, type PlannedStep } from '../layers/pipeline.js';
import { WATCHDOG_EXIT_CODE, type MemoryWatchdog } from '../native/native-paths.js';
import type { RuntimeOptions } from '../options.js';
import { readCodeCaches } from '../bootstrap-code-cache.js';
import { readBootstrapFiles } from './bootstrap-files.js';
import { layerBundles, runLayerBundle } from './layer-scripts.js';
import { useBootstrapDigests, usePrebuiltCodeCaches, type Runtime, type RuntimeSnapshot } from '../runtime.js';
import { mark } from '../timeline.js';
import type { ParentChannel } from './parent-channel.js';
import { hostError, WorkerSession, type PendingCalls, type SessionHost } from './worker-session.js';
import { monotonicMs } from '../monotonic.js';

/** Spares made before a worker of many says it is ready (each holds the start a few milliseconds). */
const SPARES_BEFORE_READY = 2;
/** How long the worker must have been idle before it makes a spare. */
const SPARE_REFILL_IDLE_MS = 20;
/**
 * A worker whose isolates keep it busy never idles that long: once it has been short of spares
 * this long, it makes one between two commands anyway (holding its thread a few milliseconds, at
 * most once per this period), so that opens in a busy worker are still hand-overs.
 */
const SPARE_STARVED_MS = 100;
/** The options a spare was made with, which an open must ask for as they are to be handed a spare. */
const SPARE_KEYS = ['timeout', 'maxHeapSize', 'maxBufferBytes', 'allowGlobals', 'maxOutputBytes', 'maxResultBytes'] as const;

/** What `configure` carries besides the Runtime options. */
interface WorkerSettings {
  maxMemory?: number;
  cpuSecondsPerCommand?: number;
  layerSteps?: PlannedStep[];
  /** Set for a worker of many isolates: how many it may hold at once (the parent opens them). */
  maxIsolates?: number;
  /** A worker of many: how many sessions it keeps made ahead (SandboxHostOptions.spareIsolates). */
  spareIsolates?: number;
  /** Whether the parent records a timeline (worker-main reads it; see timeline.ts). */
  timeline?: boolean;
}

/**
 * One configured worker: its layers applied, and its sessions. A worker of one isolate has its
 * session from `configure` on and exits when it ends; a worker of many (`maxIsolates`) has none
 * until the parent opens them, routes every request by its `isolate`, and lives until the parent
 * closes the pipe.
 */
export class WorkerHost implements SessionHost {
  readonly channel: ParentChannel;
  readonly pendingCalls: PendingCalls = new Map();
  readonly watchdog: MemoryWatchdog;
  readonly cpuSecondsPerCommand: number | undefined;
  readonly maxIsolates: number | undefined;
  /** A worker of many: the spares it keeps made ahead (each a few MiB). */
  readonly #spareTarget: number;
  readonly #RuntimeClass: typeof Runtime;
  readonly #pipeline: PipelineResult;
  // Whether the layers went to the parent in a report as soon as they were in force (configure's earlyReport).
  #layersReported = false;
  /** The Runtime options every session starts from: the configured ones, with the layers' context bootstraps. */
  readonly #baseOptions: RuntimeOptions;
  readonly #sessions = new Map<number | undefined, WorkerSession>();
  /** A worker of many: the snapshot of its bootstrap, made once before any guest code ran. */
  #snapshot: RuntimeSnapshot | undefined;
  /** A worker of many: sessions made ahead with the base options, so that an open is a hand-over. */
  readonly #spares: WorkerSession[] = [];
  /**
   * Isolates the parent opened ahead (an open with `ahead: true`) that have had no command yet:
   * spares that the parent holds, counted among the {@link #spareTarget} made ahead until their first command.
   */
  readonly #openedAhead = new Set<number | undefined>();
  /** Opens queued or in progress, by isolate: a dispose waits for its isolate's. */
  readonly #openings = new Map<number | undefined, Promise<undefined>>();
  #refilling = false;
  #refillTimer: NodeJS.Timeout | undefined;
  /** Since when the worker has been short of spares (monotonicMs()), or undefined when it is not. */
  #shortSince: number | undefined;
  /** Commands being served now; spares are made only while there are none. */
  #inFlight = 0;
  /** Each isolate's commands, one after another (the parent sends one at a time; this keeps it so). */
  readonly #queues = new Map<number | undefined, Promise<unknown>>();

  private constructor(
    channel: ParentChannel,
    watchdog: MemoryWatchdog,
    settings: WorkerSettings,
    RuntimeClass: typeof Runtime,
    pipeline: PipelineResult,
    base: RuntimeOptions,
  ) {
    this.channel = channel;
    this.watchdog = watchdog;
    this.cpuSecondsPerCommand = settings.cpuSecondsPerCommand;
    this.maxIsolates = settings.maxIsolates;
    this.#spareTarget = settings.spareIsolates ?? 0;
    this.#RuntimeClass = RuntimeClass;
    this.#pipeline = pipeline;
    this.#baseOptions = base;
  }

  /** Applies the layers the parent planned and, for a worker of one isolate, creates its Runtime. */
  static async create(channel: ParentChannel, options: WireObject, RuntimeClass: typeof Runtime, watchdog: MemoryWatchdog): Promise<WorkerHost> {
    const {
      maxMemory,
      cpuSecondsPerCommand,
      layerSteps,
      maxIsolates,
      spareIsolates,
      timeline: _timeline,
      bootstrapDigests,
      layerBundles: bundlesSent,
      bootstrapFiles,
      earlyReport,
      ...rest
    } = options as RuntimeOptions & WorkerSettings & { bootstrapDigests?: unknown; layerBundles?: unknown; bootstrapFiles?: unknown; earlyReport?: unknown };
    const sent = rest as RuntimeOptions;
    // the scripts the parent named by file rather than sent (src/isolated/bootstrap-files.ts), read before the layers
    const bootstrap = readBootstrapFiles(typeof sent.bootstrap === 'string' ? [sent.bootstrap] : [...(sent.bootstrap ?? [])], bootstrapFiles, watchdog);
    const runtimeOptions: RuntimeOptions = { ...sent, bootstrap };
    // The build-time code caches of the prelude and of the bootstrap scripts the parent named by
    // digest (src/bootstrap-code-cache.ts), read now: the layers take the files away. Without the
    // file (a build that could not make it), or with a damaged one, they compile from source.
    const keys = useBootstrapDigests(bootstrap, Array.isArray(bootstrapDigests) ? bootstrapDigests : []);
    try {
      usePrebuiltCodeCaches(readCodeCaches(new URL('./bootstrap.cache', import.meta.url), (key) => key.startsWith('prelude ') || keys.has(key)));
    } catch {
      // compiled from source
    }
    mark('code caches read');
    // The worker checks its own resident memory every 20 ms, also while the guest runs (the
    // parent checks every 50 ms from outside). Started before the layers: it opens
    // /proc/self/statm and /proc/self/task now and keeps them open, so a layer's seal may take
    // every file away (a deny-all Landlock domain) and the watchdog still reads them.
    if (maxMemory !== undefined) watchdog.start(maxMemory, 20, WATCHDOG_EXIT_CODE);
    mark('watchdog started');
    // The parent probed and planned; the worker applies, seals and self-tests, before any guest's
    // isolate exists (self-tests use throwaway isolates). From here on nothing the worker does
    // opens a file: every module and addon it uses was loaded at start (worker-main.ts).
    const bundles = layerBundles(bundlesSent);
    const pipeline = await applyPipeline(layerSteps ?? [], {
      platform: process.platform,
      layerModule: (module) => {
        const bundle = bundles.get(module);
        return bundle === undefined ? undefined : runLayerBundle(bundle, module, watchdog);
      },
      evalInGuest: async (code, extra) => {
        // Not the guest's soft timeout: a self-test is the layer's code, and on a loaded machine
        // it can take longer than a short guest timeout (a start failed as LayerFailed at load 15).
        // The parent's start deadline (startTimeout) bounds it, killing the worker.
        const refuseFetch = () => Promise.reject(new Error('a self-test has no network'));
        const probe = await RuntimeClass.start({
          ...WorkerSession.runtimeOptions(runtimeOptions, refuseFetch),
          timeout: Infinity,
          bootstrap: [...bootstrap, ...extra],
        });
        try {
          return await probe.eval(code);
        } finally {
          await probe.close();
        }
      },
    });
    mark('layers applied and self-tested');
    // The parent checks what the layers claim from outside (in /proc) as soon as it has their
    // report, while this worker makes the guest's isolate; the configure's answer then leaves
    // the layers out (describe()).
    if (earlyReport === true) channel.send({ type: 'report', report: { layers: pipeline.layers as never } });
    const base: RuntimeOptions = { ...runtimeOptions, bootstrap: [...bootstrap, ...pipeline.contextBootstraps] };
    const host = new WorkerHost(channel, watchdog, { maxMemory, cpuSecondsPerCommand, layerSteps, maxIsolates, spareIsolates }, RuntimeClass, pipeline, base);
    host.#layersReported = earlyReport === true;
    if (maxIsolates === undefined) {
      host.#sessions.set(undefined, await WorkerSession.open(host, RuntimeClass, base, undefined));
      return host;
    }
    // Many isolates: the bootstrap (with the layers' context bootstraps) is made into a startup
    // snapshot once, here, from host code only and before any guest's isolate exists, so each
    // isolate deserializes it instead of compiling and running it; and spares are made ahead.
    host.#snapshot = await RuntimeClass.createSnapshot({ bootstrap: base.bootstrap ?? [], strictEval: base.strictEval === true });
    // Two before the worker says it is ready; more (spareIsolates above 2) once it has idled.
    await host.#refill(Math.min(host.#spareTarget, SPARES_BEFORE_READY));
    host.#refillSoon();
    return host;
  }

  /** Whether this worker holds many isolates (and reads its commands as a stream). */
  get multi(): boolean {
    return this.maxIsolates !== undefined;
  }

  /** What the parent learns about this worker once it is configured. */
  describe(): WireObject {
    // Layers the parent has had in a report already are not sent again (encoding them is interpreted work).
    if (this.#layersReported) return { pid: process.pid, node: process.version };
    return { pid: process.pid, node: process.version, layers: this.#pipeline.layers as never };
  }

  /** Settles a call whose host function returned a promise. */
  settleAsyncCall(message: MessageOf<'callResult'>): void {
    const pending = this.pendingCalls.get(message.id);
    if (pending === undefined) return;
    this.pendingCalls.delete(message.id);
    if (message.outcome.ok) pending.resolve(message.outcome.value);
    else pending.reject(hostError(message.outcome.error));
  }

  /**
   * Runs one request of the parent, in its isolate's turn, and sends the answer: undefined when it
   * was answered now, else the promise of the rest. With one isolate, that is `'ended'` once the
   * isolate is over (the worker then exits).
   */
  dispatch(message: Message): Promise<'ended' | undefined> | undefined {
    const isolate = 'isolate' in message ? message.isolate : undefined;
    if (!this.multi) return Promise.resolve(this.serveOne(message));
    const opensAhead = message.type === 'command' && message.name === 'open' && message.params['ahead'] === true;
    if (opensAhead) this.#openedAhead.add(isolate);
    // Its first command (or its dispose): an isolate opened ahead is the parent's spare no more.
    else if (this.#openedAhead.size > 0) this.#openedAhead.delete(isolate);
    // The parent ends an isolate of many at once, also while its command waits on the host (the
    // command then fails with RuntimeClosed, and the parent drops its answer).
    if (message.type === 'command' && message.name === 'dispose') return this.#disposeNow(isolate, message.id);
    // An open with the worker's own options, for an isolate with nothing queued, while a spare is
    // ready: the hand-over is done now, with no turn to wait for (each promise of a turn costs
    // microseconds in the interpreter, and the isolate's first command waits behind them).
    if (
      !opensAhead &&
      message.type === 'command' &&
      message.name === 'open' &&
      message.params['options'] === undefined &&
      this.#spares.length > 0 &&
      !this.#queues.has(isolate)
    ) {
      this.#openFromSpare(isolate, message);
      if (this.#inFlight === 0) this.#refillSoon();
      return undefined;
    }
    // An eval for an isolate with nothing queued: run now, on this stack (see serveOne); what
    // cannot finish now (a promise the guest returned) is that isolate's turn, as below.
    const session = message.type === 'eval' && !this.#queues.has(isolate) ? this.#sessions.get(isolate) : undefined;
    if (session !== undefined) {
      clearTimeout(this.#refillTimer);
      const outcome = session.serveNow(message);
      if (outcome === undefined || outcome === 'ended') {
        this.#ended(isolate, outcome);
        if (this.#inFlight === 0) this.#refillSoon();
        return undefined;
      }
      return this.#inTurn(
        isolate,
        outcome.then((ended) => this.#ended(isolate, ended)),
      );
    }
    // An open ahead is no one's yet: it waits until the commands read with it have run.
    const previous = this.#queues.get(isolate) ?? (opensAhead ? new Promise<void>((resolve) => setImmediate(resolve)) : Promise.resolve());
    clearTimeout(this.#refillTimer);
    const turn = this.#inTurn(
      isolate,
      previous.then(() => this.#serve(isolate, message)),
    );
    if (message.type === 'command' && message.name === 'open') {
      // A dispose that overtakes the open waits for it: otherwise the isolate would be made after
      // its disposal, and live on in the worker with no parent.
      const opened = turn.then(
        () => undefined,
        () => undefined,
      );
      this.#openings.set(isolate, opened);
      void opened.then(() => {
        if (this.#openings.get(isolate) === opened) this.#openings.delete(isolate);
      });
    }
    return turn;
  }

  /** `turn`, the rest of a request of `isolate`, as its queue: the isolate's next request waits for it. */
  #inTurn(isolate: number | undefined, turn: Promise<'ended' | undefined>): Promise<'ended' | undefined> {
    this.#inFlight++;
    const settled = turn.then(
      () => undefined,
      () => undefined,
    );
    this.#queues.set(isolate, settled);
    void settled.then(() => {
      // Forget an idle isolate's queue, or a worker would keep one entry per isolate it ever held.
      if (this.#queues.get(isolate) === settled) this.#queues.delete(isolate);
      if (--this.#inFlight === 0) this.#refillSoon();
    });
    return turn;
  }

  /**
   * A worker of one isolate: runs one request of the parent and answers it, on this call's stack
   * when it can (an eval: see WorkerSession.serveNow), else the promise of the rest. worker-main
   * reads the next command only once this one is answered, so there is no queue to keep (and its
   * promises would cost every round trip, in the interpreter). `'ended'` once the isolate is over.
   */
  serveOne(message: Message): 'ended' | undefined | Promise<'ended' | undefined> {
    const session = this.#sessions.get(undefined);
    if (session === undefined || (message.type === 'command' && message.name === 'open')) return this.#serve(undefined, message);
    const outcome = session.serveNow(message);
    if (outcome !== undefined && outcome !== 'ended') return outcome.then((ended) => this.#ended(undefined, ended));
    return this.#ended(undefined, outcome);
  }

  #ended(isolate: number | undefined, outcome: 'ended' | undefined): 'ended' | undefined {
    if (outcome === 'ended') this.#sessions.delete(isolate);
    return outcome;
  }

  /** Sessions made ahead: the worker's spares and the isolates the parent opened ahead. */
  get #madeAhead(): number {
    return this.#spares.length + this.#openedAhead.size;
  }

  /**
   * Spares are made when the worker has had nothing to do for a moment, one at a time: making one
   * holds its thread for milliseconds, and a session's next command usually follows its last.
   */
  #refillSoon(): void {
    if (!this.multi || this.#madeAhead >= this.#spareTarget || this.#sessions.size + this.#spares.length >= this.maxIsolates!) return;
    clearTimeout(this.#refillTimer);
    this.#refillTimer = undefined;
    const now = monotonicMs();
    this.#shortSince ??= now;
    // Starved: now, between two commands (the next one waits for the spare's synchronous steps).
    if (now - this.#shortSince >= SPARE_STARVED_MS) {
      this.#refillOne();
      return;
    }
    this.#refillTimer = setTimeout(() => {
      this.#refillTimer = undefined;
      if (this.#inFlight === 0) this.#refillOne();
    }, SPARE_REFILL_IDLE_MS);
  }

  #refillOne(): void {
    this.#refill(1).then(
      () => {
        // Full again, or short from now on (a starved worker makes one spare per period).
        this.#shortSince = this.#madeAhead >= this.#spareTarget ? undefined : monotonicMs();
        this.#refillSoon();
      },
      // A spare that could not be made (memory) is not made: an open then makes its own isolate.
      () => undefined,
    );
  }

  async #refill(count = this.#spareTarget): Promise<void> {
    if (this.#refilling) return;
    this.#refilling = true;
    try {
      for (let made = 0; made < count && this.#madeAhead < this.#spareTarget && this.#sessions.size + this.#spares.length < this.maxIsolates!; made++) {
        const spare = await WorkerSession.open(this, this.#RuntimeClass, { ...this.#baseOptions, snapshot: this.#snapshot! }, undefined);
        // One evaluation ahead, so that the session's first pays no first-run costs (the worker is jitless).
        await spare.warmUp();
        this.#spares.push(spare);
        mark('spare made');
      }
    } finally {
      this.#refilling = false;
    }
  }

  /** A spare, when the isolate asks for nothing but the base options (a spare was made with them). */
  #takeSpare(options: RuntimeOptions): WorkerSession | undefined {
    if (options.bootstrap !== undefined) return undefined;
    const base = this.#baseOptions as Record<string, unknown>;
    for (const key of SPARE_KEYS) {
      if (JSON.stringify((options as Record<string, unknown>)[key]) !== JSON.stringify(base[key])) return undefined;
    }
    return this.#spares.shift();
  }

  async #serve(isolate: number | undefined, message: Message): Promise<'ended' | undefined> {
    const id = 'id' in message && typeof message.id === 'number' ? message.id : undefined;
    if (message.type === 'command' && message.name === 'open') return this.#open(isolate, message);
    const session = this.#sessions.get(isolate);
    if (session === undefined) {
      this.#refuse(id, isolate, `there is no isolate ${String(isolate)} in this worker`);
      return undefined;
    }
    return this.#ended(isolate, await session.serve(message));
  }

  async #disposeNow(isolate: number | undefined, id: number): Promise<undefined> {
    await this.#openings.get(isolate);
    const session = this.#sessions.get(isolate);
    this.#sessions.delete(isolate);
    try {
      await session?.close();
      this.channel.send({ type: 'result', id, value: undefined, ...(isolate === undefined ? {} : { isolate }) });
    } catch (error) {
      this.channel.send({ type: 'error', id, error: toErrorPayload(error), ...(isolate === undefined ? {} : { isolate }) });
    }
    return undefined;
  }

  /** Whether `isolate` may be opened now; when not, the open is refused (answered with an error) and this is false. */
  #mayOpen(isolate: number | undefined, id: number): isolate is number {
    const why =
      !this.multi || isolate === undefined
        ? 'this worker holds one isolate; it opens no more'
        : this.#sessions.has(isolate)
          ? `isolate ${isolate} is open already`
          : this.#sessions.size >= this.maxIsolates!
            ? `this worker holds its maximum of ${this.maxIsolates} isolates`
            : undefined;
    if (why === undefined) return true;
    this.#refuse(id, isolate, why);
    return false;
  }

  /** An open handed a spare at once (see dispatch): the spare becomes `isolate`. */
  #openFromSpare(isolate: number | undefined, message: MessageOf<'command'>): void {
    if (!this.#mayOpen(isolate, message.id)) return;
    const session = this.#spares.shift()!;
    mark('open took a spare');
    session.adopt(isolate);
    this.#opened(isolate, session, message.id);
  }

  /** `session` is `isolate` from now on, and the parent is told. */
  #opened(isolate: number, session: WorkerSession, id: number): void {
    this.#sessions.set(isolate, session);
    this.channel.send({ type: 'result', id, value: undefined, isolate });
  }

  async #open(isolate: number | undefined, message: MessageOf<'command'>): Promise<undefined> {
    if (!this.#mayOpen(isolate, message.id)) return undefined;
    try {
      // No options: the worker's own, with which it made its spares.
      const asked = message.params['options'] as RuntimeOptions | undefined;
      // An open ahead takes a spare or is refused: an isolate made now would hold up the commands behind it.
      if (message.params['ahead'] === true && this.#spares.length === 0) return this.#refuse(message.id, isolate, 'no spare to open ahead');
      const options = asked ?? {};
      let session = asked === undefined ? this.#spares.shift() : this.#takeSpare(asked);
      mark(session === undefined ? 'open made an isolate' : 'open took a spare');
      if (session !== undefined) session.adopt(isolate);
      else if (options.bootstrap === undefined) {
        // The worker's own bootstrap: from its snapshot.
        const { bootstrap: _, strictEval: __, ...rest } = { ...this.#baseOptions, ...options };
        session = await WorkerSession.open(this, this.#RuntimeClass, { ...rest, snapshot: this.#snapshot! }, isolate);
      } else {
        // A bootstrap of the isolate's own, compiled for it; the layers' context bootstraps run after it.
        const own = typeof options.bootstrap === 'string' ? [options.bootstrap] : [...options.bootstrap];
        const merged: RuntimeOptions = { ...this.#baseOptions, ...options, bootstrap: [...own, ...this.#pipeline.contextBootstraps] };
        session = await WorkerSession.open(this, this.#RuntimeClass, merged, isolate);
      }
      this.#opened(isolate, session, message.id);
    } catch (error) {
      this.#openedAhead.delete(isolate);
      this.channel.send({ type: 'error', id: message.id, error: toErrorPayload(error), isolate });
    }
    return undefined;
  }

  #refuse(id: number | undefined, isolate: number | undefined, why: string): undefined {
    this.#openedAhead.delete(isolate);
    const message: MessageOf<'error'> = { type: 'error', error: toErrorPayload(new StrataError(why)) };
    if (id !== undefined) message.id = id;
    if (isolate !== undefined) message.isolate = isolate;
    this.channel.send(message);
    return undefined;
  }
}
