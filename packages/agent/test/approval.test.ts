// Approvals: a tool with needsApproval stops the cell before it runs; approve resumes it by
// replay and the tool runs once; deny makes the call throw in the guest; a pending approval
// survives the journal, into another AgentSandbox. Parallel calls that need approval are each
// pending, each decided, and the cell resumes once none is undecided; the journal is restorable at
// every point, and every recorded value is checked when it is restored.
import test, { type ExecutionContext } from 'ava';
import { StrataError } from '@strata/runtime';
import { AgentSandbox, JournalError, SessionStateError, type CellResult, type Journal } from '../src/index.js';
import { checkJournal } from '../src/journal.js';
import { checkNoLeaks } from './helpers/leaks.js';

checkNoLeaks(test);

function mailer() {
  const sent: string[] = [];
  let lookups = 0;
  const tools = {
    lookup: async (sku: string) => {
      lookups++;
      return ({ A1: 3.5 } as Record<string, number>)[sku];
    },
    send: {
      description: 'Sends an e-mail',
      needsApproval: true,
      execute: async (to: string, text: string) => {
        sent.push(`${to}: ${text}`);
        return `sent to ${to}`;
      },
    },
  };
  return { tools, sent, lookups: () => lookups };
}

const CELL = 'const price = await lookup("A1"); console.log("price", price); const receipt = await send("ops", "price " + price); [receipt, price]';

test('approve: the cell stops before the tool runs, then resumes by replay and the tool runs once', async (t) => {
  const { tools, sent, lookups } = mailer();
  await using session = await AgentSandbox.start({ tools });
  const p = await session.run(CELL);
  t.is(p.status, 'awaiting-approval');
  t.deepEqual(p.pending, { seq: 2, tool: 'send', args: ['ops', 'price 3.5'] });
  t.deepEqual(session.pending, p.pending);
  t.deepEqual(
    p.calls.map((c) => [c.tool, c.status]),
    [
      ['lookup', 'completed'],
      ['send', 'pending'],
    ],
  );
  t.is(p.stdout, 'price 3.5\n');
  t.deepEqual(sent, [], 'not sent before approval');
  t.is(session.journal.cells[0]!.status, 'awaiting-approval');
  await t.throwsAsync(session.run('1'), { instanceOf: SessionStateError, message: /call 2 \(send\) awaits approval: approve\(2\) or deny\(2, reason\) first/ });
  await t.throwsAsync(session.approve(7), { instanceOf: SessionStateError, message: /call 7 does not await approval; call 2 \(send\) does/ });
  const done = await session.approve(2);
  t.is(done.status, 'ok');
  t.deepEqual(done.result, ['sent to ops', 3.5]);
  t.deepEqual(
    done.calls.map((c) => [c.seq, c.tool, c.status]),
    [
      [1, 'lookup', 'completed'],
      [2, 'send', 'completed'],
    ],
  );
  t.deepEqual(sent, ['ops: price 3.5'], 'sent once');
  t.is(lookups(), 1, 'the earlier call came from the journal');
  t.is(session.pending, undefined);
  await t.throwsAsync(session.approve(2), { instanceOf: SessionStateError, message: /no call awaits approval/ });
  t.deepEqual((await session.run('[receipt, price]')).result, ['sent to ops', 3.5], 'the cell’s declarations persist');
});

test('deny: the call throws an Error in the guest, with the reason, and the cell goes on', async (t) => {
  const { tools, sent } = mailer();
  await using session = await AgentSandbox.start({ tools });
  const p = await session.run('let outcome; try { await send("all", "spam") } catch (e) { outcome = [e instanceof Error, e.message] } outcome');
  t.is(p.status, 'awaiting-approval');
  const denied = await session.deny(p.pending!.seq, 'not to everyone');
  t.is(denied.status, 'ok');
  t.deepEqual(denied.result, [true, 'the call to send was denied: not to everyone']);
  t.deepEqual(
    denied.calls.map((c) => c.status),
    ['denied'],
  );
  t.deepEqual(sent, []);
  // an uncaught denial is the cell's error
  const again = await session.run('await send("all", "spam again")');
  const uncaught = await session.deny(again.pending!.seq);
  t.is(uncaught.status, 'error');
  t.is(uncaught.error, 'the call to send was denied');
  t.deepEqual(sent, []);
  t.is(session.journal.cells[1]!.calls[0]!.status, 'denied');
});

test('a pending approval survives the journal: approved later in another AgentSandbox, the tool runs there once', async (t) => {
  const first = mailer();
  let saved: string;
  {
    await using session = await AgentSandbox.start({ tools: first.tools });
    t.is((await session.run('globalThis.before = "kept"')).status, 'ok');
    t.is((await session.run(CELL)).status, 'awaiting-approval');
    saved = JSON.stringify(session.journal);
  }
  const second = mailer();
  await using restored = await AgentSandbox.restore(JSON.parse(saved), { tools: second.tools });
  t.deepEqual(restored.pending, { seq: 2, tool: 'send', args: ['ops', 'price 3.5'] });
  t.is(second.lookups(), 0, 'restoring called no tool');
  const done = await restored.approve(2);
  t.deepEqual(done.result, ['sent to ops', 3.5]);
  t.deepEqual(first.sent, []);
  t.deepEqual(second.sent, ['ops: price 3.5']);
  t.is(second.lookups(), 0, 'the lookup before it came from the journal');
  t.is((await restored.run('before')).result, 'kept');
});

test('needsApproval per call: calls it clears run at once; two approvals in one cell, each resumed', async (t) => {
  const sent: string[] = [];
  const tools = {
    send: { needsApproval: (to: string) => to !== 'me', execute: async (to: string) => (sent.push(to), to) },
  };
  await using session = await AgentSandbox.start({ tools });
  const cell = 'const got = [await send("me"), await send("boss"), await send("me"), await send("ops")]; got';
  const first = await session.run(cell);
  t.deepEqual(first.pending, { seq: 2, tool: 'send', args: ['boss'] });
  t.deepEqual(sent, ['me']);
  const second = await session.approve(2);
  t.is(second.status, 'awaiting-approval');
  t.deepEqual(second.pending, { seq: 4, tool: 'send', args: ['ops'] });
  t.deepEqual(sent, ['me', 'boss', 'me']);
  const done = await session.approve(4);
  t.deepEqual(done.result, ['me', 'boss', 'me', 'ops']);
  t.deepEqual(sent, ['me', 'boss', 'me', 'ops'], 'each call ran exactly once');
});

/**
 * `send(to)` needs approval unless `to` is 'me'; `lookup` does not. The checks answer once the
 * four sends of PARALLEL have all reached the host (a call that reaches it after the cell stopped
 * is made again when it resumes, and stops it again), then out of order.
 */
function parallelMailer() {
  const sent: string[] = [];
  let checks = 0;
  let arrived!: () => void;
  const all = new Promise<void>((resolve) => (arrived = resolve));
  const tools = {
    lookup: async (sku: string) => `price of ${sku}`,
    send: {
      needsApproval: async (to: string) => {
        if (++checks === 4) arrived();
        await all;
        await new Promise((resolve) => setTimeout(resolve, to === 'a' ? 30 : 1));
        return to !== 'me';
      },
      execute: async (to: string) => (sent.push(to), `sent ${to}`),
    },
  };
  return { tools, sent };
}

const PARALLEL =
  'const settled = await Promise.allSettled([send("a"), send("b"), lookup("x"), send("me"), send("c")]); settled.map((r) => r.status === "fulfilled" ? r.value : "E: " + r.reason.message)';

test('parallel approvals: every call of a Promise.all that needs approval is pending, each is decided in any order, and the journal restores at every point', async (t) => {
  const { tools, sent } = parallelMailer();
  await using session = await AgentSandbox.start({ tools });
  const p = await session.run(PARALLEL);
  t.is(p.status, 'awaiting-approval');
  t.deepEqual(p.pendingCalls, [
    { seq: 1, tool: 'send', args: ['a'] },
    { seq: 2, tool: 'send', args: ['b'] },
    { seq: 5, tool: 'send', args: ['c'] },
  ]);
  t.deepEqual(p.pending, p.pendingCalls![0]);
  t.deepEqual(session.pendingCalls, p.pendingCalls);
  t.deepEqual(
    p.calls.map((c) => [c.seq, c.status]),
    [
      [1, 'pending'],
      [2, 'pending'],
      [3, 'completed'],
      [4, 'completed'],
      [5, 'pending'],
    ],
  );
  t.deepEqual(sent, ['me'], 'only the call that needs no approval ran');
  t.notThrows(() => checkJournal(session.journal), 'the journal of a paused cell is restorable');
  await t.throwsAsync(session.run('1'), { instanceOf: SessionStateError, message: /calls 1 \(send\), 2 \(send\), 5 \(send\) await approval/ });

  // Decided one at a time, out of order: the cell waits until none is undecided.
  const afterB = await session.approve(2);
  t.is(afterB.status, 'awaiting-approval');
  t.deepEqual(
    afterB.pendingCalls?.map((c) => c.seq),
    [1, 5],
  );
  t.deepEqual(sent, ['me'], 'nothing runs before every call is decided');
  await t.throwsAsync(session.deny(2, 'too late'), { instanceOf: SessionStateError, message: /call 2 was already approved; calls 1 \(send\), 5 \(send\) do/ });
  const afterC = await session.deny(5, 'not c');
  t.deepEqual(
    afterC.pendingCalls?.map((c) => c.seq),
    [1],
  );

  // Saved between two decisions, restored elsewhere: the decisions made are kept.
  const saved = JSON.stringify(session.journal);
  t.notThrows(() => checkJournal(JSON.parse(saved)));
  const other = parallelMailer();
  await using restored = await AgentSandbox.restore(JSON.parse(saved), { tools: other.tools });
  t.deepEqual(restored.pendingCalls, [{ seq: 1, tool: 'send', args: ['a'] }]);
  const done = await restored.approve(1);
  t.is(done.status, 'ok', done.error);
  t.deepEqual(done.result, ['sent a', 'sent b', 'price of x', 'sent me', 'E: the call to send was denied: not c']);
  t.deepEqual(
    done.calls.map((c) => [c.seq, c.status]),
    [
      [1, 'completed'],
      [2, 'completed'],
      [3, 'completed'],
      [4, 'completed'],
      [5, 'denied'],
    ],
  );
  t.deepEqual(other.sent, ['a', 'b'], 'each approved call ran once, where it was resumed; the cleared one came from the journal');
  t.notThrows(() => checkJournal(restored.journal));
  t.is(JSON.stringify(restored.journal).includes('did not complete'), false, 'no call ended without a decision');
});

test('while a cell resumes, the journal is the one before (restorable); a resume that fails leaves it so', async (t) => {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const tools = { send: { needsApproval: true, execute: async () => (await gate, 'sent') } };
  await using session = await AgentSandbox.start({ tools });
  const p = await session.run('await send()');
  const before = session.journal;
  const resumed = session.approve(p.pending!.seq);
  await new Promise((resolve) => setTimeout(resolve, 50));
  t.deepEqual(session.journal, before, 'mid-resume, the journal is the paused one');
  t.notThrows(() => checkJournal(session.journal));
  release();
  t.is((await resumed).result, 'sent');
  t.is(session.journal.cells[0]!.status, 'ok');
});

test('a recorded value with a bad tag is refused by restore (JournalError naming cell, seq and field); every method rejects only with Strata errors, never synchronously', async (t) => {
  const { tools, sent } = mailer();
  await using session = await AgentSandbox.start({ tools });
  t.is((await session.run(CELL)).status, 'awaiting-approval');
  const journal = session.journal;

  const bogusResult = structuredClone(journal) as any;
  bogusResult.cells[0].calls[0].result = { $bogus: 1 };
  const e1 = await t.throwsAsync(AgentSandbox.restore(bogusResult, { tools }), {
    instanceOf: JournalError,
    message: /cells\[0\]\.calls\[0\]\.result \(cell 1, call 1\): unknown tag "\$bogus"/,
  });
  t.is(e1?.cell, 1);
  t.is(e1?.seq, 1);
  const bogusArgs = structuredClone(journal) as any;
  bogusArgs.cells[0].calls[1].args = [{ $bigint: 'twelve' }, 'x'];
  const e2 = await t.throwsAsync(AgentSandbox.restore(bogusArgs, { tools }), {
    instanceOf: JournalError,
    message: /cells\[0\]\.calls\[1\]\.args \(cell 1, call 2\): the tag "\$bigint" must hold a decimal integer/,
  });
  t.is(e2?.seq, 2);

  // Bad arguments to every method: a rejection (never a synchronous throw) with a Strata error.
  const seq = session.pending!.seq;
  const attempts: [string, () => Promise<unknown>][] = [
    ['deny with a reason that is not a string', () => session.deny(seq, 5 as never)],
    ['approve with a seq that is not a number', () => session.approve('2' as never)],
    ['approve with options null', () => session.approve(seq, null as never)],
    ['approve with an onEvent that is not a function', () => session.approve(seq, { onEvent: 5 as never })],
    ['deny with options that are not an object', () => session.deny(seq, 'no', 'x' as never)],
    ['run with options null', () => session.run('1', null as never)],
    ['run with code that is not a string', () => session.run(5 as never)],
    ['run with typecheck that is not a boolean', () => session.run('1', { typecheck: 'yes' as never })],
    ['restore of nothing', () => AgentSandbox.restore(undefined)],
  ];
  for (const [label, attempt] of attempts) {
    let promise: Promise<unknown> | undefined;
    t.notThrows(() => (promise = attempt()), `${label}: no synchronous throw`);
    const error = await t.throwsAsync(promise!, undefined, label);
    t.true(error instanceof StrataError, `${label}: ${String(error)}`);
  }
  t.deepEqual(sent, []);
  t.deepEqual(session.journal, journal, 'refused calls change nothing');
  t.deepEqual((await session.approve(seq)).result, ['sent to ops', 3.5], 'and the session goes on');
});

// Property: random interleavings of parallel calls (some needing approval, decided after random
// waits), approvals and denials in random order, crashes and restores. After every step the
// journal passes checkJournal, restoring it gives the same journal, pending calls and guest state,
// no tool runs twice, no call that needs approval runs or fails without a decision, and every
// finished cell's result is what its decisions say. Seeded: a failure names its seed.

/** xorshift32 (Marsaglia): a small seeded generator, so a failing case runs again from its seed. */
function seeded(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 2 ** 32;
  };
}

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function approvalCase(t: ExecutionContext, seed: number, steps: number): Promise<void> {
  const random = seeded(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const at = (step: number | string) => `seed ${seed}, step ${step}`;
  const ran = new Map<number, number>();
  const decisions = new Map<number, { approved: boolean; reason: string }>();
  /** The ops of each cell run, by cell number; a cell with boom() ends crashed. */
  const cells = new Map<number, { ops: { id: number; needs: boolean }[]; boom: boolean }>();
  let nextId = 1;
  let session: AgentSandbox | undefined;
  const tools = {
    op: {
      needsApproval: async (_id: number, needs: boolean, ms: number) => (await wait(ms), needs),
      execute: async (id: number, _needs: boolean, ms: number) => {
        ran.set(id, (ran.get(id) ?? 0) + 1);
        await wait(ms);
        return `r${id}`;
      },
    },
    boom: async () => {
      const pid = session?.pid;
      if (pid !== undefined) process.kill(pid, 'SIGKILL');
      await wait(20);
      return 'boom';
    },
  };
  const expected = (cell: number): unknown[] =>
    cells.get(cell)!.ops.map(({ id, needs }) => {
      if (!needs) return `r${id}`;
      const decision = decisions.get(id);
      if (decision === undefined) return `ran ${id} without a decision`;
      return decision.approved ? `r${id}` : `E:the call to op was denied: ${decision.reason}`;
    });
  const check = (result: CellResult, step: number) => {
    t.false(JSON.stringify(result).includes('did not complete'), `${at(step)}: a call failed without a decision`);
    if (result.status === 'ok') t.deepEqual(result.result, expected(result.cell), `${at(step)}: cell ${result.cell}`);
    if (result.status === 'awaiting-approval') t.deepEqual(result.pendingCalls, session!.pendingCalls, at(step));
  };
  session = await AgentSandbox.start({ tools });
  try {
    for (let step = 0; step < steps; step++) {
      const pending = session.pendingCalls;
      const action = pick(pending.length > 0 ? ['decide', 'decide', 'decide', 'restore'] : ['run', 'run', 'crash', 'restore']);
      if (action === 'run' || action === 'crash') {
        const ops = Array.from({ length: 1 + Math.floor(random() * 4) }, () => ({ id: nextId++, needs: random() < 0.5, ms: Math.floor(random() * 12) }));
        const calls = ops.map(({ id, needs, ms }) => `op(${id}, ${needs}, ${ms})`);
        if (action === 'crash') calls.splice(Math.floor(random() * (calls.length + 1)), 0, 'boom()');
        const cell = session.journal.cells.length + 1;
        cells.set(cell, { ops: ops.map(({ id, needs }) => ({ id, needs })), boom: action === 'crash' });
        check(
          await session.run(
            `globalThis.out ??= {}; out[${cell}] = (await Promise.allSettled([${calls.join(', ')}])).filter((r) => r.value !== 'boom').map((r) => r.status === 'fulfilled' ? r.value : 'E:' + r.reason.message); out[${cell}]`,
          ),
          step,
        );
      } else if (action === 'decide') {
        const call = pick(pending);
        const id = call.args[0] as number;
        const decision = { approved: random() < 0.5, reason: `no ${id}` };
        decisions.set(id, decision);
        check(decision.approved ? await session.approve(call.seq) : await session.deny(call.seq, decision.reason), step);
      } else {
        const journal: Journal = session.journal;
        const restored: AgentSandbox = await AgentSandbox.restore(JSON.parse(JSON.stringify(journal)), { tools });
        const before: AgentSandbox = session;
        session = restored;
        t.deepEqual(restored.journal, journal, `${at(step)}: the restore replays to the same journal`);
        t.deepEqual(restored.pendingCalls, before.pendingCalls, `${at(step)}: the same pending calls`);
        if (restored.pendingCalls.length === 0) {
          const probe = 'JSON.stringify(globalThis.out ?? {})';
          t.is((await restored.run(probe)).result, (await before.run(probe)).result, `${at(step)}: the same guest state`);
        }
        await before.close();
      }
      t.notThrows(() => checkJournal(session!.journal), `${at(step)}: the journal passes checkJournal`);
      for (const [id, times] of ran) t.true(times === 1, `${at(step)}: op ${id} ran ${times} times`);
    }
    // Each call that needs approval ran only once decided, approved.
    for (const [, { ops }] of cells) {
      for (const { id, needs } of ops) if (needs && ran.has(id)) t.true(decisions.get(id)?.approved, `${at('end')}: op ${id} ran without an approval`);
    }
  } finally {
    await session.close();
  }
}

// Serial, one seed a test: a case starts several workers, and results come in one at a time.
for (let seed = 1; seed <= 30; seed++) {
  test.serial(
    `property: random parallel approvals, decisions, crashes and restores keep the journal restorable and replaying to the same state (seed ${seed})`,
    async (t) => {
      await approvalCase(t, seed * 7919, 5);
    },
  );
}
