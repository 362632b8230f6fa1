// Bundles the worker's entry (dist/src/worker/worker-main.js and everything it imports statically)
// into one CommonJS file, dist/src/worker/worker-main.cjs, which is what the parent starts. A worker
// is a fresh process that loads its code before every start: as one CommonJS file it skips Node's
// ESM loader (whose own modules, like every module under --jitless, are compiled from source in
// each worker) and about 120 module loads. Native code (isolated-vm, Strata's addons) stays outside,
// loaded at run time from where it is installed; so do the layers, which the worker imports by name.
//
// Each module keeps its own import.meta.url: the paths it computes from it (the package root, its
// addons) stay what they were, relative to its file in dist/.
import { readFile } from 'node:fs/promises';
import { dirname, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const packageRoot = fileURLToPath(new URL('..', import.meta.url));
const entry = `${packageRoot}dist/src/worker/worker-main.js`;
const outfile = `${packageRoot}dist/src/worker/worker-main.cjs`;

const ownUrl = {
  name: 'own-import-meta-url',
  setup(b) {
    b.onLoad({ filter: /\.js$/ }, async (args) => {
      const source = await readFile(args.path, 'utf8');
      if (!source.includes('import.meta')) return { contents: source, loader: 'js' };
      const path = relative(dirname(outfile), args.path).split('\\').join('/');
      const url = `require("node:url").pathToFileURL(require("node:path").join(__dirname, ${JSON.stringify(path)})).href`;
      return { contents: source.replaceAll('import.meta.url', url), loader: 'js' };
    });
  },
};

const result = await build({
  entryPoints: [entry],
  outfile,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node24',
  // Native code, and the packages a layer module may import too: tsyringe (a layer written as a
  // class is resolved through the container its own import of tsyringe registered it in) and
  // reflect-metadata. Both are CommonJS, so the layer's import and the bundle's require share one copy.
  external: ['isolated-vm', 'cbor-extract', 'tsyringe', 'reflect-metadata'],
  plugins: [ownUrl],
  logLevel: 'warning',
  metafile: true,
});
const inputs = Object.keys(result.metafile.inputs).length;
console.log(`@strata/runtime: bundled the worker's entry from ${inputs} modules into dist/src/worker/worker-main.cjs`);
