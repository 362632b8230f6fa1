/**
 * Work on input the model or the guest controls, kept off the host's event loop and out of its
 * shared state: a {@link BoundedWorker} runs one request at a time in a `worker_thread` of its
 * own, under a deadline. A worker that traps, throws something it cannot recover from, dies or
 * passes the deadline is terminated and replaced by a fresh one on the next request, so no input
 * can poison a later one. The worker is created on first use and never keeps the process alive
 * while idle. Its script answers with {@link serveBoundedRequests}.
 *
 * Used by `language: 'typescript'` (the type stripper) and by `@strata/agent`'s `typecheck`.
 *
 * @module
 */
import type { ResourceLimits, Worker } from 'node:worker_threads';

// Loaded on first use: a process that never starts a bounded worker (Strata's sandboxed worker,
// whose JavaScript runs jitless and compiles each built-in module it loads) does not pay for it.
const threads = () => process.getBuiltinModule('node:worker_threads');

/** An error the worker's handler threw, as it crossed the thread boundary. */
export interface WorkerError {
  readonly name: string;
  readonly message: string;
  readonly code: string | undefined;
  readonly stack: string;
}

/** How a request ended. Callers turn each into their own error. */
export type BoundedOutcome<T> =
  | { readonly status: 'ok'; readonly value: T }
  /** The handler threw. The worker was replaced unless the error was one it recovers from. */
  | { readonly status: 'error'; readonly error: WorkerError }
  /** The deadline passed: the worker was terminated. */
  | { readonly status: 'timeout' }
  /** The worker died during the request (a trap outside the handler, out of memory, an exit). */
  | { readonly status: 'crashed'; readonly message: string }
  /** The worker could not be started or did not become ready within `startTimeout`. */
  | { readonly status: 'unavailable'; readonly message: string };

/** Options of a {@link BoundedWorker}. */
export interface BoundedWorkerOptions {
  /** The worker's script, whose top level calls {@link serveBoundedRequests}. */
  readonly script: URL;
  /** How long a new worker may take to start and warm up before it counts as unavailable, in ms. */
  readonly startTimeout: number;
  /** The worker's V8 limits (heap, stack). */
  readonly resourceLimits?: ResourceLimits;
  /** Passed to the worker as `workerData.options`. */
  readonly options?: unknown;
}

interface Reply {
  readonly id: number;
  readonly ok: boolean;
  readonly value?: unknown;
  readonly error?: WorkerError;
  /** The worker is still sound after this error (an ordinary refusal, not a trap). */
  readonly keep?: boolean;
}

/** A `worker_thread` that answers requests one at a time, each under a deadline, replaced after any failure. */
export class BoundedWorker<Request, Response> {
  readonly #options: BoundedWorkerOptions;
  #worker: Worker | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  #nextId = 1;
  /** How many workers were started: a replacement is told it is one (`workerData.generation`). */
  #generation = 0;
  #closed = false;

  constructor(options: BoundedWorkerOptions) {
    this.#options = options;
  }

  /** Runs `request` in the worker (after the requests before it), with `timeout` ms for the answer once the worker is ready. */
  run(request: Request, timeout: number): Promise<BoundedOutcome<Response>> {
    const turn = this.#queue.then(() => this.#runNow(request, timeout));
    this.#queue = turn.catch(() => undefined);
    return turn;
  }

  /** Terminates the worker; a later request starts a new one. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#discard();
    this.#closed = false;
  }

  async #runNow(request: Request, timeout: number): Promise<BoundedOutcome<Response>> {
    if (this.#worker === undefined) {
      const started = await this.#start();
      if (started !== undefined) return started;
    }
    const worker = this.#worker!;
    const id = this.#nextId++;
    worker.ref();
    const outcome = await new Promise<BoundedOutcome<Response> & { keep?: boolean }>((resolve) => {
      const done = (result: BoundedOutcome<Response> & { keep?: boolean }) => {
        clearTimeout(timer);
        worker.off('message', onMessage).off('error', onError).off('exit', onExit);
        resolve(result);
      };
      const onMessage = (reply: Reply) => {
        if (reply?.id !== id) return;
        if (reply.ok) done({ status: 'ok', value: reply.value as Response });
        else done({ status: 'error', error: reply.error!, keep: reply.keep === true });
      };
      const onError = (error: Error) => done({ status: 'crashed', message: error.message });
      const onExit = (exitCode: number) => done({ status: 'crashed', message: `the worker thread exited (code ${exitCode})` });
      const timer = setTimeout(() => done({ status: 'timeout' }), timeout);
      worker.on('message', onMessage).on('error', onError).on('exit', onExit);
      try {
        worker.postMessage({ id, request });
      } catch (error) {
        done({ status: 'crashed', message: `the request could not be sent to the worker thread: ${(error as Error).message}` });
      }
    });
    if (outcome.status === 'ok' || (outcome.status === 'error' && outcome.keep === true)) {
      worker.unref();
      if (outcome.status === 'error') return { status: 'error', error: outcome.error };
      return outcome;
    }
    // Anything else may have left the worker unsound (a WebAssembly trap poisons its module).
    await this.#discard();
    return outcome.status === 'error' ? { status: 'error', error: outcome.error } : outcome;
  }

  /** Starts a worker and waits for its `ready`; an outcome when it cannot. */
  async #start(): Promise<BoundedOutcome<Response> | undefined> {
    if (this.#closed) return { status: 'unavailable', message: 'it is closing' };
    let worker: Worker;
    const create = (execArgv: string[] | undefined) =>
      new (threads().Worker)(this.#options.script, {
        workerData: { options: this.#options.options, generation: ++this.#generation },
        ...(execArgv === undefined ? {} : { execArgv }),
        ...(this.#options.resourceLimits === undefined ? {} : { resourceLimits: this.#options.resourceLimits }),
      });
    // Inherited flags are the default; only a main thread run from `-e` needs its own.
    const execArgv = workerExecArgv(process.execArgv);
    try {
      try {
        worker = create(execArgv.length === process.execArgv.length ? undefined : execArgv);
      } catch (error) {
        // Flags given explicitly are checked, and a process-wide one (--expose-gc) is refused.
        if ((error as { code?: unknown }).code !== 'ERR_WORKER_INVALID_EXEC_ARGV') throw error;
        worker = create([]);
      }
    } catch (error) {
      return { status: 'unavailable', message: `a worker thread could not be created: ${(error as Error).message}` };
    }
    const failure = await new Promise<string | undefined>((resolve) => {
      const done = (message: string | undefined) => {
        clearTimeout(timer);
        worker.off('message', onMessage).off('error', onError).off('exit', onExit);
        resolve(message);
      };
      const onMessage = (message: unknown) => {
        if ((message as { ready?: unknown } | null)?.ready === true) done(undefined);
      };
      const onError = (error: Error) => done(`the worker thread failed to start: ${error.message}`);
      const onExit = (exitCode: number) => done(`the worker thread exited while starting (code ${exitCode})`);
      const timer = setTimeout(() => done(`the worker thread was not ready within ${this.#options.startTimeout} ms`), this.#options.startTimeout);
      worker.on('message', onMessage).on('error', onError).on('exit', onExit);
    });
    if (failure !== undefined) {
      // Swallow what a dying worker may still emit.
      worker.on('error', () => undefined);
      await worker.terminate().catch(() => undefined);
      return { status: 'unavailable', message: failure };
    }
    worker.on('error', () => undefined);
    worker.unref();
    this.#worker = worker;
    return undefined;
  }

  async #discard(): Promise<void> {
    const worker = this.#worker;
    this.#worker = undefined;
    await worker?.terminate().catch(() => undefined);
  }
}

// Flags of the main script's own input, which a worker thread refuses (it has a script file).
const MAIN_INPUT_FLAGS = new Set(['-e', '--eval', '-p', '--print', '--input-type']);

/**
 * The process's flags as a worker thread takes them: loaders (`--import`), limits and the rest
 * are kept; the flags that give the main thread its input (`-e`, `--input-type`) are not.
 */
export function workerExecArgv(execArgv: readonly string[]): string[] {
  const kept: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const flag = execArgv[i]!;
    const name = flag.split('=', 1)[0]!;
    if (!MAIN_INPUT_FLAGS.has(name)) kept.push(flag);
    // Without `=`, the next argument is the flag's value (`-e code`).
    else if (name === flag) i++;
  }
  return kept;
}

/** The `workerData` a {@link BoundedWorker}'s script receives. */
export interface BoundedWorkerData<Options> {
  readonly options: Options;
  /** 1 for the first worker of its `BoundedWorker`, 2 for its first replacement, … */
  readonly generation: number;
}

/**
 * The worker side: answers each request with `handle`'s value, or with the error it threw.
 * `recoverable(error)` says whether the worker may go on after that error (default: never).
 * `warmUp` runs before the worker reports ready, so its cost is not a request's.
 */
export function serveBoundedRequests<Request, Response>(
  handle: (request: Request) => Response | Promise<Response>,
  options: { recoverable?: (error: unknown) => boolean; warmUp?: () => void } = {},
): void {
  const port = threads().parentPort;
  if (port === null) throw new Error('serveBoundedRequests runs in a worker thread');
  options.warmUp?.();
  const failed = (id: number, error: unknown) => port.postMessage({ id, ok: false, error: serializeError(error), keep: options.recoverable?.(error) === true });
  port.on('message', ({ id, request }: { id: number; request: Request }) => {
    let value: Response | Promise<Response>;
    try {
      value = handle(request);
    } catch (error) {
      failed(id, error);
      return;
    }
    // An async handler (a library whose API is promises) answers when it settles; the parent's deadline still holds.
    if (value instanceof Promise)
      value.then(
        (settled) => port.postMessage({ id, ok: true, value: settled }),
        (error: unknown) => failed(id, error),
      );
    else port.postMessage({ id, ok: true, value });
  });
  port.postMessage({ ready: true });
}

/** The `workerData` of this worker thread, as {@link BoundedWorker} passed it. */
export function boundedWorkerData<Options>(): BoundedWorkerData<Options> {
  return threads().workerData as BoundedWorkerData<Options>;
}

function serializeError(error: unknown): WorkerError {
  const read = <T>(get: () => T, fallback: T): T => {
    try {
      return get();
    } catch {
      return fallback;
    }
  };
  const name = read(() => (error instanceof Error ? error.name : 'Error'), 'Error');
  const message = read(() => (error instanceof Error ? error.message : String(error)), 'unknown error');
  const code = read(() => (error as { code?: unknown } | null)?.code, undefined);
  const stack = read(() => String((error as { stack?: unknown } | null)?.stack ?? ''), '');
  return { name: String(name), message: String(message), code: typeof code === 'string' ? code : undefined, stack };
}
