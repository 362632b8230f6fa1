import { fileURLToPath, pathToFileURL } from 'node:url';
import test from 'ava';
import { IsolatedRuntime, InvalidOption, LayerConfigError, LayerFailed, SandboxUnavailable, type LayerDescriptor } from '../src/index.js';
import { checkNoLeaks } from './helpers/leaks.js';
import { layerPathOf } from '../src/layers/pipeline.js';
import { warningsDuring } from './helpers/warnings.js';

checkNoLeaks(test);

const CONFIGURABLE = new URL('./fixtures/layers/configurable-layer.js', import.meta.url).href;
const EXAMPLE_PACKAGE = pathToFileURL(fileURLToPath(new URL('../../../../fixtures/layer-example/index.js', import.meta.url))).href;

const layer = (options: Record<string, unknown>, requirement?: LayerDescriptor['requirement']): LayerDescriptor => ({
  module: CONFIGURABLE,
  options,
  ...(requirement === undefined ? {} : { requirement }),
});

test('a third-party layer outside node_modules works beside the default layers: they grant and bind its directory themselves', async (t) => {
  const example = ((await import(EXAMPLE_PACKAGE)) as { default: (o?: object) => LayerDescriptor }).default;
  // `layers` adds to the defaults: no need to spread defaultLayers()
  await using rt = await IsolatedRuntime.start({ sandbox: 'require', layers: [example({ marker: 'beside' })] });
  t.deepEqual(
    rt.report.layers.map((l) => l.name),
    ['emptyroot', 'landlock', 'seccomp', 'example'],
  );
  t.is(await rt.eval('exampleLayerMarker'), 'beside');
  t.deepEqual(rt.sandboxExtras, ['emptyroot']);
  t.is(rt.sandbox, 'landlock+seccomp');
  const bound = (rt.report.layers.find((l) => l.name === 'emptyroot')!.detail['launch'] as { bound: string[] }).bound;
  t.true(bound.includes(layerPathOf(EXAMPLE_PACKAGE)!), 'its package directory is bound, not more');
  t.regex(layerPathOf(EXAMPLE_PACKAGE)!, /\/fixtures\/layer-example$/);
  t.is(layerPathOf('@strata/layer-clock/layer'), undefined);
});

test('a third-party layer from a package outside packages/ works end to end', async (t) => {
  const example = ((await import(EXAMPLE_PACKAGE)) as { default: (o?: object) => LayerDescriptor }).default;
  await using rt = await IsolatedRuntime.start({ sandbox: 'require', layers: [example({ marker: 'hello' })] });
  t.is(await rt.eval('exampleLayerMarker'), 'hello');
  const entry = rt.report.layers.find((l) => l.name === 'example');
  t.deepEqual(entry, {
    name: 'example',
    version: '1.2.3',
    requirement: 'require',
    capability: { available: true, provides: ['example-marker'], missing: [] },
    enforcement: 'full',
    selfTest: 'passed',
    detail: { marker: 'hello', selfTestSaw: 'hello' },
  });
  t.true(Object.isFrozen(rt.report.layers[0]));
  t.deepEqual(JSON.parse(JSON.stringify(rt.report)), rt.report);
});

test('require: a probe gap refuses the start before any layer is applied, naming every gap', async (t) => {
  const error = await t.throwsAsync(
    IsolatedRuntime.start({
      sandbox: 'require',
      // `first` would throw in apply if anything were applied before the refusal.
      layers: [layer({ name: 'first', throwIn: 'apply' }), layer({ name: 'half', probe: 'partial' }), layer({ name: 'gone', probe: 'none' })],
    }),
    { instanceOf: SandboxUnavailable },
  );
  t.is(error?.code, 'ERR_STRATA_SANDBOX_UNAVAILABLE');
  t.regex(error?.message ?? '', /half: half-other-thing/);
  t.regex(error?.message ?? '', /gone: gone-other-thing/);
  t.regex(error?.message ?? '', /requirement: 'auto'/);
});

test('auto: the same gaps start with a process warning naming each missing layer', async (t) => {
  const { value: rt, warnings: seen } = await warningsDuring(() =>
    IsolatedRuntime.start({
      sandbox: 'auto',
      replaceDefaultLayers: true,
      layers: [layer({ name: 'whole' }), layer({ name: 'half', probe: 'partial' }), layer({ name: 'gone', probe: 'none' })],
    }),
  );
  await using _ = rt;
  t.deepEqual(
    rt.report.layers.map((l) => [l.name, l.requirement, l.enforcement, l.selfTest]),
    [
      ['whole', 'auto', 'full', 'passed'],
      ['half', 'auto', 'partial', 'passed'],
      ['gone', 'auto', 'none', 'skipped'],
    ],
  );
  const warnings = seen.map((w) => w.message);
  t.true(
    warnings.some((w) => /half is only partly in force: half-other-thing/.test(w)),
    warnings.join('\n'),
  );
  t.true(
    warnings.some((w) => /gone is not in force: gone-other-thing/.test(w)),
    warnings.join('\n'),
  );
  t.deepEqual(await rt.eval('appliedLayers'), ['whole', 'half']);
});

test('a per-layer requirement overrides the sandbox mode', async (t) => {
  await t.throwsAsync(IsolatedRuntime.start({ sandbox: 'auto', layers: [layer({ name: 'strict', probe: 'partial' }, 'require')] }), {
    instanceOf: SandboxUnavailable,
  });
  await using rt = await IsolatedRuntime.start({ sandbox: 'require', layers: [layer({ name: 'lenient', probe: 'none' }, 'off'), layer({ name: 'fine' })] });
  t.deepEqual(
    rt.report.layers.map((l) => [l.name, l.requirement, l.enforcement]),
    [
      ['emptyroot', 'require', 'full'],
      ['landlock', 'require', 'full'],
      ['seccomp', 'require', 'full'],
      ['lenient', 'off', 'none'],
      ['fine', 'require', 'full'],
    ],
  );
});

for (const sandbox of ['require', 'auto'] as const) {
  for (const hook of ['probe', 'apply', 'seal', 'selfTest'] as const) {
    test(`${sandbox}: a layer whose ${hook} throws fails the start with LayerFailed`, async (t) => {
      const error = await t.throwsAsync(IsolatedRuntime.start({ sandbox, layers: [layer({ name: 'buggy', throwIn: hook })] }), { instanceOf: LayerFailed });
      t.is(error?.code, 'ERR_STRATA_LAYER_FAILED');
      t.is(error?.layer, 'buggy');
      t.is(error?.hook, hook);
      t.regex(error?.message ?? '', new RegExp(`buggy throws in ${hook} as asked`));
    });
  }
}

test('layers run in the user order within pre / normal / post', async (t) => {
  await using rt = await IsolatedRuntime.start({
    replaceDefaultLayers: true,
    layers: [layer({ name: 'late', order: 'post' }), layer({ name: 'one' }), layer({ name: 'early', order: 'pre' }), layer({ name: 'two' })],
  });
  t.deepEqual(
    rt.report.layers.map((l) => l.name),
    ['early', 'one', 'two', 'late'],
  );
  t.deepEqual(await rt.eval('appliedLayers'), ['early', 'one', 'two', 'late']);
});

// The worker's phases, table-tested: every apply, then every seal, then every selfTest, each in
// layer order, only for the layers applied. Read from the last layer's report (its selfTest logs
// every configurable hook the worker ran before it).
const phaseTable: [string, LayerDescriptor[], string[]][] = [
  ['two layers with seals', [layer({ name: 'a' }), layer({ name: 'b' })], ['a.apply', 'b.apply', 'a.seal', 'b.seal', 'a.selfTest', 'b.selfTest']],
  ['a layer without a seal', [layer({ name: 'a', noSeal: true }), layer({ name: 'b' })], ['a.apply', 'b.apply', 'b.seal', 'a.selfTest', 'b.selfTest']],
  [
    'pre / normal / post',
    [layer({ name: 'late', order: 'post' }), layer({ name: 'mid' }), layer({ name: 'early', order: 'pre' })],
    ['early.apply', 'mid.apply', 'late.apply', 'early.seal', 'mid.seal', 'late.seal', 'early.selfTest', 'mid.selfTest', 'late.selfTest'],
  ],
  ['a layer not applied (auto, probe none) runs no hook', [layer({ name: 'gone', probe: 'none' }), layer({ name: 'a' })], ['a.apply', 'a.seal', 'a.selfTest']],
];
for (const [label, layers, phases] of phaseTable) {
  test(`phase order: ${label}`, async (t) => {
    await using rt = await IsolatedRuntime.start({ sandbox: 'auto', prewarm: false, replaceDefaultLayers: true, layers });
    const last = rt.report.layers[rt.report.layers.length - 1]!;
    t.deepEqual(last.detail['selfTestSaw'], phases);
    // each seal ran after every apply
    const applies = phases.filter((p) => p.endsWith('.apply'));
    for (const entry of rt.report.layers) {
      const sealSaw = entry.detail['sealSaw'] as string[] | undefined;
      if (sealSaw !== undefined) t.deepEqual(sealSaw.slice(0, applies.length), applies, entry.name);
    }
  });
}

test("every worker hook sees its layer's capability as the parent probed it", async (t) => {
  await using rt = await IsolatedRuntime.start({
    sandbox: 'auto',
    prewarm: false,
    replaceDefaultLayers: true,
    layers: [layer({ name: 'half', probe: 'partial' })],
  });
  const [entry] = rt.report.layers;
  t.deepEqual(entry!.capability.provides, ['half-thing']);
  for (const key of ['applyCapability', 'sealCapability', 'selfTestCapability']) t.deepEqual(entry!.detail[key], ['half-thing'], key);
});

test('a throwing seal stops the start before any selfTest, and the error crosses the wire with its hook', async (t) => {
  const error = await t.throwsAsync(
    IsolatedRuntime.start({
      sandbox: 'auto',
      replaceDefaultLayers: true,
      layers: [layer({ name: 'first' }), layer({ name: 'breaks', throwIn: 'seal' }), layer({ name: 'after', throwIn: 'selfTest' })],
    }),
    {
      instanceOf: LayerFailed,
    },
  );
  // `after` would throw in selfTest: the seal's failure came first
  t.deepEqual([error?.layer, error?.hook], ['breaks', 'seal']);
  t.is(error?.message, 'layer breaks: seal failed: breaks throws in seal as asked');
  t.deepEqual([LayerFailed.fromMessage(error!.message).layer, LayerFailed.fromMessage(error!.message).hook], ['breaks', 'seal']);
});

test('misconfigured layers are LayerConfigError or InvalidOption, before the guest runs', async (t) => {
  await t.throwsAsync(IsolatedRuntime.start({ layers: [layer({ name: 'twin' }), layer({ name: 'twin' })] }), {
    instanceOf: LayerConfigError,
    message: /twin: two layers have this name/,
  });
  await t.throwsAsync(IsolatedRuntime.start({ layers: [{ module: 'node:path' }] }), { instanceOf: LayerConfigError, message: /default export/ });
  await t.throwsAsync(IsolatedRuntime.start({ layers: [{ module: 'file:///nonexistent/layer.js' }] }), {
    instanceOf: LayerConfigError,
    message: /cannot import/,
  });
  await t.throwsAsync(IsolatedRuntime.start({ layers: [layer({ name: 'Bad Name' })] }), { instanceOf: LayerConfigError, message: /lower-case/ });
  await t.throwsAsync(IsolatedRuntime.start({ layers: [layer({ name: 'bad-seal', badSeal: true })] }), {
    instanceOf: LayerConfigError,
    message: /bad-seal: its seal hook must be a function when present/,
  });
  await t.throwsAsync(IsolatedRuntime.start({ layers: [{ module: CONFIGURABLE, requirement: 'maybe' as never }] }), { instanceOf: InvalidOption });
  await t.throwsAsync(IsolatedRuntime.start({ layers: [{ module: CONFIGURABLE, options: { when: new Date(0), fn: () => 1 } as never }] }), {
    instanceOf: InvalidOption,
    message: /plain data/,
  });
  await t.throwsAsync(IsolatedRuntime.start({ replaceDefaultLayers: 'yes' as never, layers: [] }), {
    instanceOf: InvalidOption,
    message: /replaceDefaultLayers must be true or false/,
  });
  await t.throwsAsync(IsolatedRuntime.start({ replaceDefaultLayers: true }), { instanceOf: InvalidOption, message: /give layers too/ });
});

test("sandbox: 'off' skips every layer that does not insist", async (t) => {
  await using rt = await IsolatedRuntime.start({ sandbox: 'off', layers: [layer({ name: 'skipped' })] });
  t.deepEqual(
    rt.report.layers.map((l) => [l.name, l.requirement, l.enforcement, l.selfTest]),
    [
      ['emptyroot', 'off', 'none', 'skipped'],
      ['landlock', 'off', 'none', 'skipped'],
      ['seccomp', 'off', 'none', 'skipped'],
      ['skipped', 'off', 'none', 'skipped'],
    ],
  );
  t.is(rt.sandbox, 'none');
  t.is(await rt.eval('typeof appliedLayers'), 'undefined');
});

test('a layer can add a link to the launch chain: it runs before Node, as the worker', async (t) => {
  // nice(1) as the link: observable from outside as the worker's niceness. Alone: behind the
  // empty root's link, /usr/bin/nice would not exist.
  await using rt = await IsolatedRuntime.start({
    prewarm: false,
    replaceDefaultLayers: true,
    layers: [layer({ name: 'niced', launch: { program: '/usr/bin/nice', args: ['-n', '7'] } })],
  });
  const { readFileSync } = await import('node:fs');
  const stat = readFileSync(`/proc/${rt.pid}/stat`, 'latin1');
  const niceness = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
  t.is(niceness, 7);
  t.is(await rt.eval('1 + 1'), 2);
  t.true(rt.report.verified!.noNewPrivs, 'the base hardening still holds through the link');
});

test('a layer module is built once per start in the parent (the plan carries it), and once in its worker', async (t) => {
  const key = 'built-once';
  const parentBuilds = () => globalThis.strataLayerBuilds?.[key] ?? 0;
  const counted = layer({ name: 'counted', buildsKey: key });
  const workerBuilds = (rt: IsolatedRuntime) => rt.report.layers.find((l) => l.name === 'counted')?.detail['workerBuilds'];
  {
    await using rt = await IsolatedRuntime.start({ sandbox: 'require', layers: [counted] });
    t.is(parentBuilds(), 1, 'composing, probing and launching share one build');
    t.is(workerBuilds(rt), 1);
  }
  {
    await using rt = await IsolatedRuntime.start({ sandbox: 'require', layers: [counted] });
    t.is(parentBuilds(), 2, 'the next start builds it again, once');
    t.is(workerBuilds(rt), 1, 'in a worker of its own');
  }
  // Refused by the plan after its probe: still built once.
  await t.throwsAsync(IsolatedRuntime.start({ sandbox: 'require', layers: [layer({ name: 'counted', buildsKey: key, probe: 'partial' })] }), {
    instanceOf: SandboxUnavailable,
  });
  t.is(parentBuilds(), 3);
});

test("a probe's notes reach the report as given; notes that are not strings are LayerFailed before any worker starts", async (t) => {
  await using rt = await IsolatedRuntime.start({
    sandbox: 'auto',
    prewarm: false,
    replaceDefaultLayers: true,
    layers: [layer({ name: 'noted', notes: ['the kernel is newer than this layer knows'] })],
  });
  t.deepEqual(rt.report.layers[0]!.capability.notes, ['the kernel is newer than this layer knows']);
  t.is(rt.report.layers[0]!.enforcement, 'full', 'a note changes no verdict');
  for (const notes of ['one string', [1], [null], { 0: 'x' }]) {
    await t.throwsAsync(IsolatedRuntime.start({ sandbox: 'auto', replaceDefaultLayers: true, layers: [layer({ name: 'misnoted', notes })] }), {
      instanceOf: LayerFailed,
      message: /misnoted: probe failed: .*notes\?: string\[\]/,
    });
  }
});

test('a launch hook that throws, or returns a bad step, is LayerFailed before any worker starts', async (t) => {
  await t.throwsAsync(IsolatedRuntime.start({ layers: [layer({ name: 'bad-launch', throwInLaunch: true })] }), {
    instanceOf: LayerFailed,
    message: /bad-launch: launch failed/,
  });
  await t.throwsAsync(IsolatedRuntime.start({ layers: [layer({ name: 'relative', launch: { program: 'nice' } })] }), {
    instanceOf: LayerFailed,
    message: /absolute path/,
  });
});

test("a layer's imports of @strata/runtime's layer-author entry points get the worker's own modules, with every export", async (t) => {
  const SHARED = new URL('./fixtures/layers/shared-runtime-layer.js', import.meta.url).href;
  await using rt = await IsolatedRuntime.start({ sandbox: 'auto', prewarm: false, replaceDefaultLayers: true, layers: [{ module: SHARED }] });
  const detail = rt.report.layers.find((l) => l.name === 'shared-runtime')!.detail;
  t.is(detail['resolved'], 'strata-worker:@strata/runtime/layers');
  t.true(detail['sameErrorClass']);
  t.true(detail['sameNativeHelper']);
  // the same names as the package's own entry point, as the parent imports it
  const own = Object.keys(await import('@strata/runtime/layers'))
    .sort()
    .join(',');
  t.is(detail['exportsAll'], own);
});
