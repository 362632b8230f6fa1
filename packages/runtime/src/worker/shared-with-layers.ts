/**
 * The worker's own copy of the parts of `@strata/runtime` a layer module imports
 * (`@strata/runtime/layers`, `/native`, `/worker-files`), handed to the layers it imports.
 *
 * The worker's entry is one bundled file (scripts/bundle-worker.mjs), and the layers are ES
 * modules imported by name after it. Without this, a layer's `import { LayerConfigError } from
 * '@strata/runtime/layers'` would load those entry points a second time, as some seventy ES
 * modules through Node's ESM loader, in every worker's start: a second copy of Strata's error
 * classes beside the bundle's, for the price of tens of milliseconds. A resolve hook
 * (`module.registerHooks`, in this thread, synchronous) answers those three specifiers with
 * modules that re-export the bundle's own; everything else resolves as before.
 *
 * Installed before any layer is imported, and before any guest code exists.
 *
 * @module
 */
import { registerHooks } from 'node:module';
import * as layers from '../layers/index.js';
import * as workerFiles from '../layers/worker-files.js';
import * as native from '../native/native-artifact.js';

const SHARED: Readonly<Record<string, object>> = Object.freeze({
  '@strata/runtime/layers': layers,
  '@strata/runtime/native': native,
  '@strata/runtime/worker-files': workerFiles,
});
const SCHEME = 'strata-worker:';
// The same module for a require() (Strata's own layers are CommonJS bundles): its exports are the bundle's module itself.
const REQUIRE_SCHEME = 'strata-worker-require:';
const HOLDER = Symbol.for('strata.worker.sharedWithLayers');

let installed = false;

/** The worker's own module for `specifier` when it is one of those three, for a layer bundle the worker compiles itself (src/worker/layer-scripts.ts). */
export function sharedWithLayers(specifier: string): object | undefined {
  return Object.hasOwn(SHARED, specifier) ? SHARED[specifier] : undefined;
}

/** The source of the module that stands for `specifier`: one `export const` per name of the bundle's module. */
function sourceOf(specifier: string): string {
  const names = Object.keys(SHARED[specifier]!).filter((name) => /^[A-Za-z_$][\w$]*$/.test(name));
  const lines = names.map((name) => `export const ${name} = shared.${name};`);
  return `const shared = globalThis[Symbol.for('strata.worker.sharedWithLayers')][${JSON.stringify(specifier)}];\n${lines.join('\n')}\n`;
}

/** Answers the layers' imports of `@strata/runtime`'s layer-author entry points with the worker's own modules. */
export function shareRuntimeWithLayers(): void {
  if (installed) return;
  installed = true;
  Object.defineProperty(globalThis, HOLDER, { value: SHARED, enumerable: false, writable: false, configurable: false });
  registerHooks({
    resolve(specifier, context, nextResolve) {
      if (Object.hasOwn(SHARED, specifier)) {
        if (context.conditions.includes('require')) return { url: `${REQUIRE_SCHEME}${specifier}`, format: 'commonjs', shortCircuit: true };
        return { url: `${SCHEME}${specifier}`, format: 'module', shortCircuit: true };
      }
      return nextResolve(specifier, context);
    },
    load(url, context, nextLoad) {
      if (url.startsWith(SCHEME)) return { format: 'module', source: sourceOf(url.slice(SCHEME.length)), shortCircuit: true };
      if (url.startsWith(REQUIRE_SCHEME)) {
        const source = `module.exports = globalThis[Symbol.for('strata.worker.sharedWithLayers')][${JSON.stringify(url.slice(REQUIRE_SCHEME.length))}];`;
        return { format: 'commonjs', source, shortCircuit: true };
      }
      return nextLoad(url, context);
    },
  });
}
