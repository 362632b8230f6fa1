import test from 'ava';
import { DEFAULT_LIMITS, ProtocolError, decodeMessage, decodeValue, encodeValue, scanCbor } from '../src/index.js';
import { concat, head, hex } from './cbor-hex.js';

/** Assert the strict decoder refuses `bytes` with a ProtocolError matching `pattern`. */
function refuses(t: import('ava').ExecutionContext, bytes: Uint8Array, pattern: RegExp, limits = {}): void {
  const error = t.throws(() => decodeValue(bytes, limits), { instanceOf: ProtocolError });
  t.regex(error?.message ?? '', pattern);
  t.is(error?.code, 'ERR_STRATA_PROTOCOL');
  t.false(error?.message.startsWith('internal'), error?.message);
}

const MALFORMED: [string, string, RegExp][] = [
  ['an empty body', '', /empty CBOR body/],
  ['trailing bytes', '01 01', /1 trailing bytes/],
  ['two items', 'f6 f6', /trailing/],
  ['a truncated uint16', '19 01', /runs past the end/],
  ['a truncated array', '82 01', /runs past the end/],
  ['a truncated string', '62 61', /runs past the end/],
  ['a truncated float64', 'fb 3ff0', /runs past the end/],
  ['a truncated 64-bit integer', '1b 00 00', /runs past the end/],
  ['an indefinite array', '9f 01 ff', /indefinite-length/],
  ['an indefinite map', 'bf ff', /indefinite-length/],
  ['an indefinite text string', '7f 61 61 ff', /indefinite-length/],
  ['an indefinite byte string', '5f 41 00 ff', /indefinite-length/],
  ['a lone break code', 'ff', /simple value or float form 0xff/],
  ['reserved additional information 28', '1c', /additional information 28/],
  ['reserved additional information 30', '5e', /additional information 30/],
  ['an 8-byte array length', '9b 00 00 00 00 00 00 00 01 01', /additional information 27 .* major type 4/],
  ['an 8-byte string length', '7b 00 00 00 00 00 00 00 01 61', /additional information 27/],
  ['a non-shortest uint8', '18 05', /shortest form/],
  ['a non-shortest uint16', '19 00 10', /shortest form/],
  ['a non-shortest uint32', '1a 00 00 01 00', /shortest form/],
  ['a non-shortest array length', '98 01 01', /shortest form/],
  ['a float16', 'f9 3c 00', /float form 0xf9/],
  ['a float32', 'fa 3f 80 00 00', /float form 0xfa/],
  ['simple value 0', 'e0', /simple value/],
  ['simple value 19', 'f3', /simple value/],
  ['a one-byte simple value', 'f8 20', /simple value/],
  ['tag 0 (date string)', 'c0 60', /tag 0 /],
  ['tag 4 (decimal fraction)', 'c4 82 01 01', /tag 4 /],
  ['tag 6 (packed reference)', 'c6 01', /tag 6 /],
  ['tag 21 (base64url)', 'd5 41 00', /tag 21 /],
  ['tag 24 (embedded CBOR)', 'd8 18 41 01', /tag 24 /],
  ['tag 27 (error revival)', 'd8 1b 82 65 4572726f72 61 78', /tag 27 /],
  ['tag 27 (RegExp revival)', 'd8 1b 83 66 526567457870 61 61 60', /tag 27 /],
  ['tag 28 (shareable)', 'd8 1c 80', /tag 28 /],
  ['tag 29 (shared reference)', 'd8 1d 00', /tag 29 /],
  ['tag 32 (URI)', 'd8 20 60', /tag 32 /],
  ['tag 35 (regexp)', 'd8 23 61 61', /tag 35 /],
  ['tag 51 (packed table)', 'd8 33 80', /tag 51 /],
  ['tag 64 (Uint8Array)', 'd8 40 41 00', /tag 64 /],
  ['tag 72 (Int8Array)', 'd8 48 41 00', /tag 72 /],
  ['tag 85 (Float32Array)', 'd8 55 44 00000000', /tag 85 /],
  ['tag 86 (Float64Array)', 'd8 56 48 0000000000000000', /tag 86 /],
  ['tag 87 (typed-array border)', 'd8 57 41 00', /tag 87 /],
  ['tag 105 (legacy record)', 'd8 69 80', /tag 105 /],
  ['tag 0xdffe (record definitions)', 'd9 dffe 80', /tag 57342 /],
  ['tag 0xdfff (inline record)', 'd9 dfff 80', /tag 57343 /],
  ['tag 0xdff9 (bundled strings)', 'd9 dff9 80', /tag 57337 /],
  ['tag 55799 (self-described CBOR)', 'd9 d9f7 01', /tag 55799 /],
  ['a 4-byte tag', 'da 00010000 01', /tag 65536 /],
  ['an 8-byte tag', 'db 0000000000000001 01', /additional information 27 .* major type 6/],
  ['nested tags', 'c1 c1 1a 00000000', /nested tag/],
  ['a Date of a string', 'c1 61 61', /wrong kind for its tag/],
  ['a Date of a negative integer', 'c1 20', /wrong kind/],
  ['a Date of a short integer', 'c1 01', /wrong kind/],
  ['a Date of a bigint head', 'c1 1b 0000000000000001', /wrong kind/],
  ['a bignum of an integer', 'c2 01', /wrong kind/],
  ['a bignum of text', 'c2 69 616161616161616161', /wrong kind/],
  ['a short bignum', 'c2 41 01', /non-canonical bignum/],
  ['a bignum with a leading zero', 'c2 49 00 0100000000000000', /non-canonical bignum/],
  ['a Set of a map', 'd9 0102 a0', /wrong kind/],
  ['a Map of an array', 'd9 0103 80', /wrong kind/],
  ['a tag with nothing after it', 'c1', /runs past the end/],
  ['an integer key', 'a1 01 02', /key at byte 1 is not a text string/],
  ['a null key', 'a1 f6 01', /not a text string/],
  ['a tagged key', 'a1 c1 1a 00000000 01', /not a text string/],
  ['an array key', 'a1 80 01', /not a text string/],
  ['a float key', 'a1 fb 3ff0000000000000 01', /not a text string/],
  ['a duplicate key', 'a2 61 61 01 61 61 02', /duplicate object key/],
  ['a duplicate Set element', 'd9 0102 82 01 01', /duplicate Set element/],
  ['a duplicate NaN Set element', 'd9 0102 82 fb 7ff8000000000000 fb 7ff8000000000000', /duplicate Set element/],
  ['a duplicate Map key', 'd9 0103 a2 01 01 01 02', /duplicate Map key/],
  ['malformed UTF-8', '62 c3 28', /malformed UTF-8/],
  ['an overlong UTF-8 NUL', '62 c0 80', /malformed UTF-8/],
  ['a UTF-8-encoded surrogate', '63 ed a0 80', /malformed UTF-8/],
  ['malformed UTF-8 in a long string', `78 50 ${'61'.repeat(79)} ff`, /malformed UTF-8/],
  ['malformed UTF-8 in a key', 'a1 62 c3 28 01', /malformed UTF-8/],
  ['a Date with a fraction of a millisecond', 'c1 fb 3f40624dd2f1a9fc', /whole number of milliseconds/],
  ['a Date past the time range', 'c1 fb 42b0000000000000', /out of range/],
  ['an infinite Date', 'c1 fb 7ff0000000000000', /out of range/],
];

for (const [name, bytes, pattern] of MALFORMED) {
  test(`refuses ${name}`, (t) => {
    refuses(t, hex(bytes), pattern);
  });
}

test('refuses input that is not a Uint8Array', (t) => {
  for (const input of ['a1', [1], new ArrayBuffer(1), null, undefined, new Uint16Array(1)]) {
    t.throws(() => decodeValue(input as unknown as Uint8Array), { instanceOf: ProtocolError });
  }
});

test('refuses a body larger than maxFrameBytes before scanning it', (t) => {
  refuses(t, new Uint8Array(11), /frame body of 11 bytes exceeds maxFrameBytes 10/, { maxFrameBytes: 10 });
});

test('a declared 2^32 - 1 element array in ten bytes fails fast, in constant memory', (t) => {
  const bombs = [
    hex('9a ffffffff 00 00 00 00 00'),
    hex('ba ffffffff 61 61 00 00 00'),
    hex('7a ffffffff 61 61 61 61 61'),
    hex('5a ffffffff 00 00 00 00 00'),
    hex('81 81 81 9a ffffffff 00 00'),
    hex('d9 0102 9a ffffffff 00 00'),
  ];
  const before = process.memoryUsage();
  const start = performance.now();
  for (let i = 0; i < 10000; i++) {
    for (const bomb of bombs) t.throws(() => decodeValue(bomb), { instanceOf: ProtocolError, message: /runs past the end|exceeds/ });
  }
  const elapsed = performance.now() - start;
  const after = process.memoryUsage();
  // ~0.5 s idle for the 60 000 decodes; a decoder that walked the declared 2^32 elements would take
  // seconds per decode. 30 s leaves a loaded machine room and still tells them apart.
  t.true(elapsed < 30_000, `took ${elapsed} ms`);
  t.true(after.arrayBuffers - before.arrayBuffers < 1 << 20);
});

test('a string longer than maxStringBytes is refused by its declared length', (t) => {
  refuses(t, hex('7a 00010000'), /string of 65536 bytes at byte 0 exceeds maxStringBytes 1000/, { maxStringBytes: 1000 });
  refuses(t, hex('45 0102030405'), /exceeds maxStringBytes 4/, { maxStringBytes: 4 });
  t.is(decodeValue(hex('64 61626364'), { maxStringBytes: 4 }), 'abcd');
});

test('a bignum longer than maxBigIntBytes is refused', (t) => {
  refuses(t, hex('c2 4a 01 000000000000000000'), /bignum of 10 bytes .* exceeds maxBigIntBytes 9/, { maxBigIntBytes: 9 });
  t.is(decodeValue(hex('c2 49 01 0000000000000000'), { maxBigIntBytes: 9 }), 2n ** 64n);
});

test('a depth bomb is refused at maxDepth + 1', (t) => {
  const nested = (depth: number) => concat(new Uint8Array(depth).fill(0x81), hex('00'));
  t.notThrows(() => decodeValue(nested(64)));
  refuses(t, nested(65), /nesting deeper than maxDepth 64 at byte 64/);
  refuses(t, nested(100000), /nesting deeper than maxDepth 64/);
  // empty containers count too, as do maps and tagged containers
  t.notThrows(() => decodeValue(concat(new Uint8Array(63).fill(0x81), hex('80'))));
  refuses(t, concat(new Uint8Array(64).fill(0x81), hex('80')), /maxDepth/);
  refuses(t, hex('a1 61 61 a1 61 61 d9 0102 80'), /maxDepth 2/, { maxDepth: 2 });
});

test('a node-count bomb is refused at maxNodes + 1', (t) => {
  const array = (n: number) => concat(head(4, n), new Uint8Array(n));
  t.is(scanCbor(array(10), { ...DEFAULT_LIMITS, maxNodes: 11 }), 11);
  refuses(t, array(11), /more than maxNodes 11 items/, { maxNodes: 11 });
  // keys count, tags do not
  t.is(scanCbor(hex('a1 61 61 c1 1a 00000000'), DEFAULT_LIMITS), 3);
  refuses(t, hex('a1 61 61 01'), /maxNodes 2/, { maxNodes: 2 });
  // the default allows any 1 MiB body, even one byte per item
  const dense = array((1 << 20) - 5);
  t.is((decodeValue(dense) as unknown[]).length, (1 << 20) - 5);
  refuses(t, array(2_000_000), /more than maxNodes 2000000/);
});

test('a "__proto__" key cannot pollute or replace a prototype', (t) => {
  const value = decodeValue(hex('a2 69 5f5f70726f746f5f5f a1 68 706f6c6c75746564 f5 61 61 01')) as Record<string, unknown>;
  t.is(Object.getPrototypeOf(value), Object.prototype);
  t.deepEqual(Object.getOwnPropertyDescriptor(value, '__proto__'), {
    value: { polluted: true },
    writable: true,
    enumerable: true,
    configurable: true,
  });
  t.is((value as { polluted?: unknown }).polluted, undefined);
  t.is(({} as { polluted?: unknown }).polluted, undefined);
  refuses(t, hex('a2 69 5f5f70726f746f5f5f 01 69 5f5f70726f746f5f5f 02'), /duplicate object key/);
});

test('reasons never echo large attacker-controlled content', (t) => {
  const huge = 'A'.repeat(100000);
  const body = encodeValue({ type: huge });
  const error = t.throws(() => decodeMessage(body), { instanceOf: ProtocolError });
  t.true((error?.message.length ?? Infinity) < 120, error?.message);
  t.regex(error?.message ?? '', /^unknown message type "A{40}…"$/);
});

test('a Date with a whole-second 4-byte timestamp or a float64 decodes', (t) => {
  t.deepEqual(decodeValue(hex('c1 1a ffffffff')), new Date(0xffffffff * 1000));
  t.deepEqual(decodeValue(hex('c1 fb 0000000000000000')), new Date(0));
  t.true(Number.isNaN((decodeValue(hex('c1 fb 7ff8000000000000')) as Date).getTime()));
});

test('scanCbor counts items and checks structure without building anything', (t) => {
  t.is(scanCbor(hex('83 01 a1 61 61 02 d9 0102 82 03 04'), DEFAULT_LIMITS), 8);
  t.throws(() => scanCbor(hex('83 01'), DEFAULT_LIMITS), { instanceOf: ProtocolError });
});
