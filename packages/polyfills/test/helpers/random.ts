/**
 * A seeded xorshift32 generator of numbers in [0, 1): the same seed gives the same sequence, so
 * a test on random input that fails can be replayed.
 */
export function random(seed: number): () => number {
  let x = seed >>> 0;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 4294967296;
  };
}
