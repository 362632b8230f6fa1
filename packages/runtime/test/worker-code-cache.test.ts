// The worker's code cache (src/worker/worker-entry.cts, scripts/make-worker-cache.mjs): made by the
// build, accepted by a worker with the default flags, refused (and the code compiled from source)
// wherever it does not fit; the entry's own contract checked on a bundle of its own.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import vm from 'node:vm';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { WEB_POLYFILLS } from '@strata/polyfills';
import { digestKey, encodeCodeCaches, preludeKey, readCodeCaches, workerFlags } from '../src/bootstrap-code-cache.js';
import { IsolatedRuntime } from '../src/index.js';
import { strataLayerBundle } from '../src/isolated/layer-bundle-files.js';
import { fingerprintKey, layerCacheFile } from '../src/layers/layer-bundles.js';
import { loadWatchdog } from '../src/native/native-paths.js';
import { buildWorkerFlags } from '../src/isolated/v8-flags.js';
import { layerBundles, runLayerBundle } from '../src/worker/layer-scripts.js';
import { collectTimeline, recordTimeline, stopRecordingTimeline } from '../src/testing/index.js';

const workerDir = fileURLToPath(new URL('../src/worker/', import.meta.url));

async function workerMarks(options: Parameters<typeof IsolatedRuntime.start>[0]): Promise<{ labels: string[]; answer: unknown }> {
  recordTimeline();
  try {
    const rt = await IsolatedRuntime.start({ prewarm: false, ...options });
    try {
      const answer = await rt.eval('[1 + 1, typeof JSON.parse]');
      return { labels: (await collectTimeline(rt)).map(([label]) => label), answer };
    } finally {
      await rt.close();
    }
  } finally {
    stopRecordingTimeline();
  }
}

test.serial('the build made a code cache, and a worker with the default flags uses it', async (t) => {
  t.true(existsSync(join(workerDir, 'worker-main.cache')), 'npm run build writes dist/src/worker/worker-main.cache');
  const { labels, answer } = await workerMarks({ sandbox: 'require' });
  t.deepEqual(answer, [2, 'function']);
  t.true(labels.includes('worker modules loaded'));
  // read through the sandbox (the empty root, Landlock) and taken
  t.true(labels.includes('worker code cache used'), labels.join(', '));
  t.false(labels.includes('worker code cache refused'));
});

test.serial('a worker with other V8 flags refuses the cache and compiles from source', async (t) => {
  const { labels, answer } = await workerMarks({ sandbox: 'require', jitless: false });
  t.deepEqual(answer, [2, 'function']);
  t.true(labels.includes('worker code cache refused'));
  t.false(labels.includes('worker code cache used'));
});

/** A bundle as scripts/bundle-worker.mjs writes it: inside its CommonJS wrapper. */
const wrap = (bundle: string) => `(function (exports, require, module, __filename, __dirname) {${bundle}\n})`;

/** Runs a copy of the entry on `bundle` (and `cache`, if given) in a folder of its own; what the bundle printed. */
function runEntry(t: import('ava').ExecutionContext, bundle: string, cache?: (dir: string) => void): string {
  const dir = mkdtempSync(join(tmpdir(), 'strata-entry-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  copyFileSync(join(workerDir, 'worker-entry.cjs'), join(dir, 'worker-entry.cjs'));
  writeFileSync(join(dir, 'worker-main.cjs'), wrap(bundle));
  cache?.(dir);
  const run = spawnSync(process.execPath, ['--jitless', join(dir, 'worker-entry.cjs')], { encoding: 'utf8', timeout: 30_000 });
  t.is(run.status, 0, run.stderr);
  return run.stdout.trim();
}

const PROBE = `
const entry = globalThis[Symbol.for('strata.worker.entry')];
if (process.argv[2] === 'make') require('node:fs').writeFileSync(require('node:path').join(__dirname, 'worker-main.cache'), entry.createCodeCache());
entry.importModule('node:os').then((os) => console.log(JSON.stringify({ rejected: entry.codeCacheRejected ?? null, dir: __dirname === require('node:path').dirname(__filename), imported: typeof os.cpus })));
`;

test('the entry: no cache, a cache made for the bundle, a cache for another bundle, garbage', (t) => {
  t.deepEqual(JSON.parse(runEntry(t, PROBE)), { rejected: null, dir: true, imported: 'function' });
  // a cache the entry made of this very bundle is taken
  const made = runEntry(t, PROBE, (dir) => {
    const make = spawnSync(process.execPath, ['--jitless', join(dir, 'worker-entry.cjs'), 'make'], { encoding: 'utf8', timeout: 30_000 });
    t.is(make.status, 0, make.stderr);
  });
  t.deepEqual(JSON.parse(made), { rejected: false, dir: true, imported: 'function' });
  // a cache of other source, and bytes that are no cache at all, are refused; the bundle still runs
  const other = runEntry(t, `${PROBE}\n// another bundle`, (dir) => {
    const make = spawnSync(process.execPath, ['--jitless', join(dir, 'worker-entry.cjs'), 'make'], { encoding: 'utf8', timeout: 30_000 });
    t.is(make.status, 0, make.stderr);
    writeFileSync(join(dir, 'worker-main.cjs'), wrap(`${PROBE}\n// changed after the cache was made`));
  });
  t.is(JSON.parse(other).rejected, true);
  const garbage = runEntry(t, PROBE, (dir) => writeFileSync(join(dir, 'worker-main.cache'), Buffer.from('not a code cache')));
  t.is(JSON.parse(garbage).rejected, true);
});

test('the entry refuses a bundle that is not wrapped (a build older than the entry), saying what to do', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'strata-entry-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  copyFileSync(join(workerDir, 'worker-entry.cjs'), join(dir, 'worker-entry.cjs'));
  writeFileSync(join(dir, 'worker-main.cjs'), 'console.log("ran unwrapped");');
  const run = spawnSync(process.execPath, ['--jitless', join(dir, 'worker-entry.cjs')], { encoding: 'utf8', timeout: 30_000 });
  t.not(run.status, 0);
  t.regex(run.stderr, /is not the worker's wrapped bundle \(a build older than its entry\?\): rebuild @strata\/runtime/);
});

// The build's code caches of the prelude and WEB_POLYFILLS (src/bootstrap-code-cache.ts).

test.serial("the build's code caches of the prelude and WEB_POLYFILLS are used by a worker with the default flags, with strictEval too", async (t) => {
  t.true(existsSync(join(workerDir, 'bootstrap.cache')), 'npm run build writes dist/src/worker/bootstrap.cache');
  for (const strictEval of [false, true]) {
    const { labels, answer } = await workerMarks({ sandbox: 'require', bootstrap: [WEB_POLYFILLS], strictEval });
    t.deepEqual(answer, [2, 'function']);
    t.true(labels.includes("worker build's code cache used: strata:prelude"), `strictEval ${strictEval}: ${labels.join(', ')}`);
    t.true(labels.includes("worker build's code cache used: strata:bootstrap-0"), `strictEval ${strictEval}: ${labels.join(', ')}`);
    t.false(labels.some((label) => label.includes("build's code cache refused")));
  }
  // the polyfills work as compiled from source
  await using rt = await IsolatedRuntime.start({ prewarm: false, bootstrap: [WEB_POLYFILLS] });
  t.is(await rt.eval('new URL("https://example.com/a/../b?x=1").href'), 'https://example.com/b?x=1');
  t.is(await rt.eval('(async () => new Response("body").text())()'), 'body');
});

test.serial("a script as long as WEB_POLYFILLS but not it never runs from the polyfills' cache (V8 itself checks only the length)", async (t) => {
  const own = 'globalThis.marker = 42;';
  const sameLength = `${own}//${'x'.repeat(WEB_POLYFILLS.length - own.length - 2)}`;
  t.is(sameLength.length, WEB_POLYFILLS.length);
  const { labels } = await workerMarks({ sandbox: 'require', bootstrap: [sameLength] });
  t.false(labels.includes("worker build's code cache used: strata:bootstrap-0"), labels.join(', '));
  await using rt = await IsolatedRuntime.start({ prewarm: false, bootstrap: [sameLength] });
  t.is(await rt.eval('globalThis.marker'), 42);
  t.is(await rt.eval('typeof URL'), 'undefined');
});

test.serial("a worker with other V8 flags finds none of the build's caches and compiles from source", async (t) => {
  const { labels, answer } = await workerMarks({ sandbox: 'require', bootstrap: [WEB_POLYFILLS], jitless: false });
  t.deepEqual(answer, [2, 'function']);
  t.false(
    labels.some((label) => label.includes("build's code cache")),
    labels.join(', '),
  );
});

test('the cache file: only the caches made under these flags and wanted are read; a file that is not one is refused', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'strata-bootstrap-cache-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'bootstrap.cache');
  const bytes = (...values: number[]) => new Uint8Array(values);
  writeFileSync(
    file,
    encodeCodeCaches([
      { flags: '--jitless', key: preludeKey('{"a":1}'), cache: bytes(1, 2, 3) },
      { flags: '--jitless', key: digestKey('ab'.repeat(32)), cache: bytes(4, 5) },
      { flags: '--jitless --other', key: preludeKey('{"a":1}'), cache: bytes(6) },
    ]),
  );
  const all = readCodeCaches(file, () => true, '--jitless');
  t.deepEqual([...all.keys()], [preludeKey('{"a":1}'), digestKey('ab'.repeat(32))]);
  t.deepEqual([...new Uint8Array(all.get(preludeKey('{"a":1}'))!)], [1, 2, 3]);
  t.deepEqual([...new Uint8Array(all.get(digestKey('ab'.repeat(32)))!)], [4, 5]);
  t.deepEqual([...readCodeCaches(file, (key) => key.startsWith('prelude '), '--jitless').keys()], [preludeKey('{"a":1}')]);
  t.deepEqual([...new Uint8Array(readCodeCaches(file, () => true, '--jitless --other').get(preludeKey('{"a":1}'))!)], [6]);
  t.is(readCodeCaches(file, () => true, '--other-flags').size, 0);
  writeFileSync(file, 'not a cache file, though long enough to hold a header');
  t.throws(() => readCodeCaches(file, () => true, '--jitless'), { message: /not a Strata bootstrap cache file/ });
  const whole = encodeCodeCaches([{ flags: 'f', key: 'k', cache: bytes(1, 2, 3, 4) }]);
  writeFileSync(file, whole.subarray(0, whole.length - 2));
  t.throws(() => readCodeCaches(file, () => true, 'f'), { message: /cut short/ });
});

const DEFAULT_LAYERS = ['@strata/layer-emptyroot/layer', '@strata/layer-landlock/layer', '@strata/layer-seccomp/layer'];

test.serial("a worker compiles Strata's own layer bundles with their build's code caches, with the default flags and with strictEval", async (t) => {
  for (const module of DEFAULT_LAYERS)
    t.true(existsSync(layerCacheFile(createRequire(import.meta.url).resolve(module))), `the build of ${module} made its cache`);
  for (const strictEval of [false, true]) {
    recordTimeline();
    try {
      await using rt = await IsolatedRuntime.start({ prewarm: false, sandbox: 'require', strictEval });
      t.is(await rt.eval('1 + 1'), 2);
      const labels = (await collectTimeline(rt)).map(([label]) => label);
      for (const module of DEFAULT_LAYERS) t.true(labels.includes(`worker layer code cache used: ${module}`), `strictEval ${strictEval}: ${labels.join(', ')}`);
      t.false(labels.some((label) => label.includes('layer code cache refused')));
      // compiled from what was sent, the layers are in force as they were when required by name
      t.true(
        rt.report.layers.every((layer) => layer.enforcement === 'full' && layer.selfTest === 'passed'),
        JSON.stringify(rt.report.layers),
      );
    } finally {
      stopRecordingTimeline();
    }
  }
});

test.serial('with other V8 flags no layer cache is found, and the layers compile from source and are in force', async (t) => {
  recordTimeline();
  try {
    await using rt = await IsolatedRuntime.start({ prewarm: false, sandbox: 'require', jitless: false });
    t.is(await rt.eval('1 + 1'), 2);
    const labels = (await collectTimeline(rt)).map(([label]) => label);
    t.false(
      labels.some((label) => label.includes('layer code cache')),
      labels.join(', '),
    );
    t.true(rt.report.layers.every((layer) => layer.enforcement === 'full' && layer.selfTest === 'passed'));
  } finally {
    stopRecordingTimeline();
  }
});

test("the parent names each of Strata's layer bundles by path; the build filed two caches of each under its fingerprint; none for another's layer", (t) => {
  const module = '@strata/layer-seccomp/layer';
  const filename = createRequire(import.meta.url).resolve(module);
  t.is(strataLayerBundle(module), filename);
  const key = fingerprintKey(loadWatchdog().fingerprint(readFileSync(filename)));
  t.is(readCodeCachesFlags(layerCacheFile(filename), key).length, 2, 'one cache for the default flags, one for strictEval');
  t.is(strataLayerBundle('my-layer/layer'), undefined);
  t.is(strataLayerBundle('@strata/layer-nosuch/layer'), undefined);
});

test('an edited bundle of the same length never runs from the cache of the original', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'strata-layer-bundle-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const original = 'module.exports = { answer: () => 41 };';
  const edited = 'module.exports = { answer: () => 42 };';
  t.is(edited.length, original.length);
  writeFileSync(join(dir, 'layer.cjs'), original);
  // a cache of the original, filed under its fingerprint and these flags, as a build would
  const wrap = (text: string) => `(function (exports, require, module, __filename, __dirname) {${text}\n})`;
  const script = new vm.Script(wrap(original));
  const made = { exports: {} as { answer?: () => number } };
  (script.runInThisContext() as (e: object, r: unknown, m: object) => void)(made.exports, undefined, made);
  t.is(made.exports.answer?.(), 41); // compiled, so its bytecode is in the cache
  // V8 alone takes that cache for the edited text (it checks the length), and runs the original
  const stale = new vm.Script(wrap(edited), { cachedData: script.createCachedData() });
  t.false(stale.cachedDataRejected);
  const fooled = { exports: {} as { answer?: () => number } };
  (stale.runInThisContext() as (e: object, r: unknown, m: object) => void)(fooled.exports, undefined, fooled);
  t.is(fooled.exports.answer?.(), 41);
  const watchdog = loadWatchdog();
  const cacheOf = (text: string) => ({ flags: workerFlags(), key: fingerprintKey(watchdog.fingerprint(Buffer.from(text))), cache: script.createCachedData() });
  writeFileSync(join(dir, 'layer.cache'), encodeCodeCaches([cacheOf(original)]));
  const run = (): number => (runLayerBundle(join(dir, 'layer.cjs'), 'test', watchdog) as { answer: () => number }).answer();
  t.is(run(), 41);
  writeFileSync(join(dir, 'layer.cjs'), edited);
  t.is(run(), 42);
  // without the addon's fingerprint, no cache is looked up at all
  t.is((runLayerBundle(join(dir, 'layer.cjs'), 'test', undefined) as { answer: () => number }).answer(), 42);
});

test('a worker leaves out a layer bundle that is not an absolute path to a .cjs file (that layer is then loaded by name)', (t) => {
  const bundles = layerBundles({ a: '/x/dist/src/layer.cjs', b: 'relative/layer.cjs', c: '/x/layer.js', d: 42, e: null });
  t.deepEqual([...bundles], [['a', '/x/dist/src/layer.cjs']]);
  t.is(layerBundles(undefined).size, 0);
  t.is(layerBundles('nonsense').size, 0);
});

/** Which of the two flag sets the build makes caches under have a cache filed under `key` in the file at `path`. */
function readCodeCachesFlags(path: string, key: string): string[] {
  return [false, true]
    .map((strictEval) => {
      const flags = buildWorkerFlags({ jitless: true, strictEval, v8Flags: [] });
      return [...flags.node, '--expose-gc', ...flags.v8].join(' ');
    })
    .filter((flags) => readCodeCaches(path, (k) => k === key, flags).has(key));
}
