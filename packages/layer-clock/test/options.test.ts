import test from 'ava';
import { readFileSync } from 'node:fs';
import { CLOCK_LAYER_VERSION } from '../src/constants.js';
import { CLOCK_LAYER_MODULE, clock, clockBootstrap, ClockOptionError, DEFAULT_CLOCK_AT, DEFAULT_CLOCK_SEED, seededRandom } from '../src/index.js';
import { StrataError } from '@strata/runtime/layers';

test('clock() names the layer module with normalised, JSON-serialisable options', (t) => {
  const descriptor = clock({ at: '2026-03-04T05:06:07.089Z', seed: 42 });
  t.deepEqual(descriptor, { module: '@strata/layer-clock/layer', options: { at: Date.UTC(2026, 2, 4, 5, 6, 7, 89), seed: 42 } });
  t.deepEqual(JSON.parse(JSON.stringify(descriptor)), descriptor);
  t.true(Object.isFrozen(descriptor));
  t.is(CLOCK_LAYER_MODULE, '@strata/layer-clock/layer');
});

test('defaults: a fixed instant (2026-01-01T00:00:00Z) and seed 0, never the host clock', (t) => {
  t.is(DEFAULT_CLOCK_AT, Date.UTC(2026, 0, 1));
  t.is(DEFAULT_CLOCK_SEED, 0);
  t.deepEqual(clock(), { module: CLOCK_LAYER_MODULE, options: { at: DEFAULT_CLOCK_AT, seed: 0 } });
  t.deepEqual(clock({}), clock());
  t.is(clockBootstrap(), clockBootstrap({ at: DEFAULT_CLOCK_AT, seed: 0 }));
});

test('requirement is passed through when given', (t) => {
  t.is(clock({ requirement: 'require' }).requirement, 'require');
  t.is(clock({ requirement: 'off' }).requirement, 'off');
  t.false('requirement' in clock());
});

const accepted: Array<[label: string, at: Date | number | string, ms: number]> = [
  ['a Date', new Date(Date.UTC(2001, 1, 3)), Date.UTC(2001, 1, 3)],
  ['epoch milliseconds', 1_000_000_000_000, 1_000_000_000_000],
  ['zero', 0, 0],
  ['negative milliseconds', -86_400_000, -86_400_000],
  ['the largest time value', 8.64e15, 8.64e15],
  ['a date (UTC midnight)', '2026-07-01', Date.UTC(2026, 6, 1)],
  ['a date-time in UTC', '2026-07-01T12:34Z', Date.UTC(2026, 6, 1, 12, 34)],
  ['seconds and milliseconds', '2026-07-01T12:34:56.789Z', Date.UTC(2026, 6, 1, 12, 34, 56, 789)],
  ['one fractional digit', '2026-07-01T12:34:56.5Z', Date.UTC(2026, 6, 1, 12, 34, 56, 500)],
  ['an offset', '2026-07-01T12:00:00+02:00', Date.UTC(2026, 6, 1, 10)],
  ['a negative offset', '2026-07-01T12:00:00-05:30', Date.UTC(2026, 6, 1, 17, 30)],
  ['a leap day', '2024-02-29', Date.UTC(2024, 1, 29)],
  ['an expanded year', '+010000-01-01T00:00:00Z', Date.UTC(10000, 0, 1)],
  ['a negative expanded year', '-000001-01-01', -62198755200000],
  ['year 0050 (not 1950)', '0050-01-01', -60589296000000],
];

for (const [label, at, ms] of accepted) {
  test(`accepts at: ${label}`, (t) => {
    t.is(clock({ at }).options.at, ms);
  });
}

const refused: Array<[label: string, options: unknown, message: RegExp]> = [
  ['an invalid Date', { at: new Date(NaN) }, /"at" is an invalid Date/],
  ['NaN', { at: NaN }, /"at" must be an integer number of milliseconds/],
  ['Infinity', { at: Infinity }, /"at" must be an integer/],
  ['fractional milliseconds', { at: 1.5 }, /"at" must be an integer/],
  ['a time past the range of Date', { at: 8.64e15 + 1 }, /at most 8640000000000000/],
  ['a date-time without a zone', { at: '2026-01-01T00:00:00' }, /no time zone.*host's local time.*add "Z"/],
  ['an impossible date', { at: '2026-02-30' }, /not a real date/],
  ['an impossible month', { at: '2026-13-01' }, /not a real date/],
  ['hour 24', { at: '2026-01-01T24:00:00Z' }, /not a real date/],
  ['a bad offset', { at: '2026-01-01T00:00:00+25:00' }, /not a real date/],
  ['year -000000', { at: '-000000-01-01' }, /-000000/],
  ['a non-ISO string', { at: 'March 7, 2019' }, /ISO 8601 date or date-time/],
  ['an empty string', { at: '' }, /ISO 8601/],
  ['a boolean', { at: true }, /"at" must be a Date, epoch milliseconds or an ISO 8601 string; got true/],
  ['null', { at: null }, /"at" must be a Date.*got null/],
  ['a negative seed', { seed: -1 }, /"seed" must be from 0 to 4294967295.*>>> 0/],
  ['a seed of 2^32', { seed: 2 ** 32 }, /"seed" must be from 0 to 4294967295/],
  ['a fractional seed', { seed: 1.5 }, /"seed" must be an integer from 0 to 4294967295; got 1.5/],
  ['a string seed', { seed: '1' }, /"seed" must be an integer.*got "1"/],
  ['a bigint seed', { seed: 1n }, /"seed" must be an integer.*got 1/],
  ['NaN as seed', { seed: NaN }, /"seed" must be an integer/],
  ['an unknown option', { at: 0, seeds: 1 }, /unknown option "seeds"; the options are at, seed, requirement/],
  ['a bad requirement', { requirement: 'always' }, /"requirement" must be one of 'require', 'auto', 'off'; got "always"/],
  ['a non-object', 42, /options must be an object/],
  ['an array', [], /options must be an object.*got an array/],
];

for (const [label, options, message] of refused) {
  test(`refuses ${label}`, (t) => {
    const error = t.throws(() => clock(options as never), { instanceOf: ClockOptionError, message });
    t.is(error?.code, 'ERR_STRATA_LAYER_CONFIG');
    t.regex(error!.message, /^clock\(\): /);
  });
}

test('clockBootstrap() and seededRandom() validate too', (t) => {
  t.throws(() => clockBootstrap({ seed: -1 }), { instanceOf: ClockOptionError, message: /^clockBootstrap\(\): option "seed"/ });
  t.throws(() => clockBootstrap({ requirement: 'off' } as never), { instanceOf: ClockOptionError, message: /unknown option "requirement"/ });
  t.throws(() => seededRandom(2 ** 32), { instanceOf: ClockOptionError, message: /^seededRandom\(\): option "seed"/ });
});

test('the main entry exports what an application or a user configuring the layer needs, nothing internal', async (t) => {
  t.deepEqual(Object.keys(await import('../src/index.js')).sort(), [
    'CLOCK_LAYER_MODULE',
    'ClockOptionError',
    'ClockSelfTestFailed',
    'DEFAULT_CLOCK_AT',
    'DEFAULT_CLOCK_SEED',
    'clock',
    'clockBootstrap',
    'seededRandom',
  ]);
});

test("the layer's version is the package's", (t) => {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string; exports: Record<string, unknown> };
  t.is(CLOCK_LAYER_VERSION, pkg.version);
  t.deepEqual(Object.keys(pkg.exports), ['.', './layer', './package.json']);
});

test("the clock's errors are Strata's: a bad option is a StrataError with the runtime's layer-config code", (t) => {
  const error = t.throws(() => clock({ seed: -1 }), { instanceOf: ClockOptionError });
  t.true(error instanceof StrataError);
  t.is(error?.code, 'ERR_STRATA_LAYER_CONFIG');
  t.is(error?.name, 'ClockOptionError');
});
