import type { ExecutionContext } from 'ava';
import { IsolatedRuntime, Runtime, type RuntimeOptions, type RuntimeSnapshot } from '../../src/index.js';

/** A runtime closed when the test ends. */
export async function runtimeFor(t: ExecutionContext, options?: RuntimeOptions): Promise<Runtime> {
  const rt = await Runtime.start(options);
  t.teardown(() => rt.close());
  return rt;
}

// One snapshot per bootstrap and strictEval, for the test file: made once, as a worker would.
const snapshots = new Map<string, Promise<RuntimeSnapshot>>();

/** The snapshot of `options`' bootstrap scripts and strictEval, made on first use. */
export function snapshotOf(options: RuntimeOptions = {}): Promise<RuntimeSnapshot> {
  const bootstrap = options.bootstrap === undefined ? [] : typeof options.bootstrap === 'string' ? [options.bootstrap] : [...options.bootstrap];
  const strictEval = options.strictEval ?? false;
  const key = JSON.stringify([bootstrap, strictEval]);
  let made = snapshots.get(key);
  if (made === undefined) {
    made = Runtime.createSnapshot({ bootstrap, strictEval });
    snapshots.set(key, made);
  }
  return made;
}

/**
 * `Runtime.start(options)`, restored from a snapshot of `options`' bootstrap and strictEval: the
 * snapshot supplies both (they are left out of the options it starts with).
 */
export async function startRestored(options: RuntimeOptions = {}): Promise<Runtime> {
  const { bootstrap: _bootstrap, strictEval: _strictEval, ...rest } = options;
  return Runtime.start({ ...rest, snapshot: await snapshotOf(options) });
}

/** A runtime restored from a snapshot of `options`' bootstrap, closed when the test ends. */
export async function restoredRuntimeFor(t: ExecutionContext, options?: RuntimeOptions): Promise<Runtime> {
  const rt = await startRestored(options);
  t.teardown(() => rt.close());
  return rt;
}

/** How a test starts its in-process Runtime: fresh (prelude and bootstrap run in it), or restored from a snapshot of them. */
export type RuntimeMode = 'fresh' | 'snapshot';

/**
 * Both ways of starting a `Runtime`, for the tests that must hold for each: a restored runtime
 * behaves as a fresh one. Loop over it as `for (const [mode, runtimeFor] of RUNTIME_MODES)`.
 */
export const RUNTIME_MODES: readonly (readonly [RuntimeMode, typeof runtimeFor])[] = [
  ['fresh', runtimeFor],
  ['snapshot', restoredRuntimeFor],
];

/** A test title in `mode`: the fresh runtime's tests keep their titles. */
export const inMode = (mode: RuntimeMode, title: string): string => (mode === 'fresh' ? title : `restored from a snapshot: ${title}`);

/** Either runtime: the tests that hold for both run over {@link BOTH_RUNTIMES}. */
export type AnyRuntime = Runtime | IsolatedRuntime;

/**
 * The in-process `Runtime` (fresh, and restored from a snapshot) and an `IsolatedRuntime` (no
 * prewarm), by name, for tests that run on both engines.
 */
export const BOTH_RUNTIMES: readonly (readonly [string, (options: RuntimeOptions) => Promise<AnyRuntime>])[] = [
  ['Runtime', (options) => Runtime.start(options)],
  ['Runtime from a snapshot', startRestored],
  ['IsolatedRuntime', (options) => IsolatedRuntime.start({ prewarm: false, ...options })],
];
