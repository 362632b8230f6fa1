// Sessions against real workers: state across cells, the journal as JSON, restore that calls no
// tool and reaches the same state, determinism byte for byte, divergence and settings mismatch.
import test from 'ava';
import { WEB_POLYFILLS } from '@strata/polyfills';
import { AgentSandbox, JournalError, SessionStateError, type Journal } from '../src/index.js';
import { checkNoLeaks } from './helpers/leaks.js';

checkNoLeaks(test);

/** Tools over a price list that count their calls. */
function shop() {
  const count = { lookup: 0, stock: 0 };
  const prices: Record<string, number> = { A1: 3.5, B2: 10 };
  const tools = {
    lookup: async (sku: string) => {
      count.lookup++;
      return prices[sku];
    },
    stock: {
      description: 'Units in stock, and when that was counted',
      execute: async (sku: string) => {
        count.stock++;
        return { sku, units: sku.length * 7, counted: new Date(Date.UTC(2026, 5, 1)), tags: new Set(['x']) };
      },
    },
  };
  return { tools, count };
}

const CELLS = [
  'globalThis.total = await lookup("A1"); total',
  'const twice = total * 2; twice',
  'twice + 1',
  'const s = await stock("B2"); [s.units, s.counted.toISOString(), s.tags.has("x")]',
  'let noise = Math.random(); const when = new Date().toISOString(); [typeof noise, when]',
  'const t0 = performance.now(); await new Promise((resolve) => setTimeout(resolve, 60_000)); [Math.round(performance.now() - t0), Date.now() - new Date(when).getTime()]',
  'console.log("a line", twice); [total, twice, noise === Math.random()]',
];

test('state persists across cells, the result carries its tool calls, and the journal is plain JSON', async (t) => {
  const { tools, count } = shop();
  await using session = await AgentSandbox.start({ tools, timeout: 5_000 });
  const r1 = await session.run(CELLS[0]!);
  t.is(r1.status, 'ok');
  t.is(r1.result, 3.5);
  t.is(r1.cell, 1);
  t.like(r1.calls[0], { seq: 1, tool: 'lookup', args: ['A1'], status: 'completed', result: 3.5 });
  t.is((await session.run(CELLS[1]!)).result, 7);
  t.is((await session.run(CELLS[2]!)).result, 8);
  const r4 = await session.run(CELLS[3]!);
  t.deepEqual(r4.result, [14, '2026-06-01T00:00:00.000Z', true]);
  t.like(r4.calls[0], { seq: 2, tool: 'stock', status: 'completed' });
  t.deepEqual(count, { lookup: 1, stock: 1 });
  const journal = session.journal;
  const text = JSON.stringify(journal);
  t.deepEqual(JSON.parse(text), journal, 'JSON round trip');
  t.is(journal.format, 'strata.agent.journal');
  t.is(journal.version, 1);
  t.deepEqual(
    journal.cells.map((c) => c.status),
    ['ok', 'ok', 'ok', 'ok'],
  );
  t.deepEqual(journal.cells[3]!.calls[0]!.result, { sku: 'B2', units: 14, counted: { $date: '2026-06-01T00:00:00.000Z' }, tags: { $set: ['x'] } });
  t.deepEqual(journal.settings.tools, ['lookup', 'stock']);
  t.is(journal.settings.strictEval, undefined, 'a default journal does not mention strictEval');
  t.is(journal.settings.bootstrap.length, 1, 'WEB_POLYFILLS, by hash');
  t.regex(journal.settings.bootstrap[0]!, /^[0-9a-f]{64}$/);
});

test('restore from the JSON text calls no tool and reaches the same state; then it is live', async (t) => {
  const { tools, count } = shop();
  let saved: string;
  let before: unknown;
  {
    await using session = await AgentSandbox.start({ tools });
    for (const code of CELLS) t.is((await session.run(code)).status, 'ok', code);
    before = (await session.run('[total, twice, s.units, noise, when]')).result;
    saved = JSON.stringify(session.journal);
  }
  t.deepEqual(count, { lookup: 1, stock: 1 });
  await using again = await AgentSandbox.restore(JSON.parse(saved), { tools });
  t.deepEqual(count, { lookup: 1, stock: 1 }, 'the replay called no tool');
  t.deepEqual((await again.run('[total, twice, s.units, noise, when]')).result, before, 'the same state, random and clock included');
  const live = await again.run('await lookup("B2")');
  t.is(live.result, 10);
  t.is(live.calls[0]!.seq, 3, 'the sequence goes on from the journal');
  t.deepEqual(count, { lookup: 2, stock: 1 });
});

test('the same cells with the same tool answers give the same results and the same journal, byte for byte', async (t) => {
  const runs: { results: string; journal: string }[] = [];
  for (let i = 0; i < 2; i++) {
    const { tools } = shop();
    await using session = await AgentSandbox.start({ tools, clock: { at: '2026-03-01T12:00:00Z', seed: 99 } });
    const results: unknown[] = [];
    for (const code of CELLS) {
      const r = await session.run(code);
      results.push([r.status, r.result, r.stdout]);
    }
    const journal = session.journal;
    for (const cell of journal.cells) for (const call of cell.calls) call.ms = 0; // the one measured field
    t.is(journal.session, session.id);
    // The session's id is its own (random here); everything else is the same.
    const { session: _id, ...recorded } = journal;
    runs.push({ results: JSON.stringify(results), journal: JSON.stringify(recorded) });
  }
  t.is(runs[0]!.results, runs[1]!.results);
  t.is(runs[0]!.journal, runs[1]!.journal);
  const results = JSON.parse(runs[0]!.results) as [string, unknown, string][];
  t.deepEqual(results[4]![1], ['number', '2026-03-01T12:00:00.000Z'], 'the clock is the one given');
  t.deepEqual(results[5]![1], [60_000, 0], 'a minute on virtual time, at once; the clock stays frozen');
  t.is(results[6]![2], 'a line 7\n');
});

test('by default the clock is frozen at the start and the seed is random, both recorded', async (t) => {
  const before = Date.now();
  await using a = await AgentSandbox.start();
  await using b = await AgentSandbox.start();
  const [ja, jb] = [a.journal, b.journal];
  t.true(ja.settings.clock.at >= before && ja.settings.clock.at <= Date.now());
  t.not(ja.settings.clock.seed, jb.settings.clock.seed, 'two sessions draw different seeds (one chance in 2^32 of a false failure)');
  t.is((await a.run('Date.now()')).result, ja.settings.clock.at);
  t.is((await a.run('Date.now()')).result, ja.settings.clock.at, 'frozen');
});

/** A journal of two cells with one lookup each, recorded for real. */
async function recorded(): Promise<{ journal: Journal; tools: ReturnType<typeof shop>['tools']; count: ReturnType<typeof shop>['count'] }> {
  const { tools, count } = shop();
  await using session = await AgentSandbox.start({ tools, strictEval: true });
  await session.run('globalThis.a = await lookup("A1")');
  await session.run('globalThis.b = await lookup("B2"); a + b');
  return { journal: session.journal, tools, count };
}

test('a journal whose arguments were edited diverges: JournalError naming the cell and the call; the session is closed', async (t) => {
  const { journal, tools, count } = await recorded();
  (journal.cells[1]!.calls[0]!.args as unknown[])[0] = 'C3';
  const error = await t.throwsAsync(AgentSandbox.restore(journal, { tools, strictEval: true }), { instanceOf: JournalError });
  t.is(error?.cell, 2);
  t.is(error?.seq, 2);
  t.regex(error!.message, /cell 2 diverged from the journal at call 2: the journal has lookup\("C3"\), the replay called lookup\("B2"\)/);
  t.deepEqual(count, { lookup: 2, stock: 0 }, 'no tool was called by the replay');
});

test('a journal whose code or answers were edited diverges too: another tool, another result, fewer calls', async (t) => {
  const { journal, tools } = await recorded();
  const tool = structuredClone(journal) as any;
  tool.cells[1].calls[0].tool = 'stock';
  await t.throwsAsync(AgentSandbox.restore(tool, { tools, strictEval: true }), {
    instanceOf: JournalError,
    message: /the journal has stock\("B2"\), the replay called lookup\("B2"\)/,
  });
  const answer = structuredClone(journal);
  answer.cells[1]!.calls[0]!.result = 11;
  await t.throwsAsync(AgentSandbox.restore(answer, { tools, strictEval: true }), {
    instanceOf: JournalError,
    message: /cell 2 diverged from the journal on replay: its result differs/,
  });
  const code = structuredClone(journal);
  code.cells[1] = { ...code.cells[1]!, code: 'a' };
  await t.throwsAsync(AgentSandbox.restore(code, { tools, strictEval: true }), {
    instanceOf: JournalError,
    message: /cell 2 diverged from the journal on replay: it made 0 tool calls, the journal has 1/,
  });
});

test('settings that differ are a JournalError before any guest code runs', async (t) => {
  const { journal, tools, count } = await recorded();
  const cases: [object, RegExp][] = [
    [{ tools }, /recorded with strictEval on, this session has it off/],
    [{ tools, strictEval: true, clock: { at: 0, seed: journal.settings.clock.seed } }, /its clock is/],
    [{ tools, strictEval: true, clock: { at: journal.settings.clock.at, seed: (journal.settings.clock.seed + 1) % 2 ** 32 } }, /its seed is/],
    [{ tools, strictEval: true, bootstrap: [] }, /its bootstrap scripts differ/],
    [{ tools, strictEval: true, bootstrap: [WEB_POLYFILLS, 'globalThis.extra = 1'] }, /its bootstrap scripts differ/],
    [{ tools: { lookup: tools.lookup }, strictEval: true }, /its tools are \[lookup, stock\], this session's \[lookup\]/],
  ];
  for (const [options, message] of cases) await t.throwsAsync(AgentSandbox.restore(journal, options), { instanceOf: JournalError, message });
  const version = structuredClone(journal);
  (version.settings as { strata: string }).strata = '9.0.0';
  await t.throwsAsync(AgentSandbox.restore(version, { tools, strictEval: true }), { instanceOf: JournalError, message: /recorded by Strata 9\.0\.0/ });
  t.deepEqual(count, { lookup: 2, stock: 0 });
  // and with the same settings, it restores
  await using same = await AgentSandbox.restore(journal, { tools, strictEval: true });
  t.is((await same.run('a + b')).result, 13.5);
});

test('one cell at a time, and nothing after close', async (t) => {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const session = await AgentSandbox.start({ tools: { wait: async () => gate } });
  const first = session.run('await wait(); 1');
  await t.throwsAsync(session.run('2'), { instanceOf: SessionStateError, message: /a cell is running: one at a time/ });
  release();
  t.is((await first).result, 1);
  await session.close();
  t.true(session.closed);
  await t.throwsAsync(session.run('3'), { instanceOf: SessionStateError, message: /the session is closed/ });
  t.is(session.journal.cells.length, 1, 'the journal stays readable');
  await t.throwsAsync(AgentSandbox.start({ recover: 'sometimes' as never }), { code: 'ERR_STRATA_INVALID_OPTION' });
  await t.throwsAsync(AgentSandbox.start({ notAnOption: 1 } as never), { code: 'ERR_STRATA_INVALID_OPTION', message: /unknown option "notAnOption"/ });
});

test('new AgentSandbox from JavaScript is refused, saying to call AgentSandbox.start', (t) => {
  const construct = AgentSandbox as unknown as new (options: object) => unknown;
  const error = t.throws(() => new construct({}));
  t.is((error as { code?: string }).code, 'ERR_STRATA_INVALID_OPTION');
  t.is(error?.message, 'AgentSandbox has no public constructor: use `await AgentSandbox.start(options)`');
});
