/**
 * Strata's own layer modules as a worker compiles them: each one's CommonJS bundle (its
 * package's `require` condition of `./layer`), with V8's code cache of it when the layer's build
 * made one for the worker's flags (`dist/src/layer.cache` beside the bundle, made in a worker
 * that ran only that layer, through its apply and self-test: scripts/make-layer-cache.mjs).
 *
 * The parent resolves each bundle once per process (src/isolated/layer-bundle-files.ts) and sends
 * its path with the configuration; the worker reads it, compiles it with the cache filed under
 * its flags and the bundle's fingerprint, and runs it as the CommonJS module it is
 * (src/worker/layer-scripts.ts). V8 checks a code cache against its version, its flags and the
 * source's *length* only: filed under the fingerprint of the bytes it was made from, a cache never
 * runs for an edited or half-upgraded bundle of the same length. Under `--jitless` every function
 * is compiled on its first call, in every worker; with the cache a layer's top level, probe,
 * apply and self-test arrive compiled.
 *
 * @module
 */
import { dirname, join } from 'node:path';

/** A Strata layer module's specifier: its package's `./layer` entry point. */
export const STRATA_LAYER_MODULE = /^@strata\/layer-[a-z]+\/layer$/;

/** Where a layer bundle's code caches are: `layer.cache` beside it. */
export function layerCacheFile(bundle: string): string {
  return join(dirname(bundle), 'layer.cache');
}

/** The key a bundle's code cache is filed under: the FNV-1a 64 fingerprint of its bytes (the watchdog addon's `fingerprint`). */
export function fingerprintKey(hex: string): string {
  return `fnv1a64 ${hex}`;
}
