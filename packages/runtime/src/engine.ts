/**
 * The engine, isolated-vm, loaded on first use instead of at import. Only an in-process
 * {@link Runtime} (the worker's, or one an application starts) needs it, and it ships native code
 * for Node 24 only: the parent of an `IsolatedRuntime` or `SandboxPool` never loads it, so that
 * parent may run on an older Node than the engine (docs/design.md §9).
 *
 * @module
 */
import { createRequire } from 'node:module';
import type IsolatedVm from 'isolated-vm';
import { assertEngineNode } from './node-version.js';

export type { IsolatedVm };

let engine: typeof IsolatedVm | undefined;

/** isolated-vm, loaded once; {@link UnsupportedNode} on a Node.js it has no native code for. */
export function loadEngine(): typeof IsolatedVm {
  if (engine === undefined) {
    assertEngineNode();
    engine = createRequire(import.meta.url)('isolated-vm') as typeof IsolatedVm;
  }
  return engine;
}
