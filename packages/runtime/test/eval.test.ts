import test from 'ava';
import { JsError, PromiseNeverSettled, RuntimeClosed, Runtime, StrataError, ValueNotTransferable } from '../src/index.js';
import { inMode, RUNTIME_MODES, runtimeFor } from './helpers/runtime.js';

for (const [mode, runtimeFor] of RUNTIME_MODES) {
  test(inMode(mode, 'eval returns the completion value'), async (t) => {
    const rt = await runtimeFor(t);
    t.is(await rt.eval('1 + 1'), 2);
    t.is(await rt.eval('let x = "a"; x + "b"'), 'ab');
    t.is(await rt.eval('undefined'), undefined);
  });

  test(inMode(mode, 'a returned promise is awaited'), async (t) => {
    const rt = await runtimeFor(t);
    t.is(await rt.eval('Promise.resolve(41).then((x) => x + 1)'), 42);
    t.is(await rt.eval('(async () => { await null; return "done" })()'), 'done');
  });

  test(inMode(mode, 'state persists between evals'), async (t) => {
    const rt = await runtimeFor(t);
    await rt.eval('globalThis.counter = 1');
    await rt.eval('counter++');
    t.is(await rt.eval('counter'), 2);
  });

  test(inMode(mode, 'a guest exception is a JsError with the guest name, message and stack; the runtime stays usable'), async (t) => {
    const rt = await runtimeFor(t);
    const error = await t.throwsAsync(rt.eval('function f() { throw new RangeError("out of range") }\nf()', { filename: 'guest.js' }), { instanceOf: JsError });
    t.is(error?.guestName, 'RangeError');
    t.is(error?.code, 'ERR_STRATA_JS');
    t.is(error?.name, 'JsError');
    t.true(error instanceof StrataError);
    t.regex(error?.message ?? '', /RangeError: out of range/);
    t.regex(error?.guestStack ?? '', /guest\.js:1/);
    t.is(await rt.eval('1'), 1);
  });

  test(inMode(mode, 'a rejected promise is a JsError'), async (t) => {
    const rt = await runtimeFor(t);
    const error = await t.throwsAsync(rt.eval('Promise.reject(new TypeError("nope"))'), { instanceOf: JsError });
    t.is(error?.guestName, 'TypeError');
    t.regex(error?.message ?? '', /nope/);
  });

  test(inMode(mode, 'non-Error throws are reported'), async (t) => {
    const rt = await runtimeFor(t);
    const error = await t.throwsAsync(rt.eval('throw "plain string"'), { instanceOf: JsError });
    t.regex(error?.message ?? '', /plain string/);
    const rejected = await t.throwsAsync(rt.eval('Promise.reject(7)'), { instanceOf: JsError });
    t.regex(rejected?.message ?? '', /7/);
  });

  test(inMode(mode, 'a syntax error is a JsError named SyntaxError'), async (t) => {
    const rt = await runtimeFor(t);
    const error = await t.throwsAsync(rt.eval('let let = 1'), { instanceOf: JsError });
    t.is(error?.guestName, 'SyntaxError');
  });

  test(inMode(mode, "a syntax error names its place, and a guest's stack starts at its own code"), async (t) => {
    const rt = await runtimeFor(t);
    const syntax = await t.throwsAsync(rt.eval('let a = 1;\nlet = ;', { filename: 'cell.js' }), { instanceOf: JsError });
    t.is(syntax?.guestName, 'SyntaxError');
    t.regex(syntax?.message ?? '', /Unexpected token.* \[cell\.js:2:7\]$/);
    // The eval and the check of its completion are one native call: no frame of Strata's own.
    t.is(await rt.eval('new Error("here").stack', { filename: 'cell.js' }), 'Error: here\n    at cell.js:1:1');
    const thrown = await t.throwsAsync(rt.eval('function f() { throw new Error("boom") }\nf()', { filename: 'cell.js' }), { instanceOf: JsError });
    const guestFrames = (thrown?.guestStack ?? '').split('\n').slice(1, 3);
    t.deepEqual(guestFrames, ['    at f (cell.js:1:22)', '    at cell.js:2:1']);
  });

  test(inMode(mode, 'the microtasks a script queued run before its completion is checked: none can change it between the check and the copy'), async (t) => {
    const rt = await runtimeFor(t);
    t.deepEqual(await rt.eval('const o = { v: 1 }; Promise.resolve().then(() => { o.v = 2 }); o'), { v: 2 });
    await t.throwsAsync(rt.eval('const p = { v: 1 }; Promise.resolve().then(() => { p.v = new (class Point {})() }); p'), {
      instanceOf: ValueNotTransferable,
      message: '$.v is an instance of Point, not a plain object; it cannot cross to the host',
    });
    await t.throwsAsync(
      rt.eval('const q = { v: 1 }; Promise.resolve().then(() => Object.defineProperty(q, "v", { get() { return 2 }, enumerable: true })); q'),
      {
        instanceOf: ValueNotTransferable,
        message: /^\$\.v is an accessor/,
      },
    );
  });

  test(inMode(mode, 'what only the copy refuses is ValueNotTransferable; the same words thrown by the guest stay a JsError'), async (t) => {
    const rt = await runtimeFor(t);
    // The walk accepts a Uint8Array; the copy refuses one whose buffer was detached.
    await t.throwsAsync(rt.eval('const u = new Uint8Array(8); u.buffer.transfer(); ({ u })'), {
      instanceOf: ValueNotTransferable,
      message: /^the value cannot cross: .*detached/,
    });
    const thrown = await t.throwsAsync(rt.eval('throw new TypeError("An ArrayBuffer is detached and could not be cloned.")'), { instanceOf: JsError });
    t.is(thrown?.guestName, 'TypeError');
    t.is(await rt.eval('u.length'), 0, 'the runtime goes on');
  });

  test(inMode(mode, 'a promise that can never settle is reported instead of hanging'), async (t) => {
    const rt = await runtimeFor(t);
    await t.throwsAsync(rt.eval('new Promise(() => {})'), { instanceOf: PromiseNeverSettled, code: 'ERR_STRATA_NEVER_SETTLED' } as never);
    t.is(await rt.eval('3'), 3);
  });

  test(inMode(mode, 'commands run one at a time, in order'), async (t) => {
    const rt = await runtimeFor(t);
    rt.bindFunction('wait', () => new Promise((resolve) => setTimeout(resolve, 20)));
    const order: number[] = [];
    await Promise.all([rt.eval('wait().then(() => 1)').then((v) => order.push(v as number)), rt.eval('2').then((v) => order.push(v as number))]);
    t.deepEqual(order, [1, 2]);
  });

  test(inMode(mode, 'eval refuses code that is not a string'), async (t) => {
    const rt = await runtimeFor(t);
    await t.throwsAsync(rt.eval(42 as never), { message: /code must be a string/ });
  });

  test(inMode(mode, 'the guest global scope holds no host capability'), async (t) => {
    const rt = await runtimeFor(t);
    const found = await rt.eval(
      `['process', 'require', 'fetch', 'module', 'Buffer', 'setTimeout', 'window', 'document', 'WebAssembly' && 'Deno'].filter((k) => k in globalThis)`,
    );
    t.deepEqual(found, []);
  });
}

test('close is idempotent and later calls fail with RuntimeClosed', async (t) => {
  const rt = await Runtime.start();
  await rt.close();
  await rt.close();
  t.true(rt.closed);
  const error = await t.throwsAsync(rt.eval('1'), { instanceOf: RuntimeClosed });
  t.is(error?.code, 'ERR_STRATA_CLOSED');
  t.throws(() => rt.bindFunction('f', () => 1), { instanceOf: RuntimeClosed });
});

test('await using closes the runtime at the end of the scope', async (t) => {
  let escaped: Runtime | undefined;
  {
    await using rt = await Runtime.start();
    escaped = rt;
    t.is(await rt.eval('1'), 1);
  }
  t.true(escaped.closed);
});

test('a bootstrap script runs before guest code; a throwing one fails create', async (t) => {
  const rt = await runtimeFor(t, { bootstrap: ['globalThis.greeting = "hi"', 'globalThis.twice = greeting + greeting'] });
  t.is(await rt.eval('twice'), 'hihi');
  await t.throwsAsync(Runtime.start({ bootstrap: 'throw new Error("bad bootstrap")' }), { instanceOf: JsError, message: /bad bootstrap/ });
});
