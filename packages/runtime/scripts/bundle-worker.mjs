// Bundles the worker's entry (dist/src/worker/worker-main.js and everything it imports statically)
// into one CommonJS file, dist/src/worker/worker-main.cjs, which is what the parent starts (see
// bundle-cjs.mjs for why). Native code (isolated-vm, Strata's addons) stays outside, loaded at run
// time from where it is installed; so do the layers, which the worker loads by name.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { bundleCjs } from './bundle-cjs.mjs';

const packageRoot = fileURLToPath(new URL('..', import.meta.url));
const inputs = await bundleCjs({
  entry: `${packageRoot}dist/src/worker/worker-main.js`,
  outfile: `${packageRoot}dist/src/worker/worker-main.cjs`,
  // Native code, and the packages a layer module may import too: tsyringe (a layer written as a
  // class is resolved through the container its own import of tsyringe registered it in) and
  // reflect-metadata. Both are CommonJS, so the layer's import and the bundle's require share one copy.
  external: ['isolated-vm', 'cbor-extract', 'tsyringe', 'reflect-metadata'],
});
// The file holds the CommonJS wrapper too (on its first line, so line numbers stay the bundle's):
// worker-entry.cts compiles it as it is. Wrapping at each start made a second copy of 270 KB of
// text, flattened for V8: about 1 ms of a worker's start, on fresh pages. Nothing else loads this
// file (the layers' bundles stay plain CommonJS: their packages' `require` condition names them).
const bundle = `${packageRoot}dist/src/worker/worker-main.cjs`;
writeFileSync(bundle, `(function (exports, require, module, __filename, __dirname) {${readFileSync(bundle, 'utf8')}\n})`);
console.log(`@strata/runtime: bundled the worker's entry from ${inputs} modules into dist/src/worker/worker-main.cjs`);
