// The doctest runner's own test (node --test, in npm test before the runner itself): a runner that
// passed everything, or skipped a block silently, would make "every example runs" a claim nobody
// checks. Each case is a small documentation tree in a temporary folder, run for real.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { doctest, extractBlocks, outputMatches } from '../doctest.mjs';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const fence = '```';

/** A documentation tree with `files` ({ 'README.md': text }), node_modules linked from the repository for tsc. */
function tree(t, files) {
  const root = mkdtempSync(path.join(tmpdir(), 'strata-doctest-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  symlinkSync(path.join(REPO, 'node_modules'), path.join(root, 'node_modules'));
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), text);
  }
  return root;
}

const quiet = () => {};

test('extractBlocks: languages, markers, the declare comment and the shown output', () => {
  const md = [
    '# T',
    `${fence}ts fragment`,
    'rt.eval("1")',
    fence,
    '<!-- doctest-declare: declare const x: number; -->',
    `${fence}js`,
    'console.log(x)',
    fence,
    '',
    `${fence}text output`,
    '1',
    fence,
    `${fence}json`,
    '{}',
    fence,
  ].join('\n');
  const blocks = extractBlocks(md, 'README.md');
  assert.equal(blocks.length, 2, 'json is not a code block the runner runs');
  assert.deepEqual(
    blocks.map((b) => [b.line, b.lang, b.markers]),
    [
      [2, 'ts', ['fragment']],
      [6, 'js', []],
    ],
  );
  assert.equal(blocks[1].declare, 'declare const x: number;');
  assert.equal(blocks[1].expected, '1');
});

test("extractBlocks: each block has the declare comment right above it only, not an earlier block's", () => {
  const md = [
    '<!-- doctest-declare: declare const a: (x: number) => Promise<number>; -->',
    `${fence}ts fragment`,
    'a(1)',
    fence,
    'text between',
    `${fence}ts fragment`,
    'b',
    fence,
    '<!-- doctest-declare: declare const c: 1; -->',
    `${fence}ts fragment`,
    'c',
    fence,
  ].join('\n');
  assert.deepEqual(
    extractBlocks(md, 'README.md').map((b) => b.declare),
    ['declare const a: (x: number) => Promise<number>;', undefined, 'declare const c: 1;'],
  );
});

test('extractBlocks: an unknown marker and an orphan output block are errors, never a silent skip', () => {
  assert.throws(() => extractBlocks(`${fence}js fragmnet\n1\n${fence}\n`, 'A.md'), /A\.md:1: unknown doctest marker 'fragmnet'/);
  assert.throws(() => extractBlocks(`${fence}text output\n1\n${fence}\n`, 'B.md'), /B\.md:1: an output block must follow/);
});

test('outputMatches: … matches within one line only, blank edges and trailing spaces do not count', () => {
  assert.ok(outputMatches('pid …, done', 'pid 4242, done'));
  assert.ok(outputMatches('\na  \nb\n\n', 'a\nb'));
  assert.equal(outputMatches('a…', 'a\nb'), false);
  assert.equal(outputMatches('7', '8'), false);
});

test('doctest runs what is runnable and fails, naming file and line, what breaks', async (t) => {
  const root = tree(t, {
    'README.md': [
      `${fence}js`,
      'console.log(6 * 7)',
      fence,
      '',
      `${fence}text output`,
      '42',
      fence,
      `${fence}js`,
      'console.log("not what is shown")',
      fence,
      `${fence}text output`,
      'shown',
      fence,
      `${fence}js`,
      'process.exit(3)',
      fence,
      `${fence}js`,
      'console.error("a warning")',
      fence,
      `${fence}sh`,
      'test 1 = 1',
      fence,
      `${fence}sh no-run`,
      'npm test',
      fence,
    ].join('\n'),
    'docs/guide.md': [`${fence}ts`, 'const n: number = "text";', fence, `${fence}ts fragment`, 'undefinedName.call();', fence].join('\n'),
  });
  const lines = [];
  const { ok, failures, results } = await doctest({ root, node22: undefined, platform: '', log: (l) => lines.push(l) });
  assert.equal(ok, false);
  const failed = failures.map((f) => `${f.block.file}:${f.block.line}`).sort();
  assert.deepEqual(failed, ['README.md:14', 'README.md:17', 'README.md:8', 'docs/guide.md:1', 'docs/guide.md:4'].sort());
  const why = (where) => failures.find((f) => `${f.block.file}:${f.block.line}` === where).message;
  assert.match(why('README.md:8'), /output differs from the block shown/);
  assert.match(why('README.md:14'), /exit 3/);
  assert.match(why('README.md:17'), /wrote to stderr/);
  assert.match(why('docs/guide.md:1'), /does not type-check:\nline 2: .*not assignable to type 'number'/);
  assert.match(why('docs/guide.md:4'), /Cannot find name 'undefinedName'/);
  const how = new Map(results.map((r) => [`${r.block.file}:${r.block.line}`, r.how]));
  assert.equal(how.get('README.md:1'), 'run');
  assert.equal(how.get('README.md:20'), 'run');
  assert.equal(how.get('README.md:23'), 'checked (no-run)');
  assert.ok(lines.some((l) => l.startsWith('FAIL README.md:14 (js)')));
});

test('doctest: a node22 block is reported skipped without that Node, and a fragment is type-checked, never run', async (t) => {
  const root = tree(t, {
    'README.md': [`${fence}js node22`, 'process.exit(1)', fence, `${fence}js fragment`, 'process.exit(1)', fence].join('\n'),
  });
  const { ok, results } = await doctest({ root, node22: undefined, platform: '', log: quiet });
  assert.equal(ok, true);
  assert.deepEqual(results.map((r) => r.how).sort(), ['checked (fragment)', 'checked (hosts/node22 not installed: skipped)']);
  // Where the machine declares a Node 22 host, its absence fails the block instead.
  const declared = await doctest({ root, node22: undefined, platform: 'linux node22-host', log: quiet });
  assert.equal(declared.ok, false);
  assert.deepEqual(
    declared.failures.map((f) => `${f.block.line}: ${f.message}`),
    ['1: STRATA_TEST_PLATFORM declares node22-host, but hosts/node22 is not installed (npm ci --prefix hosts/node22)'],
  );
});

test('doctest: a block past its time limit is killed and fails; the scratch folder is removed', async (t) => {
  const root = tree(t, { 'README.md': `${fence}js\nsetInterval(() => {}, 1000)\n${fence}\n` });
  const { failures } = await doctest({ root, node22: undefined, platform: '', timeoutMs: 500, log: quiet });
  assert.equal(failures.length, 1);
  assert.match(failures[0].message, /ran past 500 ms/);
  const { existsSync } = await import('node:fs');
  assert.equal(existsSync(path.join(root, '.doctest')), false);
});
