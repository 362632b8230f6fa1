import { ProtocolError, type ErrorPayload, type Message, type MessageOf, type WireObject } from '@strata/wire';
import type { EgressRequest } from '../egress/check-request.js';
import { FETCH_CANCEL_GLOBAL, FETCH_GLOBAL, type EgressContext } from '../egress/guest-fetch.js';
import type { EgressResponse } from '../egress/perform-request.js';
import { fromErrorPayload, toErrorPayload } from '../error-codec.js';
import { GuestFacingError } from '../host-errors.js';
import { HeapLimitExceeded, ModuleNotFound, StrataError } from '../errors.js';
import { applyPipeline, type PipelineResult, type PlannedStep } from '../layers/pipeline.js';
import type { ResolvedModule } from '../module-registry.js';
import { WATCHDOG_EXIT_CODE, type MemoryWatchdog } from '../native/native-paths.js';
import type { RuntimeOptions } from '../options.js';
import { kModuleSource, type Runtime } from '../runtime.js';
import type { ParentChannel } from './parent-channel.js';

/** The part of a bound global that is a host function: where it sits and the name the parent knows it by. */
type FunctionSite = [path: string[], label: string];

// Console methods the prelude has, mapped onto the wire's closed set of levels.
const WIRE_LEVELS: Readonly<Record<string, MessageOf<'console'>['level']>> = {
  log: 'log',
  info: 'info',
  debug: 'debug',
  dir: 'log',
  table: 'log',
  count: 'log',
  warn: 'warn',
  error: 'error',
  trace: 'trace',
  assert: 'error',
};

/**
 * One configured worker: its Runtime, and the translation between the parent's commands and
 * the Runtime's API. Host functions are stand-ins that ask the parent over the channel.
 */
export class WorkerSession {
  readonly #channel: ParentChannel;
  readonly #runtime: Runtime;
  readonly #pendingCalls = new Map<number, { resolve: (value: unknown) => void; reject: (error: unknown) => void }>();
  #currentId: number | undefined;
  #nextFetchId = 1;

  readonly #watchdog: MemoryWatchdog;
  readonly #cpuSecondsPerCommand: number | undefined;

  readonly #pipeline: PipelineResult;

  private constructor(channel: ParentChannel, runtime: Runtime, watchdog: MemoryWatchdog, cpuSecondsPerCommand: number | undefined, pipeline: PipelineResult) {
    this.#pipeline = pipeline;
    this.#channel = channel;
    this.#runtime = runtime;
    this.#watchdog = watchdog;
    this.#cpuSecondsPerCommand = cpuSecondsPerCommand;
    runtime.onConsole((entry) => {
      const level = WIRE_LEVELS[entry.level] ?? (entry.stream === 'stderr' ? 'error' : 'log');
      const message: MessageOf<'console'> = { type: 'console', level, text: entry.text };
      if (this.#currentId !== undefined) message.id = this.#currentId;
      channel.send(message);
    });
    runtime[kModuleSource]({ load: (request, referrer) => Promise.resolve(this.#requestModule(request, referrer)) });
  }

  /** Creates the Runtime from the options the parent sent. */
  static async create(channel: ParentChannel, options: WireObject, RuntimeClass: typeof Runtime, watchdog: MemoryWatchdog): Promise<WorkerSession> {
    const { maxMemory, cpuSecondsPerCommand, layerSteps, ...rest } = options as RuntimeOptions & {
      maxMemory?: number;
      cpuSecondsPerCommand?: number;
      layerSteps?: PlannedStep[];
    };
    // The parent redacts host errors itself; the worker passes them through as they come. The
    // guest's fetch is always answered by the parent, which holds the egress policy (or refuses,
    // saying why): the worker has no network and never sees the policy's credentials.
    let session: WorkerSession | undefined;
    const runtimeOptions: RuntimeOptions = { ...rest, redactHostErrors: false, egress: (request, context) => session!.#fetchViaParent(request, context) };
    const bootstrap = typeof runtimeOptions.bootstrap === 'string' ? [runtimeOptions.bootstrap] : [...(runtimeOptions.bootstrap ?? [])];
    // The worker checks its own resident memory every 20 ms, also while the guest runs (the
    // parent checks every 50 ms from outside). Started before the layers: it opens
    // /proc/self/statm and /proc/self/task now and keeps them open, so a layer's seal may take
    // every file away (a deny-all Landlock domain) and the watchdog still reads them.
    if (maxMemory !== undefined) watchdog.start(maxMemory, 20, WATCHDOG_EXIT_CODE);
    // The parent probed and planned; the worker applies, seals and self-tests, before the
    // guest's isolate exists (self-tests use throwaway isolates). From here on nothing the worker
    // does opens a file: every module and addon it uses was loaded at start (worker-main.ts).
    const pipeline = await applyPipeline(layerSteps ?? [], {
      platform: process.platform,
      evalInGuest: async (code, extra) => {
        // Not the guest's soft timeout: a self-test is the layer's code, and on a loaded machine
        // it can take longer than a short guest timeout (a start failed as LayerFailed at load 15).
        // The parent's start deadline (startTimeout) bounds it, killing the worker.
        const probe = await RuntimeClass.start({ ...runtimeOptions, timeout: Infinity, bootstrap: [...bootstrap, ...extra] });
        try {
          return await probe.eval(code);
        } finally {
          await probe.close();
        }
      },
    });
    const runtime = await RuntimeClass.start({ ...runtimeOptions, bootstrap: [...bootstrap, ...pipeline.contextBootstraps] });
    session = new WorkerSession(channel, runtime, watchdog, cpuSecondsPerCommand, pipeline);
    return session;
  }

  /**
   * The guest's fetch, asked of the parent under an id of this worker's; its refusals come back as
   * the guest should see them. When the guest aborts it, the parent is told to stop it (not when
   * this runtime closes: the parent is closing it then, and no command is running to carry a call).
   */
  async #fetchViaParent(request: EgressRequest, context: EgressContext): Promise<EgressResponse> {
    if (context.signal.aborted) throw new GuestFacingError('AbortError', 'fetch aborted before it was sent');
    const id = this.#nextFetchId++;
    context.signal.addEventListener(
      'abort',
      () => {
        if (this.#runtime.closed) return;
        try {
          this.#callParent(FETCH_CANCEL_GLOBAL, [id]);
        } catch {
          // The parent stops the request at its own deadline anyway.
        }
      },
      { once: true },
    );
    try {
      return (await this.#callParent(FETCH_GLOBAL, [request, id])) as EgressResponse;
    } catch (error) {
      const { name, message } = error as Error;
      throw new GuestFacingError(name === 'AbortError' ? 'AbortError' : 'TypeError', message);
    }
  }

  /** What the parent learns about this worker once it is configured. */
  describe(): WireObject {
    return { pid: process.pid, node: process.version, layers: this.#pipeline.layers as never };
  }

  /** The payload for an error, for the channel. */
  static errorPayload(error: unknown): ErrorPayload {
    return toErrorPayload(error);
  }

  /** Settles a call whose host function returned a promise. */
  settleAsyncCall(message: MessageOf<'callResult'>): void {
    const pending = this.#pendingCalls.get(message.id);
    if (pending === undefined) return;
    this.#pendingCalls.delete(message.id);
    if (message.outcome.ok) pending.resolve(message.outcome.value);
    else pending.reject(hostError(message.outcome.error));
  }

  /** Runs one command and sends its answer. */
  async serve(message: Message): Promise<void> {
    if (!('id' in message) || typeof message.id !== 'number') return;
    const id = message.id;
    this.#currentId = id;
    // The CPU cap is per command: a long-lived runtime must not die of many short ones.
    if (this.#cpuSecondsPerCommand !== undefined) this.#watchdog.setCpuSoftLimit(this.#cpuSecondsPerCommand);
    try {
      const value = await this.#run(message);
      this.#channel.send({ type: 'result', id, value: value as never });
    } catch (error) {
      this.#channel.send({ type: 'error', id, error: toErrorPayload(error) });
      // A disposed heap cannot be trusted again; the parent closes this runtime too.
      if (error instanceof HeapLimitExceeded) process.exit(0);
    } finally {
      this.#currentId = undefined;
    }
  }

  async #run(message: Message): Promise<unknown> {
    switch (message.type) {
      case 'eval':
        return this.#runtime.eval(message.code, optionsOf(message.options));
      case 'evalModule':
        return this.#runtime.evalModule(message.code, message.specifier === undefined ? {} : { specifier: message.specifier });
      case 'command':
        return this.#command(message);
      default:
        throw new StrataError(`the worker does not accept ${message.type} messages`);
    }
  }

  #command(message: MessageOf<'command'>): unknown {
    const params = message.params;
    switch (message.name) {
      case 'bind': {
        const name = params['name'] as string;
        const sites = params['functions'] as FunctionSite[];
        const value = this.#withStandIns(params['value'], sites);
        if (typeof value === 'function') this.#runtime.bindFunction(name, value as (...args: unknown[]) => unknown);
        else this.#runtime.bindObject(name, value as Record<string, unknown>);
        return undefined;
      }
      case 'revoke':
        this.#runtime.revoke(params['name'] as string);
        return undefined;
      case 'dispose':
        void this.#runtime.close().then(() => process.exit(0));
        return undefined;
      default:
        throw new StrataError(`unknown command ${message.name}`);
    }
  }

  /** Puts a stand-in that calls the parent at every function site of a bound value. */
  #withStandIns(value: unknown, sites: FunctionSite[]): unknown {
    let root = value;
    for (const [path, label] of sites) {
      const standIn = (...args: unknown[]) => this.#callParent(label, args);
      if (path.length === 0) {
        root = standIn;
        continue;
      }
      let node = root as Record<string, unknown>;
      for (const key of path.slice(0, -1)) node = node[key] as Record<string, unknown>;
      node[path[path.length - 1]!] = standIn;
    }
    return root;
  }

  #callParent(label: string, args: unknown[]): unknown {
    let reply: MessageOf<'callResult'> | MessageOf<'callPending'>;
    try {
      reply = this.#channel.call(label, args);
    } catch (error) {
      // Arguments the wire cannot carry (over its frame size, node count or depth): the guest's error, not the worker's.
      if (!(error instanceof ProtocolError)) throw error;
      throw new TypeError(`${label.replace(/#\d+$/, '')}: the arguments cannot cross to the host: ${error.message}`);
    }
    if (reply.type === 'callPending') {
      return new Promise((resolve, reject) => this.#pendingCalls.set(reply.id, { resolve, reject }));
    }
    if (reply.outcome.ok) return reply.outcome.value;
    throw hostError(reply.outcome.error);
  }

  #requestModule(request: string, referrer: string): ResolvedModule {
    const reply = this.#channel.requestModule(request, referrer);
    if (!reply.outcome.ok) throw fromErrorPayload(reply.outcome.error);
    const value = reply.outcome.value as { specifier?: unknown; source?: unknown } | undefined;
    if (typeof value?.specifier !== 'string' || typeof value.source !== 'string') {
      throw new ModuleNotFound(`import ${JSON.stringify(request)} was refused by the host`);
    }
    return { specifier: value.specifier, source: value.source };
  }
}

/** The error a host function's failure becomes in the worker: the guest sees its name and message. */
function hostError(payload: ErrorPayload): Error {
  const error = new Error(payload.message);
  error.name = payload.name ?? 'Error';
  return error;
}

function optionsOf(options: WireObject | undefined): { filename?: string } {
  const filename = options?.['filename'];
  return typeof filename === 'string' ? { filename } : {};
}
