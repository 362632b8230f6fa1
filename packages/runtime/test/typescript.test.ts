// language: 'typescript': the types are stripped in the parent by Node's module.stripTypeScriptTypes
// (strip mode: types become whitespace), against both runtimes. Typed code runs; errors keep their
// original lines; what needs a transform (an enum, a namespace with values) and what does not parse
// is the guest's SyntaxError, saying why and what to write instead; the option is validated.
import { execFile, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import test, { type ExecutionContext } from 'ava';
import * as strata from '../src/index.js';
import { InvalidOption, IsolatedRuntime, JsError, Runtime } from '../src/index.js';
import { MAX_TYPESCRIPT_CHARS, MAX_TYPESCRIPT_NESTING, assertLanguage, needsTransform, placeOf, precheck, toJavaScript } from '../src/typescript-input.js';
import { checkNoLeaks } from './helpers/leaks.js';

checkNoLeaks(test);

type AnyRuntime = Runtime | IsolatedRuntime;

const RUNTIMES: readonly [string, () => Promise<AnyRuntime>][] = [
  ['Runtime', () => Runtime.start({ timeout: 5_000 })],
  ['IsolatedRuntime', () => IsolatedRuntime.start({ timeout: 5_000 })],
];

/** The same test against an in-process Runtime and an IsolatedRuntime. */
function both(title: string, body: (t: ExecutionContext, rt: AnyRuntime) => Promise<void>): void {
  for (const [name, start] of RUNTIMES) {
    test(`${name}: ${title}`, async (t) => {
      await using rt = await start();
      await body(t, rt);
    });
  }
}

const TYPED = `interface Point { x: number; y: number }
type Pair<T> = readonly [T, T];
function swap<T>(pair: Pair<T>): Pair<T> { return [pair[1], pair[0]] as const; }
class Box<T> {
  private value: T;
  declare readonly tag?: string;
  constructor(value: T) { this.value = value; }
  get(): T { return this.value; }
}
const p: Point = { x: 1, y: 2 } satisfies Point;
const n = (new Box<number>(p.x + p.y).get() as unknown) as number;
const total = n!;
[swap<number>([total, 4]), typeof Box]`;

both('typed code runs: interfaces, annotations, generics, as, satisfies, non-null, declare fields', async (t, rt) => {
  t.deepEqual(await rt.eval(TYPED, { language: 'typescript' }), [[4, 3], 'function']);
  t.deepEqual(await rt.eval('[1, 2].map((x: number): string => String(x))', { language: 'typescript' }), ['1', '2']);
  // 'javascript' is the default and runs the code as it is.
  t.is(await rt.eval('6 * 7', { language: 'javascript' }), 42);
  await t.throwsAsync(rt.eval('const x: number = 1; x'), { instanceOf: JsError, message: /SyntaxError/ });
});

both('the guest receives the code with its types blanked out, every character where it was', async (t, rt) => {
  const source = 'function add(a: number, b: number): number { return a + b }\nadd.toString()';
  t.is(await rt.eval(source, { language: 'typescript' }), 'function add(a        , b        )         { return a + b }');
});

both("an error's line and column are the original ones", async (t, rt) => {
  const code = 'type Id = string;\ninterface Row {\n  id: Id;\n}\nconst rows: Row[] = [];\nconst first = rows[0] as Row;\n  first.id satisfies Id;';
  const error = await t.throwsAsync(rt.eval(code, { language: 'typescript', filename: 'cell.ts' }), { instanceOf: JsError });
  t.is(error?.guestName, 'TypeError');
  t.regex(error?.guestStack ?? '', /cell\.ts:7:9/, 'line 7, the column of .id after the two spaces of indentation');
  const thrown = await t.throwsAsync(
    rt.eval('let a: number = 1;\n\n\tthrow new RangeError(`at ${a as number}`)', { language: 'typescript', filename: 'cell.ts' }),
    {
      instanceOf: JsError,
    },
  );
  t.is(thrown?.message, 'RangeError: at 1');
  t.regex(thrown?.guestStack ?? '', /cell\.ts:3:8/);
});

both('an enum and a namespace are SyntaxErrors that say why and what to write instead', async (t, rt) => {
  const enumError = await t.throwsAsync(
    rt.eval('const a: number = 1;\nenum Color { Red, Green }\nColor.Red', { language: 'typescript', filename: 'cell.ts' }),
    {
      instanceOf: JsError,
    },
  );
  t.is(enumError?.guestName, 'SyntaxError');
  t.regex(
    enumError?.message ?? '',
    /^SyntaxError: a TypeScript enum needs a transform, and Strata strips types and does not transform: use a union of literals instead of an enum/,
  );
  t.regex(enumError?.message ?? '', /\[cell\.ts:2:1\]$/);
  t.regex(enumError?.guestStack ?? '', /at cell\.ts:2:1/);

  const namespaceError = await t.throwsAsync(rt.eval('let a = 1;\n\nnamespace Shapes {\n  export const unit = 1;\n}', { language: 'typescript' }), {
    instanceOf: JsError,
  });
  t.is(namespaceError?.guestName, 'SyntaxError');
  t.regex(namespaceError?.message ?? '', /a TypeScript namespace with values needs a transform.*use a plain object/);
  t.regex(namespaceError?.message ?? '', /\[<eval>:3(:1)?\]$/);
  // A namespace of types only has nothing to transform.
  t.is(await rt.eval('namespace Types { export type A = number }\nconst v: Types.A = 3; v', { language: 'typescript' }), 3);

  for (const [code, construct] of [
    ['class P { constructor(private x: number) {} }', /parameter property.*declare the field/],
    ['import fs = require("fs")', /import x = require.*import declaration/],
    ['let v = <number>(1 as unknown)', /angle-bracket.*write value as T/],
    ['const enum E { A }', /TypeScript enum/],
  ] as const) {
    const error = await t.throwsAsync(rt.eval(code, { language: 'typescript' }), { instanceOf: JsError }, code);
    t.is(error?.guestName, 'SyntaxError', code);
    t.regex(error?.message ?? '', construct, code);
  }
  t.is(await rt.eval('1 + 1'), 2, 'the runtime stays usable');
});

both('TypeScript that does not parse is a SyntaxError at its line', async (t, rt) => {
  const error = await t.throwsAsync(rt.eval('const a = 1;\nconst b: = 2;\nb', { language: 'typescript', filename: 'bad.ts' }), { instanceOf: JsError });
  t.is(error?.guestName, 'SyntaxError');
  t.regex(error?.message ?? '', /\[bad\.ts:2:10\]$/);
  // Valid TypeScript that is not valid JavaScript for the guest: V8's own SyntaxError, at the original line.
  const late = await t.throwsAsync(rt.eval('const a: string = "";\nlet let = 1', { language: 'typescript', filename: 'late.ts' }), { instanceOf: JsError });
  t.is(late?.guestName, 'SyntaxError');
});

both('execute reports a refused or unparsable TypeScript cell as errorType SyntaxError', async (t, rt) => {
  const refused = await rt.execute('console.log("never runs");\nenum E { A }', { language: 'typescript' });
  t.like(refused, { status: 'error', errorType: 'SyntaxError', stdout: '', result: undefined });
  t.regex(refused.error ?? '', /^a TypeScript enum needs a transform.*\[<eval>:2:1\]$/);
  const invalid = await rt.execute('let x: = 1', { language: 'typescript' });
  t.like(invalid, { status: 'error', errorType: 'SyntaxError' });
  const ok = await rt.execute('const greeting: string = "hi"; console.log(greeting); greeting.length as number', { language: 'typescript' });
  t.like(ok, { status: 'ok', stdout: 'hi\n', result: 2 });
});

both('evalModule strips types too, import type declarations included', async (t, rt) => {
  rt.addModule('shapes', 'export const unit = 2;');
  const source = [
    "import type { Shape } from 'types-only';",
    "import { unit, type Unit } from 'shapes';",
    'export type Area = number;',
    'export interface Square { side: number }',
    'const sq: Square = { side: 3 };',
    'export const area: Area = sq.side * sq.side * (unit as number);',
    'export type { Shape };',
  ].join('\n');
  t.deepEqual(await rt.evalModule(source, { language: 'typescript' }), { area: 18 });
  const error = await t.throwsAsync(rt.evalModule('export enum E { A }', { language: 'typescript', specifier: 'strata:enum' }), { instanceOf: JsError });
  t.is(error?.guestName, 'SyntaxError');
  t.regex(error?.message ?? '', /\[strata:enum:1:8\]$/);
});

both("language is validated: anything but 'javascript' or 'typescript' is InvalidOption", async (t, rt) => {
  for (const language of ['python', 'TypeScript', 'ts', 1, null] as unknown[]) {
    const options = { language } as never;
    await t.throwsAsync(rt.eval('1', options), { instanceOf: InvalidOption, message: /eval: language must be 'javascript' or 'typescript'/ }, String(language));
    await t.throwsAsync(rt.execute('1', options), { instanceOf: InvalidOption, message: /execute: language must be/ }, String(language));
    await t.throwsAsync(rt.evalModule('export const a = 1', options), { instanceOf: InvalidOption, message: /evalModule: language must be/ }, String(language));
  }
});

test.serial('the module-level eval and execute take language too', async (t) => {
  t.is(await strata.eval('const n: number = 41; n + 1', { language: 'typescript' }), 42);
  t.like(await strata.execute('enum E { A }', { language: 'typescript' }), { status: 'error', errorType: 'SyntaxError' });
  await strata.closeDefaultRuntime();
});

test('a Node.js without module.stripTypeScriptTypes is InvalidOption naming the Node.js version needed', async (t) => {
  const error = t.throws(() => assertLanguage('typescript', 'eval', null), { instanceOf: InvalidOption });
  t.regex(
    error?.message ?? '',
    /^eval: language 'typescript' needs Node\.js 22\.13 \(or 23\.2\) or later, whose module\.stripTypeScriptTypes strips the types; this is v\d+/,
  );
  t.notThrows(() => assertLanguage('javascript', 'eval', null), 'JavaScript needs no stripper');
  t.is(await toJavaScript('1 + 1', undefined, '<eval>', 'eval', null), '1 + 1');
  // A Node.js built without TypeScript support.
  const noTypeScript = async () =>
    ({ status: 'error', error: { name: 'Error', message: 'Node.js is not compiled with TypeScript support', code: 'ERR_NO_TYPESCRIPT', stack: '' } }) as const;
  await t.throwsAsync(toJavaScript('let a: number', 'typescript', '<eval>', 'eval', noTypeScript), {
    instanceOf: InvalidOption,
    message: /built without TypeScript support/,
  });
});

test("the stripper's place and messages: the column only where the frame's line is the source's own", (t) => {
  const framed = (stack: string) => Object.assign(new Error('x'), { stack });
  t.deepEqual(placeOf(framed(':2\nlet a = 1;\nenum E { A }\n^^^^^^^^^^^^\n\nSyntaxError [ERR]: x'), 'let a = 1;\nenum E { A }'), { line: 2, column: 1 });
  t.deepEqual(
    placeOf(framed(':1\n    let x = <T>y\n            ^^^^\n\nSyntaxError'), '\tlet x = <T>y'),
    { line: 1, column: 10 },
    'a tab is four columns in the frame, one in the source',
  );
  t.deepEqual(placeOf(framed(':3\n  > namespace N {\n  > }\n\nSyntaxError'), 'a\nb\nnamespace N {\n}'), { line: 3, column: undefined });
  t.is(placeOf(framed('SyntaxError: no frame'), 'x'), undefined);
  t.regex(
    needsTransform('Some future construct is not supported in strip-only mode'),
    /^Some future construct .* \(Strata strips types and does not transform TypeScript\)$/,
  );
});

// --- bounds: no input stalls the host or poisons a later strip --------------------------------

/**
 * Hostile TypeScript of the shapes that trap Node's stripper (or overflow it), each a few KB, as
 * the source of an array of [what, code] (built in the child: it is too long for a command line).
 */
const HOSTILE = `[
  ['3 000 nested parentheses', '('.repeat(3000) + '1' + ')'.repeat(3000)],
  ['3 000 nested arrows', 'x=>'.repeat(3000) + '1'],
  ['3 000 nested ifs', 'if(1)'.repeat(3000) + ';'],
  ['3 000 nested Array<> types', 'let a: ' + 'Array<'.repeat(3000) + 'number' + '>'.repeat(3000)],
  ['3 000 nested template literals', '\`\${'.repeat(3000) + '1' + '}\`'.repeat(3000)],
  ['3 000 nested blocks', '{'.repeat(3000) + '}'.repeat(3000)],
  ['1 500 nested objects', '(' + '{a:'.repeat(1500) + '1' + '}'.repeat(1500) + ')'],
  ['10 000 nested ternaries', '1?1:'.repeat(10000) + '1'],
  ['10 000 unary !', '!'.repeat(10000) + '1'],
  ['30 000 additions', '1' + '+1'.repeat(30000)],
]`;

test("hostile TypeScript is the guest's SyntaxError and poisons no later strip: eval, stripTypes (in a fresh child process)", async (t) => {
  // A child process of its own: a poisoned stripper cannot hide behind a fresh one.
  const script = `
    import { Runtime, stripTypes } from ${JSON.stringify(new URL('../src/index.js', import.meta.url).href)};
    const hostile = ${HOSTILE};
    const rt = await Runtime.start({ timeout: 30000 });
    const settle = (promise) => promise.then((value) => ({ value }), (error) => ({ error: { name: error?.name, guestName: error?.guestName, message: String(error?.message).slice(0, 300) } }));
    const out = [];
    for (const [what, code] of hostile) {
      out.push({
        what,
        viaEval: await settle(rt.eval(code, { language: 'typescript', filename: 'cell-1' })),
        viaStrip: await settle(Promise.resolve().then(() => stripTypes(code))),
        after: await settle(Promise.resolve().then(() => stripTypes('let a: number = 1'))),
        evalAfter: await settle(rt.eval('((n: number) => n + 1)(41)', { language: 'typescript' })),
      });
    }
    await rt.close();
    process.stdout.write(JSON.stringify(out));
    process.exit(0);
  `;
  const { stdout } = await promisify(execFile)(process.execPath, ['--no-warnings', '--input-type=module', '-e', script], {
    timeout: 300_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  const results = JSON.parse(stdout) as { what: string; viaEval: Settled; viaStrip: Settled; after: Settled; evalAfter: Settled }[];
  t.is(results.length, 10);
  for (const { what, viaEval, viaStrip, after, evalAfter } of results) {
    for (const refused of [viaEval, viaStrip]) {
      t.is(refused.error?.name, 'JsError', `${what}: ${JSON.stringify(refused)}`);
      t.is(refused.error?.guestName, 'SyntaxError', what);
      t.regex(refused.error?.message ?? '', /MAX_TYPESCRIPT_NESTING|the type stripper could not take this TypeScript/, what);
      t.notRegex(refused.error?.message ?? '', /Please open an issue/, `${what}: Node's internal-error boilerplate is not the guest's message`);
    }
    t.regex(viaEval.error?.message ?? '', /\[cell-1(:\d+)?\]$/, `${what}: placed at the cell`);
    t.deepEqual(after, { value: 'let a         = 1' }, `${what}: a later strip works`);
    t.deepEqual(evalAfter, { value: 42 }, `${what}: a later TypeScript eval works`);
  }
});

interface Settled {
  readonly value?: unknown;
  readonly error?: { readonly name?: string; readonly guestName?: string; readonly message?: string };
}

// Serial: a test running beside it (an in-process Runtime's synchronous work) would stop the ticks.
test.serial("stripping does not block the host's event loop; 8 MB, past MAX_TYPESCRIPT_CHARS, is refused at once", async (t) => {
  const line = 'let a: number = 1;\n';
  // Large enough to take the stripper many milliseconds, small enough for a loaded machine.
  const quarter = line.repeat(Math.floor(MAX_TYPESCRIPT_CHARS / 2 / line.length));
  let ticks = 0;
  const ticker = setInterval(() => ticks++, 1);
  try {
    const stripped = await strata.stripTypes(quarter);
    t.is(stripped.length, quarter.length);
    t.true(stripped.startsWith('let a         = 1;\n'));
    // The strip took tens of milliseconds or more in its thread; the host kept ticking meanwhile.
    t.true(ticks >= 2, `the host's event loop ticked ${ticks} times during the strip`);
    const eightMegabytes = line.repeat(Math.ceil((8 * 1024 * 1024) / line.length));
    const refused = await t.throwsAsync(strata.stripTypes(eightMegabytes, 'big.ts'), { instanceOf: JsError });
    t.is(refused?.guestName, 'SyntaxError');
    t.regex(refused?.message ?? '', new RegExp(`past the ${MAX_TYPESCRIPT_CHARS} \\(MAX_TYPESCRIPT_CHARS\\).*\\[big\\.ts\\]$`));
  } finally {
    clearInterval(ticker);
  }
});

test('nesting past MAX_TYPESCRIPT_NESTING is refused at its line, naming the limit; brackets in strings, comments and template text do not count', async (t) => {
  const nested = (depth: number) => `const x =\n${'['.repeat(depth)}1${']'.repeat(depth)}`;
  t.is(
    await strata.stripTypes(`let n: number = 1;\n${nested(MAX_TYPESCRIPT_NESTING - 1)}`),
    `let n         = 1;\n${nested(MAX_TYPESCRIPT_NESTING - 1)}`,
    'at the limit (the file itself is one level) it strips',
  );
  const refused = await t.throwsAsync(strata.stripTypes(nested(MAX_TYPESCRIPT_NESTING + 1), 'deep.ts'), { instanceOf: JsError });
  t.is(refused?.guestName, 'SyntaxError');
  t.regex(refused?.message ?? '', new RegExp(`more than ${MAX_TYPESCRIPT_NESTING} deep \\(MAX_TYPESCRIPT_NESTING\\).*\\[deep\\.ts:2\\]$`));
  const deep = '('.repeat(MAX_TYPESCRIPT_NESTING + 1);
  for (const quiet of [`'${deep}'`, `"${deep}"`, `// ${deep}\n1`, `/* ${deep} */ 1`, `\`${deep}\``, `\`\${'${deep}'}\``]) {
    t.is(precheck(quiet, 'x'), undefined, quiet.slice(0, 12));
  }
  t.truthy(precheck(`\`\${${deep}1\``, 'x'), "a template's substitution is code");
});

both('a TypeScript eval keeps its turn: commands run in the order they were made', async (t, rt) => {
  const [, order] = await Promise.all([rt.eval('const order: string[] = ["ts"]; 1', { language: 'typescript' }), rt.eval('order.push("js"); order.join()')]);
  t.is(order, 'ts,js');
});

test("the stripper's ExperimentalWarning stays in its thread: the application's stderr has none, and its own warnings still print", (t) => {
  const program =
    "import { stripTypes } from '@strata/runtime'; console.log(await stripTypes('const a: number = 1')); process.emitWarning('the app warns', 'ExperimentalWarning');";
  const cwd = fileURLToPath(new URL('../..', import.meta.url));
  const ran = spawnSync(process.execPath, ['--input-type=module', '-e', program], { cwd, encoding: 'utf8', timeout: 60_000 });
  t.is(ran.status, 0, ran.stderr);
  t.regex(ran.stdout, /const a\s+= 1/);
  t.notRegex(ran.stderr, /stripTypeScriptTypes/);
  t.regex(ran.stderr, /ExperimentalWarning: the app warns/);
});
