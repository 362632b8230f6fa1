import test from 'ava';
import { DEFAULT_LIMITS, FrameReader, ProtocolError, decodeMessage, decodeValue, encodeFrame, encodeValue, resolveLimits } from '../src/index.js';

test('defaults are frozen and as documented', (t) => {
  t.deepEqual(DEFAULT_LIMITS, {
    maxFrameBytes: 16 * 1024 * 1024,
    maxDepth: 64,
    maxNodes: 2_000_000,
    maxStringBytes: 16 * 1024 * 1024,
    maxBigIntBytes: 4096,
  });
  t.true(Object.isFrozen(DEFAULT_LIMITS));
  t.is(resolveLimits(), DEFAULT_LIMITS);
  t.is(resolveLimits(undefined), DEFAULT_LIMITS);
});

test('resolveLimits fills in defaults, freezes, and returns resolved limits unchanged', (t) => {
  const limits = resolveLimits({ maxDepth: 8 });
  t.is(limits.maxDepth, 8);
  t.is(limits.maxNodes, DEFAULT_LIMITS.maxNodes);
  t.true(Object.isFrozen(limits));
  t.is(resolveLimits(limits), limits);
  t.deepEqual(resolveLimits({}), DEFAULT_LIMITS);
});

test('a partial limits object is re-read if it changes between calls', (t) => {
  const limits: { maxDepth?: number; maxNodes?: number } = { maxDepth: 2 };
  t.is(resolveLimits(limits), resolveLimits(limits));
  t.throws(() => encodeValue([[[1]]], limits), { instanceOf: ProtocolError });
  limits.maxDepth = 3;
  t.notThrows(() => encodeValue([[[1]]], limits));
  limits.maxNodes = 2;
  t.throws(() => encodeValue([[[1]]], limits), { message: /maxNodes 2/ });
  (limits as Record<string, unknown>)['maxBogus'] = 1;
  t.throws(() => encodeValue(1, limits), { instanceOf: TypeError });
});

test('bad limits are programming errors with a clear message', (t) => {
  t.throws(() => resolveLimits({ maxDeph: 3 } as never), { instanceOf: TypeError, message: /unknown limit "maxDeph"/ });
  t.throws(() => resolveLimits(null as never), { instanceOf: TypeError });
  for (const bad of [0, -1, 1.5, NaN, Infinity, '5', 2 ** 40]) {
    t.throws(() => resolveLimits({ maxNodes: bad as number }), { instanceOf: RangeError, message: /limits\.maxNodes must be an integer/ });
  }
  t.throws(() => resolveLimits({ maxDepth: 1001 }), { instanceOf: RangeError, message: /from 1 to 1000/ });
  t.throws(() => resolveLimits({ maxFrameBytes: 2 ** 32 }), { instanceOf: RangeError });
  t.throws(() => encodeValue(1, { maxDepth: 0 }), { instanceOf: RangeError });
  t.throws(() => decodeValue(Uint8Array.of(1), { maxDepth: 0 }), { instanceOf: RangeError });
  t.throws(() => new FrameReader({ limits: { maxFrameBytes: -1 } }), { instanceOf: RangeError });
});

test('encoder and decoder agree at every limit boundary', (t) => {
  const cases: [unknown, Record<string, number>, Record<string, number>][] = [
    // value, limits it just fits, limits it just breaks
    [[[[1]]], { maxDepth: 3 }, { maxDepth: 2 }],
    [new Map([[1, new Set([2])]]), { maxDepth: 2 }, { maxDepth: 1 }],
    [{ a: [1, 2] }, { maxNodes: 5 }, { maxNodes: 4 }],
    [new Map([['k', 'v']]), { maxNodes: 3 }, { maxNodes: 2 }],
    ['é'.repeat(10), { maxStringBytes: 20 }, { maxStringBytes: 19 }],
    [{ ['k'.repeat(30)]: 1 }, { maxStringBytes: 30 }, { maxStringBytes: 29 }],
    [new Uint8Array(30), { maxStringBytes: 30 }, { maxStringBytes: 29 }],
    [2n ** 80n, { maxBigIntBytes: 11 }, { maxBigIntBytes: 10 }],
    [-(2n ** 80n) - 1n, { maxBigIntBytes: 11 }, { maxBigIntBytes: 10 }],
    [-(2n ** 64n), { maxBigIntBytes: 8 }, { maxBigIntBytes: 7 }],
    ['x'.repeat(30), { maxFrameBytes: 32 }, { maxFrameBytes: 31 }],
  ];
  for (const [value, fits, breaks] of cases) {
    const bytes = encodeValue(value);
    t.notThrows(() => encodeValue(value, fits), `encode ${JSON.stringify(fits)}`);
    t.notThrows(() => decodeValue(bytes, fits), `decode ${JSON.stringify(fits)}`);
    t.throws(() => encodeValue(value, breaks), { instanceOf: ProtocolError }, `encode ${JSON.stringify(breaks)}`);
    t.throws(() => decodeValue(bytes, breaks), { instanceOf: ProtocolError }, `decode ${JSON.stringify(breaks)}`);
  }
});

test('a 1 MiB result travels comfortably under the defaults', (t) => {
  const blob = { type: 'result', id: 1, value: new Uint8Array(1 << 20).fill(3) } as const;
  const rows = Array.from({ length: 20000 }, (_, i) => ({ id: i, name: `item number ${i}`, tags: ['alpha', 'beta'], ok: i % 2 === 0, score: i * 1.25 }));
  const small = Array.from({ length: 1 << 20 }, (_, i) => i % 24);
  for (const value of [blob.value, rows, small, 'x'.repeat(1 << 20)]) {
    const frame = encodeFrame({ type: 'result', id: 1, value });
    t.true(frame.length >= 1 << 20);
    const reader = new FrameReader();
    const [message] = reader.readMessages(frame);
    t.is(message?.type, 'result');
  }
  t.notThrows(() => decodeMessage(encodeFrame(blob).subarray(4)));
});
