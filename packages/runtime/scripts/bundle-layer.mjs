// Bundles a Strata layer package's worker module (dist/src/layer.js, the package's `./layer`
// export, and its own modules) into dist/src/layer.cjs, the file its `require` condition names.
// The worker requires Strata's own layers (src/layers/load-layer.ts), so their few modules cost
// one load and never start Node's ESM loader (see bundle-cjs.mjs). Every package they import
// (@strata/runtime's layer-author entry points above all) stays outside: the worker answers those
// with its own modules (src/worker/shared-with-layers.ts). Run from the layer package's directory.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundleCjs } from './bundle-cjs.mjs';

const packageRoot = process.cwd();
const { name } = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8'));
const inputs = await bundleCjs({
  entry: join(packageRoot, 'dist/src/layer.js'),
  outfile: join(packageRoot, 'dist/src/layer.cjs'),
  packagesExternal: true,
});
console.log(`${name}: bundled its layer module from ${inputs} modules into dist/src/layer.cjs`);
