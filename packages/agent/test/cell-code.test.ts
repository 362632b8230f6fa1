// Cells: state persists across them (top-level declarations included), a top-level await works,
// the last expression is the result, errors keep their lines. The rewrite is checked as text
// and, for behaviour, by running the cells in one session.
import test from 'ava';
import { AgentSandbox } from '../src/index.js';
import { prepareCell } from '../src/cell-code.js';
import { checkNoLeaks } from './helpers/leaks.js';

checkNoLeaks(test);

test('a cell without a top-level await runs as written; one that does not parse is left for the guest to report', (t) => {
  for (const code of [
    'const a = 1; a',
    'async function f() { await 1 } f()',
    '(async () => await 1)()',
    'class K { async m() { await 1 } }',
    'let x = 1 +',
    '',
  ]) {
    t.is(prepareCell(code), code, code);
  }
});

test('the rewrite keeps every line where it was', (t) => {
  const code = 'const a = await f();\nfunction g() {\n  return 1;\n}\nlet { b, c: [d] } = await h();\nthrow new Error("line 6")';
  const prepared = prepareCell(code);
  t.not(prepared, code);
  t.is(prepared.split('\n').length, code.split('\n').length + 1, 'one line more: the wrapper closes on its own line');
  t.true(prepared.split('\n')[5]!.includes('throw new Error("line 6")'));
  t.regex(prepared.split('\n')[0]!, /^let a, b, d; \(async \(\) => \{ globalThis\["g"\] = g; /);
});

test('cells in one session: declarations persist across cells, with and without a top-level await', async (t) => {
  await using session = await AgentSandbox.start({ tools: { value: async (x: unknown) => x } });
  const cells: [string, unknown][] = [
    ['const a = 1; a', 1],
    ['a + 1', 2],
    ['const b = await value(10); b + a', 11],
    ['b * 2', 20],
    ['let { p, q: [r] } = await value({ p: 1, q: [2] }); [p, r]', [1, 2]],
    ['[p, r, typeof q]', [1, 2, 'undefined']],
    ['var v = await value("v"); function twice(x) { return x * 2 } class Box { constructor(x) { this.x = x } }; twice(await value(4))', 8],
    ['[v, twice(5), new Box(3).x]', ['v', 10, 3]],
    ['hoisted(); function hoisted() { return "called before its line" } await value(0); hoisted()', 'called before its line'],
    ['for (var i = 0, j = await value(3); i < j; i++) {} [i, j]', [3, 3]],
    ['for (var k of await value([7, 8])) {} k', 8],
    ['if (await value(true)) { "then" } else { "else" }', 'then'],
    ['try { await value(1); throw new Error("inner") } catch (e) { "caught " + e.message }', 'caught inner'],
    ['{ await value(0); "last in a block" }', 'last in a block'],
    ['const s = []; for await (const x of [value(1), value(2)]) s.push(x); s', [1, 2]],
    ['[i, k, s.length]', [3, 8, 2]],
  ];
  for (const [code, expected] of cells) {
    const result = await session.run(code);
    t.is(result.status, 'ok', `${code}: ${result.error}`);
    t.deepEqual(result.result, expected, code);
  }
});

test('cells in one session: errors name the cell and the line; declaring a name twice is the guest’s SyntaxError', async (t) => {
  await using session = await AgentSandbox.start({ tools: { value: async (x: unknown) => x } });
  const thrown = await session.run('await value(1)\n\nthrow new RangeError("third line")');
  t.is(thrown.status, 'error');
  t.is(thrown.errorType, 'RangeError');
  t.is(thrown.error, 'third line');
  const stack = await session.run('try { await value(1);\n null.x } catch (e) { e.stack }');
  t.regex(String(stack.result), /cell-2:2/);
  t.is((await session.run('const once = 1')).status, 'ok');
  const twice = await session.run('const once = await value(2)');
  t.is(twice.status, 'error');
  t.is(twice.errorType, 'SyntaxError');
  t.regex(twice.error ?? '', /once/);
  const syntax = await session.run('let = = 2');
  t.is(syntax.errorType, 'SyntaxError');
});
