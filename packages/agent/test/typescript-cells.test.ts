// TypeScript cells: the types are stripped in the parent (lines kept), the cell's language is
// journaled, and a restore strips it again; TypeScript that needs a transform is the cell's
// SyntaxError, journaled and met again on replay.
import test from 'ava';
import { AgentSandbox } from '../src/index.js';
import { checkNoLeaks } from './helpers/leaks.js';

checkNoLeaks(test);

test('a TypeScript cell runs, top-level await and state included, and replays from the journal', async (t) => {
  let lookups = 0;
  const tools = { lookup: async (sku: string) => (lookups++, sku.length * 1.5) };
  let journal;
  {
    await using session = await AgentSandbox.start({ tools });
    const typed = await session.run(
      'interface Price { sku: string; value: number }\nconst p: Price = { sku: "A1", value: await lookup("A1") };\np.value as number',
      { language: 'typescript' },
    );
    t.is(typed.status, 'ok', typed.error);
    t.is(typed.result, 3);
    const refused = await session.run('enum Color { Red }\nColor.Red', { language: 'typescript' });
    t.is(refused.status, 'error');
    t.is(refused.errorType, 'SyntaxError');
    t.regex(refused.error ?? '', /enum needs a transform, and Strata strips types and does not transform/);
    t.regex(refused.error ?? '', /\[cell-2:1/);
    const thrown = await session.run('const n: number = 1;\n\nthrow new Error("line " + n)', { language: 'typescript' });
    t.is(thrown.error, 'line 1');
    t.is((await session.run('p.sku')).result, 'A1', 'a JavaScript cell sees the TypeScript cell’s declarations');
    journal = session.journal;
  }
  t.deepEqual(
    journal.cells.map((c) => [c.language, c.status]),
    [
      ['typescript', 'ok'],
      ['typescript', 'error'],
      ['typescript', 'error'],
      [undefined, 'ok'],
    ],
  );
  await using again = await AgentSandbox.restore(journal, { tools });
  t.is(lookups, 1, 'the replay called no tool');
  t.deepEqual((await again.run('[p.sku, p.value, typeof n]')).result, ['A1', 3, 'number']);
  await t.throwsAsync(again.run('1', { language: 'python' as never }), {
    code: 'ERR_STRATA_INVALID_OPTION',
    message: /language must be 'javascript' or 'typescript'/,
  });
});

test("a TypeScript cell past the stripper's bounds is the cell's SyntaxError naming the limit; the session goes on", async (t) => {
  await using session = await AgentSandbox.start({ sandbox: 'off' });
  const deep = await session.run(`const a =\n${'['.repeat(600)}1${']'.repeat(600)}`, { language: 'typescript' });
  t.like(deep, { status: 'error', errorType: 'SyntaxError' });
  t.regex(deep.error ?? '', /more than 500 deep \(MAX_TYPESCRIPT_NESTING\).*\[cell-1:2\]$/);
  const trapping = await session.run(`${'x=>'.repeat(3_000)}1`, { language: 'typescript' });
  t.like(trapping, { status: 'error', errorType: 'SyntaxError' });
  t.regex(trapping.error ?? '', /the type stripper could not take this TypeScript .*\[cell-2\]$/);
  const big = await session.run(`// ${'x'.repeat(1024 * 1024)}\n1`, { language: 'typescript' });
  t.regex(big.error ?? '', /past the 1048576 \(MAX_TYPESCRIPT_CHARS\)/);
  t.like(await session.run('const n: number = 41; n + 1', { language: 'typescript' }), { status: 'ok', result: 42 });
});
