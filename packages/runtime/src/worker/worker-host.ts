import type { Message, MessageOf, WireObject } from '@strata/wire';
import { toErrorPayload } from '../error-codec.js';
import { StrataError } from '../errors.js';
import { applyPipeline, type PipelineResult, type PlannedStep } from '../layers/pipeline.js';
import { WATCHDOG_EXIT_CODE, type MemoryWatchdog } from '../native/native-paths.js';
import type { RuntimeOptions } from '../options.js';
import type { Runtime } from '../runtime.js';
import type { ParentChannel } from './parent-channel.js';
import { hostError, WorkerSession, type PendingCalls, type SessionHost } from './worker-session.js';

/** What `configure` carries besides the Runtime options. */
interface WorkerSettings {
  maxMemory?: number;
  cpuSecondsPerCommand?: number;
  layerSteps?: PlannedStep[];
  /** Set for a worker of many isolates: how many it may hold at once (the parent opens them). */
  maxIsolates?: number;
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
  readonly #RuntimeClass: typeof Runtime;
  readonly #pipeline: PipelineResult;
  /** The Runtime options every session starts from: the configured ones, with the layers' context bootstraps. */
  readonly #baseOptions: RuntimeOptions;
  readonly #sessions = new Map<number | undefined, WorkerSession>();
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
    this.#RuntimeClass = RuntimeClass;
    this.#pipeline = pipeline;
    this.#baseOptions = base;
  }

  /** Applies the layers the parent planned and, for a worker of one isolate, creates its Runtime. */
  static async create(channel: ParentChannel, options: WireObject, RuntimeClass: typeof Runtime, watchdog: MemoryWatchdog): Promise<WorkerHost> {
    const { maxMemory, cpuSecondsPerCommand, layerSteps, maxIsolates, ...rest } = options as RuntimeOptions & WorkerSettings;
    const runtimeOptions = rest as RuntimeOptions;
    const bootstrap = typeof runtimeOptions.bootstrap === 'string' ? [runtimeOptions.bootstrap] : [...(runtimeOptions.bootstrap ?? [])];
    // The worker checks its own resident memory every 20 ms, also while the guest runs (the
    // parent checks every 50 ms from outside). Started before the layers: it opens
    // /proc/self/statm and /proc/self/task now and keeps them open, so a layer's seal may take
    // every file away (a deny-all Landlock domain) and the watchdog still reads them.
    if (maxMemory !== undefined) watchdog.start(maxMemory, 20, WATCHDOG_EXIT_CODE);
    // The parent probed and planned; the worker applies, seals and self-tests, before any guest's
    // isolate exists (self-tests use throwaway isolates). From here on nothing the worker does
    // opens a file: every module and addon it uses was loaded at start (worker-main.ts).
    const pipeline = await applyPipeline(layerSteps ?? [], {
      platform: process.platform,
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
    const base: RuntimeOptions = { ...runtimeOptions, bootstrap: [...bootstrap, ...pipeline.contextBootstraps] };
    const host = new WorkerHost(channel, watchdog, { maxMemory, cpuSecondsPerCommand, layerSteps, maxIsolates }, RuntimeClass, pipeline, base);
    if (maxIsolates === undefined) host.#sessions.set(undefined, await WorkerSession.open(host, RuntimeClass, base, undefined));
    return host;
  }

  /** Whether this worker holds many isolates (and reads its commands as a stream). */
  get multi(): boolean {
    return this.maxIsolates !== undefined;
  }

  /** What the parent learns about this worker once it is configured. */
  describe(): WireObject {
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
   * Runs one request of the parent, in its isolate's turn, and sends the answer. With one
   * isolate, resolves to `'ended'` once that isolate is over (the worker then exits).
   */
  dispatch(message: Message): Promise<'ended' | undefined> {
    const isolate = 'isolate' in message ? message.isolate : undefined;
    // The parent ends an isolate of many at once, also while its command waits on the host (the
    // command then fails with RuntimeClosed, and the parent drops its answer).
    if (this.multi && message.type === 'command' && message.name === 'dispose') return this.#disposeNow(isolate, message.id);
    const previous = this.#queues.get(isolate) ?? Promise.resolve();
    const turn = previous.then(() => this.#serve(isolate, message));
    const settled = turn.then(
      () => undefined,
      () => undefined,
    );
    this.#queues.set(isolate, settled);
    // Forget an idle isolate's queue, or a worker would keep one entry per isolate it ever held.
    void settled.then(() => {
      if (this.#queues.get(isolate) === settled) this.#queues.delete(isolate);
    });
    return turn;
  }

  async #serve(isolate: number | undefined, message: Message): Promise<'ended' | undefined> {
    const id = 'id' in message && typeof message.id === 'number' ? message.id : undefined;
    if (message.type === 'command' && message.name === 'open') return this.#open(isolate, message);
    const session = this.#sessions.get(isolate);
    if (session === undefined) {
      this.#refuse(id, isolate, `there is no isolate ${String(isolate)} in this worker`);
      return undefined;
    }
    const outcome = await session.serve(message);
    if (outcome === 'ended') this.#sessions.delete(isolate);
    return outcome;
  }

  async #disposeNow(isolate: number | undefined, id: number): Promise<undefined> {
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

  async #open(isolate: number | undefined, message: MessageOf<'command'>): Promise<undefined> {
    if (!this.multi || isolate === undefined) return this.#refuse(message.id, isolate, 'this worker holds one isolate; it opens no more');
    if (this.#sessions.has(isolate)) return this.#refuse(message.id, isolate, `isolate ${isolate} is open already`);
    if (this.#sessions.size >= this.maxIsolates!) return this.#refuse(message.id, isolate, `this worker holds its maximum of ${this.maxIsolates} isolates`);
    try {
      const options = (message.params['options'] ?? {}) as RuntimeOptions;
      // The layers' context bootstraps run in every isolate, after the isolate's own.
      const own = options.bootstrap === undefined ? undefined : typeof options.bootstrap === 'string' ? [options.bootstrap] : [...options.bootstrap];
      const bootstrap = own === undefined ? this.#baseOptions.bootstrap : [...own, ...this.#pipeline.contextBootstraps];
      const merged: RuntimeOptions = { ...this.#baseOptions, ...options, bootstrap };
      this.#sessions.set(isolate, await WorkerSession.open(this, this.#RuntimeClass, merged, isolate));
      this.channel.send({ type: 'result', id: message.id, value: undefined, isolate });
    } catch (error) {
      this.channel.send({ type: 'error', id: message.id, error: toErrorPayload(error), isolate });
    }
    return undefined;
  }

  #refuse(id: number | undefined, isolate: number | undefined, why: string): undefined {
    const message: MessageOf<'error'> = { type: 'error', error: toErrorPayload(new StrataError(why)) };
    if (id !== undefined) message.id = id;
    if (isolate !== undefined) message.isolate = isolate;
    this.channel.send(message);
    return undefined;
  }
}
