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

/** The worker's command-line argument before the path of the engine's addon, when the parent found it for the worker's Node. */
export const ENGINE_ADDON_ARGUMENT = '--engine-addon';

/** isolated-vm, loaded once; {@link UnsupportedNode} on a Node.js it has no native code for. */
export function loadEngine(): typeof IsolatedVm {
  if (engine === undefined) {
    assertEngineNode();
    engine = createRequire(import.meta.url)('isolated-vm') as typeof IsolatedVm;
  }
  return engine;
}

/**
 * Loads isolated-vm from its native addon at `addonPath` (what its own `isolated-vm.js` exports:
 * the addon's `ivm`), instead of resolving the package; the worker does, with the path the parent
 * found for it. Only before the engine was loaded: it must be one copy per process.
 *
 * @throws Error when the engine is loaded already, or the file is not isolated-vm's addon.
 */
export function loadEngineFrom(addonPath: string): typeof IsolatedVm {
  if (engine !== undefined) throw new Error('the engine is loaded already');
  assertEngineNode();
  const addon = { exports: {} as { ivm?: typeof IsolatedVm } };
  process.dlopen(addon, addonPath);
  const ivm = addon.exports.ivm;
  if (typeof ivm?.Isolate !== 'function') throw new Error(`${addonPath} is not isolated-vm's addon`);
  engine = ivm;
  return engine;
}
