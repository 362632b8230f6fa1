/**
 * Byte-level mutations of valid frames, aimed at the places a CBOR decoder breaks:
 * heads, lengths, tags, the frame's own length field.
 *
 * @module
 */

import type { Prng } from './prng.js';

// Initial bytes worth planting: 8-byte and indefinite heads, break, unknown simple
// values, float16/32, tags the codec refuses (27, 28, 29, 35, 64-87, 105, 0xdffe/0xdfff).
const INTERESTING_BYTES = [
  0x00, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1f, 0x3b, 0x5b, 0x5f, 0x7b, 0x7f, 0x9b, 0x9f, 0xbb, 0xbf, 0xc0, 0xc1, 0xc2, 0xc3, 0xd8, 0xd9, 0xda, 0xdb, 0xf0, 0xf4,
  0xf7, 0xf8, 0xf9, 0xfa, 0xfb, 0xfc, 0xff, 0x80, 0xa0, 0x60, 0x40, 0x1b,
];
const INTERESTING_SEQUENCES = [
  [0xd8, 27],
  [0xd8, 28],
  [0xd8, 29],
  [0xd8, 35],
  [0xd8, 64],
  [0xd8, 72],
  [0xd8, 85],
  [0xd8, 105],
  [0xd9, 0xdf, 0xfe],
  [0xd9, 0xdf, 0xff],
  [0xd9, 0x01, 0x02],
  [0xd9, 0x01, 0x03],
  [0xc1],
  [0xc2],
  [0xc3],
  [0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
  [0x9a, 0xff, 0xff, 0xff, 0xff],
  [0xba, 0xff, 0xff, 0xff, 0xff],
  [0x7a, 0xff, 0xff, 0xff, 0xff],
  [0x5a, 0x7f, 0xff, 0xff, 0xff],
  [0x69, 0x5f, 0x5f, 0x70, 0x72, 0x6f, 0x74, 0x6f, 0x5f, 0x5f],
  [0xed, 0xa0, 0x80],
  [0xc0, 0x80],
  [0xf8, 0x20],
];

/** The names of the mutations, for outcome statistics. */
export const MUTATIONS = [
  'flip-bit',
  'set-byte',
  'interesting-byte',
  'interesting-sequence',
  'truncate',
  'insert-random',
  'delete-range',
  'duplicate-range',
  'length-field',
  'splice-other',
] as const;

/** Applies random mutations to frames. */
export class FrameMutator {
  /** @param rng - random source. */
  constructor(private readonly rng: Prng) {}

  /**
   * Apply one to four random mutations.
   *
   * @param frame - a valid frame (header included); not modified.
   * @param other - another frame to splice from.
   */
  mutate(frame: Uint8Array, other: Uint8Array): Uint8Array {
    let out: Uint8Array = frame.slice();
    const rounds = 1 + this.rng.int(4);
    for (let i = 0; i < rounds; i++) out = this.once(out, other);
    return out;
  }

  private once(input: Uint8Array, other: Uint8Array): Uint8Array {
    const { rng } = this;
    const n = input.length;
    const at = rng.int(Math.max(n, 1));
    switch (rng.pick(MUTATIONS)) {
      case 'flip-bit': {
        if (n === 0) return input;
        input[at] = input[at]! ^ (1 << rng.int(8));
        return input;
      }
      case 'set-byte':
        if (n > 0) input[at] = rng.int(256);
        return input;
      case 'interesting-byte':
        if (n > 0) input[at] = rng.pick(INTERESTING_BYTES);
        return input;
      case 'interesting-sequence':
        return splice(input, at, rng.chance(0.5) ? 0 : rng.int(4), Uint8Array.from(rng.pick(INTERESTING_SEQUENCES)));
      case 'truncate':
        return input.slice(0, rng.int(n + 1));
      case 'insert-random':
        return splice(input, at, 0, rng.bytes(1 + rng.int(8)));
      case 'delete-range':
        return splice(input, at, 1 + rng.int(8), new Uint8Array(0));
      case 'duplicate-range': {
        const length = 1 + rng.int(16);
        return splice(input, at, 0, input.slice(at, at + length));
      }
      case 'length-field': {
        // rewrite the frame header: off by a little, zero, huge, or fitted to the new size
        if (n < 4) return input;
        const view = new DataView(input.buffer, input.byteOffset, input.byteLength);
        const current = view.getUint32(0);
        const choices = [current + 1, current - 1, 0, 0xffffffff, 0x7fffffff, n - 4, rng.u32(), current * 2];
        view.setUint32(0, rng.pick(choices) >>> 0);
        return input;
      }
      default: {
        const from = rng.int(Math.max(other.length, 1));
        return splice(input, at, rng.int(8), other.slice(from, from + 1 + rng.int(16)));
      }
    }
  }
}

function splice(input: Uint8Array, at: number, remove: number, insert: Uint8Array): Uint8Array {
  const end = Math.min(input.length, at + remove);
  const out = new Uint8Array(at + insert.length + (input.length - end));
  out.set(input.subarray(0, at), 0);
  out.set(insert, at);
  out.set(input.subarray(end), at + insert.length);
  return out;
}
