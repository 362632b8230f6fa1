/**
 * The seeded generators behind the guest's `Math.random` and, where a `crypto` exists, its
 * `getRandomValues` and `randomUUID`.
 *
 * Self-contained: each function's compiled source text is embedded in the clock bootstrap, and
 * the host runs the very same functions (`seededRandom`, the self-test) to know what a seed gives.
 *
 * sfc32 (Chris Doty-Humphrey's Small Fast Counting generator, 128-bit state, passes PractRand)
 * with its state expanded from the 32-bit seed by splitmix32 steps (golden-ratio increment,
 * MurmurHash3 finaliser), then 12 outputs discarded, as sfc's author recommends. Only 32-bit
 * integer operations: identical on every engine.
 *
 * @internal
 * @module
 */

/* eslint-disable */

/**
 * XORed into the seed for the `crypto` stream ("cryp"), so that it is a second sfc32 stream
 * and `Math.random`'s sequence is the same with or without a `crypto` in the context.
 */
export const CRYPTO_SEED_MASK = 0x63727970;

/** The raw sfc32 stream for `seed`: unsigned 32-bit outputs. */
export function createSfc32(seed: number): () => number {
  'use strict';
  const imul = Math.imul;
  let s = seed >>> 0;
  const splitmix32 = (): number => {
    s = (s + 0x9e3779b9) | 0;
    let z = s;
    z = imul(z ^ (z >>> 16), 0x85ebca6b);
    z = imul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) | 0;
  };
  let a = splitmix32();
  let b = splitmix32();
  let c = splitmix32();
  let d = splitmix32();
  const next32 = (): number => {
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return t >>> 0;
  };
  for (let i = 0; i < 12; i++) next32();
  return next32;
}

/**
 * Doubles from a 32-bit stream, as `Math.random` gives them: each takes two outputs, whose
 * 27 + 26 high bits make a multiple of 2^-53 in [0, 1), the resolution of a double there.
 */
export function doublesFrom(next32: () => number): () => number {
  'use strict';
  return (): number => {
    const high = next32() >>> 5;
    const low = next32() >>> 6;
    return (high * 67108864 + low) / 9007199254740992;
  };
}

/** What {@link cryptoFrom} gives: the seeded halves of `getRandomValues` and `randomUUID`. */
export interface SeededCrypto {
  /** Fills `bytes[0..length)` (any indexable byte view): four bytes per output, little-endian; the rest of the last output is dropped. */
  fill(bytes: { [index: number]: number }, length: number): void;
  /** A version 4 UUID from the next 16 bytes. */
  uuid(): string;
}

/**
 * Bytes and UUIDs from a 32-bit stream. Everything it calls later is captured now: it runs in
 * the guest's realm, where guest code may have patched `Number.prototype.toString`.
 */
export function cryptoFrom(next32: () => number): SeededCrypto {
  'use strict';
  const hex: string[] = [];
  for (let i = 0; i < 256; i++) hex[i] = (i < 16 ? '0' : '') + i.toString(16);
  // The length is passed: a typed array's `length` getter is the guest's to replace.
  const fill = (bytes: { [index: number]: number }, n: number): void => {
    for (let i = 0; i < n; i += 4) {
      const word = next32();
      bytes[i] = word & 0xff;
      if (i + 1 < n) bytes[i + 1] = (word >>> 8) & 0xff;
      if (i + 2 < n) bytes[i + 2] = (word >>> 16) & 0xff;
      if (i + 3 < n) bytes[i + 3] = word >>> 24;
    }
  };
  const uuid = (): string => {
    const b: number[] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    fill(b, 16);
    b[6] = (b[6]! & 0x0f) | 0x40; // version 4
    b[8] = (b[8]! & 0x3f) | 0x80; // variant 10
    let s = '';
    for (let i = 0; i < 16; i++) s += (i === 4 || i === 6 || i === 8 || i === 10 ? '-' : '') + hex[b[i]!];
    return s;
  };
  return { fill, uuid };
}

/** `Math.random`'s sequence for `seed`, on the host (the guest composes the same two functions). */
export function createRandom(seed: number): () => number {
  return doublesFrom(createSfc32(seed));
}

/** The `crypto` stream's bytes and UUIDs for `seed`, on the host. */
export function createSeededCrypto(seed: number): SeededCrypto {
  return cryptoFrom(createSfc32((seed ^ CRYPTO_SEED_MASK) >>> 0));
}
