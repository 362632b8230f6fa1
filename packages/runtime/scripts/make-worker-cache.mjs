// Makes dist/src/worker/worker-main.cache, the V8 code cache worker-entry.cjs compiles the worker's
// bundle with (see src/worker/worker-entry.cts). Run by the package's build, after the bundle.
//
// It starts a worker with the default flags (V8 checks them against the cache: a worker with
// other flags compiles from source), runs only Strata's own code in it (start-up, an eval, a host
// call, a module, a console line), asks it for the cache of everything compiled so far and writes
// it. No code of a user ever ran in that worker, and a worker cannot write the file. Without the
// layers: the layer packages build after this one; their few functions compile from source.
//
// A machine that cannot start a worker here (no native build yet) gets no cache and is told so:
// the worker then compiles its code from source, as it did before there was one.
import { rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const out = fileURLToPath(new URL('../dist/src/worker/worker-main.cache', import.meta.url));
rmSync(out, { force: true });
try {
  const { IsolatedRuntime } = await import('../dist/src/index.js');
  const { internals } = await import('../dist/src/isolated/isolated-runtime.js');
  const rt = await IsolatedRuntime.start({ sandbox: 'off', replaceDefaultLayers: true, layers: [], prewarm: false });
  try {
    rt.bindFunction('twice', (x) => 2 * x);
    await rt.eval('1 + 1');
    await rt.eval('({ list: [twice(1), "two", null], when: new Date(0) })');
    await rt.eval('(async () => { console.log("warm"); return 3 })()');
    await rt.evalModule('export const answer = 6 * 7;');
    await rt.execute('console.log(twice(21))');
    const cache = await internals.workerCodeCache(rt);
    writeFileSync(out, cache);
    console.log(`@strata/runtime: the worker's code cache, ${Math.round(cache.length / 1024)} KiB, in dist/src/worker/worker-main.cache`);
  } finally {
    await rt.close();
  }
} catch (error) {
  console.log(
    `@strata/runtime: no code cache for the worker (${error instanceof Error ? error.message : String(error)}); workers compile their code from source`,
  );
}
