import { fileURLToPath, pathToFileURL } from 'node:url';
import test from 'ava';
import type { LayerDescriptor } from '../src/index.js';
import { checkLayerConformance, testLayer } from '../src/testing/index.js';
import { checkNoLeaks } from './helpers/leaks.js';

checkNoLeaks(test);

const CONFIGURABLE = new URL('./fixtures/layers/configurable-layer.js', import.meta.url).href;
const EXAMPLE_PACKAGE = pathToFileURL(fileURLToPath(new URL('../../../../fixtures/layer-example/index.js', import.meta.url))).href;
const example = async (options?: object) => ((await import(EXAMPLE_PACKAGE)) as { default: (o?: object) => LayerDescriptor }).default(options);

test('testLayer runs must-deny and must-allow cases in a worker and passes a layer that keeps them', async (t) => {
  const result = await testLayer(await example({ marker: 'm' }), {
    mustAllow: [{ name: 'the marker is there', code: 'exampleLayerMarker === "m"' }],
    mustDeny: [
      { name: 'the marker cannot be redefined', code: 'try { Object.defineProperty(globalThis, "exampleLayerMarker", { value: 1 }); true } catch { false }' },
    ],
  });
  t.is(result.report.name, 'example');
  t.deepEqual(result.failures, []);
});

test('testLayer reports every case that went the wrong way', async (t) => {
  const error = await t.throwsAsync(
    testLayer(await example(), {
      mustAllow: [
        { name: 'math works', code: '1 + 1 === 2' },
        { name: 'a wrong expectation', code: 'false' },
      ],
      mustDeny: [{ name: 'something that is not denied', code: 'true' }],
    }),
  );
  t.regex(error?.message ?? '', /failed 2 case\(s\)/);
  t.regex(error?.message ?? '', /must allow, but it evaluated to false: a wrong expectation/);
  t.regex(error?.message ?? '', /must deny, but it got through: something that is not denied/);
});

const conformant: [string, () => Promise<LayerDescriptor>][] = [
  ['the third-party example layer', () => example()],
  ['a fully provided layer', async () => ({ module: CONFIGURABLE, options: { name: 'full-layer' } })],
  ['a partly provided layer', async () => ({ module: CONFIGURABLE, options: { name: 'partial-layer', probe: 'partial' } })],
  ['an unavailable layer', async () => ({ module: CONFIGURABLE, options: { name: 'absent-layer', probe: 'none' } })],
];
for (const [label, descriptor] of conformant) {
  test(`conformance: ${label} passes`, async (t) => {
    t.deepEqual(await checkLayerConformance(await descriptor()), []);
  });
}

test('conformance: a probe that answers differently each time is caught', async (t) => {
  const problems = await checkLayerConformance({ module: CONFIGURABLE, options: { name: 'impure', impureProbe: true } });
  t.deepEqual(problems, ['the probe answered differently the second time']);
});

test('conformance: a seal that is not a function is named, without starting a worker', async (t) => {
  const problems = await checkLayerConformance({ module: CONFIGURABLE, options: { name: 'bad-seal', badSeal: true } });
  t.deepEqual(problems, ['its seal hook must be a function when present']);
});

test('conformance: a layer without a seal conforms (seal is optional)', async (t) => {
  t.deepEqual(await checkLayerConformance({ module: CONFIGURABLE, options: { name: 'no-seal', noSeal: true } }), []);
});

test('checkGuestStillWorks passes a healthy runtime and names what a broken one lost', async (t) => {
  const { IsolatedRuntime } = await import('../src/index.js');
  const { checkGuestStillWorks } = await import('../src/testing/index.js');
  {
    await using rt = await IsolatedRuntime.start({ prewarm: false });
    t.deepEqual(await checkGuestStillWorks(rt), []);
  }
  {
    // A "layer" that takes the console away and breaks big allocations: both are named.
    await using rt = await IsolatedRuntime.start({
      prewarm: false,
      bootstrap: 'globalThis.console = undefined; Array.prototype.fill = () => { throw new Error("broken") }',
    });
    const problems = await checkGuestStillWorks(rt);
    t.true(
      problems.some((p) => p.startsWith('console capture:')),
      problems.join('\n'),
    );
    t.true(
      problems.some((p) => p.startsWith('a large allocation:')),
      problems.join('\n'),
    );
  }
});
