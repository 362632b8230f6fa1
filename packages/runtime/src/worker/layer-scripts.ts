/**
 * The worker's half of src/layers/layer-bundles.ts: reads one of Strata's own layer bundles,
 * compiles it with the build's code cache of exactly those bytes under this worker's flags when
 * there is one, and runs it as the CommonJS module it is. Its `require` answers
 * `@strata/runtime`'s layer-author entry points with the worker's own modules
 * (src/worker/shared-with-layers.ts) and everything else as a `require` beside the bundle would.
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, isAbsolute } from 'node:path';
import vm from 'node:vm';
import { readCodeCaches, workerFlags } from '../bootstrap-code-cache.js';
import { fingerprintKey, layerCacheFile } from '../layers/layer-bundles.js';
import type { MemoryWatchdog } from '../native/native-paths.js';
import { mark } from '../timeline.js';
import { sharedWithLayers } from './shared-with-layers.js';

// Every bundle compiled here, by its cache key: the build's worker (scripts/make-layer-cache.mjs)
// asks for their code caches after the layers have applied and self-tested.
const compiled = new Map<string, vm.Script>();

/** The bundle the parent named for each of Strata's own layers, by module; anything but an absolute path to a `.cjs` file is left out (that layer is then loaded by name). */
export function layerBundles(received: unknown): ReadonlyMap<string, string> {
  const bundles = new Map<string, string>();
  if (received === null || typeof received !== 'object') return bundles;
  for (const [module, path] of Object.entries(received)) {
    if (typeof path === 'string' && isAbsolute(path) && path.endsWith('.cjs')) bundles.set(module, path);
  }
  return bundles;
}

/** Reads, compiles and runs the layer bundle at `filename`; its `module.exports`. */
export function runLayerBundle(filename: string, module: string, watchdog: Pick<MemoryWatchdog, 'fingerprint'> | undefined): unknown {
  const bytes = readFileSync(filename);
  // without the addon's fingerprint (an addon built from an older checkout), no cache: compiled from source
  const key = typeof watchdog?.fingerprint === 'function' ? fingerprintKey(watchdog.fingerprint(bytes)) : undefined;
  const cachedData = key === undefined ? undefined : buildCodeCache(filename, key);
  // The CommonJS wrapper on the bundle's first line, so its line numbers stay its own.
  const script = new vm.Script(`(function (exports, require, module, __filename, __dirname) {${bytes.toString('utf8')}\n})`, { filename, cachedData });
  if (cachedData !== undefined) mark(script.cachedDataRejected === true ? `layer code cache refused: ${module}` : `layer code cache used: ${module}`);
  if (key !== undefined) compiled.set(key, script);
  const own = createRequire(filename);
  const require = Object.assign((specifier: string): unknown => sharedWithLayers(specifier) ?? own(specifier), { resolve: own.resolve, cache: own.cache });
  const exported = { exports: {} as unknown };
  const run = script.runInThisContext() as (...args: unknown[]) => void;
  run.call(exported.exports, exported.exports, require, exported, filename, dirname(filename));
  return exported.exports;
}

/** The build's code cache filed under `key` and this worker's flags, if it made one. */
function buildCodeCache(bundle: string, key: string): Buffer | undefined {
  try {
    const found = readCodeCaches(layerCacheFile(bundle), (k) => k === key).get(key);
    return found === undefined ? undefined : Buffer.from(found);
  } catch {
    return undefined; // no cache file (a build that could not make one), or a damaged one: compiled from source
  }
}

/** @internal The code caches of the layer bundles this worker compiled, as they are now (the build's `codeCache` command). */
export function layerCodeCaches(): { flags: string; key: string; cache: Uint8Array }[] {
  const flags = workerFlags();
  return [...compiled].map(([key, script]) => ({ flags, key, cache: new Uint8Array(script.createCachedData()) }));
}
