// The model's code checked against the bridge's declarations before it runs: a hallucinated
// tool, a missing field, a wrong type are diagnostics at the code's own lines; correct code
// (JavaScript or TypeScript, top-level await included) has none.
import test from 'ava';
import { ToolBridge } from '../src/index.js';
import { formatDiagnostics, typecheck } from '../src/typecheck.js';

const bridge = new ToolBridge({
  tools: {
    weather: {
      description: 'Current weather for a city',
      inputSchema: { type: 'object', properties: { city: { type: 'string' }, unit: { enum: ['C', 'F'] } }, required: ['city'] },
      outputSchema: { type: 'object', properties: { tempC: { type: 'number' } }, required: ['tempC'] },
      execute: async () => ({ tempC: 21 }),
    },
  },
});
const declarations = bridge.declarations();

test('correct code checks: JavaScript with top-level await and the guest globals; TypeScript with its types', async (t) => {
  t.deepEqual(await typecheck('const w = await tools.weather({ city: "Oslo", unit: "C" });\nconsole.log(w.tempC.toFixed(1));\nw.tempC * 2', declarations), []);
  t.deepEqual(await typecheck('let x = 1; x = "a"; const list = []; list.push(3); setTimeout(() => {}, 5); x', declarations), [], 'JavaScript is checked as JavaScript');
  t.deepEqual(await typecheck('const city: string = "Bergen";\nconst w = await tools.weather({ city });\nconst t2: number = w.tempC;\nt2', declarations, 'typescript'), []);
});

test('a hallucinated tool, a missing field, a wrong type and a wrong enum value are diagnostics at their lines', async (t) => {
  const cases: [string, number, RegExp][] = [
    ['const a = 1;\nawait tools.forecast({ city: "Oslo" })', 2, /Property 'forecast' does not exist on type/],
    ['await tools.weather({})', 1, /Property 'city' is missing/],
    ['\n\nawait tools.weather({ city: 42 })', 3, /Type 'number' is not assignable to type 'string'/],
    ['await tools.weather({ city: "Oslo", unit: "K" })', 1, /Type '"K"' is not assignable to type '"C" \| "F"'/],
    ['const w = await tools.weather({ city: "Oslo" });\nw.humidity', 2, /Property 'humidity' does not exist/],
    ['await fetch("https://example.com")', 1, /Cannot find name 'fetch'/],
  ];
  for (const [code, line, message] of cases) {
    const diagnostics = await typecheck(code, declarations);
    t.true(diagnostics.length > 0, code);
    t.is(diagnostics[0]!.line, line, code);
    t.regex(diagnostics[0]!.message, message, code);
    t.regex(diagnostics[0]!.code, /^TS\d+$/);
  }
  t.regex(formatDiagnostics(await typecheck('await tools.forecast({})', declarations)), /^1:\d+ TS2339 Property 'forecast' does not exist/);
});

test('AgentSandbox.run with typecheck: a cell that does not check is not run nor journaled; the cells before it declare what it may use', async (t) => {
  const { AgentSandbox } = await import('../src/index.js');
  let runs = 0;
  const counted = new ToolBridge({
    tools: {
      weather: {
        inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        outputSchema: { type: 'object', properties: { tempC: { type: 'number' } }, required: ['tempC'] },
        execute: async () => (runs++, { tempC: 21 }),
      },
    },
  });
  await using session = await AgentSandbox.start({ tools: counted });
  t.is((await session.run('const w = await tools.weather({ city: "Oslo" })', { typecheck: true })).status, 'ok');
  t.is((await session.run('w.tempC + 1', { typecheck: true })).result, 22, 'w comes from the cell before');
  const refused = await session.run('const x = 1;\nawait tools.forecast({ city: "Oslo" })', { typecheck: true });
  t.is(refused.status, 'error');
  t.is(refused.errorType, 'TypeCheckFailed');
  t.regex(refused.error ?? '', /^2:\d+ TS2339 Property 'forecast' does not exist/);
  t.is(runs, 1);
  t.is(session.journal.cells.length, 2, 'the refused cell is not journaled');
  t.is((await session.run('typeof x')).result, 'undefined', 'nor run');
});
