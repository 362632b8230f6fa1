import test from 'ava';
import { HeapLimitExceeded, ResultTooLarge, RuntimeTimeout } from '../src/index.js';
import { TRUNCATED_MARKER } from '../src/console-capture.js';
import { inMode, RUNTIME_MODES } from './helpers/runtime.js';

for (const [mode, runtimeFor] of RUNTIME_MODES) {
  test(inMode(mode, 'timeout stops a busy loop with RuntimeTimeout; the runtime stays usable'), async (t) => {
    const rt = await runtimeFor(t, { timeout: 100 });
    const error = await t.throwsAsync(rt.eval('for (;;) {}'), { instanceOf: RuntimeTimeout });
    t.is(error?.code, 'ERR_STRATA_TIMEOUT');
    t.is(await rt.eval('"alive"'), 'alive');
  });

  test(inMode(mode, 'timeout also covers microtasks and promise chains'), async (t) => {
    const rt = await runtimeFor(t, { timeout: 100 });
    await t.throwsAsync(rt.eval('Promise.resolve().then(() => { for (;;) {} })'), { instanceOf: RuntimeTimeout });
    await t.throwsAsync(rt.eval('(async () => { for (;;) await null })()'), { instanceOf: RuntimeTimeout });
    t.is(await rt.eval('1'), 1);
  });

  test(inMode(mode, 'maxHeapSize: a runaway heap ends in HeapLimitExceeded and closes the runtime'), async (t) => {
    const rt = await runtimeFor(t, { maxHeapSize: 16 * 1024 * 1024, timeout: 20_000 });
    const error = await t.throwsAsync(rt.eval('const a = []; for (;;) a.push(new Array(1e5).fill(1))'), { instanceOf: HeapLimitExceeded });
    t.is(error?.code, 'ERR_STRATA_HEAP_LIMIT');
    t.true(rt.closed);
    await t.throwsAsync(rt.eval('1'), { instanceOf: HeapLimitExceeded });
  });

  test(inMode(mode, 'wrapped buffer constructors still behave like the built-ins'), async (t) => {
    const rt = await runtimeFor(t);
    const out = await rt.eval(`[
      new Uint8Array(4) instanceof Uint8Array,
      new ArrayBuffer(4) instanceof ArrayBuffer,
      Uint8Array.prototype.constructor === Uint8Array,
      ArrayBuffer.isView(new DataView(new ArrayBuffer(1))),
      Uint8Array.from([1, 2]).length,
      new Uint8Array([1, 2, 3]).slice(1).length,
      new Uint8Array(new ArrayBuffer(8), 2, 2).length,
      Uint8Array.name,
      new ArrayBuffer(8, { maxByteLength: 16 }).resizable,
    ]`);
    t.deepEqual(out, [true, true, true, true, 2, 2, 2, 'Uint8Array', true]);
  });

  test(inMode(mode, 'SharedArrayBuffer, Atomics, WeakRef and FinalizationRegistry are absent by default'), async (t) => {
    const rt = await runtimeFor(t);
    t.deepEqual(await rt.eval('["SharedArrayBuffer", "Atomics", "WeakRef", "FinalizationRegistry"].map((k) => typeof globalThis[k])'), [
      'undefined',
      'undefined',
      'undefined',
      'undefined',
    ]);
  });

  test(inMode(mode, 'allowGlobals keeps the ones asked for'), async (t) => {
    const rt = await runtimeFor(t, { allowGlobals: ['WeakRef', 'SharedArrayBuffer'] });
    t.deepEqual(await rt.eval('[typeof WeakRef, typeof SharedArrayBuffer, typeof Atomics]'), ['function', 'function', 'undefined']);
  });

  test(inMode(mode, 'maxResultBytes: a result larger than the cap is ResultTooLarge'), async (t) => {
    const rt = await runtimeFor(t, { maxResultBytes: 1024 });
    await t.throwsAsync(rt.eval('"x".repeat(2000)'), { instanceOf: ResultTooLarge });
    await t.throwsAsync(rt.eval('Array.from({ length: 600 }, (_, i) => i)'), { instanceOf: ResultTooLarge });
    t.is(((await rt.eval('"x".repeat(900)')) as string).length, 900);
    const result = await rt.execute('new Array(5000).fill(1)');
    t.is(result.status, 'error');
    t.is(result.errorType, 'ResultTooLarge');
  });

  test(inMode(mode, 'the default maxResultBytes is 1 MiB'), async (t) => {
    const rt = await runtimeFor(t);
    t.is(((await rt.eval('"x".repeat(1000 * 1000)')) as string).length, 1000 * 1000);
    await t.throwsAsync(rt.eval('"x".repeat(1100 * 1000)'), { instanceOf: ResultTooLarge });
  });

  test(inMode(mode, 'maxOutputBytes caps each stream and ends it with a [truncated] line'), async (t) => {
    const rt = await runtimeFor(t, { maxOutputBytes: 100 });
    const result = await rt.execute('for (let i = 0; i < 1000; i++) console.log("line " + i); console.error("err"); "done"');
    t.is(result.status, 'ok');
    t.is(result.result, 'done');
    t.true(result.truncated);
    t.true(result.stdout.endsWith(TRUNCATED_MARKER));
    t.true(Buffer.byteLength(result.stdout) <= 100 + TRUNCATED_MARKER.length + 1);
    t.is(result.stderr, 'err\n');
  });

  test(inMode(mode, 'the default maxOutputBytes is 64 KiB'), async (t) => {
    const rt = await runtimeFor(t);
    const result = await rt.execute('for (let i = 0; i < 10000; i++) console.log("0123456789")');
    t.true(result.truncated);
    t.true(Buffer.byteLength(result.stdout) <= 64 * 1024 + TRUNCATED_MARKER.length + 1);
  });
}

const bufferRoutes: [string, string][] = [
  ['new ArrayBuffer', 'new ArrayBuffer(LIMIT + 1)'],
  ['new Uint8Array(length)', 'new Uint8Array(LIMIT + 1)'],
  ['new Float64Array(length)', 'new Float64Array(LIMIT / 8 + 1)'],
  ['typed array from an array-like', 'new Uint8Array({ length: LIMIT + 1 })'],
  ['many live buffers', 'const keep = []; for (let i = 0; i < 100; i++) keep.push(new Uint8Array(LIMIT / 10))'],
  ['a resizable buffer grown with resize()', 'const b = new ArrayBuffer(16, { maxByteLength: LIMIT * 4 }); b.resize(LIMIT * 2)'],
  ['ArrayBuffer.prototype.transfer', 'const b = new ArrayBuffer(1024); b.transfer(LIMIT + 1)'],
  ['a subclass of Uint8Array', 'class Big extends Uint8Array {}; new Big(LIMIT + 1)'],
];
for (const [mode, runtimeFor] of RUNTIME_MODES) {
  for (const [label, code] of bufferRoutes) {
    test(inMode(mode, `maxBufferBytes: ${label} past the cap is a catchable RangeError`), async (t) => {
      const limit = 4 * 1024 * 1024;
      const rt = await runtimeFor(t, { maxBufferBytes: limit });
      const out = await rt.eval(`const LIMIT = ${limit}; try { ${code}; 'allocated' } catch (e) { e.name + ': ' + e.message }`);
      t.regex(out as string, /^RangeError: .*maxBufferBytes/);
      t.is(await rt.eval('new Uint8Array(1024).length'), 1024, 'small allocations still work');
    });
  }
}
