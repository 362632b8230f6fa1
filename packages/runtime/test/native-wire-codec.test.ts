// The worker's native wire codec (native/wire-codec.c) against @strata/wire's: what it writes the
// strict decoder reads back as the same value; what it reads is what the strict decoder builds;
// what it does not handle it hands back (undefined), never half-encoded, never accepted wrongly.
import { readFileSync } from 'node:fs';
import test from 'ava';
import { DEFAULT_LIMITS, FrameReader, decodeValue, encodeFrame, encodeValue, type WireValue } from '@strata/wire';
import { FrameMutator } from '@strata/wire/testing/frame-mutator';
import { Prng } from '@strata/wire/testing/prng';
import { ValueGenerator } from '@strata/wire/testing/value-generator';
import { wireEqual } from '@strata/wire/testing/wire-equal';
import { IsolatedRuntime } from '../src/index.js';
import { loadWireCodec } from '../src/native/native-paths.js';

const codec = loadWireCodec();
const { maxDepth, maxNodes, maxStringBytes, maxFrameBytes } = DEFAULT_LIMITS;
const encode = (value: unknown, limits = { maxDepth, maxNodes, maxStringBytes, maxFrameBytes }) =>
  codec.encodeFrame(value, limits.maxDepth, limits.maxNodes, limits.maxStringBytes, limits.maxFrameBytes);
const decode = (body: Uint8Array, limits = { maxDepth, maxNodes, maxStringBytes }) =>
  codec.decodeBody(body, limits.maxDepth, limits.maxNodes, limits.maxStringBytes);
const bodyOf = (frame: Uint8Array) => frame.subarray(4);

/** Whether the native codec must handle `value` itself: no tags, no "__proto__" key, well-formed strings. */
function plain(value: unknown): boolean {
  switch (typeof value) {
    case 'string':
      return value.isWellFormed();
    case 'bigint':
      return false;
    case 'object':
      if (value === null || value instanceof Uint8Array) return true;
      if (Array.isArray(value)) return value.every(plain);
      if (Object.getPrototypeOf(value) !== Object.prototype) return false;
      return Object.keys(value).every((key) => key !== '__proto__' && plain((value as Record<string, unknown>)[key]));
    default:
      return true;
  }
}

test('every value it encodes decodes back, through the strict decoder, to the same value; plain values it always encodes', (t) => {
  const generator = new ValueGenerator(new Prng(0x51e7), 5, 7);
  let encoded = 0;
  let handedBack = 0;
  for (let i = 0; i < 20_000; i++) {
    const value = i % 2 === 0 ? generator.value() : generator.message();
    const frame = encode(value);
    if (frame === undefined) {
      handedBack++;
      t.false(plain(value), `a plain value was handed back: ${String(i)}`);
      continue;
    }
    encoded++;
    const length = frame.readUInt32BE(0);
    t.is(length, frame.length - 4);
    if (!wireEqual(decodeValue(bodyOf(frame)), value)) t.fail(`value ${i} did not round-trip`);
  }
  t.log(`${encoded} encoded natively, ${handedBack} handed to the JavaScript encoder`);
  t.true(encoded > 10_000 && handedBack > 1_000);
});

test('every frame the JavaScript encoder writes it decodes to what the strict decoder builds, or hands back', (t) => {
  const generator = new ValueGenerator(new Prng(0xdec0), 5, 7);
  let decoded = 0;
  for (let i = 0; i < 20_000; i++) {
    const value = i % 2 === 0 ? generator.value() : generator.message();
    const body = encodeValue(value);
    const fast = decode(body);
    if (fast === undefined) {
      // (a body that is `undefined` itself reads the same either way)
      if (value !== undefined) t.false(plain(value), `a plain frame was handed back: ${String(i)}`);
      continue;
    }
    decoded++;
    if (!wireEqual(fast, decodeValue(body))) t.fail(`frame ${i} decoded differently`);
  }
  t.true(decoded > 10_000);
});

test('mutated frames: it never accepts a body the strict decoder refuses, nor reads one differently', (t) => {
  const rng = new Prng(0x6d75);
  const generator = new ValueGenerator(rng, 4, 6);
  const mutator = new FrameMutator(rng);
  let accepted = 0;
  let previous = encodeFrame(generator.message());
  for (let i = 0; i < 30_000; i++) {
    const frame = encodeFrame(generator.message());
    const body = bodyOf(mutator.mutate(frame, previous));
    previous = frame;
    const fast = decode(body);
    if (fast === undefined) continue;
    accepted++;
    let strict: WireValue;
    try {
      strict = decodeValue(body);
    } catch (error) {
      t.fail(`the native decoder accepted a body the strict decoder refuses (${String(error)}): ${Buffer.from(body).toString('hex')}`);
      continue;
    }
    if (!wireEqual(fast, strict)) t.fail(`mutated body decoded differently: ${Buffer.from(body).toString('hex')}`);
  }
  t.log(`${accepted} of 30000 mutated bodies decoded natively`);
  t.true(accepted > 100);
});

test('what the JavaScript encoder refuses, or writes with tags, it hands back', (t) => {
  class Point {
    x = 1;
  }
  const hidden = Object.defineProperty({}, 'secret', { value: 1, enumerable: false });
  const cases: [string, unknown][] = [
    ['a Date', { when: new Date(0) }],
    ['a bigint', [1n]],
    ['a Map', new Map([[1, 2]])],
    ['a Set', { s: new Set([1]) }],
    ['a lone surrogate', { text: 'a\ud800b' }],
    ['a lone surrogate as a key', { 'a\udc00': 1 }],
    ['an array hole', [1, , 3]],
    ['a class instance', { p: new Point() }],
    ['a symbol key', { [Symbol('k')]: 1 }],
    ['a non-enumerable property', hidden],
    ['a function', { f: () => 1 }],
    ['a symbol', Symbol('s')],
    ['a typed array other than Uint8Array', new Uint16Array(2)],
    ['an ArrayBuffer', new ArrayBuffer(2)],
    ['a Uint8Array with an own property', Object.defineProperty(new Uint8Array(2), 'constructor', { value: Object, enumerable: true })],
    ['an array with an own constructor', Object.assign([1], { constructor: 1 })],
    ['an array subclass', new (class extends Array {})()],
    [
      'a cycle',
      (() => {
        const o: Record<string, unknown> = {};
        o['self'] = o;
        return o;
      })(),
    ],
  ];
  for (const [what, value] of cases) t.is(encode(value), undefined, what);
  // a null prototype is a plain object, as for the JavaScript encoder
  t.truthy(encode(Object.assign(Object.create(null), { a: 1 })));
});

test('limits: past one, it hands the value back (the JavaScript codec refuses it with its own error)', (t) => {
  const limits = { maxDepth: 3, maxNodes: 10, maxStringBytes: 8, maxFrameBytes: 64 };
  t.truthy(encode([[['x']]], limits));
  t.is(encode([[[['x']]]], limits), undefined, 'depth');
  t.truthy(encode([1, 2, 3, 4, 5, 6, 7, 8, 9], limits));
  t.is(encode([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], limits), undefined, 'nodes');
  t.is(encode({ a: 1, b: 2, c: 3, d: 4, e: 5 }, limits), undefined, 'keys count as nodes');
  t.truthy(encode('12345678', limits));
  t.is(encode('123456789', limits), undefined, 'string bytes');
  t.is(encode('ééééé', limits), undefined, 'string bytes are UTF-8 bytes');
  t.is(encode(new Uint8Array(9), limits), undefined, 'byte string');
  t.is(encode(['1234567', '1234567', '1234567', '1234567', '1234567', '1234567', '1234567', '1234567'], limits), undefined, 'frame bytes');

  const deep = bodyOf(encodeFrame({ type: 'result', id: 1, value: [[[[1]]]] }));
  t.truthy(decode(deep));
  t.is(decode(deep, { maxDepth: 4, maxNodes: 100, maxStringBytes: 100 }), undefined, 'decode depth');
  t.is(decode(deep, { maxDepth: 64, maxNodes: 8, maxStringBytes: 100 }), undefined, 'decode nodes');
  t.is(
    decode(bodyOf(encodeFrame({ type: 'console', level: 'log', text: 'long text' } as never)), { maxDepth: 64, maxNodes: 100, maxStringBytes: 4 }),
    undefined,
  );
});

test('decoding: tags, "__proto__", duplicates, trailing bytes and malformed UTF-8 are handed back; "__proto__" stays a key through the strict decoder', (t) => {
  const hex = (s: string) => Buffer.from(s.replace(/ /g, ''), 'hex');
  const handedBack: [string, string][] = [
    ['c1 00', 'a Date'],
    ['a1 69 5f5f70726f746f5f5f 01', '"__proto__"'],
    ['a2 6161 01 6161 02', 'a duplicate key'],
    ['01 02', 'trailing bytes'],
    ['62 c0 80', 'an overlong UTF-8 form'],
    ['63 ed a0 80', 'a UTF-8 surrogate'],
    ['18 05', 'a head not in its shortest form'],
    ['1b 0000000000000001', 'a 64-bit integer (a bigint)'],
    ['9f ff', 'an indefinite length'],
    ['f9 3c00', 'a float16'],
    ['a1 01 02', 'a key that is not text'],
    ['9a ffffffff', 'a count beyond the body'],
    ['', 'an empty body'],
  ];
  for (const [bytes, what] of handedBack) t.is(decode(hex(bytes)), undefined, what);
  t.deepEqual(decode(hex('a2 6161 82 01 f6 6162 43 010203')), { a: [1, null], b: new Uint8Array([1, 2, 3]) });
  const decoded = decode(hex('83 fb 8000000000000000 fb 7ff8000000000000 f7')) as unknown[];
  t.true(Object.is(decoded[0], -0) && Number.isNaN(decoded[1]) && decoded[2] === undefined && decoded.length === 3);
  // a byte string decodes to a plain Uint8Array of its own, as from the strict decoder
  const bytes = decode(hex('43 010203')) as Uint8Array;
  t.is(Object.getPrototypeOf(bytes), Uint8Array.prototype);
  t.is(bytes.buffer.byteLength, 3);
});

test("decodeFrames: whole frames in one call; a chunk that ends inside a frame, an oversized frame or a body it hands back is the reader's", (t) => {
  const one = encodeFrame({ type: 'eval', id: 1, code: '1+1' });
  const two = encodeFrame({ type: 'result', id: 2, value: [1, 'x', { y: null }] });
  const tagged = encodeFrame({ type: 'result', id: 3, value: new Date(0) });
  const chunk = Buffer.concat([one, two, Buffer.alloc(16)]);
  const frames = (bytes: Uint8Array, length = bytes.length, maxFrameBytes = maxFrameBytes_) =>
    codec.decodeFrames(bytes, length, maxFrameBytes, maxDepth, maxNodes, maxStringBytes);
  const maxFrameBytes_ = 1024;
  t.deepEqual(frames(chunk, one.length + two.length), [
    { type: 'eval', id: 1, code: '1+1' },
    { type: 'result', id: 2, value: [1, 'x', { y: null }] },
  ]);
  t.is(frames(chunk, one.length + 3), undefined, 'ends inside a header');
  t.is(frames(chunk, one.length + 6), undefined, 'ends inside a body');
  t.is(frames(Buffer.concat([one, tagged])), undefined, 'a body it hands back');
  t.is(frames(two, two.length, two.length - 5), undefined, 'over maxFrameBytes');
  t.is(frames(Buffer.from([0, 0, 0, 0])), undefined, 'an empty body');
  t.is(frames(one, one.length + 1), undefined, 'a length beyond the chunk');
});

test('bad arguments throw; the codec keeps working after them', (t) => {
  t.throws(() => codec.decodeBody('x' as never, 1, 1, 1), { code: 'ERR_STRATA_WIRE_ARGUMENTS' });
  t.throws(() => (codec.encodeFrame as (...args: unknown[]) => unknown)({}), { code: 'ERR_STRATA_WIRE_ARGUMENTS' });
  t.throws(() => codec.encodeFrame({}, 0, 1, 1, 1), { code: 'ERR_STRATA_WIRE_LIMIT' });
  t.throws(() => codec.decodeBody(new Uint8Array(1), 1, Number.NaN, 1), { code: 'ERR_STRATA_WIRE_LIMIT' });
  t.deepEqual(decode(bodyOf(encode({ ok: true })!)), { ok: true });
});

test('a large frame: the scratch buffer grows for it and the next small one is still right', (t) => {
  const big = { type: 'result', id: 7, value: Array.from({ length: 50_000 }, (_, i) => ({ i, s: `row ${i} ✓` })) };
  const frame = encode(big)!;
  t.truthy(frame);
  t.true(wireEqual(decodeValue(bodyOf(frame)), big));
  const reader = new FrameReader({ limits: DEFAULT_LIMITS, fastDecode: (body) => decode(body) });
  t.deepEqual(reader.readMessages(frame), [big as never]);
  const small = encode({ type: 'result', id: 8, value: 'x' })!;
  t.deepEqual(decodeValue(bodyOf(small)), { type: 'result', id: 8, value: 'x' });
});

test('the worker loads the native codec and its answers arrive intact, both the plain ones and the ones it hands back', async (t) => {
  const rt = await IsolatedRuntime.start();
  t.teardown(() => rt.close());
  rt.bindFunction('echo', (value: unknown) => value);
  if (process.platform === 'linux') {
    const maps = readFileSync(`/proc/${rt.pid}/maps`, 'utf8');
    t.regex(maps, /strata_wire\.node/, 'the worker mapped strata_wire.node');
  }
  t.deepEqual(await rt.eval('({ a: [1, -0, 1.5, "ü😀"], b: new Uint8Array([1]), c: null })'), { a: [1, -0, 1.5, 'ü😀'], b: new Uint8Array([1]), c: null });
  t.deepEqual(await rt.eval('({ when: new Date(0), m: new Map([[1, 2n]]) })'), { when: new Date(0), m: new Map([[1, 2n]]) });
  t.deepEqual(await rt.eval('echo({ x: [1, "two", { three: 3 }] })'), { x: [1, 'two', { three: 3 }] });
  t.deepEqual(await rt.eval('echo({ when: new Date(5), s: new Set([1]) })'), { when: new Date(5), s: new Set([1]) });
  await t.throwsAsync(() => rt.eval('"a\\ud800"'), { message: /lone surrogate/ });
  t.is(await rt.eval('1 + 1'), 2);
});
