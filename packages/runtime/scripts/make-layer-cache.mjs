// Makes a Strata layer package's dist/src/layer.cache: V8's code caches of its CommonJS bundle
// (dist/src/layer.cjs), which a worker compiles it with (src/layers/layer-code.ts). Run by the
// layer package's build, from its directory, after scripts/bundle-layer.mjs.
//
// It starts a worker with the default flags whose only layer is this one (sandbox 'auto': where
// the platform lacks the layer, only its load and probe are cached), lets it apply and self-test,
// and asks it for the code cache of the bundle as compiled by then; then the same with strictEval,
// whose worker has one V8 flag more. The worker files each cache under its flags and the
// fingerprint of the bundle's bytes (src/worker/layer-scripts.ts). No code of a user ever ran in
// those workers.
//
// A machine that cannot start a worker here gets no cache and is told so: the layer then compiles
// from source in every worker, as it did before there was one.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const packageRoot = process.cwd();
const { name } = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8'));
const out = join(packageRoot, 'dist/src/layer.cache');
rmSync(out, { force: true });
try {
  const { IsolatedRuntime } = await import('../dist/src/index.js');
  const { internals } = await import('../dist/src/isolated/isolated-runtime.js');
  const { encodeCodeCaches } = await import('../dist/src/bootstrap-code-cache.js');
  const caches = new Map();
  for (const strictEval of [false, true]) {
    const rt = await IsolatedRuntime.start({
      sandbox: 'auto',
      replaceDefaultLayers: true,
      layers: [{ module: `${name}/layer` }],
      prewarm: false,
      strictEval,
    });
    try {
      await rt.eval('1 + 1');
      for (const entry of (await internals.workerCodeCache(rt)).layers) caches.set(`${entry.flags}\n${entry.key}`, entry);
    } finally {
      await rt.close();
    }
  }
  if (caches.size === 0) throw new Error('the worker compiled no layer bundle of its own (an addon without fingerprint?)');
  const file = encodeCodeCaches([...caches.values()]);
  writeFileSync(out, file);
  console.log(`${name}: ${caches.size} code caches of its layer bundle, ${Math.round(file.length / 1024)} KiB, in dist/src/layer.cache`);
} catch (error) {
  console.log(`${name}: no code cache for its layer (${error instanceof Error ? error.message : String(error)}); workers compile it from source`);
}
