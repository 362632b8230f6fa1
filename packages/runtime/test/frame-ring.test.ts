// A worker's frames and its parent's commands go through frame rings (native/frame-ring.h) on
// Linux, and the parent spins for an answer it expects instead of sleeping
// (src/isolated/worker-process.ts).
// What a caller must still see: every answer, in order, whatever its size; other runtimes'
// answers while one spins; and an event loop that turns while commands run back to back.
import test from 'ava';
import { IsolatedRuntime, SandboxHost } from '../src/index.js';
import { platformTest } from '../src/testing/index.js';
import { checkNoLeaks } from './helpers/leaks.js';

checkNoLeaks(test);
const maybe = platformTest(test, {
  feature: 'linux',
  available: process.platform === 'linux',
  reason: 'the frame ring is Linux only (memfd, futex); elsewhere frames come on the pipe',
});

maybe('commands back to back never starve the event loop: a timer set before them fires while they run', async (t) => {
  await using rt = await IsolatedRuntime.start({ prewarm: false });
  for (let i = 0; i < 50; i++) await rt.eval('1+1');
  let firedAt: number | undefined;
  let done = 0;
  const timer = setTimeout(() => (firedAt = done), 0);
  const immediate = new Promise<number>((resolve) => setImmediate(() => resolve(done)));
  for (; done < 400; done++) t.is(await rt.eval(`${done}+1`), done + 1);
  clearTimeout(timer);
  t.not(firedAt, undefined, 'the timer fired before the 400 commands were done');
  t.true((await immediate) < 400, 'setImmediate ran while they ran');
});

maybe('answers of every size come whole through the ring: 1 byte to 900 KB, and a console flood before a result', async (t) => {
  await using rt = await IsolatedRuntime.start({ prewarm: false });
  for (const size of [1, 100, 65_535, 65_536, 65_537, 200_000, 900_000]) {
    const value = (await rt.eval(`'x'.repeat(${size})`)) as string;
    t.is(value.length, size);
  }
  const lines: string[] = [];
  rt.onConsole((entry) => lines.push(entry.text));
  t.is(await rt.eval(`for (let i = 0; i < 2000; i++) console.log('line ' + i + ' ' + 'y'.repeat(100)); 'after'`), 'after');
  t.is(lines.length, 2000);
  t.is(lines[1999], `line 1999 ${'y'.repeat(100)}`);
});

maybe('two runtimes busy at once both get their answers, in order', async (t) => {
  await using a = await IsolatedRuntime.start({ prewarm: false });
  await using b = await IsolatedRuntime.start({ prewarm: false });
  b.bindFunction('twice', (x: number) => 2 * x);
  const run = async (rt: IsolatedRuntime, code: (i: number) => string, expected: (i: number) => number) => {
    for (let i = 0; i < 300; i++) t.is(await rt.eval(code(i)), expected(i));
  };
  await Promise.all([
    run(
      a,
      (i) => `${i}*3`,
      (i) => i * 3,
    ),
    run(
      b,
      (i) => `twice(${i})`,
      (i) => i * 2,
    ),
  ]);
});

maybe('commands larger than their ring (a 1 MB bootstrap, a 600 KB eval) wait for room and arrive whole', async (t) => {
  const big = 'x'.repeat(1_000_000);
  await using rt = await IsolatedRuntime.start({ prewarm: false, bootstrap: [`globalThis.big = '${big}';`] });
  t.is(await rt.eval('big.length'), 1_000_000);
  const code = `'${'y'.repeat(600_000)}'.length + big.length`;
  t.is(await rt.eval(code), 1_600_000);
  for (let i = 0; i < 20; i++) t.is(await rt.eval(`${i} + 1`), i + 1);
});

maybe('a SandboxHost worker reads its commands from the ring as they come: many isolates, commands in flight at once', async (t) => {
  await using host = await SandboxHost.start({ tenant: 'frame-ring', prewarm: false, maxIsolates: 8 });
  const isolates = await Promise.all(Array.from({ length: 8 }, () => host.open()));
  const results = await Promise.all(isolates.flatMap((rt, i) => Array.from({ length: 25 }, (_, k) => rt.eval(`${i} * 100 + ${k}`))));
  t.deepEqual(
    results,
    isolates.flatMap((_, i) => Array.from({ length: 25 }, (_, k) => i * 100 + k)),
  );
  for (const rt of isolates) await rt.close();
});

maybe("a host call's answer larger than its ring (500 KB) waits for room and arrives whole, and calls back to back after it", async (t) => {
  await using rt = await IsolatedRuntime.start({ prewarm: false });
  rt.bindFunction('big', () => 'z'.repeat(500_000));
  rt.bindFunction('inc', (x: number) => x + 1);
  t.is(await rt.eval('big().length'), 500_000);
  t.is(await rt.eval('let s = 0; for (let i = 0; i < 300; i++) s = inc(s); s'), 300);
  t.is(await rt.eval('big().length + big().length'), 1_000_000);
});
