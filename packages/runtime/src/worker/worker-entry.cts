/**
 * The worker process's first file. It compiles the bundled worker (`worker-main.cjs`, see
 * scripts/bundle-worker.mjs: the bundle inside its CommonJS wrapper) with the V8 code cache made for it at build time
 * (`worker-main.cache`, scripts/make-worker-cache.mjs), then runs it as the CommonJS module it is.
 * Under `--jitless` every function is compiled to bytecode on its first call, in every worker;
 * with the cache the worker's start-up path arrives compiled. V8 checks the cache against the
 * source, its own version and the flags: a cache made by another Node, with other V8 flags
 * (`jitless: false`, `v8Flags`) or for an older bundle is refused, and the bundle is compiled from
 * source as without one. The cache is a file of the installed package, made by a build that ran
 * only Strata's own code; a worker cannot write it.
 *
 * Code compiled through `vm.Script` cannot `import()` without an experimental flag, so this file,
 * an ordinary module, imports for it (a third party's layer module; src/layers/load-layer.ts).
 */
import fs = require('node:fs');
import nodeModule = require('node:module');
import path = require('node:path');
import vm = require('node:vm');

const WORKER_ENTRY_HANDLE = Symbol.for('strata.worker.entry');
const bundle = path.join(__dirname, 'worker-main.cjs');
const source = fs.readFileSync(bundle, 'utf8');
let cachedData: Buffer | undefined;
try {
  cachedData = fs.readFileSync(path.join(__dirname, 'worker-main.cache'));
} catch {
  // no cache (a build that could not make one): compiled from source
}
// The file is the CommonJS wrapper around the bundle (scripts/bundle-worker.mjs), compiled as it is.
const script = new vm.Script(source, { filename: bundle, cachedData });
// What the bundle reaches of this file (src/worker/entry-handle.ts): whether V8 refused the cache,
// a new cache of the bundle as compiled so far (the build's `codeCache` command), and import().
const handle = {
  codeCacheRejected: cachedData === undefined ? undefined : script.cachedDataRejected === true,
  createCodeCache: () => script.createCachedData(),
  importModule: (specifier: string): Promise<unknown> => import(specifier),
};
Object.defineProperty(globalThis, WORKER_ENTRY_HANDLE, { value: Object.freeze(handle) });
const main = { exports: {} };
const wrapped: unknown = script.runInThisContext();
if (typeof wrapped !== 'function') throw new Error(`${bundle} is not the worker's wrapped bundle (a build older than its entry?): rebuild @strata/runtime`);
(wrapped as (...args: unknown[]) => void)(main.exports, nodeModule.createRequire(bundle), main, bundle, __dirname);
