/**
 * The parent's half of src/layers/layer-bundles.ts: where each of Strata's own layer bundles is.
 *
 * @module
 */
import { createRequire } from 'node:module';
import { STRATA_LAYER_MODULE } from '../layers/layer-bundles.js';

const requireHere = createRequire(import.meta.url);
// Resolved once per process: the parent's own require of each layer is, too.
const known = new Map<string, string | null>();

/**
 * The path of `module`'s CommonJS bundle, resolved as the worker would (from this package,
 * through the `require` condition), or undefined for a layer that is not one of Strata's own or
 * cannot be resolved (the worker then loads it by name, as before).
 */
export function strataLayerBundle(module: string): string | undefined {
  if (!STRATA_LAYER_MODULE.test(module)) return undefined;
  let path = known.get(module);
  if (path === undefined) {
    try {
      path = requireHere.resolve(module);
    } catch {
      path = null;
    }
    known.set(module, path);
  }
  return path ?? undefined;
}
