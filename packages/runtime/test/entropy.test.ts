import test from 'ava';
import { IsolatedRuntime, JsError } from '../src/index.js';
import { checkNoLeaks } from './helpers/leaks.js';
import { runtimeFor } from './helpers/runtime.js';

checkNoLeaks(test);

/**
 * A bootstrap that takes `__strataEntropy` the way WEB_POLYFILLS' crypto does: captured in its
 * closure, the global deleted. It draws 64 bytes at bootstrap time and leaves `drawBytes(n)` for
 * the tests (as an array, so it crosses).
 */
const TAKES_ENTROPY = `(() => {
  const entropy = globalThis.__strataEntropy;
  delete globalThis.__strataEntropy;
  globalThis.atBootstrap = Array.from(entropy(64));
  globalThis.drawBytes = (n) => {
    const bytes = entropy(n);
    return { isUint8Array: bytes instanceof Uint8Array, length: bytes.length, bytes: Array.from(bytes) };
  };
})();`;

const BAD_LENGTHS = ['-1', '65537', '1.5', 'NaN', 'Infinity', "'8'", 'undefined', '2 ** 32'];

/** The name and message of what `drawBytes(length)` throws in the guest, for every bad length. */
const badLengthErrors = `[${BAD_LENGTHS.map((length) => `(() => { try { drawBytes(${length}); return 'no error'; } catch (e) { return e.constructor === RangeError ? 'RangeError' : String(e); } })()`).join(', ')}]`;

const notAllZero = (bytes: number[]): boolean => bytes.some((b) => b !== 0);

test('a bootstrap that takes __strataEntropy gets random bytes; two runtimes differ', async (t) => {
  const first = await runtimeFor(t, { bootstrap: [TAKES_ENTROPY] });
  const second = await runtimeFor(t, { bootstrap: [TAKES_ENTROPY] });
  const a = (await first.eval('atBootstrap')) as number[];
  const b = (await second.eval('atBootstrap')) as number[];
  t.is(a.length, 64);
  t.true(notAllZero(a));
  t.notDeepEqual(a, b);
  const drawn = (await first.eval('drawBytes(32)')) as { isUint8Array: boolean; length: number; bytes: number[] };
  t.true(drawn.isUint8Array);
  t.is(drawn.length, 32);
  t.notDeepEqual(drawn.bytes, a.slice(0, 32));
  t.deepEqual(await first.eval('[drawBytes(0).length, drawBytes(65536).length]'), [0, 65_536]);
});

test('guest code never sees __strataEntropy, whether or not a bootstrap took it', async (t) => {
  for (const bootstrap of [[], [TAKES_ENTROPY], ['globalThis.untouched = true;']]) {
    const rt = await runtimeFor(t, { bootstrap });
    t.is(await rt.eval('typeof __strataEntropy'), 'undefined', `bootstrap ${JSON.stringify(bootstrap)}`);
    t.false(await rt.eval("'__strataEntropy' in globalThis || Object.getOwnPropertyNames(globalThis).includes('__strataEntropy')"));
  }
});

test('a bootstrap sees __strataEntropy as a function before it runs', async (t) => {
  const rt = await runtimeFor(t, { bootstrap: ['globalThis.seen = typeof __strataEntropy;'] });
  t.is(await rt.eval('seen'), 'function');
});

test('a length that is not an integer from 0 to 65536 is a RangeError in the guest', async (t) => {
  const rt = await runtimeFor(t, { bootstrap: [TAKES_ENTROPY] });
  t.deepEqual(
    await rt.eval(badLengthErrors),
    BAD_LENGTHS.map(() => 'RangeError'),
  );
  const error = await t.throwsAsync(rt.eval('drawBytes(65537)'), { instanceOf: JsError });
  t.is(error?.guestName, 'RangeError');
  t.regex(error?.message ?? '', /integer from 0 to 65536/);
});

test("the same in a worker under sandbox: 'require' (getrandom, no /dev/urandom)", async (t) => {
  await using first = await IsolatedRuntime.start({ sandbox: 'require', bootstrap: [TAKES_ENTROPY] });
  await using second = await IsolatedRuntime.start({ sandbox: 'require', bootstrap: [TAKES_ENTROPY] });
  t.is(first.sandbox, 'landlock+seccomp');
  const a = (await first.eval('atBootstrap')) as number[];
  const b = (await second.eval('atBootstrap')) as number[];
  t.is(a.length, 64);
  t.true(notAllZero(a));
  t.notDeepEqual(a, b);
  const drawn = (await first.eval('drawBytes(4096)')) as { isUint8Array: boolean; length: number; bytes: number[] };
  t.true(drawn.isUint8Array);
  t.is(drawn.length, 4096);
  t.true(notAllZero(drawn.bytes));
  t.is(await first.eval('typeof __strataEntropy'), 'undefined');
  t.deepEqual(
    await first.eval(badLengthErrors),
    BAD_LENGTHS.map(() => 'RangeError'),
  );

  await using untaken = await IsolatedRuntime.start({ sandbox: 'require' });
  t.is(await untaken.eval('typeof __strataEntropy'), 'undefined');
});
