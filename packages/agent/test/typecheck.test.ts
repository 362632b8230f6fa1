// The model's code checked against the bridge's declarations before it runs: a hallucinated
// tool, a missing field, a wrong type are diagnostics at the code's own lines; correct code
// (JavaScript or TypeScript, top-level await included) has none.
import { execFile } from 'node:child_process';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { InvalidOption } from '@strata/runtime';
import test from 'ava';
import { ToolBridge, TypeCheckFailed } from '../src/index.js';
import { closeTypechecker, formatDiagnostics, typecheck } from '../src/typecheck.js';

test.after.always(async () => {
  await closeTypechecker();
});

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
  t.deepEqual(
    await typecheck('let x = 1; x = "a"; const list = []; list.push(3); setTimeout(() => {}, 5); x', declarations),
    [],
    'JavaScript is checked as JavaScript',
  );
  t.deepEqual(
    await typecheck('const city: string = "Bergen";\nconst w = await tools.weather({ city });\nconst t2: number = w.tempC;\nt2', declarations, 'typescript'),
    [],
  );
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

// --- bounds: a check runs off the host's event loop, within typecheckTimeout ----------------------

// 15 000 additions: seconds of the compiler's time (3.8 s of the host's loop before it had a thread).
const SLOW = `1${' + 1'.repeat(15_000)}`;

// Serial: a test running beside it (an AgentSandbox starting) would stop the ticks.
test.serial("a check past typecheckTimeout is TypeCheckFailed, the host's event loop ticking meanwhile; the next check works", async (t) => {
  await typecheck('1', declarations); // the compiler loaded and warm
  let ticks = 0;
  const ticker = setInterval(() => ticks++, 1);
  try {
    const failed = await t.throwsAsync(typecheck(SLOW, declarations, 'javascript', { timeout: 100 }), { instanceOf: TypeCheckFailed });
    t.is(failed?.code, 'ERR_STRATA_TYPECHECK');
    t.regex(failed?.message ?? '', /took longer than 100 ms \(typecheckTimeout\) and was stopped/);
    t.true(ticks >= 2, `the host's event loop ticked ${ticks} times during the check`);
  } finally {
    clearInterval(ticker);
  }
  t.deepEqual(await typecheck('await tools.weather({ city: "Oslo" })', declarations), [], 'a fresh checker answers the next check');
});

test("nesting past the compiler's stack is TypeCheckFailed, not a RangeError", async (t) => {
  for (const code of [`${'('.repeat(5_000)}1${')'.repeat(5_000)}`, `${'['.repeat(20_000)}1${']'.repeat(20_000)}`]) {
    const failed = await t.throwsAsync(typecheck(code, declarations, 'typescript', { timeout: 120_000 }), { instanceOf: TypeCheckFailed });
    t.regex(failed?.message ?? '', /the type checker failed on this code \(RangeError: Maximum call stack size exceeded\)/);
  }
  t.deepEqual(await typecheck('const n: number = 1; n', declarations, 'typescript'), []);
});

test('a bad typecheckTimeout is InvalidOption', async (t) => {
  for (const timeout of [0, -1, 1.5, Number.NaN, 2 ** 31]) {
    await t.throwsAsync(
      typecheck('1', declarations, 'javascript', { timeout }),
      { instanceOf: InvalidOption, message: /timeout \(typecheckTimeout\) must be a positive whole number/ },
      String(timeout),
    );
  }
});

test('AgentSandbox: a cell whose check cannot finish within typecheckTimeout is refused as TypeCheckFailed, not run', async (t) => {
  const { AgentSandbox } = await import('../src/index.js');
  await using session = await AgentSandbox.start({ tools: bridge, sandbox: 'off' });
  const refused = await session.run(`globalThis.ran = true;\n${SLOW}`, { typecheck: true, typecheckTimeout: 100 });
  t.like(refused, { status: 'error', errorType: 'TypeCheckFailed' });
  t.regex(refused.error ?? '', /took longer than 100 ms \(typecheckTimeout\)/);
  t.is(session.journal.cells.length, 0, 'not journaled');
  t.is((await session.run('typeof globalThis.ran')).result, 'undefined', 'nor run');
  await t.throwsAsync(session.run('1', { typecheck: true, typecheckTimeout: 0 }), { instanceOf: InvalidOption, message: /typecheckTimeout/ });
});

test('an unsupported typescript (7.x: its package exports no compiler API) is InvalidOption naming the version, not a crash', async (t) => {
  // The installed compiler is the repository's; a child process resolves `typescript` to a
  // package with typescript@7.0.2's main entry instead (its package.json main, lib/version.cjs,
  // exports only version and versionMajorMinor), through a resolve hook, which worker threads
  // inherit: the real loading path, no network.
  const folder = await mkdtemp(join(tmpdir(), 'strata-typescript-7-'));
  try {
    await mkdir(join(folder, 'typescript', 'lib'), { recursive: true });
    await writeFile(join(folder, 'typescript', 'package.json'), JSON.stringify({ name: 'typescript', version: '7.0.2', main: 'lib/version.cjs' }));
    const entry = join(folder, 'typescript', 'lib', 'version.cjs');
    await writeFile(entry, "exports.version = '7.0.2';\nexports.versionMajorMinor = '7.0';\n");
    const hook = join(folder, 'hook.mjs');
    await writeFile(
      hook,
      `import { registerHooks } from 'node:module';
registerHooks({ resolve: (specifier, context, next) => (specifier === 'typescript' ? { url: ${JSON.stringify(pathToFileURL(entry).href)}, shortCircuit: true } : next(specifier, context)) });
`,
    );
    const script = `
      import { AgentSandbox, typecheck } from ${JSON.stringify(new URL('../src/index.js', import.meta.url).href)};
      const settle = (promise) => promise.then((value) => ({ value }), (error) => ({ error: { name: error?.name, message: error?.message } }));
      const direct = await settle(typecheck('1', ''));
      const session = await AgentSandbox.start({ sandbox: 'off' });
      const run = await settle(session.run('1', { typecheck: true }));
      await session.close();
      process.stdout.write(JSON.stringify({ direct, run }));
      process.exit(0);
    `;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--no-warnings', '--import', pathToFileURL(hook).href, '--input-type=module', '-e', script],
      { timeout: 300_000 },
    );
    const { direct, run } = JSON.parse(stdout) as Record<'direct' | 'run', { error?: { name: string; message: string } }>;
    for (const outcome of [direct, run]) {
      t.is(outcome.error?.name, 'InvalidOption', JSON.stringify(outcome));
      t.regex(
        outcome.error?.message ?? '',
        /typecheck needs TypeScript >=5\.5 <7, whose compiler API it uses; the installed typescript is 7\.0\.2 .*npm install typescript@">=5\.5 <7"/,
      );
    }
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
});
