import test from 'ava';
import { WEB_POLYFILLS } from '@strata/polyfills';
import { IsolatedRuntime } from '@strata/runtime';
import { checkLayerConformance, testLayer } from '@strata/runtime/testing';
import { clock, seededRandom } from '../src/index.js';

const PROGRAM = `(async () => {
  const lines = [];
  lines.push(new Date().toISOString(), String(Date.now()), Date());
  lines.push(new Intl.DateTimeFormat('en-GB', { dateStyle: 'full', timeStyle: 'long', timeZone: 'UTC' }).format());
  lines.push(Array.from({ length: 5 }, () => Math.random().toFixed(12)).join(' '));
  const t0 = performance.now();
  await new Promise((resolve) => setTimeout(resolve, 250));
  lines.push('slept ' + (performance.now() - t0).toFixed(3) + ' virtual ms; Date.now() still ' + Date.now());
  console.log(lines.join('\\n'));
  return lines;
})()`;

async function runOnce(): Promise<{ stdout: string; result: unknown; layers: unknown }> {
  await using rt = await IsolatedRuntime.start({ clock: { at: '2026-03-04T05:06:07Z', seed: 42 }, bootstrap: WEB_POLYFILLS, prewarm: false });
  const run = await rt.execute(PROGRAM);
  return { stdout: run.stdout, result: run.result, layers: rt.report.layers };
}

test('two fresh workers with the same clock and seed print byte-identical output', async (t) => {
  const [a, b] = [await runOnce(), await runOnce()];
  t.is(a.stdout, b.stdout);
  t.deepEqual(a.result, b.result);
  t.true(a.stdout.startsWith('2026-03-04T05:06:07.000Z\n1772600767000\n'), a.stdout);
  t.regex(a.stdout, /Wednesday, 4 March 2026 at 05:06:07 UTC/);
  t.regex(a.stdout, /Date\.now\(\) still 1772600767000/);
});

test('the clock option adds the clock layer, required, and it reports itself', async (t) => {
  const { layers } = await runOnce();
  const entry = (layers as { name: string }[]).find((l) => l.name === 'clock') as Record<string, unknown>;
  t.is(entry['requirement'], 'require');
  t.is(entry['enforcement'], 'full');
  t.is(entry['selfTest'], 'passed');
  t.like(entry['detail'] as object, { at: '2026-03-04T05:06:07.000Z', seed: 42 });
});

test('a different seed gives a different sequence', async (t) => {
  await using a = await IsolatedRuntime.start({ clock: { seed: 1 }, prewarm: false });
  await using b = await IsolatedRuntime.start({ clock: { seed: 2 }, prewarm: false });
  t.notDeepEqual(await a.eval('[Math.random(), Math.random()]'), await b.eval('[Math.random(), Math.random()]'));
});

test('the clock layer keeps its promises (testLayer must-deny / must-allow)', async (t) => {
  const result = await testLayer(clock({ at: 0, seed: 7 }), {
    mustDeny: [
      { name: 'Date.now() advancing', code: 'const a = Date.now(); for (let i = 0; i < 1e6; i++); Date.now() !== a' },
      { name: 'the original Date through the prototype chain', code: 'Object.getPrototypeOf(new Date()).constructor.now() !== 0' },
      { name: 'Intl formatting the real time', code: "new Intl.DateTimeFormat('en', { year: 'numeric', timeZone: 'UTC' }).format() !== '1970'" },
    ],
    mustAllow: [
      { name: 'explicit dates', code: "new Date('2000-01-02T00:00:00Z').getUTCDate() === 2" },
      { name: 'date arithmetic', code: 'new Date(Date.UTC(2020, 1, 29)).getUTCMonth() === 1' },
    ],
  });
  t.is(result.report.name, 'clock');
});

test('the clock layer passes the conformance check every layer must pass', async (t) => {
  t.deepEqual(await checkLayerConformance(clock({ at: 0, seed: 7 })), []);
});

test('the clock option takes the options of clock(), { at, seed }, and nothing else', async (t) => {
  const refused = async (options: object, message: RegExp) =>
    t.throwsAsync(IsolatedRuntime.start({ prewarm: false, ...options } as never), { code: 'ERR_STRATA_INVALID_OPTION', message });
  await refused({ clock: new Date(0) }, /clock must be an object \{ at\?, seed\? \} \(got a Date: write clock: \{ at: date \}\)/);
  await refused({ clock: '2026-01-01' }, /clock must be an object/);
  await refused({ clock: { at: 'not a date' } }, /clock\.at must be a Date, an epoch in milliseconds or a date string/);
  await refused({ clock: { seed: -1 } }, /clock\.seed must be an integer from 0 to 4294967295/);
  await refused({ clock: { seed: 1.5 } }, /clock\.seed must be an integer/);
  await refused({ clock: { randomSeed: 1 } }, /clock has unknown fields: randomSeed \(it takes at and seed\)/);
  await refused({ randomSeed: 1 }, /unknown option "randomSeed"/);
  await refused({ clock: {}, layers: [clock()] }, /clock and a clock layer in layers: give one of them/);
  // clock: {} is both defaults
  await using rt = await IsolatedRuntime.start({ clock: {}, prewarm: false });
  t.deepEqual(await rt.eval('[Date.now(), Math.random() === ' + String(seededRandom(0)()) + ']'), [Date.UTC(2026, 0, 1), true]);
});
