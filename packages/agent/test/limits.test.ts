// The session's limits: cells per session, tool calls per cell, the size of a value and of the
// journal. A cell past maxCells or maxJournalBytes is refused by `run`. A value past
// maxValueBytes fails its call in the guest (a catchable RangeError) without the tool running,
// or, for an answer, after it ran once; the journal records the refusal (refused arguments as a
// digest), so a restore replays it identically and calls no tool. A cell that reaches
// maxCallsPerCell, or whose calls would pass maxJournalBytes, is cut short: that call and every
// later one fail without being journaled, the cell is an error (SessionLimitExceeded) and is not
// kept: the next cell runs in a worker rebuilt from the cells before it.
import test from 'ava';
import { InvalidOption } from '@strata/runtime';
import { AgentSandbox, SessionLimitExceeded, type Journal } from '../src/index.js';
import { checkNoLeaks } from './helpers/leaks.js';

checkNoLeaks(test);

/** `send` answers 'ok', `big(n)` answers n characters; `runs` counts each tool's runs. */
function limitTools() {
  const runs = { send: 0, big: 0 };
  const tools = {
    send: async (value: unknown) => {
      runs.send++;
      return typeof value === 'string' ? `ok ${value.length}` : 'ok';
    },
    big: async (n: number) => {
      runs.big++;
      return 'y'.repeat(n);
    },
  };
  return { runs, tools };
}

const bytesOf = (journal: Journal) => Buffer.byteLength(JSON.stringify(journal));
/** A guest expression: the call's result, or `Name: message` of what it threw, and whether it was a RangeError. */
const attempt = (call: string) =>
  `(async () => { try { return { ok: await ${call} }; } catch (e) { return { name: e.name, message: e.message, range: e instanceof RangeError }; } })()`;

test('maxCells: the run past it rejects with SessionLimitExceeded (limit maxCells), and the session stays as it was', async (t) => {
  const { tools } = limitTools();
  await using session = await AgentSandbox.start({ tools, maxCells: 2 });
  t.is((await session.run('globalThis.a = 1')).status, 'ok');
  t.is((await session.run('a + 1')).result, 2);
  const error = await t.throwsAsync(session.run('a + 2'), { instanceOf: SessionLimitExceeded });
  t.is(error?.code, 'ERR_STRATA_SESSION_LIMIT');
  t.is(error?.limit, 'maxCells');
  t.regex(error!.message, /maxCells/);
  t.is(session.journal.cells.length, 2, 'the refused cell is not journaled');
  t.false(session.closed);
  // Refused again, the same way.
  await t.throwsAsync(session.run('1'), { instanceOf: SessionLimitExceeded, message: /maxCells/ });

  // A restore under the same limit replays and refuses the next cell; under a larger one it goes on.
  const journal = session.journal;
  await using same = await AgentSandbox.restore(journal, { tools, maxCells: 2 });
  await t.throwsAsync(same.run('a'), { instanceOf: SessionLimitExceeded });
  await using larger = await AgentSandbox.restore(journal, { tools, maxCells: 3 });
  t.is((await larger.run('a + 2')).result, 3);
});

test('maxCallsPerCell: the call past it throws a catchable RangeError naming it, the tool is not called, and the cell is cut short, not kept', async (t) => {
  const { runs, tools } = limitTools();
  await using session = await AgentSandbox.start({ tools, maxCallsPerCell: 2 });
  t.is((await session.run('globalThis.before = 1')).status, 'ok');
  const pid = session.pid;
  const result = await session.run(`
    globalThis.seen = [];
    for (let i = 0; i < 4; i++) seen.push(await ${attempt('send(i)')});
    console.log(JSON.stringify(seen));
    seen`);
  t.is(result.status, 'error');
  t.is(result.errorType, 'SessionLimitExceeded');
  t.regex(result.error ?? '', /send was not called: the cell reached maxCallsPerCell \(2 tool calls\)/);
  const seen = JSON.parse(result.stdout) as { ok?: string; name?: string; message?: string; range?: boolean }[];
  t.deepEqual(seen.slice(0, 2), [{ ok: 'ok' }, { ok: 'ok' }]);
  for (const refused of seen.slice(2)) {
    t.is(refused.name, 'RangeError');
    t.true(refused.range, 'an instance of the guest RangeError');
    t.regex(refused.message!, /send was not called: the cell reached maxCallsPerCell/);
  }
  t.is(runs.send, 2, 'the tool ran for the first two calls only');
  t.deepEqual(
    result.calls.map((c) => c.status),
    ['completed', 'completed'],
    'refusals past the limit are not journaled',
  );
  const cell = session.journal.cells[1]!;
  t.is(cell.status, 'interrupted');
  t.deepEqual(cell.error, { type: 'SessionLimitExceeded', message: result.error! });

  // The cell is not kept; the next may call again, in a worker rebuilt from the cells before.
  const next = await session.run(`[typeof seen, before, await send('a'), await send('b')]`);
  t.deepEqual(next.result, ['undefined', 1, 'ok 1', 'ok 1']);
  t.not(session.pid, pid);
  t.is(runs.send, 4);
});

test('maxValueBytes for arguments: the tool is not called, the guest gets a RangeError naming maxValueBytes; arguments under it pass', async (t) => {
  const { runs, tools } = limitTools();
  await using session = await AgentSandbox.start({ tools, maxValueBytes: 1000 });
  const result = await session.run(`[await ${attempt("send('x'.repeat(2000))")}, await ${attempt("send('x'.repeat(900))")}]`);
  t.is(result.status, 'ok', result.error);
  const [over, under] = result.result as [{ name: string; message: string; range: boolean }, { ok: string }];
  t.is(over.name, 'RangeError');
  t.true(over.range);
  t.regex(over.message, /send was not called: its arguments are 2004 bytes as JSON, over the session's maxValueBytes \(1000\)/);
  t.deepEqual(under, { ok: 'ok 900' });
  t.is(runs.send, 1, 'only the call under the limit ran');
  t.deepEqual(
    result.calls.map((c) => c.status),
    ['failed', 'completed'],
  );
  t.deepEqual(
    session.journal.cells[0]!.calls.map((c) => c.status),
    ['failed', 'completed'],
  );
});

test('maxValueBytes for an answer: the tool is called once, the guest gets a RangeError, the journal keeps no result', async (t) => {
  const { runs, tools } = limitTools();
  await using session = await AgentSandbox.start({ tools, maxValueBytes: 1000 });
  const result = await session.run(attempt('big(2000)'));
  t.is(result.status, 'ok', result.error);
  const answer = result.result as { name: string; message: string; range: boolean };
  t.is(answer.name, 'RangeError');
  t.true(answer.range);
  t.regex(answer.message, /the answer of big is 2002 bytes as JSON, over the session's maxValueBytes \(1000\)/);
  t.is(runs.big, 1);
  const call = session.journal.cells[0]!.calls[0]!;
  t.is(call.status, 'failed');
  t.is(call.result, undefined);
  t.deepEqual(call.error, { name: 'RangeError', message: answer.message });
  // Under the limit: answered.
  t.is(((await session.run(attempt('big(900)'))).result as { ok: string }).ok.length, 900);
  t.is(runs.big, 2);
});

test('maxJournalBytes: a cell whose code would pass it is refused, and the session goes on', async (t) => {
  const { tools } = limitTools();
  await using session = await AgentSandbox.start({ tools, maxJournalBytes: 4000 });
  t.is((await session.run('globalThis.a = 1')).status, 'ok');
  const before = session.journal;
  const error = await t.throwsAsync(session.run(`'${'x'.repeat(5000)}'.length`), { instanceOf: SessionLimitExceeded });
  t.is(error?.code, 'ERR_STRATA_SESSION_LIMIT');
  t.is(error?.limit, 'maxJournalBytes');
  t.regex(error!.message, /maxJournalBytes \(4000 bytes\)/);
  t.deepEqual(session.journal, before, 'the refused cell is not journaled');
  t.false(session.closed);
  const next = await session.run('a + 1');
  t.is(next.result, 2);
  t.is(next.cell, 2);
  t.true(bytesOf(session.journal) <= 4000);
});

test('maxJournalBytes: an answer that would pass it fails in the guest (the tool ran once); arguments that would pass it cut the cell short before the tool runs', async (t) => {
  const { runs, tools } = limitTools();
  await using session = await AgentSandbox.start({ tools, maxJournalBytes: 4000 });
  const answer = (await session.run(attempt('big(5000)'))).result as { name: string; message: string; range: boolean };
  t.is(answer.name, 'RangeError');
  t.true(answer.range);
  t.regex(answer.message, /the answer of big would take the journal past maxJournalBytes \(4000 bytes\)/);
  t.is(runs.big, 1);
  t.deepEqual(
    session.journal.cells[0]!.calls.map((c) => [c.status, c.result]),
    [['failed', undefined]],
  );

  // Arguments that would pass it cut the cell short: the tool does not run, the cell is not kept.
  const args = await session.run(`globalThis.lost = 1; ${attempt("send('x'.repeat(3900))")}`);
  t.is(args.status, 'error');
  t.is(args.errorType, 'SessionLimitExceeded');
  t.regex(args.error ?? '', /send was not called: the journal would pass maxJournalBytes \(4000 bytes\)/);
  t.is(runs.send, 0);
  t.is((await session.run('typeof lost')).result, 'undefined');
  t.true(bytesOf(session.journal) <= 4000);
});

test('invalid limits are refused with InvalidOption (code ERR_STRATA_INVALID_OPTION), naming the option', async (t) => {
  for (const name of ['maxCells', 'maxCallsPerCell', 'maxValueBytes', 'maxJournalBytes'] as const) {
    for (const value of [0, -1, 1.5, 'x', Number.NaN, Number.POSITIVE_INFINITY, null]) {
      const error = await t.throwsAsync(AgentSandbox.start({ [name]: value as never }), { instanceOf: InvalidOption }, `${name}: ${String(value)}`);
      t.is(error?.code, 'ERR_STRATA_INVALID_OPTION');
      t.regex(error!.message, new RegExp(`${name} must be a positive integer`));
    }
  }
});

test('a restore of a journal with refused calls replays them identically and calls no tool, whatever the limits of the restoring session', async (t) => {
  const { runs, tools } = limitTools();
  const limits = { maxCallsPerCell: 3, maxValueBytes: 1000, maxJournalBytes: 20_000 };
  await using session = await AgentSandbox.start({ tools, ...limits });
  const cells = [
    `globalThis.log = []; for (let i = 0; i < 3; i++) log.push(await ${attempt('send(i)')}); log.length`,
    `log.push(await ${attempt("send('x'.repeat(2000))")}); log.push(await ${attempt('big(2000)')}); log.length`,
    `log.push(await ${attempt('big(15000)')}); log.push(await ${attempt('big(10)')}); log.length`,
  ];
  for (const code of cells) t.is((await session.run(code)).status, 'ok');
  // cut short by maxCallsPerCell: not kept
  t.is((await session.run(`log.push('lost'); for (let i = 0; i < 5; i++) await ${attempt('send(i)')}`)).errorType, 'SessionLimitExceeded');
  const live = (await session.run('log')).result as { name?: string; message?: string }[];
  t.is(live.length, 7);
  t.deepEqual(
    live.map((entry) => entry.name ?? 'ok'),
    ['ok', 'ok', 'ok', 'RangeError', 'RangeError', 'RangeError', 'ok'],
  );
  t.regex(live[3]!.message!, /maxValueBytes/);
  t.regex(live[4]!.message!, /maxValueBytes/);
  t.regex(live[5]!.message!, /maxValueBytes|maxJournalBytes/);
  const journal = session.journal;
  t.deepEqual(
    journal.cells.slice(0, 4).map((cell) => [cell.status, cell.calls.map((c) => c.status)]),
    [
      ['ok', ['completed', 'completed', 'completed']],
      ['ok', ['failed', 'failed']],
      ['ok', ['failed', 'completed']],
      ['interrupted', ['completed', 'completed', 'completed']],
    ],
  );
  t.deepEqual(journal.cells[1]!.calls[0]!.args, [], 'refused arguments are kept as a digest only');
  t.regex(journal.cells[1]!.calls[0]!.argsDigest ?? '', /^[0-9a-f]{64}$/);
  const ran = { ...runs };

  // Restored with the same limits, and with the defaults: the same guest state, no tool called.
  for (const options of [limits, {}]) {
    await using restored = await AgentSandbox.restore(journal, { tools, ...options });
    const again = await restored.run('log');
    t.is(again.status, 'ok', again.error);
    t.deepEqual(again.result, live);
    t.deepEqual(runs, ran, 'the restore called no tool');
    t.deepEqual(restored.journal.cells.slice(0, 5), journal.cells);
  }
});

// Regression test (fixed; it was a bug in packages/agent, src/agent-sandbox.ts #call, `refuse`): a call refused for maxValueBytes
// (or maxJournalBytes) keeps the guest's arguments in full in its journal record
// (`call.args` is set before the checks), and `refuse` adds the record's size to the journal
// without checking it. So arguments refused for being too large for the journal are written
// into the journal anyway: 100 kB of arguments with maxValueBytes 1000 put 100 kB in the journal,
// past maxJournalBytes, and every later `run` is refused (SessionLimitExceeded). Expected: the
// refused record keeps no more than a bounded form of the arguments (a digest, for replay's
// divergence check), and the journal stays under maxJournalBytes.
test('arguments refused for maxValueBytes are not written into the journal', async (t) => {
  const { runs, tools } = limitTools();
  await using session = await AgentSandbox.start({ tools, maxValueBytes: 1000, maxJournalBytes: 20_000 });
  const result = await session.run(attempt("send('x'.repeat(100_000))"));
  t.is((result.result as { name: string }).name, 'RangeError');
  t.is(runs.send, 0);
  t.true(bytesOf(session.journal) <= 20_000, `the journal is ${bytesOf(session.journal)} bytes, maxJournalBytes 20000`);
  await t.notThrowsAsync(session.run('1 + 1'), 'the session can go on');
});

// Regression test (fixed; it was a bug in packages/agent, src/agent-sandbox.ts #call, `refuse`): every call past maxCallsPerCell
// still appends a record to the journal (record.calls.push(call)), unchecked against
// maxJournalBytes. A loop that catches the RangeError and calls again (up to the runtime's
// maxHostCalls, 100 000 a command) grows the journal without bound: here 500 refused calls make
// it ~100 kB with maxJournalBytes 10 000. Expected: the journal stays under maxJournalBytes
// (e.g. stop journaling refusals past the limit, or refuse/stop the cell once the journal is full).
test('calls refused past maxCallsPerCell do not grow the journal past maxJournalBytes', async (t) => {
  const { runs, tools } = limitTools();
  await using session = await AgentSandbox.start({ tools, maxCallsPerCell: 2, maxJournalBytes: 10_000 });
  const result = await session.run('let refused = 0; for (let i = 0; i < 500; i++) { try { await send(i); } catch { refused++; } } refused');
  t.is(result.errorType, 'SessionLimitExceeded');
  t.is(runs.send, 2);
  t.true(bytesOf(session.journal) <= 10_000, `the journal is ${bytesOf(session.journal)} bytes, maxJournalBytes 10000`);
});

// Regression test (fixed; it was a bug in packages/agent, src/agent-sandbox.ts #runCell): a cell's result is journaled whenever it
// is under maxValueBytes, without checking maxJournalBytes, so a cell's result takes the journal
// past maxJournalBytes (the limit documented as "the largest journal"). Expected: a result that
// would pass maxJournalBytes is kept as `resultBytes` only, as one over maxValueBytes is.
test('a cell result does not take the journal past maxJournalBytes', async (t) => {
  const { tools } = limitTools();
  await using session = await AgentSandbox.start({ tools, maxJournalBytes: 2000 });
  for (let i = 0; i < 2; i++) t.is((await session.run("'z'.repeat(900)")).status, 'ok');
  t.true(bytesOf(session.journal) <= 2000, `the journal is ${bytesOf(session.journal)} bytes, maxJournalBytes 2000`);
});

test('a deny reason counts: one past maxValueBytes or maxJournalBytes is refused (SessionLimitExceeded), the journal stays under its limit, and the call can still be decided', async (t) => {
  const tools = { send: { needsApproval: true, execute: async () => 'sent' } };
  const maxJournalBytes = 256 * 1024;
  await using session = await AgentSandbox.start({ tools, maxJournalBytes });
  const p = await session.run('try { await send() } catch (e) { e.message }');
  const seq = p.pending!.seq;
  const huge = await t.throwsAsync(session.deny(seq, 'x'.repeat(2 * 1024 * 1024)), { instanceOf: SessionLimitExceeded });
  t.is(huge?.limit, 'maxValueBytes');
  const over = await t.throwsAsync(session.deny(seq, 'x'.repeat(300 * 1024)), { instanceOf: SessionLimitExceeded });
  t.is(over?.limit, 'maxJournalBytes');
  t.regex(over!.message, /give a shorter one, or none/);
  t.true(bytesOf(session.journal) <= maxJournalBytes, `the journal is ${bytesOf(session.journal)} bytes`);
  t.deepEqual(session.pending, p.pending, 'still awaiting its decision');
  const denied = await session.deny(seq, 'y'.repeat(100 * 1024));
  t.is(denied.result, `the call to send was denied: ${'y'.repeat(100 * 1024)}`);
  t.true(bytesOf(session.journal) <= maxJournalBytes, `the journal is ${bytesOf(session.journal)} bytes`);
  // The next reason that would pass it is refused too.
  const again = await session.run('try { await send() } catch (e) { e.message }');
  await t.throwsAsync(session.deny(again.pending!.seq, 'z'.repeat(200 * 1024)), { instanceOf: SessionLimitExceeded, message: /maxJournalBytes/ });
  t.true(bytesOf(session.journal) <= maxJournalBytes);
});

test('restore holds every limit: a journal past maxJournalBytes, maxCells, maxCallsPerCell or maxValueBytes is refused, naming it, before anything replays', async (t) => {
  const { runs, tools } = limitTools();
  await using session = await AgentSandbox.start({ tools });
  await session.run('globalThis.a = await send("x".repeat(3000))');
  await session.run('await send(1); await send(2); await send(3)');
  await session.run('"r".repeat(2000)');
  const journal = session.journal;
  const ran = runs.send;
  const cases: [Record<string, number>, string, RegExp][] = [
    [{ maxJournalBytes: bytesOf(journal) - 1 }, 'maxJournalBytes', /the journal is \d+ bytes as JSON, over this session's maxJournalBytes/],
    [{ maxCells: 2 }, 'maxCells', /the journal has 3 cells, over this session's maxCells \(2\)/],
    [{ maxCallsPerCell: 2 }, 'maxCallsPerCell', /cell 2 of the journal has 3 tool calls, over this session's maxCallsPerCell \(2\)/],
    [
      { maxValueBytes: 2500 },
      'maxValueBytes',
      /cells\[0\]\.calls\[0\]\.args \(cell 1, call 1\) is 3004 bytes as JSON, over this session's maxValueBytes \(2500\)/,
    ],
    [{ maxValueBytes: 1500 }, 'maxValueBytes', /cells\[0\]\.calls\[0\]\.args/],
  ];
  for (const [limits, name, message] of cases) {
    const error = await t.throwsAsync(AgentSandbox.restore(journal, { tools, ...limits }), { instanceOf: SessionLimitExceeded, message }, name);
    t.is(error?.limit, name);
  }
  const result = structuredClone(journal);
  result.cells[0]!.calls[0]!.result = 'big'.repeat(1100);
  await t.throwsAsync(AgentSandbox.restore(result, { tools, maxValueBytes: 3100 }), {
    instanceOf: SessionLimitExceeded,
    message: /cells\[0\]\.calls\[0\]\.result \(cell 1, call 1\) is 3302 bytes/,
  });
  const cellResult = structuredClone(journal);
  cellResult.cells[2]!.result = 'r'.repeat(4000);
  await t.throwsAsync(AgentSandbox.restore(cellResult, { tools, maxValueBytes: 3100 }), {
    instanceOf: SessionLimitExceeded,
    message: /cells\[2\]\.result \(cell 3\) is 4002 bytes/,
  });
  t.is(runs.send, ran, 'no tool was called');
  // At the limits exactly, it restores.
  await using same = await AgentSandbox.restore(journal, {
    tools,
    maxJournalBytes: bytesOf(journal) + 100,
    maxCells: 4,
    maxCallsPerCell: 3,
    maxValueBytes: 3004,
  });
  t.is((await same.run('a')).result, 'ok 3000');
  await using full = await AgentSandbox.restore(journal, { tools, maxJournalBytes: bytesOf(journal), maxCells: 3 });
  t.deepEqual(full.journal, journal, 'a journal exactly at its limits restores');
});

test('what a tool does after the worker died (afterCrash) counts towards maxJournalBytes', async (t) => {
  let session: AgentSandbox | undefined;
  const settled: Promise<unknown>[] = [];
  const tools = {
    crash: async () => {
      process.kill(session!.pid!, 'SIGKILL');
      const late = new Promise((resolve) => setTimeout(resolve, 200)).then(() => 'w'.repeat(3000));
      settled.push(late);
      return late;
    },
  };
  const maxJournalBytes = 8000;
  session = await AgentSandbox.start({ tools, maxJournalBytes });
  t.teardown(() => session.close());
  for (let i = 0; i < 4; i++) {
    const crashed = await session.run('await crash()');
    t.is(crashed.errorType, 'WorkerCrashed', crashed.error);
    await Promise.all(settled);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const journal = session.journal;
  t.true(bytesOf(journal) <= maxJournalBytes, `the journal is ${bytesOf(journal)} bytes, maxJournalBytes ${maxJournalBytes}`);
  t.true(
    journal.cells.some((cell) => cell.calls[0]?.afterCrash?.status === 'failed'),
    'an answer past the limit is kept as a failure',
  );
});
