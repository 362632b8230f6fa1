import { ProtocolError, type ErrorPayload, type Message, type MessageOf, type WireObject } from '@strata/wire';
import type { EgressRequest } from '../egress/check-request.js';
import { FETCH_CANCEL_GLOBAL, FETCH_GLOBAL, type EgressContext } from '../egress/guest-fetch.js';
import type { EgressResponse } from '../egress/perform-request.js';
import { fromErrorPayload, toErrorPayload } from '../error-codec.js';
import { GuestFacingError } from '../host-errors.js';
import { HeapLimitExceeded, ModuleNotFound, StrataError } from '../errors.js';
import type { ResolvedModule } from '../module-registry.js';
import type { MemoryWatchdog } from '../native/native-paths.js';
import type { RuntimeOptions } from '../options.js';
import { workerFlags } from '../bootstrap-code-cache.js';
import { bootstrapCodeCaches, kModuleSource, kPlainHostCalls, type Runtime, type RuntimeStartOptions } from '../runtime.js';
import { mark, takeTimeline } from '../timeline.js';
import { workerEntry } from './entry-handle.js';
import { layerCodeCaches } from './layer-scripts.js';
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

/** Host calls that returned promises, by call id: the worker's ids, shared by all its isolates. */
export type PendingCalls = Map<number, { resolve: (value: unknown) => void; reject: (error: unknown) => void; readonly session: WorkerSession }>;

/** What a session needs of the worker that holds it. */
export interface SessionHost {
  readonly channel: ParentChannel;
  readonly pendingCalls: PendingCalls;
  readonly watchdog: MemoryWatchdog;
  readonly cpuSecondsPerCommand: number | undefined;
}

/**
 * One isolate of a worker: its Runtime, and the translation between the parent's commands and
 * the Runtime's API. Host functions are stand-ins that ask the parent over the channel. A worker
 * of one isolate has one session (`isolate` undefined: its messages carry no isolate id); a worker
 * of many has one per `open`.
 */
export class WorkerSession {
  readonly #host: SessionHost;
  readonly #runtime: Runtime;
  #isolate: number | undefined;
  #currentId: number | undefined;
  #nextFetchId = 1;

  private constructor(host: SessionHost, runtime: Runtime, isolate: number | undefined) {
    this.#host = host;
    this.#runtime = runtime;
    this.#isolate = isolate;
    runtime.onConsole((entry) => {
      const level = WIRE_LEVELS[entry.level] ?? (entry.stream === 'stderr' ? 'error' : 'log');
      const message: MessageOf<'console'> = { type: 'console', level, text: entry.text };
      if (this.#currentId !== undefined) message.id = this.#currentId;
      if (this.#isolate !== undefined) message.isolate = this.#isolate;
      host.channel.send(message);
    });
    runtime[kModuleSource]({ load: (request, referrer) => Promise.resolve(this.#requestModule(request, referrer)) });
    runtime[kPlainHostCalls]();
  }

  /**
   * Creates the session's Runtime. The parent redacts host errors itself; the worker passes them
   * through as they come. The guest's fetch is always answered by the parent, which holds the
   * egress policy (or refuses, saying why): the worker has no network and never sees the
   * policy's credentials.
   */
  static async open(host: SessionHost, RuntimeClass: typeof Runtime, options: RuntimeStartOptions, isolate: number | undefined): Promise<WorkerSession> {
    let session: WorkerSession | undefined;
    const runtime = await RuntimeClass.start(WorkerSession.runtimeOptions(options, (request, context) => session!.#fetchViaParent(request, context)));
    session = new WorkerSession(host, runtime, isolate);
    return session;
  }

  /** The options a worker's Runtime runs with: host errors unredacted, fetch through `egress`. */
  static runtimeOptions<O extends RuntimeOptions>(options: O, egress: RuntimeOptions['egress']): O {
    return { ...options, redactHostErrors: false, egress };
  }

  /** The isolate id this session answers for (undefined in a worker of one isolate). */
  get isolate(): number | undefined {
    return this.#isolate;
  }

  /** Runs one evaluation of nothing, before the session is anyone's. */
  async warmUp(): Promise<void> {
    await this.#runtime.eval('0');
  }

  /** Gives a spare session (made ahead, for no isolate yet) the id of the isolate it becomes. */
  adopt(isolate: number): void {
    if (this.#isolate !== undefined) throw new StrataError(`this session is isolate ${this.#isolate} already`);
    this.#isolate = isolate;
  }

  /**
   * The guest's fetch, asked of the parent under an id of this session's; its refusals come back as
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

  /** Whether the Runtime has closed (disposed, or its heap limit). */
  get closed(): boolean {
    return this.#runtime.closed;
  }

  /** Closes the Runtime (disposes its isolate), and forgets its host calls still in flight: their settlements will find nobody. */
  close(): Promise<void> {
    for (const [id, pending] of this.#host.pendingCalls) if (pending.session === this) this.#host.pendingCalls.delete(id);
    return this.#runtime.close();
  }

  /**
   * Runs one command and sends its answer. Resolves to `'ended'` when the session is over after it
   * (disposed, or its heap was: a disposed heap cannot be trusted again, and the parent closes its
   * runtime too), for the worker to forget it or, with one isolate, to exit.
   */
  async serve(message: Message): Promise<'ended' | undefined> {
    if (!('id' in message) || typeof message.id !== 'number') return undefined;
    const id = message.id;
    this.#begin(id);
    if (message.type === 'command' && message.name === 'dispose') {
      try {
        await this.close();
        this.#send({ type: 'result', id, value: undefined });
        return 'ended';
      } catch (error) {
        return await this.#failed(id, error);
      } finally {
        this.#currentId = undefined;
      }
    }
    mark('serve');
    return this.#answer(id, this.#run(message));
  }

  /** A command starts: its console lines carry its id, and its CPU cap is set (per command: a long-lived runtime must not die of many short ones). */
  #begin(id: number): void {
    this.#currentId = id;
    if (this.#host.cpuSecondsPerCommand !== undefined) this.#host.watchdog.setCpuSoftLimit(this.#host.cpuSecondsPerCommand);
  }

  /**
   * {@link serve}, with an eval run on this call's stack when its runtime is idle (see
   * `Runtime.evalNow`): answered before this returns, with no promise between the read and the
   * isolate. What cannot finish now (a promise the guest returned, a failure that ends the
   * session) continues as {@link serve} would, and this returns its promise.
   */
  serveNow(message: Message): 'ended' | undefined | Promise<'ended' | undefined> {
    if (message.type !== 'eval' || typeof message.id !== 'number') return this.serve(message);
    const id = message.id;
    this.#begin(id);
    mark('serve');
    let value: unknown;
    try {
      value = this.#runtime.evalNow(message.code, optionsOf(message.options).filename);
    } catch (error) {
      return this.#failed(id, error);
    }
    if (value instanceof Promise) return this.#answer(id, value);
    mark('ran');
    try {
      this.#send({ type: 'result', id, value: value as never });
    } catch (error) {
      // a result the wire refuses (past its limits): the command's error, as in serve
      return this.#failed(id, error);
    }
    this.#currentId = undefined;
    return undefined;
  }

  /** Answers a command once `running` settles. */
  async #answer(id: number, running: Promise<unknown>): Promise<'ended' | undefined> {
    try {
      const value = await running;
      mark('ran');
      this.#send({ type: 'result', id, value: value as never });
      return undefined;
    } catch (error) {
      return await this.#failed(id, error);
    } finally {
      this.#currentId = undefined;
    }
  }

  /** Answers a command that failed; a heap past its limit ends the session. */
  async #failed(id: number, error: unknown): Promise<'ended' | undefined> {
    try {
      this.#send({ type: 'error', id, error: toErrorPayload(error) });
      if (error instanceof HeapLimitExceeded) {
        await this.close();
        return 'ended';
      }
      return undefined;
    } finally {
      this.#currentId = undefined;
    }
  }

  #send(message: MessageOf<'result'> | MessageOf<'error'>): void {
    if (this.isolate !== undefined) message.isolate = this.isolate;
    this.#host.channel.send(message);
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
      case 'timeline':
        return takeTimeline();
      case 'codeCache': {
        // the build's own worker (scripts/make-worker-cache.mjs) asks, after running only Strata's code
        const entry = workerEntry();
        if (entry === undefined) throw new StrataError('this worker was not started from worker-entry.cjs: it has no code cache to give');
        const flags = workerFlags();
        return {
          worker: new Uint8Array(entry.createCodeCache()),
          bootstraps: bootstrapCodeCaches().map(({ key, cache }) => ({ flags, key, cache })),
          layers: layerCodeCaches(),
        };
      }
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
      reply = this.#host.channel.call(label, args, this.isolate);
    } catch (error) {
      // Arguments the wire cannot carry (over its frame size, node count or depth): the guest's error, not the worker's.
      if (!(error instanceof ProtocolError)) throw error;
      throw new TypeError(`${label.replace(/#\d+$/, '')}: the arguments cannot cross to the host: ${error.message}`);
    }
    if (reply.type === 'callPending') {
      return new Promise((resolve, reject) => this.#host.pendingCalls.set(reply.id, { resolve, reject, session: this }));
    }
    if (reply.outcome.ok) return reply.outcome.value;
    throw hostError(reply.outcome.error);
  }

  #requestModule(request: string, referrer: string): ResolvedModule {
    const reply = this.#host.channel.requestModule(request, referrer, this.isolate);
    if (!reply.outcome.ok) throw fromErrorPayload(reply.outcome.error);
    const value = reply.outcome.value as { specifier?: unknown; source?: unknown } | undefined;
    if (typeof value?.specifier !== 'string' || typeof value.source !== 'string') {
      throw new ModuleNotFound(`import ${JSON.stringify(request)} was refused by the host`);
    }
    return { specifier: value.specifier, source: value.source };
  }
}

/** The error a host function's failure becomes in the worker: the guest sees its name and message. */
export function hostError(payload: ErrorPayload): Error {
  const error = new Error(payload.message);
  error.name = payload.name ?? 'Error';
  return error;
}

function optionsOf(options: WireObject | undefined): { filename?: string } {
  const filename = options?.['filename'];
  return typeof filename === 'string' ? { filename } : {};
}
