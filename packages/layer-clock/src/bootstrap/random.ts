/**
 * The seeded generator behind the guest's `Math.random`.
 *
 * Self-contained: its compiled source text is embedded in the clock bootstrap, and the host
 * runs the very same function (`seededRandom`) to know the sequence a seed gives.
 *
 * sfc32 (Chris Doty-Humphrey's Small Fast Counting generator, 128-bit state, passes PractRand)
 * with its state expanded from the 32-bit seed by splitmix32 steps (golden-ratio increment,
 * MurmurHash3 finaliser), then 12 outputs discarded, as sfc's author recommends. Each double
 * takes two 32-bit outputs: 27 + 26 high bits make a multiple of 2^-53 in [0, 1), the
 * resolution of a double there. Only 32-bit integer operations: identical on every engine.
 *
 * @internal
 */
export function createRandom(seed: number): () => number {
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
  return (): number => {
    const high = next32() >>> 5;
    const low = next32() >>> 6;
    return (high * 67108864 + low) / 9007199254740992;
  };
}
