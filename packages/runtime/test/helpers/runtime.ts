import type { ExecutionContext } from 'ava';
import { IsolatedRuntime, Runtime, type RuntimeOptions } from '../../src/index.js';

/** A runtime closed when the test ends. */
export async function runtimeFor(t: ExecutionContext, options?: RuntimeOptions): Promise<Runtime> {
  const rt = await Runtime.start(options);
  t.teardown(() => rt.close());
  return rt;
}

/** Either runtime: the tests that hold for both run over {@link BOTH_RUNTIMES}. */
export type AnyRuntime = Runtime | IsolatedRuntime;

/** The in-process `Runtime` and an `IsolatedRuntime` (no prewarm), by name, for tests that run on both. */
export const BOTH_RUNTIMES: readonly (readonly [string, (options: RuntimeOptions) => Promise<AnyRuntime>])[] = [
  ['Runtime', (options) => Runtime.start(options)],
  ['IsolatedRuntime', (options) => IsolatedRuntime.start({ prewarm: false, ...options })],
];
