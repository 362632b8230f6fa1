// language: 'typescript': the types are stripped in the parent by Node's module.stripTypeScriptTypes
// (strip mode: types become whitespace), against both runtimes. Typed code runs; errors keep their
// original lines; what needs a transform (an enum, a namespace with values) and what does not parse
// is the guest's SyntaxError, saying why and what to write instead; the option is validated.
import test, { type ExecutionContext } from 'ava';
import * as strata from '../src/index.js';
import { InvalidOption, IsolatedRuntime, JsError, Runtime } from '../src/index.js';
import { assertLanguage, needsTransform, placeOf, toJavaScript } from '../src/typescript-input.js';
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
  const thrown = await t.throwsAsync(rt.eval('let a: number = 1;\n\n\tthrow new RangeError(`at ${a as number}`)', { language: 'typescript', filename: 'cell.ts' }), {
    instanceOf: JsError,
  });
  t.is(thrown?.message, 'RangeError: at 1');
  t.regex(thrown?.guestStack ?? '', /cell\.ts:3:8/);
});

both('an enum and a namespace are SyntaxErrors that say why and what to write instead', async (t, rt) => {
  const enumError = await t.throwsAsync(rt.eval('const a: number = 1;\nenum Color { Red, Green }\nColor.Red', { language: 'typescript', filename: 'cell.ts' }), {
    instanceOf: JsError,
  });
  t.is(enumError?.guestName, 'SyntaxError');
  t.regex(enumError?.message ?? '', /^SyntaxError: a TypeScript enum needs a transform, and Strata strips types and does not transform: use a union of literals instead of an enum/);
  t.regex(enumError?.message ?? '', /\[cell\.ts:2:1\]$/);
  t.regex(enumError?.guestStack ?? '', /at cell\.ts:2:1/);

  const namespaceError = await t.throwsAsync(rt.eval('let a = 1;\n\nnamespace Shapes {\n  export const unit = 1;\n}', { language: 'typescript' }), { instanceOf: JsError });
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
  t.regex(error?.message ?? '', /^eval: language 'typescript' needs Node\.js 22\.13 \(or 23\.2\) or later, whose module\.stripTypeScriptTypes strips the types; this is v\d+/);
  t.notThrows(() => assertLanguage('javascript', 'eval', null), 'JavaScript needs no stripper');
  t.is(await toJavaScript('1 + 1', undefined, '<eval>', 'eval', null), '1 + 1');
  // A Node.js built without TypeScript support.
  const noTypeScript = async () => ({ status: 'error', error: { name: 'Error', message: 'Node.js is not compiled with TypeScript support', code: 'ERR_NO_TYPESCRIPT', stack: '' } }) as const;
  await t.throwsAsync(toJavaScript('let a: number', 'typescript', '<eval>', 'eval', noTypeScript), { instanceOf: InvalidOption, message: /built without TypeScript support/ });
});

test("the stripper's place and messages: the column only where the frame's line is the source's own", (t) => {
  const framed = (stack: string) => Object.assign(new Error('x'), { stack });
  t.deepEqual(placeOf(framed(':2\nlet a = 1;\nenum E { A }\n^^^^^^^^^^^^\n\nSyntaxError [ERR]: x'), 'let a = 1;\nenum E { A }'), { line: 2, column: 1 });
  t.deepEqual(placeOf(framed(':1\n    let x = <T>y\n            ^^^^\n\nSyntaxError'), '\tlet x = <T>y'), { line: 1, column: 10 }, 'a tab is four columns in the frame, one in the source');
  t.deepEqual(placeOf(framed(':3\n  > namespace N {\n  > }\n\nSyntaxError'), 'a\nb\nnamespace N {\n}'), { line: 3, column: undefined });
  t.is(placeOf(framed('SyntaxError: no frame'), 'x'), undefined);
  t.regex(needsTransform('Some future construct is not supported in strip-only mode'), /^Some future construct .* \(Strata strips types and does not transform TypeScript\)$/);
});
