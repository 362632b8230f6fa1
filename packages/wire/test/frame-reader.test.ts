import test from 'ava';
import { Buffer } from 'node:buffer';
import { FrameReader, ProtocolError, decodeMessage, encodeFrame, encodeValue, type Message } from '../src/index.js';
import { wireEqual } from '../scripts/wire-equal.js';
import { concat, frameOf, hex } from './cbor-hex.js';

const MESSAGES: Message[] = [
  { type: 'hello', version: 1 },
  { type: 'eval', id: 1, code: 'let x = "é😀"; x', options: { timeoutMs: 5 } },
  { type: 'result', id: 1, value: { list: [1, 2n, new Date(3)], bytes: Uint8Array.of(1, 2, 3), map: new Map([[1, new Set([2])]]) } },
  { type: 'console', level: 'info', text: 'x'.repeat(300) },
];
const STREAM = concat(...MESSAGES.map((message) => encodeFrame(message)));

/** A clock the test moves by hand. */
function fakeClock(start = 0) {
  const clock = { time: start, now: () => clock.time };
  return clock;
}

function decodeAll(bodies: Uint8Array[]): Message[] {
  return bodies.map((body) => decodeMessage(body));
}

test('one chunk with many frames yields every body, in order', (t) => {
  const reader = new FrameReader();
  const messages = reader.readMessages(STREAM);
  t.is(messages.length, MESSAGES.length);
  t.true(wireEqual(messages, MESSAGES));
  t.is(reader.partialSince, undefined);
  t.is(reader.bufferedBytes, 0);
});

test('a stream split at every byte boundary yields the same messages', (t) => {
  const wrong: number[] = [];
  for (let cut = 0; cut <= STREAM.length; cut++) {
    const reader = new FrameReader();
    const bodies = [...reader.push(STREAM.subarray(0, cut)), ...reader.push(STREAM.subarray(cut))];
    if (!wireEqual(decodeAll(bodies), MESSAGES) || reader.partialSince !== undefined) wrong.push(cut);
  }
  t.deepEqual(wrong, [], 'splits that changed the messages');
});

test('a stream split into every pair of cuts (three chunks) yields the same messages', (t) => {
  const stream = concat(encodeFrame(MESSAGES[0]!), encodeFrame(MESSAGES[1]!));
  const wrong: string[] = [];
  for (let a = 0; a <= stream.length; a++) {
    for (let b = a; b <= stream.length; b++) {
      const reader = new FrameReader();
      const bodies = [...reader.push(stream.subarray(0, a)), ...reader.push(stream.subarray(a, b)), ...reader.push(stream.subarray(b))];
      if (!wireEqual(decodeAll(bodies), MESSAGES.slice(0, 2))) wrong.push(`${a},${b}`);
    }
  }
  t.deepEqual(wrong, [], 'cuts that changed the messages');
});

test('a stream fed one byte at a time yields the same messages', (t) => {
  const reader = new FrameReader();
  const bodies: Uint8Array[] = [];
  for (let i = 0; i < STREAM.length; i++) bodies.push(...reader.push(STREAM.subarray(i, i + 1)));
  t.true(wireEqual(decodeAll(bodies), MESSAGES));
});

test('empty chunks change nothing', (t) => {
  const clock = fakeClock();
  const reader = new FrameReader({ now: clock.now });
  t.deepEqual(reader.push(new Uint8Array(0)), []);
  t.is(reader.partialSince, undefined);
  reader.push(STREAM.subarray(0, 2));
  t.deepEqual(reader.push(new Uint8Array(0)), []);
  t.is(reader.bufferedBytes, 2);
});

test('an oversize declared length is refused as soon as the header is in', (t) => {
  const reader = new FrameReader({ limits: { maxFrameBytes: 1000 } });
  t.deepEqual(reader.push(hex('00 00')), []);
  const before = process.memoryUsage().arrayBuffers;
  t.throws(() => reader.push(hex('03 e9')), { instanceOf: ProtocolError, message: 'declared frame length 1001 exceeds maxFrameBytes 1000' });
  t.true(process.memoryUsage().arrayBuffers - before < 1 << 20);
  // the default refuses a 4 GiB declaration with nothing buffered
  t.throws(() => new FrameReader().push(hex('ff ff ff ff 00')), { message: /declared frame length 4294967295 exceeds maxFrameBytes 16777216/ });
  // a frame of exactly the limit is fine
  const body = encodeValue('x'.repeat(997));
  t.is(body.length, 1000);
  t.is(new FrameReader({ limits: { maxFrameBytes: 1000 } }).push(frameOf(body)).length, 1);
});

test('a zero-length frame is refused', (t) => {
  t.throws(() => new FrameReader().push(hex('00 00 00 00')), { instanceOf: ProtocolError, message: 'empty frame' });
});

test('after an error the reader stays failed', (t) => {
  const reader = new FrameReader();
  const error = t.throws(() => reader.push(hex('00 00 00 00')), { instanceOf: ProtocolError });
  t.is(reader.error, error);
  t.is(
    t.throws(() => reader.push(STREAM)),
    error,
  );
  t.is(
    t.throws(() => reader.end()),
    error,
  );
});

test('readMessages fails the reader on a body that does not decode', (t) => {
  const reader = new FrameReader();
  const bad = frameOf(encodeValue({ type: 'nope' }));
  const error = t.throws(() => reader.readMessages(concat(encodeFrame(MESSAGES[0]!), bad)), { instanceOf: ProtocolError });
  t.regex(error?.message ?? '', /unknown message type/);
  t.is(
    t.throws(() => reader.readMessages(STREAM)),
    error,
  );
});

test('refuses a chunk that is not bytes', (t) => {
  t.throws(() => new FrameReader().push('abc' as unknown as Uint8Array), { instanceOf: ProtocolError });
});

test('partialSince and isStalled report a frame that arrives too slowly', (t) => {
  const clock = fakeClock(1000);
  const reader = new FrameReader({ now: clock.now });
  const frame = encodeFrame(MESSAGES[1]!);
  t.false(reader.isStalled(100));
  reader.push(frame.subarray(0, 2)); // half a header counts
  t.is(reader.partialSince, 1000);
  clock.time = 1099;
  t.false(reader.isStalled(100));
  clock.time = 1100;
  t.true(reader.isStalled(100));
  t.true(reader.isStalled(50, 1060));
  reader.push(frame.subarray(2, 10)); // more bytes do not reset the clock: the frame is still late
  t.is(reader.partialSince, 1000);
  clock.time = 5000;
  t.is(reader.push(frame.subarray(10)).length, 1);
  t.is(reader.partialSince, undefined);
  t.false(reader.isStalled(0));
  // a chunk that completes one frame and starts the next restarts the clock
  clock.time = 6000;
  const two = concat(frame, frame);
  t.is(reader.push(two.subarray(0, frame.length + 3)).length, 1);
  t.is(reader.partialSince, 6000);
  t.is(reader.bufferedBytes, 3);
  clock.time = 6500;
  t.true(reader.isStalled(500));
  t.is(reader.push(two.subarray(frame.length + 3)).length, 1);
  t.false(reader.isStalled(0));
});

test('end() refuses a stream that stops inside a frame', (t) => {
  const reader = new FrameReader();
  reader.push(STREAM);
  t.notThrows(() => reader.end());
  const partial = new FrameReader();
  partial.push(STREAM.subarray(0, 7));
  t.throws(() => partial.end(), { instanceOf: ProtocolError, message: /stream ended inside a frame \(7 bytes buffered\)/ });
});

test('a dripped large frame is buffered in memory proportional to what arrived', (t) => {
  const reader = new FrameReader();
  const before = process.memoryUsage().arrayBuffers;
  // declares 16 MiB, sends 100 bytes one at a time
  reader.push(hex('01 00 00 00'));
  for (let i = 0; i < 100; i++) reader.push(Uint8Array.of(0x41));
  t.is(reader.bufferedBytes, 104);
  t.true(process.memoryUsage().arrayBuffers - before < 1 << 20);
});

test('a 4 MiB frame in 1000-byte chunks assembles in linear time', (t) => {
  const value = new Uint8Array(4 << 20).fill(9);
  const frame = encodeFrame({ type: 'result', id: 1, value });
  const reader = new FrameReader();
  const start = performance.now();
  const bodies: Uint8Array[] = [];
  for (let i = 0; i < frame.length; i += 1000) bodies.push(...reader.push(frame.subarray(i, i + 1000)));
  t.true(performance.now() - start < 2000);
  t.is(bodies.length, 1);
  const message = decodeMessage(bodies[0]!);
  t.true(message.type === 'result' && wireEqual(message.value, value));
});

test('bodies decode to values that do not alias the chunk', (t) => {
  const chunk = Buffer.from(encodeFrame({ type: 'result', id: 1, value: Uint8Array.of(1, 2, 3) }));
  const [message] = new FrameReader().readMessages(chunk);
  chunk.fill(0);
  t.true(message?.type === 'result' && wireEqual(message.value, Uint8Array.of(1, 2, 3)));
});

test('fastDecode: its value is used, undefined hands the body to the strict decoder, and its value is still checked against the message table', (t) => {
  const bodies: number[] = [];
  const reader = new FrameReader({
    fastDecode: (body) => {
      bodies.push(body.length);
      // answers for the first message only
      return bodies.length === 1 ? { type: 'hello', version: 1 } : undefined;
    },
  });
  const messages = reader.readMessages(STREAM);
  t.is(bodies.length, MESSAGES.length);
  t.true(messages.every((message, i) => wireEqual(message, MESSAGES[i])));

  const lying = new FrameReader({ fastDecode: () => ({ type: 'no such message' }) });
  t.throws(() => lying.readMessages(encodeFrame({ type: 'hello', version: 1 })), { instanceOf: ProtocolError });
  // failed for good, like a reader whose strict decoder refused a body
  t.throws(() => lying.readMessages(new Uint8Array(0)), { instanceOf: ProtocolError });
});
