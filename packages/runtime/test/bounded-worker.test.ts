// BoundedWorker: parent-side work in a worker thread of its own, one request at a time, under a
// deadline. A worker past its deadline, one that dies, and one whose handler throws what it cannot
// recover from are replaced (the next request sees a new generation); one that cannot start is
// 'unavailable' with the reason, never a hang. The workers' scripts are written to a temp folder.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import test from 'ava';
import { BoundedWorker, workerExecArgv } from '../src/bounded-worker.js';

const HELPER = JSON.stringify(new URL('../src/bounded-worker.js', import.meta.url).href);
let folder: string;

/** A worker script in the temp folder, as a file URL. */
async function script(name: string, source: string): Promise<URL> {
  const path = join(folder, `${name}.mjs`);
  await writeFile(path, source);
  return pathToFileURL(path);
}

// Answers with its generation; 'spin' never answers, 'exit' ends the thread, 'throw' throws
// (recoverable unless 'fatal').
const SERVING = `
import { boundedWorkerData, serveBoundedRequests } from ${HELPER};
const { generation } = boundedWorkerData();
serveBoundedRequests((request) => {
  if (request === 'spin') for (;;);
  if (request === 'exit') process.exit(3);
  if (request === 'throw' || request === 'fatal') throw Object.assign(new RangeError('refused ' + request), { code: request });
  return generation;
}, { recoverable: (error) => error.code === 'throw' });
`;

test.before(async () => {
  folder = await mkdtemp(join(tmpdir(), 'strata-bounded-worker-'));
});
test.after.always(async () => {
  await rm(folder, { recursive: true, force: true });
});

test('requests are answered in order by one warm worker', async (t) => {
  const worker = new BoundedWorker<string, number>({ script: await script('order', SERVING), startTimeout: 60_000 });
  try {
    const outcomes = await Promise.all(['a', 'b', 'c'].map((request) => worker.run(request, 30_000)));
    t.deepEqual(
      outcomes,
      [1, 1, 1].map((value) => ({ status: 'ok', value })),
    );
  } finally {
    await worker.close();
  }
});

test('past its deadline the worker is terminated and the next request gets a fresh one', async (t) => {
  const worker = new BoundedWorker<string, number>({ script: await script('spin', SERVING), startTimeout: 60_000 });
  try {
    t.deepEqual(await worker.run('warm', 30_000), { status: 'ok', value: 1 });
    t.deepEqual(await worker.run('spin', 50), { status: 'timeout' });
    t.deepEqual(await worker.run('again', 30_000), { status: 'ok', value: 2 });
  } finally {
    await worker.close();
  }
});

test('a thrown error is the outcome; the worker is kept only after an error it recovers from', async (t) => {
  const worker = new BoundedWorker<string, number>({ script: await script('throw', SERVING), startTimeout: 60_000 });
  try {
    t.like(await worker.run('throw', 30_000), { status: 'error', error: { name: 'RangeError', message: 'refused throw', code: 'throw' } });
    t.deepEqual(await worker.run('x', 30_000), { status: 'ok', value: 1 }, 'kept');
    t.like(await worker.run('fatal', 30_000), { status: 'error', error: { name: 'RangeError', code: 'fatal' } });
    t.deepEqual(await worker.run('x', 30_000), { status: 'ok', value: 2 }, 'replaced');
    t.like(await worker.run('exit', 30_000), { status: 'crashed' });
    t.deepEqual(await worker.run('x', 30_000), { status: 'ok', value: 3 }, 'replaced after it died');
  } finally {
    await worker.close();
  }
});

test("a worker that cannot start, or never becomes ready, is 'unavailable' with the reason", async (t) => {
  const broken = new BoundedWorker<string, number>({ script: await script('broken', 'throw new Error("cannot start here");'), startTimeout: 60_000 });
  const outcome = await broken.run('x', 30_000);
  t.is(outcome.status, 'unavailable');
  t.regex((outcome as { message: string }).message, /cannot start here/);
  const silent = new BoundedWorker<string, number>({ script: await script('silent', 'setInterval(() => {}, 1000);'), startTimeout: 200 });
  t.deepEqual(await silent.run('x', 30_000), { status: 'unavailable', message: 'the worker thread was not ready within 200 ms' });
  const missing = new BoundedWorker<string, number>({ script: pathToFileURL(join(folder, 'no-such-script.mjs')), startTimeout: 60_000 });
  t.is((await missing.run('x', 30_000)).status, 'unavailable');
});

test("a worker thread takes the process's flags but those of the main thread's input", (t) => {
  t.deepEqual(workerExecArgv(['--no-warnings', '--input-type=module', '-e', 'code', '--import', 'hooks.mjs']), ['--no-warnings', '--import', 'hooks.mjs']);
  t.deepEqual(workerExecArgv(['-p', 'code', '--eval=x', '--max-old-space-size=100']), ['--max-old-space-size=100']);
});
