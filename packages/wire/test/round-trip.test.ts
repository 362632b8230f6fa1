import test from 'ava';
import { Buffer } from 'node:buffer';
import { decodeMessage, decodeValue, encodeFrame, encodeValue, type Message, type WireValue } from '../src/index.js';
import { wireEqual } from '../scripts/wire-equal.js';
import { hex, toHex } from './cbor-hex.js';

function roundTrip(value: unknown): WireValue {
  return decodeValue(encodeValue(value));
}

const SCALARS: [string, unknown][] = [
  ['null', null],
  ['undefined', undefined],
  ['true', true],
  ['false', false],
  ['0', 0],
  ['-0', -0],
  ['23 / 24 border', 23],
  ['24', 24],
  ['255', 255],
  ['256', 256],
  ['65535', 65535],
  ['65536', 65536],
  ['2^32 - 1', 2 ** 32 - 1],
  ['2^32', 2 ** 32],
  ['-1', -1],
  ['-24', -24],
  ['-25', -25],
  ['-2^32', -(2 ** 32)],
  ['-2^32 - 1', -(2 ** 32) - 1],
  ['2^53', 2 ** 53],
  ['-2^53', -(2 ** 53)],
  ['MAX_SAFE_INTEGER', Number.MAX_SAFE_INTEGER],
  ['MAX_VALUE', Number.MAX_VALUE],
  ['MIN_VALUE', Number.MIN_VALUE],
  ['1.5', 1.5],
  ['0.1', 0.1],
  ['NaN', NaN],
  ['Infinity', Infinity],
  ['-Infinity', -Infinity],
  ['0n', 0n],
  ['1n', 1n],
  ['-1n', -1n],
  ['2^63', 2n ** 63n],
  ['2^64 - 1', 2n ** 64n - 1n],
  ['2^64', 2n ** 64n],
  ['-2^64 + 1', -(2n ** 64n) + 1n],
  ['-2^64', -(2n ** 64n)],
  ['-2^64 - 1', -(2n ** 64n) - 1n],
  ['2^1000', 2n ** 1000n],
  ['-(3^500)', -(3n ** 500n)],
  ['empty string', ''],
  ['ascii', 'hello'],
  ['latin-1', 'héllo wörld'],
  ['BOM first', '\uFEFFkept'],
  ['NUL', 'a\u0000b'],
  ['astral', '😀 𝄞 \u{10FFFF}'],
  ['long ascii (TextDecoder path)', 'x'.repeat(1000)],
  ['long non-ascii', 'é'.repeat(1000)],
  ['string of 23 bytes', 'a'.repeat(23)],
  ['string of 24 bytes', 'a'.repeat(24)],
  ['string of 256 bytes', 'a'.repeat(256)],
  ['string of 65536 bytes', 'a'.repeat(65536)],
  ['empty bytes', new Uint8Array(0)],
  ['bytes', Uint8Array.from([0, 1, 2, 255])],
  ['bytes of 65536', new Uint8Array(65536).fill(7)],
  ['Date epoch', new Date(0)],
  ['Date with ms', new Date(1_700_000_000_123)],
  ['Date before 1970', new Date(-1)],
  ['Date max', new Date(8.64e15)],
  ['Date min', new Date(-8.64e15)],
  ['Date at 2^32 s', new Date(2 ** 32 * 1000)],
  ['invalid Date', new Date(NaN)],
];

for (const [name, value] of SCALARS) {
  test(`round-trips ${name}`, (t) => {
    const back = roundTrip(value);
    t.true(wireEqual(value, back), `${String(value)} came back as ${String(back)}`);
    t.is(typeof back, typeof value);
  });
}

test('numbers stay numbers and bigints stay bigints, whatever their size', (t) => {
  for (const n of [0, 1, 2 ** 53, 2 ** 60, -(2 ** 60), 1e300]) t.is(typeof roundTrip(n), 'number');
  for (const n of [0n, 1n, 2n ** 53n, 2n ** 64n, -5n]) t.is(typeof roundTrip(n), 'bigint');
  t.true(Object.is(roundTrip(-0), -0));
  t.true(Object.is((roundTrip({ x: -0 }) as { x: number }).x, -0));
  t.true(Object.is((roundTrip([1, -0, 2.5]) as number[])[1], -0));
});

test('integers use the shortest head, bigints the 8-byte head, big bigints a bignum', (t) => {
  t.is(toHex(encodeValue(0)), '00');
  t.is(toHex(encodeValue(24)), '1818');
  t.is(toHex(encodeValue(-(2 ** 32))), '3affffffff');
  t.is(toHex(encodeValue(2 ** 53)), 'fb4340000000000000');
  t.is(toHex(encodeValue(-0)), 'fb8000000000000000');
  t.is(toHex(encodeValue(1n)), '1b0000000000000001');
  t.is(toHex(encodeValue(-1n)), '3b0000000000000000');
  t.is(toHex(encodeValue(2n ** 64n)), 'c249010000000000000000');
  t.is(toHex(encodeValue(undefined)), 'f7');
});

test('Map, Set, Date and bytes use tags 259, 258, 1 and byte strings', (t) => {
  t.is(toHex(encodeValue(new Map())), 'd90103a0');
  t.is(toHex(encodeValue(new Set())), 'd9010280');
  t.is(toHex(encodeValue(new Date(0))), 'c11a00000000');
  t.is(toHex(encodeValue(new Date(NaN))), 'c1fb7ff8000000000000');
  t.is(toHex(encodeValue(Uint8Array.of(1, 2))), '420102');
  t.is(toHex(encodeValue({ a: 1 })), 'a1616101');
});

test('every millisecond of a Date survives, across the whole range', (t) => {
  const wrong: string[] = [];
  let state = 12345;
  const next = () => (state = (Math.imul(state, 1103515245) + 12345) >>> 0);
  for (let i = 0; i < 20000; i++) {
    const ms = Math.round(((next() / 2 ** 32) * 2 - 1) * 8.64e15) + (next() % 1000);
    const clamped = Math.max(-8.64e15, Math.min(8.64e15, ms));
    const back = roundTrip(new Date(clamped)) as Date;
    if (back.getTime() !== clamped) wrong.push(`${clamped} came back as ${back.getTime()}`);
  }
  for (let ms = 8.64e15 - 2000; ms <= 8.64e15; ms++) {
    if ((roundTrip(new Date(ms)) as Date).getTime() !== ms) wrong.push(`${ms}`);
  }
  t.deepEqual(wrong, [], 'dates that did not round-trip exactly');
});

test('containers round-trip with order, nesting and kinds kept', (t) => {
  const value = {
    list: [1, 'two', [3, [4, []]], {}, undefined, null],
    nested: { a: { b: { c: { d: 'deep' } } } },
    map: new Map<WireValue, WireValue>([
      [1, 'one'],
      ['1', 'string one'],
      [{ k: 1 }, new Set([1, 2])],
      [1n, new Date(5)],
      [undefined, null],
    ]),
    set: new Set<WireValue>([1, '1', 1n, null, undefined, { a: 1 }, [1]]),
    bytes: Uint8Array.of(9, 8, 7),
    empty: { list: [], object: {}, map: new Map(), set: new Set() },
    numericKeys: { 2: 'b', 1: 'a', x: 'c' },
  };
  const back = roundTrip(value);
  t.true(wireEqual(value, back));
  const map = (back as { map: Map<WireValue, WireValue> }).map;
  t.true(map instanceof Map);
  t.is(map.get(1), 'one');
  t.is(map.get('1'), 'string one');
});

test('a Map is not an object and an object is not a Map', (t) => {
  const back = roundTrip({ object: { a: 1 }, map: new Map([['a', 1]]) }) as Record<string, unknown>;
  t.false(back['object'] instanceof Map);
  t.is(Object.getPrototypeOf(back['object']), Object.prototype);
  t.true(back['map'] instanceof Map);
});

test('objects come back with Object.prototype, null-prototype ones included', (t) => {
  const bare = Object.create(null) as Record<string, unknown>;
  bare['a'] = 1;
  const back = roundTrip(bare) as Record<string, unknown>;
  t.is(Object.getPrototypeOf(back), Object.prototype);
  t.deepEqual(back, { a: 1 });
});

test('a "__proto__" key stays an own data property and never sets the prototype', (t) => {
  const value = JSON.parse('{"__proto__": {"polluted": true}, "x": 1}') as Record<string, unknown>;
  const back = roundTrip(value) as Record<string, unknown>;
  t.is(Object.getPrototypeOf(back), Object.prototype);
  t.true(Object.hasOwn(back, '__proto__'));
  t.deepEqual(Object.keys(back), ['__proto__', 'x']);
  t.deepEqual(Object.getOwnPropertyDescriptor(back, '__proto__')?.value, { polluted: true });
  t.is((back as { polluted?: unknown }).polluted, undefined);
  t.is(({} as { polluted?: unknown }).polluted, undefined);
});

test('keys that shadow Object.prototype members are plain own properties', (t) => {
  const back = roundTrip({ constructor: 'c', toString: 1, hasOwnProperty: null }) as Record<string, unknown>;
  t.is(back['constructor'], 'c');
  t.is(back['toString'], 1);
  t.true(Object.hasOwn(back, 'hasOwnProperty'));
});

test('a Buffer is sent as bytes and comes back as a plain Uint8Array', (t) => {
  const back = roundTrip(Buffer.from('hi'));
  t.is(Object.getPrototypeOf(back), Uint8Array.prototype);
  t.deepEqual(back, Uint8Array.of(0x68, 0x69));
});

test('decoded bytes are copies, not views of the input', (t) => {
  const body = encodeValue(Uint8Array.of(1, 2, 3));
  const back = decodeValue(body) as Uint8Array;
  body.fill(0);
  t.deepEqual(back, Uint8Array.of(1, 2, 3));
  t.not(back.buffer, body.buffer);
});

test('decoding accepts a Buffer or a view at an offset', (t) => {
  const body = encodeValue({ a: Uint8Array.of(5) });
  const padded = Buffer.concat([Buffer.from([1, 2, 3]), body]);
  const back = decodeValue(padded.subarray(3)) as { a: Uint8Array };
  t.is(Object.getPrototypeOf(back.a), Uint8Array.prototype);
  t.deepEqual(back.a, Uint8Array.of(5));
});

test('the same object twice (not a cycle) is sent twice', (t) => {
  const shared = { n: 1 };
  const back = roundTrip([shared, shared]) as { n: number }[];
  t.deepEqual(back, [{ n: 1 }, { n: 1 }]);
  t.not(back[0], back[1]);
});

test('large arrays and objects use 4-byte heads', (t) => {
  const array = Array.from({ length: 70000 }, (_, i) => i % 100);
  t.true(wireEqual(array, roundTrip(array)));
  const object = Object.fromEntries(Array.from({ length: 70000 }, (_, i) => [`k${i}`, i]));
  t.true(wireEqual(object, roundTrip(object)));
});

test('object keys repeated across many objects decode correctly (key cache)', (t) => {
  const rows = Array.from({ length: 5000 }, (_, i) => ({ id: i, name: `n${i}`, ['k'.repeat(1 + (i % 30))]: i, é: i }));
  t.true(wireEqual(rows, roundTrip(rows)));
  // keys that collide in a small hash table must still come back as themselves
  const many = Object.fromEntries(Array.from({ length: 20000 }, (_, i) => [i.toString(36), i]));
  t.true(wireEqual(many, roundTrip(many)));
});

test('every message type round-trips through a frame', (t) => {
  const messages: Message[] = [
    { type: 'hello', version: 1 },
    { type: 'configure', id: 1, options: { memoryLimitMb: 128, flags: ['a'] } },
    { type: 'eval', id: 2, code: '1 + 1' },
    { type: 'eval', id: 3, code: 'x', options: { timeoutMs: 50 } },
    { type: 'evalModule', id: 4, code: 'export default 1', specifier: 'file:///main.js' },
    { type: 'call', id: 5, name: 'fetch', args: [1, 'a', { b: new Date(1) }], sync: true },
    { type: 'callResult', id: 5, outcome: { ok: true, value: new Map([[1, 2]]) } },
    { type: 'callResult', id: 6, outcome: { ok: false, error: { class: 'HostFunctionError', message: 'no' } } },
    { type: 'result', id: 2, value: 2 },
    { type: 'result', id: 7, value: undefined },
    { type: 'error', id: 3, error: { class: 'JsError', message: 'boom', name: 'TypeError', stack: 'at x' } },
    { type: 'error', error: { class: 'WorkerCrashed', message: 'gone' } },
    { type: 'console', level: 'warn', text: 'careful', id: 2 },
    { type: 'console', level: 'log', text: '' },
    { type: 'report', report: { layer: 'seccomp', ok: true } },
    { type: 'command', id: 9, name: 'bind', params: { name: 'f' } },
  ];
  for (const message of messages) {
    const frame = encodeFrame(message);
    t.is(new DataView(frame.buffer, frame.byteOffset).getUint32(0), frame.length - 4);
    const back = decodeMessage(frame.subarray(4));
    t.true(wireEqual(message, back), `${message.type} changed`);
  }
});

test('hand-written canonical bytes decode to the expected values', (t) => {
  t.deepEqual(decodeValue(hex('83 01 62 6869 f6')), [1, 'hi', null]);
  t.deepEqual(decodeValue(hex('a2 61 61 01 61 62 f5')), { a: 1, b: true });
  t.deepEqual(decodeValue(hex('d9 0102 82 01 02')), new Set([1, 2]));
  t.deepEqual(decodeValue(hex('d9 0103 a1 01 02')), new Map([[1, 2]]));
  t.deepEqual(decodeValue(hex('c1 1a 00000001')), new Date(1000));
  t.is(decodeValue(hex('c3 48 ffffffffffffffff')), -(2n ** 64n));
  t.is(decodeValue(hex('fb 3ff8000000000000')), 1.5);
  // a float that is a whole number is still just a number
  t.is(decodeValue(hex('fb 3ff0000000000000')), 1);
});
