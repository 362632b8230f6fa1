import ivm from 'isolated-vm';
import { EVENT_LOOP_GLOBAL, WEB_POLYFILLS } from '../../src/index.js';

/** What became of an evaluation, as a host sees it. */
export interface Outcome<T = unknown> {
  /** The result settled (a non-promise result settles at once). */
  settled: boolean;
  /** Fulfilled with `value` (copied out of the isolate). */
  ok: boolean;
  value?: T;
  /** Rejection reason: name and message for errors, the value otherwise. */
  error?: { name: string; message: string } | unknown;
  /** How many times the host called runNext() and a timer fired. */
  steps: number;
  /** Virtual clock after the run. */
  now: number;
}

export interface Sandbox {
  readonly isolate: ivm.Isolate;
  readonly context: ivm.Context;
  /**
   * Evaluates guest code and, while its result is a pending promise, drives
   * the event loop exactly as the Runtime does: call runNext() until the
   * promise settles or runNext() returns false.
   */
  run<T = unknown>(code: string, options?: { maxSteps?: number }): Promise<Outcome<T>>;
  /** Evaluates synchronously and copies the completion value out. */
  value<T = unknown>(code: string): T;
  /** Console output the guest (or the polyfills) produced, oldest first. */
  logs(): Array<{ level: string; text: string }>;
  dispose(): void;
}

// A console that records into the context, so tests can see the reports and
// warnings the polyfills write. Installed after the bootstrap, as the host's
// console would be.
const CONSOLE = `(() => {
  const logs = [];
  const show = (v) => v instanceof Error || (v && typeof v === 'object' && typeof v.name === 'string' && 'message' in v)
    ? v.name + ': ' + v.message
    : typeof v === 'string' ? v : String(v);
  const make = (level) => (...args) => { logs.push({ level, text: args.map(show).join(' ') }); };
  Object.defineProperty(globalThis, '__testLogs', { value: logs });
  globalThis.console = { log: make('log'), info: make('info'), warn: make('warn'), error: make('error'), debug: make('debug') };
})();`;

const TRACK = `((value) => {
  const s = { done: false, ok: false, value: undefined, error: undefined };
  globalThis.__testState = s;
  Promise.resolve(value).then(
    (v) => { s.done = true; s.ok = true; s.value = v; },
    (e) => {
      s.done = true;
      s.error = e instanceof Error || (e && typeof e === 'object' && 'name' in e && 'message' in e)
        ? { name: String(e.name), message: String(e.message) }
        : e;
    },
  );
})`;

/** A `before` script that turns code generation off before the bootstrap runs, as a Runtime with strictEval has it. */
export const NO_CODE_GENERATION = `
  const no = () => { throw new EvalError('code generation is disabled'); };
  globalThis.eval = no;
  for (const F of [Function, async function () {}.constructor, function* () {}.constructor]) {
    Object.defineProperty(F.prototype, 'constructor', { value: no });
  }
  globalThis.Function = no;`;

/** The two modes suites run in: as is, and with code generation disabled before the bootstrap. */
export const MODES: ReadonlyArray<readonly [mode: string, options: SandboxOptions]> = [
  ['', {}],
  [' (no eval)', { before: NO_CODE_GENERATION }],
];

export interface SandboxOptions {
  /** Code run before the bootstrap (e.g. to disable eval). */
  before?: string;
  /** Host-side preparation of the context before the bootstrap (e.g. a host function on its global). */
  setup?: (context: ivm.Context) => void | Promise<void>;
  /** Skip the test console. */
  noConsole?: boolean;
}

export async function createSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const isolate = new ivm.Isolate({ memoryLimit: 64 });
  const context = await isolate.createContext();
  if (options.setup) await options.setup(context);
  if (options.before) await context.eval(options.before);
  await context.eval(WEB_POLYFILLS, { filename: 'strata-web-polyfills.js' });
  // Captured before any guest code runs, as the Runtime does.
  const runNext: ivm.Reference<() => boolean> = await context.eval(`${EVENT_LOOP_GLOBAL}.runNext`, {
    reference: true,
  });
  if (!options.noConsole) await context.eval(CONSOLE);

  const track: ivm.Reference<(value: unknown) => void> = await context.eval(TRACK, { reference: true });
  // Tests in one file run concurrently; runs on one sandbox take turns.
  let turn: Promise<unknown> = Promise.resolve();

  async function run<T>(code: string, runOptions: { maxSteps?: number } = {}): Promise<Outcome<T>> {
    const maxSteps = runOptions.maxSteps ?? 1_000_000;
    const completion = await context.eval(code, { reference: true });
    track.applySync(undefined, [completion.derefInto()]);
    let steps = 0;
    while (!context.evalSync('__testState.done')) {
      if (!runNext.applySync(undefined, [])) break;
      if (++steps > maxSteps) throw new Error(`still pending after ${maxSteps} timers`);
    }
    const state = context.evalSync('__testState', { copy: true }) as {
      done: boolean;
      ok: boolean;
      value: T;
      error: unknown;
    };
    const now = context.evalSync(`${EVENT_LOOP_GLOBAL}.now()`) as number;
    return { settled: state.done, ok: state.ok, value: state.value, error: state.error, steps, now };
  }

  return {
    isolate,
    context,
    run<T>(code: string, runOptions: { maxSteps?: number } = {}): Promise<Outcome<T>> {
      const result = turn.then(() => run<T>(code, runOptions));
      turn = result.catch(() => undefined);
      return result;
    },
    value<T>(code: string): T {
      return context.evalSync(code, { copy: true }) as T;
    },
    logs() {
      return context.evalSync('globalThis.__testLogs ?? []', { copy: true }) as Array<{ level: string; text: string }>;
    },
    dispose() {
      if (!isolate.isDisposed) isolate.dispose();
    },
  };
}

/** Runs `fn` with a new sandbox, disposed of afterwards. */
export async function withSandbox<T>(options: SandboxOptions, fn: (s: Sandbox) => Promise<T> | T): Promise<T> {
  const s = await createSandbox(options);
  try {
    return await fn(s);
  } finally {
    s.dispose();
  }
}
