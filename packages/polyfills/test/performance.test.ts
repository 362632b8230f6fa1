import test from 'ava';
import { PERFORMANCE_TICK_MS } from '../src/index.js';
import { createSandbox } from './helpers/isolate.js';

test('performance.now() is monotonic and advances without timers', async (t) => {
  const s = await createSandbox();
  try {
    const r = s.value<{ strictly: boolean; iterations: number; first: number }>(`(() => {
      const first = performance.now();
      let prev = first, strictly = true, iterations = 0;
      for (let i = 0; i < 1000; i++) { const n = performance.now(); if (!(n > prev)) strictly = false; prev = n; }
      const t0 = performance.now();
      while (performance.now() - t0 < 16) iterations++;
      return { strictly, iterations, first };
    })()`);
    t.true(r.strictly);
    t.is(r.first, PERFORMANCE_TICK_MS);
    // 16 ms at 1/128 ms per call.
    t.is(r.iterations, 16 * 128 - 1);
  } finally {
    s.dispose();
  }
});

test('performance.now() follows virtual time and never goes back', async (t) => {
  const s = await createSandbox();
  try {
    const r = await s.run<number[]>(`(async () => {
      const a = performance.now();
      await new Promise((r) => setTimeout(r, 500));
      const b = performance.now();
      // Busy-waiting moves the clock past a due timer; it fires late, not early.
      const t0 = performance.now();
      setTimeout(() => {}, 1);
      while (performance.now() - t0 < 10) {}
      await new Promise((r) => setTimeout(r, 0));
      const c = performance.now();
      return [a, b, c - t0 >= 10 ? 1 : 0, __strataEventLoop.now() >= c ? 1 : 0];
    })()`);
    const [a, b, late, caught] = r.value!;
    t.is(a, PERFORMANCE_TICK_MS);
    // The timer was set at `a` (the first tick), fired 500 ms later; reading
    // the clock ticks it once more.
    t.is(b, a! + 500 + PERFORMANCE_TICK_MS);
    t.is(late, 1);
    t.is(caught, 1);
  } finally {
    s.dispose();
  }
});

test('performance leaks no real time', async (t) => {
  const s = await createSandbox();
  try {
    t.deepEqual(s.value(`[performance.timeOrigin, JSON.stringify(performance), Object.prototype.toString.call(performance), typeof Performance]`), [
      0,
      '{"timeOrigin":0}',
      '[object Performance]',
      'undefined',
    ]);
    // Two contexts started at different real times see the same clock.
    const other = await createSandbox();
    try {
      await new Promise((r) => setTimeout(r, 20));
      t.is(other.value('performance.now()'), s.value('performance.now()'));
    } finally {
      other.dispose();
    }
  } finally {
    s.dispose();
  }
});
