// Makes dist/src/worker/worker-main.cache, the V8 code cache worker-entry.cjs compiles the worker's
// bundle with (see src/worker/worker-entry.cts), and dist/src/worker/bootstrap.cache, the code
// caches of the guest's prelude and of WEB_POLYFILLS that a worker's first isolate compiles them
// with (src/bootstrap-code-cache.ts). Run by the package's build, after the bundle.
//
// It starts a worker with the default flags (V8 checks them against the cache: a worker with
// other flags compiles from source), runs only Strata's own code in it (start-up, an eval, a host
// call, a module, a console line), asks it for the cache of everything compiled so far and writes
// it. No code of a user ever ran in that worker, and a worker cannot write the files. Without the
// layers: the layer packages build after this one; their few functions compile from source.
// A second worker, with strictEval, adds the caches of that prelude.
//
// A machine that cannot start a worker here (no native build yet) gets no cache and is told so:
// the worker then compiles its code from source, as it did before there was one.
import { rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const out = fileURLToPath(new URL('../dist/src/worker/worker-main.cache', import.meta.url));
const bootstrapOut = fileURLToPath(new URL('../dist/src/worker/bootstrap.cache', import.meta.url));
rmSync(out, { force: true });
rmSync(bootstrapOut, { force: true });
try {
  const { IsolatedRuntime } = await import('../dist/src/index.js');
  const { internals } = await import('../dist/src/isolated/isolated-runtime.js');
  const { encodeCodeCaches } = await import('../dist/src/bootstrap-code-cache.js');
  const { WEB_POLYFILLS } = await import('@strata/polyfills');
  const start = (options) =>
    IsolatedRuntime.start({ sandbox: 'off', replaceDefaultLayers: true, layers: [], prewarm: false, bootstrap: [WEB_POLYFILLS], ...options });
  // by flags and key: a strictEval worker runs with one V8 flag more, so its caches are its own
  const bootstraps = new Map();
  const keep = (entries) => {
    for (const entry of entries) bootstraps.set(`${entry.flags}\n${entry.key}`, entry);
  };
  const rt = await start({});
  try {
    rt.bindFunction('twice', (x) => 2 * x);
    await rt.eval('1 + 1');
    await rt.eval('({ list: [twice(1), "two", null], when: new Date(0) })');
    await rt.eval('(async () => { console.log("warm"); return 3 })()');
    await rt.evalModule('export const answer = 6 * 7;');
    await rt.execute('console.log(twice(21))');
    const cache = await internals.workerCodeCache(rt);
    writeFileSync(out, cache.worker);
    keep(cache.bootstraps);
    console.log(`@strata/runtime: the worker's code cache, ${Math.round(cache.worker.length / 1024)} KiB, in dist/src/worker/worker-main.cache`);
  } finally {
    await rt.close();
  }
  const strict = await start({ strictEval: true });
  try {
    await strict.eval('1 + 1');
    keep((await internals.workerCodeCache(strict)).bootstraps);
  } finally {
    await strict.close();
  }
  const file = encodeCodeCaches([...bootstraps.values()]);
  writeFileSync(bootstrapOut, file);
  console.log(
    `@strata/runtime: ${bootstraps.size} prelude and bootstrap code caches, ${Math.round(file.length / 1024)} KiB, in dist/src/worker/bootstrap.cache`,
  );
} catch (error) {
  console.log(
    `@strata/runtime: no code cache for the worker (${error instanceof Error ? error.message : String(error)}); workers compile their code from source`,
  );
}
