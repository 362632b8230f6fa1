import test from 'ava';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createGuest } from './helpers/guest.js';

const run = promisify(execFile);
const fixture = fileURLToPath(new URL('./fixtures/run-guest.js', import.meta.url));
// Node 24's V8 has Temporal (and ShadowRealm) only behind flags; isolates share the process's flags.
const FLAGS = ['--harmony-temporal', '--harmony-shadow-realm'];
const at = Date.UTC(2026, 0, 1, 0, 0, 0, 123);

async function guest(job: Record<string, unknown>): Promise<string> {
  const { stdout } = await run(process.execPath, [...FLAGS, fixture, JSON.stringify({ at, seed: 7, ...job })], { timeout: 15_000 });
  return stdout;
}

const engineHasTemporal = (await guest({ program: 'print(typeof Temporal)' })).trim() === 'object';
const withTemporal = engineHasTemporal ? test : test.skip;
if (!engineHasTemporal) console.warn('Temporal tests skipped: this Node has no Temporal even behind --harmony-temporal');

withTemporal('Temporal.Now answers the frozen time by every function', async (t) => {
  const lines = (
    await guest({
      program: `for (const key of Object.getOwnPropertyNames(Temporal.Now)) {
        const fn = Temporal.Now[key];
        const result = key === 'timeZone' || key === 'timeZoneId' || key.endsWith('ISO') || key === 'instant' ? fn() : fn('iso8601');
        print(key, fn.name, fn.length, String(result));
      }
      print('tokyo', Temporal.Now.zonedDateTimeISO('Asia/Tokyo'));
      print('new-york', Temporal.Now.plainDateTime('iso8601', 'America/New_York'));
      print('ms', Temporal.Now.instant().epochMilliseconds);`,
    })
  )
    .trim()
    .split('\n');
  const frozen = new Map(lines.map((line) => [line.split(' ')[0]!, line]));
  t.is(frozen.get('instant'), 'instant instant 0 2026-01-01T00:00:00.123Z');
  t.is(frozen.get('zonedDateTimeISO'), 'zonedDateTimeISO zonedDateTimeISO 0 2026-01-01T00:00:00.123+00:00[UTC]');
  t.is(frozen.get('plainDateTimeISO'), 'plainDateTimeISO plainDateTimeISO 0 2026-01-01T00:00:00.123');
  t.is(frozen.get('plainDateISO'), 'plainDateISO plainDateISO 0 2026-01-01');
  t.is(frozen.get('plainTimeISO'), 'plainTimeISO plainTimeISO 0 00:00:00.123');
  t.is(frozen.get('tokyo'), 'tokyo 2026-01-01T09:00:00.123+09:00[Asia/Tokyo]');
  t.is(frozen.get('new-york'), 'new-york 2025-12-31T19:00:00.123');
  t.is(frozen.get('ms'), `ms ${at}`);
  // Every function of Temporal.Now is frozen or is the time zone (the worker's TZ, UTC here or not).
  for (const line of lines.slice(0, lines.length - 3)) {
    t.true(line.includes('2026-01-01') || line.includes('00:00:00.123') || line.startsWith('timeZone'), line);
  }
});

withTemporal('the self-test judges Temporal.Now and ShadowRealm too', async (t) => {
  const result = JSON.parse(await guest({ selfTest: true })) as { passed: boolean; report: Record<string, unknown>; failures?: string[] };
  t.deepEqual(result.failures, undefined);
  t.true(result.passed);
  t.is(result.report['temporal'], 'frozen');
});

withTemporal('ShadowRealm, a way to a fresh and real Date, is removed', async (t) => {
  t.is((await guest({ program: `print(typeof ShadowRealm, 'ShadowRealm' in globalThis)` })).trim(), 'undefined false');
});

// Without the flag, Temporal is a stand-in defined before the clock: the shape of any engine's.
const FAKE_TEMPORAL = `globalThis.Temporal = {
  Instant: { fromEpochMilliseconds: (ms) => ({ ms, toString: () => 'instant ' + ms }) },
  Now: { timeZoneId() { return 'UTC'; }, instant() { return 'real'; }, plainDateISO() { return 'real'; }, somethingNew() { return 'real'; } },
};`;

test('a Temporal.Now function the clock does not know is disabled, not left real', (t) => {
  const g = createGuest({ clock: { at: 5 }, before: [FAKE_TEMPORAL] });
  try {
    t.is(g.value('String(Temporal.Now.instant())'), 'instant 5');
    t.is(g.value('Temporal.Now.timeZoneId()'), 'UTC');
    t.throws(() => g.value('Temporal.Now.somethingNew()'), { message: /Temporal\.Now\.somethingNew is disabled by @strata\/layer-clock/ });
    // Known, but this engine lacks what freezing it needs: it throws rather than answer the real time.
    t.throws(() => g.value('Temporal.Now.plainDateISO()'), { message: /frozen by @strata\/layer-clock and this engine lacks/ });
  } finally {
    g.dispose();
  }
});
