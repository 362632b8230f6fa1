// `layers` adds to this platform's default layers, and `sandbox: 'require'` never starts without
// the OS sandbox (docs/design.md §2): each configuration that used to drop it silently, attempted for
// real. Its own file: process warnings are emitted once per text per process, so the warnings
// asserted here must not have been emitted by another file's tests first.
import test from 'ava';
import { InvalidOption, IsolatedRuntime, SandboxPool, SandboxUnavailable, type LayerDescriptor } from '../src/index.js';
import { checkNoLeaks, childPids } from './helpers/leaks.js';
import { warningsDuring } from './helpers/warnings.js';
import { platformTest } from '../src/testing/platform.js';

checkNoLeaks(test);

const linux = process.platform === 'linux' && (process.arch === 'x64' || process.arch === 'arm64');
const maybe = platformTest(test.serial, { feature: 'linux', available: linux, reason: 'Linux only (x64 or arm64)' });

const clock: LayerDescriptor = { module: '@strata/layer-clock/layer', options: { at: 0, seed: 1 } };
const emptyroot: LayerDescriptor = { module: '@strata/layer-emptyroot/layer' };
const landlock: LayerDescriptor = { module: '@strata/layer-landlock/layer' };
const seccomp: LayerDescriptor = { module: '@strata/layer-seccomp/layer' };
const names = (rt: IsolatedRuntime) => rt.report.layers.map((l) => l.name);

maybe('require with layers: [clock]: the clock joins the defaults, and the OS sandbox is in force', async (t) => {
  const { value: rt, warnings } = await warningsDuring(() => IsolatedRuntime.start({ sandbox: 'require', prewarm: false, layers: [clock] }));
  await using _ = rt;
  t.is(rt.sandbox, 'landlock+seccomp');
  t.deepEqual(rt.sandboxExtras, ['emptyroot']);
  t.deepEqual(names(rt), ['emptyroot', 'landlock', 'seccomp', 'clock']);
  t.true(rt.report.layers.every((l) => l.requirement === 'require' && l.enforcement === 'full' && l.selfTest === 'passed'));
  t.is(rt.report.verified?.seccomp, 2);
  t.is(await rt.eval('Date.now()'), 0);
  t.deepEqual(warnings, []);
});

maybe('require with layers: [emptyroot()]: the same defaults, the empty root once', async (t) => {
  await using rt = await IsolatedRuntime.start({ sandbox: 'require', prewarm: false, layers: [emptyroot] });
  t.is(rt.sandbox, 'landlock+seccomp');
  t.deepEqual(rt.sandboxExtras, ['emptyroot']);
  t.deepEqual(names(rt), ['emptyroot', 'landlock', 'seccomp']);
});

maybe(
  'default layers given again (seccomp, a configured landlock, the empty root last) are not doubled: each takes its own place, in the platform order',
  async (t) => {
    await using rt = await IsolatedRuntime.start({
      sandbox: 'require',
      prewarm: false,
      layers: [seccomp, { ...landlock, options: { readPaths: ['/usr'] } }, clock, emptyroot],
    });
    t.deepEqual(names(rt), ['emptyroot', 'landlock', 'seccomp', 'clock']);
    t.is(rt.report.layers[1]!.detail['readPaths'], 1, 'the configured landlock replaced the default one');
    t.is(rt.sandbox, 'landlock+seccomp');
  },
);

maybe('replaceDefaultLayers with only the clock, require: refused before any worker starts, naming each default and what to do', async (t) => {
  const before = childPids().length;
  const error = await t.throwsAsync(IsolatedRuntime.start({ sandbox: 'require', prewarm: false, replaceDefaultLayers: true, layers: [clock] }), {
    instanceOf: SandboxUnavailable,
  });
  t.is(error?.code, 'ERR_STRATA_SANDBOX_UNAVAILABLE');
  for (const name of ['landlock', 'seccomp', 'emptyroot'])
    t.regex(
      error!.message,
      new RegExp(`${name} is not in layers, which replaceDefaultLayers: true makes the whole list \\(add ${name}\\(\\) from @strata/layer-${name}\\)`),
    );
  t.regex(error!.message, /emptyroot \(omitDefaultLayers: \['emptyroot'\]\)/);
  t.regex(error!.message, /sandbox: 'auto'/);
  t.is(childPids().length, before, 'no worker was started');
  // the pool is the same construction: refused in its start()
  await t.throwsAsync(SandboxPool.start({ sandbox: 'require', replaceDefaultLayers: true, layers: [clock] }), {
    instanceOf: SandboxUnavailable,
    message: /landlock is not in layers/,
  });
  t.is(childPids().length, before, 'no pool worker was started');
});

maybe('replaceDefaultLayers with only the clock, auto: starts without the OS sandbox, and a STRATA_SANDBOX_DEGRADED warning names each default', async (t) => {
  const { value: rt, warnings } = await warningsDuring(() =>
    IsolatedRuntime.start({ sandbox: 'auto', prewarm: false, replaceDefaultLayers: true, layers: [clock] }),
  );
  await using _ = rt;
  t.deepEqual(names(rt), ['clock']);
  t.is(rt.sandbox, 'none');
  t.deepEqual(rt.sandboxExtras, []);
  const degraded = warnings.filter((w) => w.code === 'STRATA_SANDBOX_DEGRADED');
  t.is(degraded.length, 1, JSON.stringify(warnings));
  t.regex(degraded[0]!.message, /^Strata: sandbox 'auto': the worker runs without the default layers emptyroot, landlock, seccomp: /);
  for (const name of ['landlock', 'seccomp', 'emptyroot']) t.regex(degraded[0]!.message, new RegExp(`${name} is not in layers`));
  t.is(await rt.eval('Date.now()'), 0);
});

maybe('replaceDefaultLayers with all three defaults, require: starts with the OS sandbox, in the order given', async (t) => {
  await using rt = await IsolatedRuntime.start({
    sandbox: 'require',
    prewarm: false,
    replaceDefaultLayers: true,
    layers: [emptyroot, landlock, clock, seccomp],
  });
  t.deepEqual(names(rt), ['emptyroot', 'landlock', 'clock', 'seccomp']);
  t.is(rt.sandbox, 'landlock+seccomp');
  t.deepEqual(rt.sandboxExtras, ['emptyroot']);
});

maybe("omitDefaultLayers: ['emptyroot'] with require: the named opt-out starts without the empty root, without a refusal or a warning", async (t) => {
  const { value: rt, warnings } = await warningsDuring(() =>
    IsolatedRuntime.start({ sandbox: 'require', prewarm: false, omitDefaultLayers: ['emptyroot'], layers: [clock] }),
  );
  await using _ = rt;
  t.deepEqual(names(rt), ['landlock', 'seccomp', 'clock']);
  t.is(rt.sandbox, 'landlock+seccomp');
  t.deepEqual(rt.sandboxExtras, []);
  t.deepEqual(warnings, []);
  // replaceDefaultLayers with the opt-out: landlock and seccomp are then the whole requirement
  await using alone = await IsolatedRuntime.start({
    sandbox: 'require',
    prewarm: false,
    omitDefaultLayers: ['emptyroot'],
    replaceDefaultLayers: true,
    layers: [seccomp, landlock],
  });
  t.deepEqual(names(alone), ['seccomp', 'landlock']);
  t.is(alone.sandbox, 'landlock+seccomp');
});

maybe('omitDefaultLayers of a layer of the OS sandbox: refused under require before any worker starts; under auto left out as asked', async (t) => {
  const before = childPids().length;
  await t.throwsAsync(IsolatedRuntime.start({ sandbox: 'require', prewarm: false, omitDefaultLayers: ['seccomp'] }), {
    instanceOf: SandboxUnavailable,
    message: /seccomp is left out by omitDefaultLayers, and it is part of the OS sandbox/,
  });
  t.is(childPids().length, before, 'no worker was started');
  const { value: rt, warnings } = await warningsDuring(() => IsolatedRuntime.start({ sandbox: 'auto', prewarm: false, omitDefaultLayers: ['seccomp'] }));
  await using _ = rt;
  t.deepEqual(names(rt), ['emptyroot', 'landlock']);
  t.is(rt.sandbox, 'none', 'the OS sandbox is not whole without seccomp, and the report says so');
  t.deepEqual(warnings, []);
});

test('omitDefaultLayers takes names of default layers only', async (t) => {
  await t.throwsAsync(IsolatedRuntime.start({ omitDefaultLayers: ['clock'] }), {
    instanceOf: InvalidOption,
    message: /omitDefaultLayers names default layers \(emptyroot, landlock, seccomp, seatbelt\); "clock" is not one/,
  });
  await t.throwsAsync(IsolatedRuntime.start({ omitDefaultLayers: 'emptyroot' as never }), {
    instanceOf: InvalidOption,
    message: /omitDefaultLayers must be an array/,
  });
  await t.throwsAsync(IsolatedRuntime.start({ emptyRoot: false } as never), { instanceOf: InvalidOption, message: /emptyRoot/ });
});

maybe("require never starts with the OS sandbox turned off by a layer's own requirement; the empty root's own 'off' is a named opt-out", async (t) => {
  const error = await t.throwsAsync(IsolatedRuntime.start({ sandbox: 'require', prewarm: false, layers: [{ ...landlock, requirement: 'off' }] }), {
    instanceOf: SandboxUnavailable,
  });
  t.regex(error!.message, /landlock has requirement: 'off', and it is part of the OS sandbox/);
  await using rt = await IsolatedRuntime.start({ sandbox: 'require', prewarm: false, layers: [{ ...emptyroot, requirement: 'off' }] });
  t.is(rt.sandbox, 'landlock+seccomp');
  t.deepEqual(rt.sandboxExtras, []);
});

maybe("sandbox 'none' with replaceDefaultLayers: nothing required, nothing warned", async (t) => {
  const { value: rt, warnings } = await warningsDuring(() =>
    IsolatedRuntime.start({ sandbox: 'off', prewarm: false, replaceDefaultLayers: true, layers: [clock] }),
  );
  await using _ = rt;
  t.is(rt.sandbox, 'none');
  t.deepEqual(warnings, []);
});

test('a default layer whose package is not installed is a LayerConfigError naming the package, in auto and require alike', async (t) => {
  const { spawnSync } = await import('node:child_process');
  const { fileURLToPath } = await import('node:url');
  const hook = fileURLToPath(new URL('./fixtures/missing-layer/hide-landlock.js', import.meta.url));
  const index = new URL('../src/index.js', import.meta.url).href;
  for (const sandbox of ['auto', 'require']) {
    const program = `const { IsolatedRuntime } = await import(${JSON.stringify(index)});
      try { const rt = await IsolatedRuntime.start({ sandbox: '${sandbox}', prewarm: false }); console.log('started', rt.sandbox); await rt.close(); }
      catch (e) { console.log(e.code + ' ' + e.message); }`;
    const run = spawnSync(process.execPath, ['--import', hook, '--input-type=module', '-e', program], { encoding: 'utf8', timeout: 60_000 });
    t.regex(
      run.stdout,
      /^ERR_STRATA_LAYER_CONFIG layer landlock: it is one of this platform's default layers and its package is not installed: install @strata\/layer-landlock/,
      `${sandbox}: ${run.stdout}${run.stderr}`,
    );
  }
});
