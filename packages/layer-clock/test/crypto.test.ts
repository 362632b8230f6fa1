import test from 'ava';
import { DEFAULT_CLOCK_SEED } from '../src/constants.js';
import { clockBootstrap } from '../src/index.js';
import clockLayer from '../src/layer.js';
import { createSeededCrypto } from '../src/bootstrap/random.js';
import { createGuest, freshGuestEvaluator, type GuestOptions } from './helpers/guest.js';
import type { LayerCapability, SelfTestContext } from '@strata/runtime/layers';
import { CLOCK_PROVIDES } from '../src/constants.js';

/**
 * A stand-in for WEB_POLYFILLS' `crypto`, made by a bootstrap that runs before the clock's:
 * own writable functions that are not seeded (each call gives other bytes).
 */
const FAKE_CRYPTO = `(() => {
  let counter = 0;
  globalThis.crypto = {
    getRandomValues(array) { const bytes = new Uint8Array(array.buffer, array.byteOffset, array.byteLength); for (let i = 0; i < bytes.length; i++) bytes[i] = (counter++ * 37 + Date.now()) & 0xff; return array; },
    randomUUID() { return 'not-seeded-' + counter++; },
  };
})();`;

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

interface Draws {
  bytes: number[];
  words: number[];
  uuids: string[];
  random: number[];
}

const DRAW = `({
  bytes: Array.from(crypto.getRandomValues(new Uint8Array(37))),
  words: Array.from(crypto.getRandomValues(new Uint32Array(3))),
  uuids: [crypto.randomUUID(), crypto.randomUUID()],
  random: [Math.random(), Math.random(), Math.random()],
})`;

function draw(setup: GuestOptions, code = DRAW): Draws {
  const guest = createGuest(setup);
  try {
    return guest.value<Draws>(code);
  } finally {
    guest.dispose();
  }
}

test('the same seed gives the same bytes and UUIDs in fresh isolates; another seed gives others', (t) => {
  const first = draw({ before: [FAKE_CRYPTO], clock: { seed: 42 } });
  const second = draw({ before: [FAKE_CRYPTO], clock: { seed: 42 } });
  const other = draw({ before: [FAKE_CRYPTO], clock: { seed: 43 } });
  t.deepEqual(first, second);
  t.notDeepEqual(first.bytes, other.bytes);
  t.notDeepEqual(first.uuids, other.uuids);
  t.true(first.bytes.some((b) => b !== 0));
  for (const uuid of [...first.uuids, ...other.uuids]) t.regex(uuid, UUID_V4);
  t.not(first.uuids[0], first.uuids[1]);
});

test("Math.random's sequence does not change with a crypto in the context", (t) => {
  const withCrypto = draw({ before: [FAKE_CRYPTO], clock: { seed: 7 } }, 'Array.from({ length: 20 }, () => Math.random())');
  const without = draw({ clock: { seed: 7 } }, 'Array.from({ length: 20 }, () => Math.random())');
  t.deepEqual(withCrypto, without);
  // Nor does drawing from crypto move Math.random along.
  const interleaved = draw(
    { before: [FAKE_CRYPTO], clock: { seed: 7 } },
    'Array.from({ length: 20 }, () => (crypto.getRandomValues(new Uint8Array(8)), crypto.randomUUID(), Math.random()))',
  );
  t.deepEqual(interleaved, without);
});

test('the guest gives what the host computes for the seed (createSeededCrypto)', (t) => {
  for (const seed of [0, 1, 42, 0xffff_ffff]) {
    const host = createSeededCrypto(seed);
    const bytes: number[] = [];
    host.fill(bytes, 37);
    const guest = draw({ before: [FAKE_CRYPTO], clock: { seed } }, 'Array.from(crypto.getRandomValues(new Uint8Array(37)))');
    t.deepEqual(guest as unknown as number[], bytes, `seed ${seed}`);
  }
});

test('the replacements keep the originals attributes and look like built-ins', (t) => {
  const guest = createGuest({ before: [FAKE_CRYPTO] });
  try {
    const shape = guest.value(`['getRandomValues', 'randomUUID'].map((key) => {
      const d = Object.getOwnPropertyDescriptor(crypto, key);
      return [key, d.writable, d.enumerable, d.configurable, d.value.name, d.value.length, String(d.value), 'prototype' in d.value];
    })`);
    t.deepEqual(shape, [
      ['getRandomValues', true, true, true, 'getRandomValues', 1, 'function () { [native code] }', false],
      ['randomUUID', true, true, true, 'randomUUID', 0, 'function () { [native code] }', false],
    ]);
  } finally {
    guest.dispose();
  }
});

test('getRandomValues: must allow every integer typed array, views included; must deny the rest', (t) => {
  const guest = createGuest({ before: [FAKE_CRYPTO] });
  try {
    const allowed = guest.value<
      string[]
    >(`['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array', 'BigInt64Array', 'BigUint64Array']
      .map((name) => { const a = new globalThis[name](4); return crypto.getRandomValues(a) === a ? name : name + ' not returned'; })`);
    t.is(allowed.length, 9);
    t.true(allowed.every((entry) => !entry.endsWith('not returned')));
    // A view fills exactly its own bytes.
    t.deepEqual(
      guest.value(
        `(() => { const b = new Uint8Array(12); crypto.getRandomValues(new Uint8Array(b.buffer, 4, 4)); return [b.slice(0, 4).every((x) => x === 0), b.slice(8).every((x) => x === 0), b.slice(4, 8).some((x) => x !== 0)]; })()`,
      ),
      [true, true, true],
    );
    t.is(guest.value('crypto.getRandomValues(new Uint8Array(65536)).length'), 65_536);
    const denied = guest.value<string[]>(`[
      () => crypto.getRandomValues(new Float64Array(2)),
      () => crypto.getRandomValues(new Float32Array(2)),
      () => crypto.getRandomValues(new DataView(new ArrayBuffer(4))),
      () => crypto.getRandomValues([1, 2]),
      () => crypto.getRandomValues(new ArrayBuffer(4)),
      () => crypto.getRandomValues(),
      () => crypto.getRandomValues(new Uint8Array(65537)),
      () => crypto.getRandomValues(new Uint32Array(16385)),
    ].map((f) => { try { f(); return 'allowed'; } catch (e) { return e.constructor.name + ': ' + e.message; } })`);
    t.deepEqual(
      denied.map((entry) => entry.split(':')[0]),
      ['TypeError', 'TypeError', 'TypeError', 'TypeError', 'TypeError', 'TypeError', 'RangeError', 'RangeError'],
    );
    t.regex(denied[0]!, /integer typed array, not a Float64Array/);
    t.regex(denied[6]!, /at most 65536 bytes, not 65537/);
  } finally {
    guest.dispose();
  }
});

test('with DOMException, the refusals are TypeMismatchError and QuotaExceededError', (t) => {
  const DOM_EXCEPTION = `globalThis.DOMException = class DOMException extends Error { constructor(message, name) { super(message); this.name = name; } };`;
  const guest = createGuest({ before: [DOM_EXCEPTION, FAKE_CRYPTO] });
  try {
    t.deepEqual(
      guest.value(`[
        () => crypto.getRandomValues(new Float64Array(2)),
        () => crypto.getRandomValues(new DataView(new ArrayBuffer(4))),
        () => crypto.getRandomValues(new Uint8Array(65537)),
        () => crypto.getRandomValues({}),
      ].map((f) => { try { f(); return 'allowed'; } catch (e) { return (e instanceof DOMException ? 'DOMException ' : '') + e.name; } })`),
      ['DOMException TypeMismatchError', 'DOMException TypeMismatchError', 'DOMException QuotaExceededError', 'TypeError'],
    );
  } finally {
    guest.dispose();
  }
});

test('guest patches after the bootstrap do not change what the replacements give', (t) => {
  const clean = draw({ before: [FAKE_CRYPTO], clock: { seed: 3 } }, 'Array.from(crypto.getRandomValues(new Uint8Array(16))).concat(crypto.randomUUID())');
  const patched = draw(
    { before: [FAKE_CRYPTO], clock: { seed: 3 } },
    `Object.defineProperty(Object.getPrototypeOf(Uint8Array.prototype), 'byteLength', { get() { return 1; } });
     Object.defineProperty(Object.getPrototypeOf(Uint8Array.prototype), 'length', { get() { return 1; } });
     Number.prototype.toString = () => 'x';
     const bytes = crypto.getRandomValues(new Uint8Array(16));
     const out = []; for (let i = 0; i < 16; i++) out.push(bytes[i]);
     out.concat(crypto.randomUUID())`,
  );
  t.deepEqual(patched, clean);
});

test('without a crypto, the layer makes none', (t) => {
  t.is(draw({ clock: { seed: 1 } }, 'typeof crypto') as unknown as string, 'undefined');
  t.false(clockBootstrap({ seed: 1 }).includes('globalThis.crypto ='));
});

test('on top of WEB_POLYFILLS (where its crypto exists), crypto is seeded too', (t) => {
  const has = draw({ polyfills: true, clock: false }, "typeof crypto === 'object' && typeof crypto.getRandomValues === 'function'") as unknown as boolean;
  if (!has) {
    t.pass('this WEB_POLYFILLS has no crypto');
    return;
  }
  const code = 'JSON.stringify([Array.from(crypto.getRandomValues(new Uint8Array(16))), crypto.randomUUID()])';
  const a = draw({ polyfills: true, clock: { seed: 11 } }, code);
  const b = draw({ polyfills: true, clock: { seed: 11 } }, code);
  t.deepEqual(a, b);
  const host = createSeededCrypto(11);
  const bytes: number[] = [];
  host.fill(bytes, 16);
  t.is(a as unknown as string, JSON.stringify([bytes, host.uuid()]));
});

const FULL: LayerCapability = { available: true, provides: [...CLOCK_PROVIDES], missing: [] };

async function selfTest(seed: number, setup: GuestOptions): Promise<Record<string, unknown>> {
  const report: Record<string, unknown> = {};
  const context: SelfTestContext = {
    platform: 'linux',
    options: {},
    capability: FULL,
    evalInGuest: freshGuestEvaluator(setup),
    report: (detail) => void Object.assign(report, detail),
  };
  await clockLayer({ seed }).selfTest(context);
  return report;
}

test('selfTest checks crypto where the guest has it, and reports whether it did', async (t) => {
  t.is((await selfTest(DEFAULT_CLOCK_SEED, { clock: {} }))['crypto'], 'absent');
  t.is((await selfTest(9, { before: [FAKE_CRYPTO], clock: { seed: 9 } }))['crypto'], 'seeded');
  // A crypto the clock did not seed (it came after the clock's bootstrap) is a failure naming the route.
  const error = await t.throwsAsync(selfTest(9, { clock: { seed: 9 }, after: [FAKE_CRYPTO] }));
  t.regex(error?.message ?? '', /crypto\.getRandomValues\(\) gave/);
  t.regex(error?.message ?? '', /crypto\.randomUUID\(\) gave "not-seeded/);
});
