// The worker's code cache (src/worker/worker-entry.cts, scripts/make-worker-cache.mjs): made by the
// build, accepted by a worker with the default flags, refused (and the code compiled from source)
// wherever it does not fit; the entry's own contract checked on a bundle of its own.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { WEB_POLYFILLS } from '@strata/polyfills';
import { digestKey, encodeCodeCaches, preludeKey, readCodeCaches } from '../src/bootstrap-code-cache.js';
import { IsolatedRuntime } from '../src/index.js';
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

/** Runs a copy of the entry on `bundle` (and `cache`, if given) in a folder of its own; what the bundle printed. */
function runEntry(t: import('ava').ExecutionContext, bundle: string, cache?: (dir: string) => void): string {
  const dir = mkdtempSync(join(tmpdir(), 'strata-entry-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  copyFileSync(join(workerDir, 'worker-entry.cjs'), join(dir, 'worker-entry.cjs'));
  writeFileSync(join(dir, 'worker-main.cjs'), bundle);
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
    writeFileSync(join(dir, 'worker-main.cjs'), `${PROBE}\n// changed after the cache was made`);
  });
  t.is(JSON.parse(other).rejected, true);
  const garbage = runEntry(t, PROBE, (dir) => writeFileSync(join(dir, 'worker-main.cache'), Buffer.from('not a code cache')));
  t.is(JSON.parse(garbage).rejected, true);
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
