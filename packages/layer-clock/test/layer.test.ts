import test from 'ava';
import { CLOCK_PROVIDES } from '../src/constants.js';
import { clock, clockBootstrap, ClockOptionError, ClockSelfTestFailed } from '../src/index.js';
import clockLayer from '../src/layer.js';
import type { ApplyContext, Layer, LayerCapability, SelfTestContext } from '@strata/runtime/layers';
import { AT, DISABLE_CODE_GENERATION, freshGuestEvaluator, type GuestOptions } from './helpers/guest.js';

/** Runs `apply` against a fake context and returns what the layer asked for. */
/** What the clock's probe finds everywhere (the pipeline hands it to every hook). */
const FULL: LayerCapability = { available: true, provides: [...CLOCK_PROVIDES], missing: [] };

async function applyLayer(layer: Layer): Promise<{ bootstraps: string[]; report: Record<string, unknown> }> {
  const bootstraps: string[] = [];
  const report: Record<string, unknown> = {};
  const context: ApplyContext = {
    platform: 'linux',
    options: {},
    capability: FULL,
    addContextBootstrap: (source) => void bootstraps.push(source),
    report: (detail) => void Object.assign(report, detail),
  };
  await layer.apply(context);
  return { bootstraps, report };
}

/** Runs `selfTest` with `evalInGuest` backed by fresh isolates set up by `setup`. */
async function selfTest(layer: Layer, setup: GuestOptions): Promise<Record<string, unknown>> {
  const report: Record<string, unknown> = {};
  const context: SelfTestContext = {
    platform: 'linux',
    options: {},
    capability: FULL,
    evalInGuest: freshGuestEvaluator(setup),
    report: (detail) => void Object.assign(report, detail),
  };
  await layer.selfTest(context);
  return report;
}

test('the factory builds a frozen layer from descriptor options', (t) => {
  const layer = clockLayer(clock({ at: '2026-05-05T00:00:00Z', seed: 9 }).options);
  t.is(layer.name, 'clock');
  t.is(layer.version, '0.1.0');
  t.is(layer.order, undefined);
  t.true(Object.isFrozen(layer));
  t.deepEqual(clockLayer().name, 'clock');
});

test('the factory refuses bad options, naming the layer', (t) => {
  t.throws(() => clockLayer({ seed: -1 }), { instanceOf: ClockOptionError, message: /^layer "clock": option "seed"/ });
  t.throws(() => clockLayer({ at: 'yesterday' }), { instanceOf: ClockOptionError });
  t.throws(() => clockLayer({ requirement: 'auto' }), { instanceOf: ClockOptionError, message: /unknown option "requirement"/ });
});

test('probe: available everywhere, provides the frozen clock and seeded random, misses nothing', async (t) => {
  const layer = clockLayer();
  for (const platform of ['linux', 'darwin', 'win32', 'freebsd'] as const) {
    const capability = await layer.probe({ platform, arch: 'x64', options: {} });
    t.deepEqual(capability, { available: true, provides: [...CLOCK_PROVIDES], missing: [] });
  }
  t.deepEqual([...CLOCK_PROVIDES], ['frozen-date', 'frozen-intl-date', 'frozen-temporal-now', 'seeded-random']);
});

test('apply adds the bootstrap to every context and reports the clock', async (t) => {
  const { bootstraps, report } = await applyLayer(clockLayer({ at: Date.UTC(2027, 1, 2), seed: 77 }));
  t.deepEqual(bootstraps, [clockBootstrap({ at: Date.UTC(2027, 1, 2), seed: 77 })]);
  t.deepEqual(report, { at: '2027-02-02T00:00:00.000Z', seed: 77, random: 'sfc32' });
  t.deepEqual(JSON.parse(JSON.stringify(report)), report);
});

// --- must pass ------------------------------------------------------------------------------

const passing: Array<[label: string, setup: (bootstrap: string) => GuestOptions, performance: string]> = [
  ['a bare context', (bootstrap) => ({ bootstrap }), 'absent'],
  ['after WEB_POLYFILLS', (bootstrap) => ({ polyfills: true, bootstrap }), 'aligned'],
  ['with code generation disabled', (bootstrap) => ({ polyfills: true, bootstrap, after: [DISABLE_CODE_GENERATION] }), 'aligned'],
];

for (const [label, setup, performance] of passing) {
  test(`selfTest passes in ${label}`, async (t) => {
    const layer = clockLayer({ at: AT + 123, seed: 31337 });
    const { bootstraps } = await applyLayer(layer);
    const report = await selfTest(layer, setup(bootstraps[0]!));
    t.is(report['temporal'], 'absent');
    t.is(report['performance'], performance);
    t.true((report['routes'] as number) >= 14, `routes ${report['routes']}`);
    t.true((report['walked'] as number) > 500, `walked ${report['walked']}`);
  });
}

// --- must fail, naming the route --------------------------------------------------------------

const config = { at: AT, seed: 1 };
const bootstrap = clockBootstrap(config);
const failing: Array<[label: string, setup: GuestOptions, routes: RegExp[]]> = [
  [
    'no clock at all',
    { clock: false },
    [/^Date\.now\(\) gave \d+, not 1767225600000$/, /^new Date\(\)/, /^Date\(\)/, /^Math\.random\(\) gave .* \(seed 1\)$/, /^Intl\.DateTimeFormat#format\(\)/],
  ],
  [
    'a bootstrap that leaves Date.now real',
    { bootstrap: `const realNow = Date.now;\n${bootstrap}\nDate.now = realNow;` },
    [/^Date\.now\(\) gave \d+, not 1767225600000$/, /^every Date constructor reachable from globalThis globalThis\.Date\.now\(\) gives \d+/],
  ],
  [
    'a bootstrap that leaks the original Date',
    { bootstrap: `globalThis.RealDate = Date;\n${bootstrap}` },
    [/^every Date constructor reachable from globalThis globalThis\.RealDate constructs \d+/],
  ],
  [
    'a bootstrap that leaves Intl formatting real',
    {
      bootstrap: `const real = Object.getOwnPropertyDescriptor(Intl.DateTimeFormat.prototype, 'format');\n${bootstrap}\nObject.defineProperty(Intl.DateTimeFormat.prototype, 'format', real);`,
    },
    [/^Intl\.DateTimeFormat#format\(\) gave/, /^Intl\.DateTimeFormat\(\)\.format\(\) gave/],
  ],
  ['a bootstrap with another seed', { clock: { at: AT, seed: 2 } }, [/^Math\.random\(\) gave 0\.\d+ as value 1, not 0\.42564993195549927 \(seed 1\)$/]],
  ['a bootstrap with another time', { clock: { at: AT + 1, seed: 1 } }, [/^Date\.now\(\) gave 1767225600001, not 1767225600000$/]],
  [
    'a ShadowRealm left in place',
    { bootstrap: `${bootstrap}\nglobalThis.ShadowRealm = function ShadowRealm() {};`, polyfills: false },
    [/^ShadowRealm is defined/],
  ],
  [
    'performance.timeOrigin left real',
    { polyfills: true, bootstrap: `${bootstrap}\nObject.defineProperty(Object.getPrototypeOf(performance), 'timeOrigin', { get() { return 0; } });` },
    [/^performance\.timeOrigin gave 0, not 1767225600000$/],
  ],
];

for (const [label, setup, routes] of failing) {
  test(`selfTest fails with ${label}, naming the route`, async (t) => {
    const error = await t.throwsAsync(selfTest(clockLayer(config), setup), { instanceOf: ClockSelfTestFailed });
    t.is(error?.code, 'ERR_STRATA_LAYER_FAILED');
    for (const route of routes)
      t.true(
        error!.failures.some((failure) => route.test(failure)),
        `${route} in ${JSON.stringify(error!.failures, null, 1)}`,
      );
    t.regex(error!.message, /^@strata\/layer-clock: the guest still reaches real time or randomness: /);
  });
}

test('selfTest fails when the guest returns no verdict', async (t) => {
  const layer = clockLayer();
  const context: SelfTestContext = { platform: 'linux', options: {}, capability: FULL, evalInGuest: async () => undefined, report: () => {} };
  await t.throwsAsync(async () => layer.selfTest(context), { instanceOf: ClockSelfTestFailed, message: /returned no verdict \(got undefined\)/ });
});
