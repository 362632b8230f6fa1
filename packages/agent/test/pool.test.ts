// Sessions on a SandboxPool: workers come from the pool (start, restore and recovery), the pool's
// frozen clock is the session's, and only the per-checkout options may be set beside a pool.
import test from 'ava';
import { InvalidOption, SandboxPool, type SandboxPoolOptions } from '@strata/runtime';
import { AgentSandbox, JournalError, type Journal } from '../src/index.js';
import { checkNoLeaks } from './helpers/leaks.js';

checkNoLeaks(test);

const AT = '2026-01-01T00:00:00Z';
const CLOCK = { at: AT, seed: 5 };

async function startPool(t: { teardown: (fn: () => Promise<void>) => void }, options: SandboxPoolOptions = { clock: CLOCK }): Promise<SandboxPool> {
  const pool = await SandboxPool.start({ size: 1, ...options });
  t.teardown(() => pool.close());
  return pool;
}

function countingTools() {
  const runs = { count: 0 };
  return { runs, tools: { count: async () => ++runs.count } };
}

test("a session on a pool: its worker is the pool's, the journal records the pool's clock, and a restore with the same pool calls no tool", async (t) => {
  const pool = await startPool(t);
  const { runs, tools } = countingTools();
  const session = await AgentSandbox.start({ pool, tools });
  try {
    t.is(pool.stats().checkouts, 1);
    t.deepEqual(session.journal.settings.clock, { at: Date.parse(AT), seed: 5 });
    t.deepEqual(session.journal.settings.tools, ['count']);
    const first = await session.run('globalThis.g = await count(); [g, Date.now(), Math.random()]');
    t.is(first.status, 'ok', first.error);
    const [g, now] = first.result as [number, number, number];
    t.is(g, 1);
    t.is(now, Date.parse(AT), "the guest runs the pool's frozen clock");
    const journal = session.journal;
    t.is(runs.count, 1);

    const restored = await AgentSandbox.restore(journal, { pool, tools });
    try {
      t.is(pool.stats().checkouts, 2, 'the restore took a worker from the pool');
      t.is(runs.count, 1, 'the restore called no tool');
      t.deepEqual(restored.journal.settings, journal.settings);
      t.deepEqual((await restored.run('[g, Date.now()]')).result, [1, Date.parse(AT)]);
      t.is(runs.count, 1);
    } finally {
      await restored.close();
    }
  } finally {
    await session.close();
  }
});

test('a restore on the pool continues the seeded sequence exactly where the original session was', async (t) => {
  const pool = await startPool(t);
  const { tools } = countingTools();
  await using session = await AgentSandbox.start({ pool, tools });
  await session.run('globalThis.first = [Math.random(), await count()]');
  const journal = session.journal;
  const live = (await session.run('[Math.random(), Math.random()]')).result;
  await using restored = await AgentSandbox.restore(journal, { pool, tools });
  t.deepEqual((await restored.run('[Math.random(), Math.random()]')).result, live);
});

test('recovery after a SIGKILL takes a worker from the pool', async (t) => {
  const pool = await startPool(t);
  let session: AgentSandbox | undefined;
  const runs = { count: 0, kill: 0 };
  const tools = {
    count: async () => ++runs.count,
    kill: async () => {
      runs.kill++;
      process.kill(session!.pid!, 'SIGKILL');
      await new Promise((resolve) => setTimeout(resolve, 50));
      return 'late';
    },
  };
  session = await AgentSandbox.start({ pool, tools });
  try {
    await session.run('globalThis.g = await count()');
    const pid = session.pid;
    const crashed = await session.run('await kill()');
    t.is(crashed.errorType, 'WorkerCrashed');
    t.is(session.journal.cells[1]!.status, 'crashed');
    await pool.waitReady();
    const before = pool.stats();
    const next = await session.run('[g, await count()]');
    t.deepEqual(next.result, [1, 2]);
    const after = pool.stats();
    t.is(after.checkouts, before.checkouts + 1, 'the recovery checked a worker out of the pool');
    t.is(after.coldStarts, before.coldStarts, 'a ready one');
    t.not(session.pid, pid);
    t.deepEqual(runs, { count: 2, kill: 1 });
    t.deepEqual(session.journal.settings.clock, { at: Date.parse(AT), seed: 5 });
  } finally {
    await session.close();
  }
});

test('a pool without a frozen clock is refused with InvalidOption naming the frozen clock', async (t) => {
  const pool = await startPool(t, {});
  const { runs, tools } = countingTools();
  const error = await t.throwsAsync(AgentSandbox.start({ pool, tools }), { instanceOf: InvalidOption });
  t.is(error?.code, 'ERR_STRATA_INVALID_OPTION');
  t.regex(error!.message, /frozen clock/);
  t.regex(error!.message, /clock: \{ at, seed \}/);
  t.is(runs.count, 0);
});

test('a worker option beside a pool is refused with InvalidOption; the per-checkout options are accepted', async (t) => {
  const pool = await startPool(t);
  const { tools } = countingTools();
  for (const option of [{ strictEval: true }, { timeout: 1000 }, { bootstrap: [] }, { clock: CLOCK }, { maxHeapSize: 64 * 1024 * 1024 }]) {
    const name = Object.keys(option)[0]!;
    const error = await t.throwsAsync(AgentSandbox.start({ pool, tools, ...option }), { instanceOf: InvalidOption }, name);
    t.is(error?.code, 'ERR_STRATA_INVALID_OPTION');
    t.regex(error!.message, new RegExp(`with a pool, the workers are the pool's: ${name} cannot be set per session`));
  }
  t.is(pool.stats().checkouts, 0, 'refused before any checkout');
  await using session = await AgentSandbox.start({ pool, tools, requestTimeout: 5000, maxHostCalls: 50 });
  t.is((await session.run('1 + 1')).result, 2);
  const bad = await t.throwsAsync(AgentSandbox.start({ tools, pool: 'not a pool' as never }), { instanceOf: InvalidOption });
  t.regex(bad!.message, /pool must be a SandboxPool/);
});

test('a journal recorded with another clock cannot be restored into the pool: JournalError (ERR_STRATA_JOURNAL), and no tool is called', async (t) => {
  const pool = await startPool(t);
  const { runs, tools } = countingTools();
  // The pool's workers have no bootstrap scripts: recorded the same, only the clock differs.
  const other = await AgentSandbox.start({ tools, bootstrap: [], clock: { at: '2025-06-01T00:00:00Z', seed: 5 } });
  let journal: Journal | undefined;
  try {
    await other.run('globalThis.g = await count()');
    journal = other.journal;
  } finally {
    await other.close();
  }
  t.is(runs.count, 1);
  const error = await t.throwsAsync(AgentSandbox.restore(journal!, { pool, tools }), { instanceOf: JournalError });
  t.is(error?.code, 'ERR_STRATA_JOURNAL');
  t.regex(error!.message, /its clock is 2025-06-01T00:00:00\.000Z, this session's 2026-01-01T00:00:00\.000Z/);
  t.notRegex(error!.message, /bootstrap/);
  t.is(runs.count, 1);
  // Another seed, the same instant: refused too.
  const seeded = { ...journal!, settings: { ...journal!.settings, clock: { at: Date.parse(AT), seed: 6 } } };
  await t.throwsAsync(AgentSandbox.restore(seeded, { pool, tools }), { instanceOf: JournalError, message: /its seed is 6, this session's 5/ });
});

test('tenant: a pooled session names whose it is (the pool counts its crashes against that tenant); without a pool it is refused', async (t) => {
  const pool = await startPool(t, { clock: CLOCK, crashBudget: { crashes: 1, windowMs: 60_000 } });
  const { tools } = countingTools();
  await using session = await AgentSandbox.start({ pool, tools, tenant: 'acme' });
  t.is((await session.run('globalThis.x = 1')).status, 'ok');
  const pid = session.pid!;
  process.kill(pid, 'SIGKILL');
  // The worker died between cells; recovering needs a checkout for acme, which its budget refuses.
  await t.throwsAsync(
    async () => {
      for (;;) {
        await session.run('x');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    { code: 'ERR_STRATA_CRASH_BUDGET' },
  );
  await using other = await AgentSandbox.start({ pool, tools, tenant: 'globex' });
  t.is((await other.run('2')).result, 2);
  await t.throwsAsync(AgentSandbox.start({ tools, tenant: 'acme' }), { instanceOf: InvalidOption, message: /tenant .* give it with pool/ });
});
