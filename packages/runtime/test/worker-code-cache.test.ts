// The worker's code cache (src/worker/worker-entry.cts, scripts/make-worker-cache.mjs): made by the
// build, accepted by a worker with the default flags, refused (and the code compiled from source)
// wherever it does not fit; the entry's own contract checked on a bundle of its own.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
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
