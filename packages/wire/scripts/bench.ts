/**
 * Codec speed: `node packages/wire/dist/scripts/bench.js`. Prints the median time to
 * encode a frame and to decode it, for a small message and for ~1 MiB results of a few
 * shapes. Informational only; nothing asserts on these numbers.
 *
 * @module
 */

import { decodeMessage, encodeFrame, type Message } from '../src/index.js';

function median(run: () => void, iterations: number): number {
  for (let i = 0; i < Math.min(iterations, 200); i++) run();
  const samples: number[] = [];
  for (let batch = 0; batch < 15; batch++) {
    const start = performance.now();
    for (let i = 0; i < iterations; i++) run();
    samples.push((performance.now() - start) / iterations);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)]!;
}

function format(ms: number): string {
  return ms < 0.1 ? `${(ms * 1000).toFixed(2)} µs` : `${ms.toFixed(2)} ms`;
}

const rows = Array.from({ length: 17000 }, (_, i) => ({
  id: i,
  name: `item number ${i}`,
  tags: ['alpha', 'beta'],
  ok: i % 2 === 0,
  score: i * 1.25,
}));
const cases: [string, Message, number][] = [
  ['small message', { type: 'result', id: 42, value: { ok: true, name: 'hello', n: 3.5, list: [1, 2, 3] } }, 20000],
  ['1 MiB: 17,000 small objects', { type: 'result', id: 1, value: rows }, 10],
  ['1 MiB: 1M small integers', { type: 'result', id: 1, value: Array.from({ length: 1 << 20 }, (_, i) => i % 24) }, 5],
  ['1 MiB: one string', { type: 'result', id: 1, value: 'x'.repeat(1 << 20) }, 200],
  ['1 MiB: one Uint8Array', { type: 'result', id: 1, value: new Uint8Array(1 << 20) }, 200],
];

console.log(`@strata/wire codec, Node ${process.version} (median of 15 batches)`);
for (const [name, message, iterations] of cases) {
  const frame = encodeFrame(message);
  const body = frame.subarray(4);
  const encode = median(() => encodeFrame(message), iterations);
  const decode = median(() => decodeMessage(body), iterations);
  console.log(`${name.padEnd(30)} ${String(frame.length).padStart(8)} bytes   encode ${format(encode).padStart(9)}   decode ${format(decode).padStart(9)}`);
}
