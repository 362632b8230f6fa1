import test from 'ava';
import { MAX_CLOCK_SEED } from '../src/constants.js';
import { seededRandom } from '../src/index.js';
import { createGuest } from './helpers/guest.js';

/**
 * sfc32 seeded by splitmix32, written independently with BigInt arithmetic: the guest's
 * generator must match it bit for bit.
 */
function referenceRandom(seed: number): () => number {
  const M = 0xffffffffn;
  let s = BigInt(seed);
  const splitmix32 = (): bigint => {
    s = (s + 0x9e3779b9n) & M;
    let z = s;
    z = ((z ^ (z >> 16n)) * 0x85ebca6bn) & M;
    z = ((z ^ (z >> 13n)) * 0xc2b2ae35n) & M;
    return z ^ (z >> 16n);
  };
  let [a, b, c, d] = [splitmix32(), splitmix32(), splitmix32(), splitmix32()];
  const next32 = (): bigint => {
    const t = (a + b + d) & M;
    d = (d + 1n) & M;
    a = b ^ (b >> 9n);
    b = (c + (c << 3n)) & M;
    c = ((c << 21n) | (c >> 11n)) & M;
    c = (c + t) & M;
    return t;
  };
  for (let i = 0; i < 12; i++) next32();
  return () => Number(((next32() >> 5n) << 26n) | (next32() >> 6n)) / 2 ** 53;
}

const draws = (seed: number, count: number): number[] => {
  const guest = createGuest({ clock: { seed } });
  try {
    return guest.value<number[]>(`Array.from({ length: ${count} }, () => Math.random())`);
  } finally {
    guest.dispose();
  }
};

test('known answers: the first values for a few seeds', (t) => {
  t.deepEqual(draws(0, 3), [0.9791452499111826, 0.28461575291693764, 0.09012765872091966]);
  t.deepEqual(draws(1, 3), [0.42564993195549927, 0.6910148153015395, 0.9659408922812848]);
  t.deepEqual(draws(42, 3), [0.23955312807799112, 0.09323416053257594, 0.4471016215948881]);
  t.deepEqual(draws(MAX_CLOCK_SEED, 3), [0.32916384206204297, 0.7642670684313114, 0.8727518386759752]);
});

test('the guest, the host (seededRandom) and an independent BigInt sfc32 agree', (t) => {
  for (const seed of [0, 1, 7, 0x7fffffff, 0x80000000, MAX_CLOCK_SEED]) {
    const guest = draws(seed, 200);
    const host = seededRandom(seed);
    const reference = referenceRandom(seed);
    t.deepEqual(
      guest,
      Array.from({ length: 200 }, () => host()),
      `seed ${seed}: host`,
    );
    t.deepEqual(
      guest,
      Array.from({ length: 200 }, () => reference()),
      `seed ${seed}: reference`,
    );
  }
});

test('the same seed gives the same sequence in fresh isolates; other seeds give others', (t) => {
  t.deepEqual(draws(99, 50), draws(99, 50));
  const firsts = new Set(Array.from({ length: 64 }, (_, seed) => seededRandom(seed)()));
  t.is(firsts.size, 64);
  t.notDeepEqual(draws(5, 10), draws(6, 10));
});

test('values are multiples of 2^-53 in [0, 1), spread evenly', (t) => {
  const guest = createGuest({ clock: { seed: 2026 } });
  try {
    const stats = guest.value<{ min: number; max: number; mean: number; integral: boolean; buckets: number[]; distinct: number }>(`(() => {
      const n = 10_000, buckets = new Array(10).fill(0), seen = new Set();
      let min = 1, max = 0, sum = 0, integral = true;
      for (let i = 0; i < n; i++) {
        const x = Math.random();
        min = Math.min(min, x); max = Math.max(max, x); sum += x; seen.add(x);
        if (!Number.isInteger(x * 2 ** 53)) integral = false;
        buckets[Math.floor(x * 10)]++;
      }
      return { min, max, mean: sum / n, integral, buckets, distinct: seen.size };
    })()`);
    t.true(stats.min >= 0);
    t.true(stats.max < 1);
    t.true(stats.integral);
    t.is(stats.distinct, 10_000);
    t.true(Math.abs(stats.mean - 0.5) < 0.01, `mean ${stats.mean}`);
    for (const count of stats.buckets) t.true(count > 900 && count < 1100, `buckets ${stats.buckets.join()}`);
  } finally {
    guest.dispose();
  }
});

test('a guest that patches Math.imul or Reflect does not change the sequence', (t) => {
  const guest = createGuest({ clock: { seed: 3 } });
  try {
    const values = guest.value<number[]>(`Math.imul = () => 0; Reflect.apply = () => 0; Function.prototype.bind = () => 0; [Math.random(), Math.random()]`);
    const host = seededRandom(3);
    t.deepEqual(values, [host(), host()]);
  } finally {
    guest.dispose();
  }
});
