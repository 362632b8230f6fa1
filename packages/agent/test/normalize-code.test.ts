// normalizeCode: a model's reply → a cell. A table of replies and the cell text each becomes; a few
// run for real in a session (top-level await and the last expression stay the session's); hostile
// and huge texts never throw and take linear time.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import test from 'ava';
import { AgentSandbox } from '../src/index.js';
import { MAX_REWRITTEN_CHARS, normalizeCode } from '../src/normalize-code.js';
import { checkNoLeaks } from './helpers/leaks.js';

checkNoLeaks(test);

const FENCE = '```';

// [what it is, the model's reply, the cell]
const CASES: readonly [string, string, string][] = [
  ['no fence: as it is', 'const a = 1;\na + 1', 'const a = 1;\na + 1'],
  ['no fence, prose included: as it is (the guest reports it)', 'Sure! 1 + 1', 'Sure! 1 + 1'],
  ['the empty text', '', ''],
  [
    'a js block, prose around it dropped',
    `Here you go:\n${FENCE}js\nconst r = await tools.x();\nr\n${FENCE}\nHope that helps.`,
    'const r = await tools.x();\nr',
  ],
  ['javascript, ts, typescript labels, any case', `${FENCE}JavaScript\na()\n${FENCE}`, 'a()'],
  ['a ts block is taken as it is', `${FENCE}ts\nconst n: number = 1;\nn\n${FENCE}`, 'const n: number = 1;\nn'],
  ['an info string after the label', `${FENCE}js title="cell.js"\nx\n${FENCE}`, 'x'],
  ['several js/ts blocks are joined in order', `First:\n${FENCE}js\nconst a = 1;\n${FENCE}\nThen:\n${FENCE}typescript\na + 1\n${FENCE}`, 'const a = 1;\na + 1'],
  ['a bare block when no block is labelled', `${FENCE}\nbare()\n${FENCE}`, 'bare()'],
  ['only the first bare block', `${FENCE}\nfirst()\n${FENCE}\nOutput:\n${FENCE}\n42\n${FENCE}`, 'first()'],
  ['labelled blocks win over bare ones', `${FENCE}\n$ npm test\n${FENCE}\n${FENCE}js\nrun()\n${FENCE}`, 'run()'],
  ['blocks in other languages are dropped', `${FENCE}json\n{"a": 1}\n${FENCE}\n${FENCE}js\nuse()\n${FENCE}\n${FENCE}bash\nls\n${FENCE}`, 'use()'],
  ['only other languages: as it is', `${FENCE}python\nprint(1)\n${FENCE}`, `${FENCE}python\nprint(1)\n${FENCE}`],
  ['an unterminated fence runs to the end', `Code:\n${FENCE}js\nconst a = 1;\na`, 'const a = 1;\na'],
  [
    'a fence inside a block is its content',
    `${FENCE}js\nconst md = 1;\n${FENCE}js is not a closer\nmd\n${FENCE}`,
    `const md = 1;\n${FENCE}js is not a closer\nmd`,
  ],
  ['a longer closer and tildes', `~~~js\nt()\n~~~~\n`, 't()'],
  ['four backticks need four to close', '````js\na\n```\nb\n````', 'a\n```\nb'],
  ['an indented fence (a list item) is dedented', `1. Run:\n   ${FENCE}js\n   indented();\n     deeper();\n   ${FENCE}`, 'indented();\n  deeper();'],
  ['CRLF line endings', `${FENCE}js\r\nconst a = 1;\r\na\r\n${FENCE}\r\n`, 'const a = 1;\na'],
  ['inline triple backticks are not a fence', 'use ```js code``` here', 'use ```js code``` here'],
  ['an empty block', `${FENCE}js\n${FENCE}`, ''],

  ['export default async arrow', 'export default async () => {\n  return 1;\n}', ';(             async () => {\n  return 1;\n})();'],
  ['export default async arrow, expression body, semicolon', 'export default async () => 42;', ';(             async () => 42)();'],
  ['export default async function', 'export default async function () {\n  return 2;\n}', ';(             async function () {\n  return 2;\n})();'],
  ['export default named function', 'export default function main() { return 3 }', ';(             function main() { return 3 })();'],
  ['export default parenthesized', 'export default (async () => 4)', ';(             (async () => 4))();'],
  ['module.exports = async arrow', 'module.exports = async () => {\n  return 5;\n};', ';(               async () => {\n  return 5;\n})();'],
  ['module["exports"] = function', 'module["exports"] = function () { return 6 }', ';(                  function () { return 6 })();'],
  [
    'export default of a top-level function name',
    'async function main() { return 7 }\nexport default main;',
    'async function main() { return 7 }\n;(             main)();',
  ],
  ['export default of a const arrow', 'const main = async () => 8;\nexport default main', 'const main = async () => 8;\n;(             main)();'],
  ['export default of data: the value itself', 'export default { answer: 9 };', ';(             { answer: 9 });'],
  ['export default of an unknown name: not called', 'export default value;', ';(             value);'],
  ['a generator is not called', 'export default function* g() {}', ';(             function* g() {});'],
  ['the statement before has no semicolon: ;( keeps it apart', 'const a = 1\nexport default () => a', 'const a = 1\n;(             () => a)();'],
  ['a line break inside the prefix is kept', 'export default\nasync () => 1', ';(            \nasync () => 1)();'],
  [
    'export before declarations and export lists are blanked',
    'export const a = 1;\nexport function f() {}\nexport { a as b };\na',
    '       const a = 1;\n       function f() {}\n                  \na',
  ],
  [
    'a fenced default export with top-level await before it',
    `${FENCE}js\nconst base = await lookup("A1");\nexport default async () => base * 2;\n${FENCE}`,
    'const base = await lookup("A1");\n;(             async () => base * 2)();',
  ],
  ['code that does not parse is left alone', 'export default async () => {', 'export default async () => {'],
  [
    'TypeScript: the default export is called, its types kept',
    'export default async (): Promise<number> => 1',
    ';(             async (): Promise<number> => 1)();',
  ],
  [
    'TypeScript: a typed function and typed exports',
    'interface Item { price: number }\nexport const items: Item[] = [];\nexport default function total(list: Item[] = items): number { return list.length }',
    'interface Item { price: number }\n       const items: Item[] = [];\n;(             function total(list: Item[] = items): number { return list.length })();',
  ],
  ['TypeScript that has no JavaScript form is left alone', 'enum E { A }\nexport default () => E.A', 'enum E { A }\nexport default () => E.A'],
  ['re-exports are left alone', "export { a } from 'x';", "export { a } from 'x';"],
  ['the word export in a string is no export', 'const s = "export default 1"; s', 'const s = "export default 1"; s'],
];

for (const [title, reply, cell] of CASES) {
  test(`normalizeCode: ${title}`, async (t) => {
    t.is(await normalizeCode(reply), cell);
  });
}

test('normalizeCode: the rewrite keeps every line where it was', async (t) => {
  const reply = 'const a = 1;\nexport default async () => {\n  const b = a + 1;\n  throw new Error("line 4");\n};\n// trailing comment';
  const cell = await normalizeCode(reply);
  const before = reply.split('\n');
  const after = cell.split('\n');
  t.is(after.length, before.length);
  for (const [i, line] of after.entries()) t.is(line.length, before[i]!.length + (i === 4 ? 3 : 0), `line ${i + 1}`);
  t.is(after[3], before[3]);
});

test('normalizeCode never rejects, on anything', async (t) => {
  const hostile: unknown[] = [
    undefined,
    null,
    42,
    {},
    '```',
    '```\n',
    '~~~~~~',
    '```js',
    '`'.repeat(100_000),
    '```js\n'.repeat(50_000),
    'export default '.repeat(10_000),
    `export default ${'('.repeat(100_000)}`,
    `export default ${'['.repeat(200_000)}1${']'.repeat(200_000)}`,
    'module.exports = '.repeat(10_000),
    '\u2028export default 1\u2029',
    '\uD800export default () => 1',
    `${FENCE}js\nexport default async () => {`,
  ];
  for (const input of hostile) await t.notThrowsAsync(normalizeCode(input as string), String(input).slice(0, 40));
  t.is(await normalizeCode(undefined as never), '');
});

test('normalizeCode is linear on huge texts: many fences, many exports, long lines', async (t) => {
  const huge: [string, string][] = [
    ['200 000 fence lines', `${FENCE}js\n${FENCE}\n`.repeat(100_000)],
    ['a fence opener with a 4 MB info string ending in a backtick', `${FENCE}${'a'.repeat(4_000_000)}\`\n`],
    ['100 000 export statements', Array.from({ length: 100_000 }, (_, i) => `export const a${i} = ${i};`).join('\n')],
    ['a 4 MB line of backticks and spaces', '` '.repeat(2_000_000)],
  ];
  for (const [what, text] of huge) {
    const t0 = performance.now();
    const cell = await normalizeCode(text);
    const ms = performance.now() - t0;
    t.is(typeof cell, 'string');
    t.true(ms < 5_000, `${what}: ${ms.toFixed(0)} ms`);
  }
});

test('normalizeCode rewrites exports up to MAX_REWRITTEN_CHARS of code; longer code is left as it is', async (t) => {
  const tail = 'export default () => 1';
  const atLimit = `${' '.repeat(MAX_REWRITTEN_CHARS - tail.length)}${tail}`;
  t.true((await normalizeCode(atLimit)).endsWith('() => 1)();'));
  const over = ` ${atLimit}`;
  t.is(await normalizeCode(over), over);
  // The worst case under the limit: as many top-level declarations as fit, each one exported.
  const declarations = Array.from({ length: 6_000 }, (_, i) => `export const a${i} = ${i};`)
    .join('\n')
    .slice(0, MAX_REWRITTEN_CHARS - 30);
  const t0 = performance.now();
  const cell = await normalizeCode(`${declarations.slice(0, declarations.lastIndexOf('\n'))}\nexport default () => 1`);
  const ms = performance.now() - t0;
  t.true(cell.endsWith('() => 1)();') && cell.startsWith('       const a0 = 0;'));
  t.true(ms < 2_000, `${ms.toFixed(0)} ms`);
});

test('normalized cells run in a session: fences, top-level await, default exports, state across cells', async (t) => {
  const prices: Record<string, number> = { A1: 3.5, B2: 10 };
  await using session = await AgentSandbox.start({ tools: { lookup: async (sku: string) => prices[sku] } });
  const replies: [string, unknown][] = [
    [`Let me look that up.\n${FENCE}js\nconst r = await lookup("A1");\nr * 2\n${FENCE}`, 7],
    ['r + 1', 4.5],
    ['export default async () => {\n  const p = await lookup("B2");\n  return p + r;\n}', 13.5],
    [`${FENCE}javascript\nmodule.exports = async () => (await lookup("A1")) * 10;\n${FENCE}`, 35],
    [`${FENCE}js\nconst base = await lookup("B2");\nexport default async function main() {\n  return base + (await lookup("A1"));\n}\n${FENCE}`, 13.5],
    ['export const doubled = (await lookup("B2")) * 2;\ndoubled', 20],
    ['doubled + base', 30],
    ['function helper() { return 40 }\nexport default helper;', 40],
    ['export default () => helper2() + 1;\nfunction helper2() { return 1 }\nconst unused = 0;', 2],
    ['export default { total: r + base };', { total: 13.5 }],
  ];
  for (const [reply, expected] of replies) {
    const result = await session.run(await normalizeCode(reply));
    t.is(result.status, 'ok', `${reply}: ${result.error}`);
    t.deepEqual(result.result, expected, reply);
  }
});

test('a normalized TypeScript reply with a default export runs as a typescript cell', async (t) => {
  await using session = await AgentSandbox.start({ sandbox: 'off' });
  const reply =
    '```ts\ninterface Item { price: number }\nconst items: Item[] = [{ price: 2 }, { price: 3 }];\nexport default async (): Promise<number> => items.reduce((sum: number, i: Item) => sum + i.price, 0);\n```';
  const result = await session.run(await normalizeCode(reply), { language: 'typescript' });
  t.is(result.status, 'ok', result.error);
  t.is(result.result, 5);
});

test("a normalized cell's errors keep the reply's lines", async (t) => {
  await using session = await AgentSandbox.start({ tools: { lookup: async (sku: string) => sku } });
  const reply = `${FENCE}js\nexport default async () => {\n  await lookup("A1");\n  try { null.x } catch (e) { return e.stack }\n}\n${FENCE}`;
  const result = await session.run(await normalizeCode(reply));
  t.is(result.status, 'ok', result.error);
  t.regex(String(result.result), /cell-1:3:/);
  const thrown = await session.run(await normalizeCode('export default async () => {\n\n  throw new RangeError("third line");\n}'));
  t.like(thrown, { status: 'error', errorType: 'RangeError', error: 'third line' });
});

test('a hostile JavaScript reply breaks no later normalizeCode, stripTypes or TypeScript cell (in a fresh child process)', async (t) => {
  // A reply that never asked for TypeScript, whose default export does not parse as JavaScript
  // (`(x: number)`), so normalizeCode strips its types; nested past what Node's stripper takes.
  // A child process of its own: a poisoned stripper cannot hide behind a fresh one.
  const script = `
    import { AgentSandbox, normalizeCode } from ${JSON.stringify(new URL('../src/index.js', import.meta.url).href)};
    import { stripTypes } from ${JSON.stringify(import.meta.resolve('@strata/runtime'))};
    const hostile = [
      'export default (x: number) => ' + '('.repeat(3000) + 'x' + ')'.repeat(3000),
      'export default (x: number) => ' + 'x=>'.repeat(3000) + '1',
      'export default (x: number) => ' + 'if(1)'.repeat(3000),
      'export default (x: number) => 1' + '+1'.repeat(30000),
    ];
    const out = { unchanged: [] };
    for (const reply of hostile) out.unchanged.push((await normalizeCode(reply)) === reply);
    out.normalized = await normalizeCode('export default (x: number = 2): number => x * 21');
    out.stripped = await stripTypes('let a: number = 1');
    const session = await AgentSandbox.start({ sandbox: 'off' });
    out.cell = await session.run(out.normalized, { language: 'typescript' });
    out.hostileCell = await session.run(hostile[1], { language: 'typescript' });
    out.cellAfter = await session.run('const b: number = 1; b + 1', { language: 'typescript' });
    await session.close();
    process.stdout.write(JSON.stringify(out));
    process.exit(0);
  `;
  const { stdout } = await promisify(execFile)(process.execPath, ['--no-warnings', '--input-type=module', '-e', script], {
    timeout: 300_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  const out = JSON.parse(stdout) as {
    unchanged: boolean[];
    normalized: string;
    stripped: string;
    cell: CellOutcome;
    hostileCell: CellOutcome;
    cellAfter: CellOutcome;
  };
  t.deepEqual(out.unchanged, [true, true, true, true], 'a reply the stripper refuses is left as it is');
  t.is(out.normalized, ';(             (x: number = 2): number => x * 21)();', 'a later reply is still rewritten');
  t.is(out.stripped, 'let a         = 1');
  t.like(out.cell, { status: 'ok', result: 42 });
  t.like(out.hostileCell, { status: 'error', errorType: 'SyntaxError' });
  t.regex(out.hostileCell.error ?? '', /the type stripper could not take this TypeScript.*\[cell-2\]/);
  t.like(out.cellAfter, { status: 'ok', result: 2 }, 'a later TypeScript cell runs');
});

interface CellOutcome {
  readonly status: string;
  readonly result?: unknown;
  readonly error?: string;
  readonly errorType?: string;
}
