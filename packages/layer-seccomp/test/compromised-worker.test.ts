// End to end, in a child process (never in ava's own process: a filter cannot be lifted).
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { NO_IO_URING_HELPER } from '../src/addon.js';
import { platformTest } from '@strata/runtime/testing';

const fixture = fileURLToPath(new URL('./fixtures/compromised-worker.js', import.meta.url));
const linux = process.platform === 'linux' && (process.arch === 'x64' || process.arch === 'arm64');

interface Output {
  arch: string;
  capability: { available: boolean; missing: string[] };
  detail: Record<string, unknown>;
  selfTest: string;
  mode: number;
  noNewPrivs: number;
  threads: { tid: number; mode: number; filters: number; noNewPrivs: number }[];
  results: { what: string; result: number; expect: number | string; ok: boolean }[];
  workerThread: string;
  abstractConnect: string;
}

const outputs = new Map<string, Output>();
/** Runs the suite in a child: plain Node (libuv has its io_uring rings), or under strata-no-io-uring (it has none). */
function run(variant: 'plain' | 'no-io-uring' = 'plain'): Output {
  const cached = outputs.get(variant);
  if (cached) return cached;
  const [command, args] = variant === 'plain' ? [process.execPath, [fixture]] : [NO_IO_URING_HELPER, ['--', process.execPath, fixture]];
  const child = spawnSync(command, args, { encoding: 'utf8', timeout: 60_000, env: {} });
  if (child.status !== 0) throw new Error(`the suite's child failed (${child.status ?? child.signal}): ${child.stderr}`);
  const output = JSON.parse(child.stdout.trim().split('\n').pop()!) as Output;
  outputs.set(variant, output);
  return output;
}

const maybe = platformTest(test, { feature: 'linux', available: linux, reason: 'Linux only (x64 or arm64)' });

maybe('probe (with its test-fire), apply and selfTest pass in a child', (t) => {
  const o = run();
  t.true(o.capability.available, o.capability.missing.join('; '));
  t.is(o.selfTest, 'passed');
  t.is(o.detail.highestReviewed, 471);
  t.true((o.detail.deniedCalls as number) > 100);
  t.is(typeof o.detail.threadsCovered, 'number');
});

maybe('every thread of the child has the filter and no_new_privs', (t) => {
  const o = run();
  t.is(o.mode, 2);
  t.is(o.noNewPrivs, 1);
  t.true(o.threads.length >= 5, `${o.threads.length} threads`);
  for (const thread of o.threads) t.deepEqual([thread.mode, thread.filters, thread.noNewPrivs], [2, 1, 1], `thread ${thread.tid}`);
  t.is(o.detail.ioUring, "setup denied; enter/register allowed for libuv's existing rings");
});

maybe('the compromised-worker system-call suite: every call gets its expected errno', (t) => {
  const o = run();
  t.true(o.results.length > 60);
  for (const r of o.results) t.true(r.ok, `${r.what}: got ${r.result}, expected ${r.expect}`);
});

maybe('thread creation still works under the filter (a worker_thread starts)', (t) => {
  t.is(run().workerThread, 'started');
});

maybe('an abstract unix connect is refused (connect is denied outright)', (t) => {
  t.is(run().abstractConnect, 'EPERM');
});

maybe('under strata-no-io-uring libuv makes no ring, and the layer then denies io_uring_enter/register too', (t) => {
  const o = run('no-io-uring');
  t.is(o.detail.ioUring, 'denied');
  t.is(o.selfTest, 'passed');
  for (const r of o.results) t.true(r.ok, `${r.what}: got ${r.result}, expected ${r.expect}`);
  t.true(o.results.some((r) => r.what.startsWith('io_uring_enter') && r.result === -1));
  for (const thread of o.threads)
    t.deepEqual([thread.mode, thread.filters, thread.noNewPrivs], [2, 2, 1], `thread ${thread.tid} (the helper's filter + the layer's)`);
  t.is(o.workerThread, 'started');
});

maybe('strata-no-io-uring refuses bad usage with a one-line reason', (t) => {
  const child = spawnSync(NO_IO_URING_HELPER, ['node'], { encoding: 'utf8' });
  t.is(child.status, 120);
  t.regex(child.stderr, /^strata-no-io-uring: usage: /);
});
