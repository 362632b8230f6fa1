// The descriptor, the layer factory and its hooks, called directly. Nothing here applies a
// profile to ava's process: on macOS the dry runs happen in throwaway children.
import test from 'ava';
import { existsSync } from 'node:fs';
import type { ApplyContext, ProbeContext } from '@strata/runtime/layers';
import { ADDON_PATH, addonUnavailableReason } from '../src/addon.js';
import { dryRun } from '../src/dry-run.js';
import { SEATBELT_LAYER_MODULE, seatbelt } from '../src/index.js';
import seatbeltLayer, { PROVIDES, profileFor } from '../src/layer.js';
import { checkProfile } from '../src/profile.js';
import { offMac, onMac, when } from './when.js';
import { LayerConfigError } from '@strata/runtime/layers';

const probeContext = (platform: NodeJS.Platform, options: Record<string, unknown> = {}): ProbeContext => ({ platform, arch: process.arch, options });

test('seatbelt() names the layer module, checks its options and passes the requirement through', (t) => {
  t.is(SEATBELT_LAYER_MODULE, '@strata/layer-seatbelt/layer');
  t.deepEqual(seatbelt(), { module: SEATBELT_LAYER_MODULE, options: {} });
  t.deepEqual(seatbelt({ requirement: 'require', readPaths: ['/srv'] }), {
    module: SEATBELT_LAYER_MODULE,
    options: { readPaths: ['/srv'] },
    requirement: 'require',
  });
  t.deepEqual(seatbelt({ requirement: 'off' }), { module: SEATBELT_LAYER_MODULE, options: {}, requirement: 'off' });
  t.true(Object.isFrozen(seatbelt()));
  t.throws(() => seatbelt({ requirement: 'sometimes' as never }), {
    instanceOf: LayerConfigError,
    code: 'ERR_STRATA_LAYER_CONFIG',
    message: /"requirement" must be 'require', 'auto' or 'off'/,
  });
  t.throws(() => seatbelt({ writePaths: ['/tmp'] } as never), {
    instanceOf: LayerConfigError,
    code: 'ERR_STRATA_LAYER_CONFIG',
    message: /unknown option "writePaths"/,
  });
  t.throws(() => seatbelt({ readPaths: ['relative'] }), { instanceOf: LayerConfigError, code: 'ERR_STRATA_LAYER_CONFIG', message: /absolute/ });
  t.throws(() => seatbelt({ readPaths: ['/a"b'] }), { instanceOf: LayerConfigError, code: 'ERR_STRATA_LAYER_CONFIG', message: /double quote/ });
  t.throws(() => seatbelt({ readPaths: '/srv' as never }), { instanceOf: LayerConfigError, code: 'ERR_STRATA_LAYER_CONFIG', message: /array of strings/ });
  t.throws(() => seatbelt(null as never), { instanceOf: LayerConfigError, code: 'ERR_STRATA_LAYER_CONFIG' });
});

test('the main entry exports the factory and its module name, nothing internal', async (t) => {
  t.deepEqual(Object.keys(await import('../src/index.js')).sort(), ['SEATBELT_LAYER_MODULE', 'seatbelt']);
});

test('the layer factory: name, version, hooks; unknown options and bad readPaths are refused', (t) => {
  const layer = seatbeltLayer({});
  t.is(layer.name, 'seatbelt');
  t.is(layer.version, '0.1.0');
  t.is(layer.launch, undefined, 'Seatbelt is applied in the worker: no launch step');
  for (const hook of ['probe', 'apply', 'selfTest'] as const) t.is(typeof layer[hook], 'function');
  t.throws(() => seatbeltLayer({ nope: 1 }), { message: /unknown option\(s\) nope; the layer takes readPaths/ });
  t.throws(() => seatbeltLayer({ readPaths: ['x'] }), { instanceOf: LayerConfigError, code: 'ERR_STRATA_LAYER_CONFIG', message: /absolute/ });
  t.deepEqual(PROVIDES, ['fs-deny', 'net-deny', 'exec-deny', 'signal-self', 'process-info-self']);
});

test('the probe elsewhere than macOS: unavailable, saying so (no side effects: the same answer twice)', async (t) => {
  const layer = seatbeltLayer({});
  for (const platform of ['linux', 'win32', 'freebsd'] as const) {
    const expected = { available: false, provides: [], missing: [`Seatbelt is macOS only (this is ${platform})`] };
    t.deepEqual(await layer.probe(probeContext(platform)), expected);
    t.deepEqual(await layer.probe(probeContext(platform)), expected);
  }
});

offMac('the probe on Linux reports Seatbelt unavailable with the platform named', async (t) => {
  t.deepEqual(await seatbeltLayer({}).probe(probeContext(process.platform)), {
    available: false,
    provides: [],
    missing: [`Seatbelt is macOS only (this is ${process.platform})`],
  });
});

when(!existsSync(ADDON_PATH), 'the addon is built here')('the probe on macOS without the addon built says how to build it', async (t) => {
  const capability = await seatbeltLayer({}).probe(probeContext('darwin'));
  t.false(capability.available);
  t.deepEqual(capability.provides, []);
  t.is(capability.missing.length, 1);
  t.regex(capability.missing[0]!, /^the seatbelt addon is not built \(.*strata_seatbelt\.node\): run `npm rebuild @strata\/layer-seatbelt`/);
  t.is(addonUnavailableReason('darwin'), capability.missing[0]);
});

offMac('apply refuses to run anywhere but macOS, before doing anything', (t) => {
  const reported: unknown[] = [];
  const context: ApplyContext = {
    platform: process.platform,
    options: {},
    capability: { available: false, provides: [], missing: ['not macOS'] },
    addContextBootstrap: () => t.fail(),
    report: (d) => reported.push(d),
  };
  t.throws(() => seatbeltLayer({}).apply(context), { message: `Seatbelt is macOS only (this is ${process.platform})` });
  t.deepEqual(reported, []);
});

test("profileFor: the worker's profile here passes its own check and is the same every time", (t) => {
  const a = profileFor({});
  const b = profileFor({});
  t.is(a.profile, b.profile);
  t.regex(a.sha256, /^[0-9a-f]{64}$/);
  t.deepEqual(checkProfile(a.profile), []);
  t.true(a.reads.length >= 3);
  // Node's binary: its own literal rule, or beneath a subpath (here it is under node_modules/node-<os>-<cpu>)
  const node = a.reads[0]!.path;
  t.true(a.profile.includes(`(literal "${node}")`) || a.reads.some((r) => r.kind === 'subpath' && node.startsWith(`${r.path}/`)));
  t.throws(() => profileFor({ readPaths: ['/does/not/exist/strata'] }), { message: /does not exist/ });
});

onMac('the probe on macOS: available after a dry run in a throwaway child', async (t) => {
  const layer = seatbeltLayer({});
  const capability = await layer.probe(probeContext('darwin'));
  t.deepEqual(capability, { available: true, provides: [...PROVIDES], missing: [], detail: { dryRun: 'passed' } });
  t.deepEqual(await layer.probe(probeContext('darwin')), capability);
});

onMac('the dry run catches a profile that lets reads through, and one Seatbelt cannot compile', (t) => {
  const { profile } = profileFor({});
  const leaky = profile.replace('(allow file-read-data file-read-metadata\n', '(allow file-read-data file-read-metadata\n  (subpath "/private/etc")\n');
  t.regex(dryRun(leaky) ?? '', /reading \/etc\/passwd gave none/);
  t.regex(dryRun('(version 1)\n(deny default)\n(allow no-such-operation)\n') ?? '', /sandbox_init/);
});
