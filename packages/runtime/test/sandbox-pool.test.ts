// SandboxPool's rules, each tried for real: workers are processes, killed and counted from /proc.
// Serial: the tests look at this process's children.
import test from 'ava';
import { readFileSync } from 'node:fs';
import {
  CrashBudgetExceeded,
  InvalidOption,
  RuntimeClosed,
  RuntimeTimeout,
  SandboxPool,
  SandboxUnavailable,
  WorkerCrashed,
  type LayerDescriptor,
} from '../src/index.js';
import { checkNoLeaks, childPids } from './helpers/leaks.js';

checkNoLeaks(test);

const CONFIGURABLE = new URL('./fixtures/layers/configurable-layer.js', import.meta.url).href;
/** Whether `pid` is a live process (not gone, not a zombie). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Polls `condition` every 20 ms for up to `ms` (a minute: background starts are slow on a loaded machine; polling costs nothing when they are not). */
async function eventually(condition: () => boolean, ms = 60_000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return condition();
}

test.serial('same construction: bad options and an unmet require fail in start(), before anything runs in the background', async (t) => {
  const before = childPids().length;
  await t.throwsAsync(SandboxPool.start({ size: 0 }), { instanceOf: InvalidOption, message: /size must be an integer ≥ 1/ });
  await t.throwsAsync(SandboxPool.start({ maxMemory: -1 }), { instanceOf: InvalidOption });
  await t.throwsAsync(SandboxPool.start({ prewarm: true } as never), { instanceOf: InvalidOption, message: /prewarm is not a pool option/ });
  await t.throwsAsync(SandboxPool.start({ crashBudget: { crashes: 0, windowMs: 1 } }), { instanceOf: InvalidOption });
  const seatbelt: LayerDescriptor = { module: '@strata/layer-seatbelt/layer' };
  await t.throwsAsync(SandboxPool.start({ sandbox: 'require', layers: [seatbelt] }), { instanceOf: SandboxUnavailable, message: /seatbelt/ });
  t.is(childPids().length, before, 'no worker was left starting');
});

test.serial('the pool fills to size; a checkout hands over a started, sandboxed runtime; waitReady and stats say so', async (t) => {
  await using pool = await SandboxPool.start({ size: 2, sandbox: 'require' });
  await pool.waitReady();
  t.like(pool.stats(), { size: 2, ready: 2, starting: 0, checkouts: 0, coldStarts: 0, lastError: undefined });
  await using rt = await pool.checkout();
  t.is(await rt.eval('1 + 1'), 2);
  t.is(rt.sandbox, 'landlock+seccomp');
  t.deepEqual(rt.sandboxExtras, ['emptyroot']);
  t.like(pool.stats(), { checkouts: 1, coldStarts: 0 });
  t.true(await eventually(() => pool.stats().ready === 2), 'the replacement started in the background');
});

test.serial('a checkout takes the worker readied last (its caches are the warmest), the one readied first last', async (t) => {
  // One start at a time: the first worker is spawned, and so numbered, before the second.
  await using pool = await SandboxPool.start({ size: 2, maxConcurrentStarts: 1 });
  await pool.waitReady();
  await using newest = await pool.checkout();
  await using oldest = await pool.checkout();
  t.true(newest.pid > oldest.pid, `checked out ${newest.pid}, then ${oldest.pid}`);
  t.is(await newest.eval('1 + 1'), 2);
});

test.serial('single use: a closed checkout kills its worker and is never handed out again; no worker serves two sessions', async (t) => {
  await using pool = await SandboxPool.start({ size: 1 });
  const seen = new Set<number>();
  for (let i = 0; i < 3; i++) {
    await pool.waitReady();
    const rt = await pool.checkout();
    await rt.eval('globalThis.leftBehind = "secret"');
    t.false(seen.has(rt.pid), `worker ${rt.pid} served a second session`);
    seen.add(rt.pid);
    const pid = rt.pid;
    await rt.close();
    t.false(alive(pid), 'closing it killed its worker');
  }
  await using next = await pool.checkout();
  t.is(await next.eval('typeof globalThis.leftBehind'), 'undefined', 'nothing one guest left reaches the next');
});

test.serial('exhaustion is a cold start, never an error', async (t) => {
  await using pool = await SandboxPool.start({ size: 1, maxConcurrentStarts: 1 });
  await pool.waitReady();
  await using a = await pool.checkout();
  await using b = await pool.checkout(); // nothing ready: started on the spot
  t.not(a.pid, b.pid);
  t.is(await b.eval('6 * 7'), 42);
  t.is(pool.stats().coldStarts, 1);
  t.is(pool.stats().checkouts, 2);
});

test.serial('a pooled worker that dies while it waits is discarded, never handed out, and replaced', async (t) => {
  await using pool = await SandboxPool.start({ size: 2 });
  await pool.waitReady();
  const waiting = childPids();
  t.is(waiting.length, 2);
  for (const pid of waiting) process.kill(pid, 'SIGKILL');
  t.true(await eventually(() => pool.stats().discarded === 2), `discarded: ${pool.stats().discarded}`);
  await using rt = await pool.checkout();
  t.false(waiting.includes(rt.pid), 'a dead worker was not handed out');
  t.is(await rt.eval('1 + 1'), 2);
  t.true(await eventually(() => pool.stats().ready === 2));
});

test.serial('a failed background start is retried with a backoff and shown in stats().lastError; the pool still fills', async (t) => {
  globalThis.strataLaunchFailures = { pool: 0 };
  const flaky: LayerDescriptor = { module: CONFIGURABLE, options: { name: 'flaky', launchFailuresKey: 'pool' } };
  await using pool = await SandboxPool.start({ size: 2, maxConcurrentStarts: 1, layers: [flaky] });
  globalThis.strataLaunchFailures.pool = 2; // the next two background starts fail
  await using rt = await pool.checkout(); // two to refill now
  t.true(await eventually(() => pool.stats().failedStarts >= 1));
  t.regex(pool.stats().lastError ?? '', /LayerFailed: layer flaky: launch failed: flaky fails this start as asked/);
  t.true(await eventually(() => pool.stats().ready === 2), JSON.stringify(pool.stats()));
  t.is(pool.stats().failedStarts, 2);
  t.is(pool.stats().lastError, undefined, 'cleared by the next success');
  t.is(await rt.eval('1 + 1'), 2);
});

test.serial("waitReady rejects with a background start's own error, and after close()", async (t) => {
  globalThis.strataLaunchFailures = { wait: 0 };
  const flaky: LayerDescriptor = { module: CONFIGURABLE, options: { name: 'flaky', launchFailuresKey: 'wait' } };
  const pool = await SandboxPool.start({ size: 2, maxConcurrentStarts: 1, layers: [flaky] });
  try {
    await pool.waitReady();
    // Two failures: the second comes after a 100 ms backoff, so waitReady is surely waiting by then.
    globalThis.strataLaunchFailures.wait = 2;
    const rt = await pool.checkout();
    await t.throwsAsync(pool.waitReady(), { message: /flaky fails this start as asked/ });
    await rt.close();
  } finally {
    await pool.close();
  }
  await pool.close(); // idempotent
  await t.throwsAsync(pool.waitReady(), { instanceOf: RuntimeClosed });
  await t.throwsAsync(pool.checkout(), { instanceOf: RuntimeClosed, message: /the pool is closed/ });
  t.is(pool.stats().ready, 0);
});

test.serial('per-checkout session options bind that session only; worker options are refused per checkout, saying where they go', async (t) => {
  await using pool = await SandboxPool.start({ size: 1, timeout: 1_000 });
  await t.throwsAsync(pool.checkout({ timeout: 5 } as never), { instanceOf: InvalidOption, message: /timeout cannot be set per checkout.*Set it on the pool/ });
  await t.throwsAsync(pool.checkout({ requestTimeout: 60_000 }), { instanceOf: InvalidOption, message: /may only be lowered/ });
  await t.throwsAsync(pool.checkout({ maxHostCalls: -1 }), { instanceOf: InvalidOption });
  await t.throwsAsync(pool.checkout({ tenant: '' }), { instanceOf: InvalidOption });
  {
    await using limited = await pool.checkout({ maxHostCalls: 2 });
    limited.bindFunction('ping', () => 1);
    await t.throwsAsync(limited.eval('ping() + ping() + ping()'), { instanceOf: WorkerCrashed, message: /maxHostCalls \(2\)/ });
  }
  await using free = await pool.checkout();
  free.bindFunction('ping', () => 1);
  t.is(await free.eval('ping() + ping() + ping()'), 3, "the next session has the pool's limits");
});

test.serial('crash budget: a tenant whose runs keep crashing is refused, others are not', async (t) => {
  await using pool = await SandboxPool.start({ size: 1, crashBudget: { crashes: 2, windowMs: 60_000 } });
  {
    // A worker killed for a host-call flood, then one killed at its (per-checkout) hard deadline:
    // both are crashes. (Not new Array(2 ** 32 - 1).fill(0): whether that aborts V8 before the
    // pool's 32 s requestTimeout depends on how loaded the machine is.)
    await using rt = await pool.checkout({ tenant: 'prober', maxHostCalls: 1 });
    rt.bindFunction('ping', () => 1);
    await t.throwsAsync(rt.eval('for (;;) ping()'), { instanceOf: WorkerCrashed, message: /maxHostCalls \(1\)/ });
  }
  {
    await using rt = await pool.checkout({ tenant: 'prober', requestTimeout: 300 });
    await t.throwsAsync(rt.eval('for (;;) {}'), { instanceOf: RuntimeTimeout, message: /worker was killed/ });
  }
  const refused = await t.throwsAsync(pool.checkout({ tenant: 'prober' }), { instanceOf: CrashBudgetExceeded });
  t.is(refused?.code, 'ERR_STRATA_CRASH_BUDGET');
  t.is(refused?.tenant, 'prober');
  t.true(refused!.retryAfterMs > 0 && refused!.retryAfterMs <= 60_000);
  t.regex(refused!.message, /tenant "prober" is refused: its runtimes crashed 2 times/);
  {
    await using other = await pool.checkout({ tenant: 'honest' });
    t.is(await other.eval('1 + 1'), 2, 'another tenant is unaffected');
  }
  {
    // A clean close is not a crash.
    await using fine = await pool.checkout({ tenant: 'honest' });
    await fine.eval('1');
  }
  await using anonymous = await pool.checkout();
  t.is(await anonymous.eval('2 + 2'), 4);
  t.like(pool.stats(), { refused: 1, tenantCrashes: { prober: 2 } });
});
