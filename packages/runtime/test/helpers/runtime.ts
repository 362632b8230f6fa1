import type { ExecutionContext } from 'ava';
import { Runtime, type RuntimeOptions } from '../../src/index.js';

/** A runtime closed when the test ends. */
export async function runtimeFor(t: ExecutionContext, options?: RuntimeOptions): Promise<Runtime> {
  const rt = await Runtime.start(options);
  t.teardown(() => rt.close());
  return rt;
}
