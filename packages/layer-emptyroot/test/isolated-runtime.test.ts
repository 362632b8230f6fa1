// End to end through Strata itself: IsolatedRuntime starts a worker whose launch chain runs
// strata-emptyroot before Node; no namespace is ever entered by ava's process.
import test from 'ava';
import { mkdtempSync, rmSync, realpathSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IsolatedRuntime, SandboxUnavailable, defaultLayers } from '@strata/runtime';
import { WEB_POLYFILLS } from '@strata/polyfills';
import { checkGuestStillWorks, checkLayerConformance, platformTest } from '@strata/runtime/testing';
import { emptyroot } from '../src/index.js';
import { NAMESPACES } from '../src/layer.js';

const linux = process.platform === 'linux' && (process.arch === 'x64' || process.arch === 'arm64');
const maybe = platformTest(test.serial, { feature: 'linux', available: linux, reason: 'Linux only (x64 or arm64)' });

maybe('the empty root alone, required: in force, self-tested, verified from outside; guest code still works', async (t) => {
  // Alone (replaceDefaultLayers), so not under sandbox 'require', which would refuse a list
  // without Landlock and seccomp: the layer itself is required.
  await using rt = await IsolatedRuntime.start({
    sandbox: 'auto',
    replaceDefaultLayers: true,
    layers: [emptyroot({ requirement: 'require' })],
    bootstrap: WEB_POLYFILLS,
    prewarm: false,
  });
  t.deepEqual(
    rt.report.layers.map((l) => l.name),
    ['emptyroot'],
  );
  const entry = rt.report.layers.find((l) => l.name === 'emptyroot')!;
  t.deepEqual([entry.enforcement, entry.selfTest, entry.capability.available], ['full', 'passed', true]);
  t.is(entry.capability.detail?.['userNamespaces'], 'available');
  const launch = entry.detail['launch'] as { namespaces: string[]; bound: string[]; symlinks: string[] };
  t.deepEqual(launch.namespaces, [...NAMESPACES]);
  t.true(
    launch.bound.some((p) => /\/libc\.so\.6$/.test(p)),
    'libc is bound',
  );
  t.true(launch.bound.includes('/proc/self/statm'));
  for (const broad of ['/', '/etc', '/usr', '/lib', '/tmp', '/proc', '/home', '/dev']) t.false(launch.bound.includes(broad), broad);
  const selfTest = entry.detail['selfTest'] as { hostPaths: Record<string, string>; writeRoot: string };
  t.true(Object.values(selfTest.hostPaths).every((code) => code === 'ENOENT'));
  t.is(selfTest.writeRoot, 'EROFS');
  // the positive control (the binds work) runs in apply, before any layer's seal; the self-test only tries denials
  t.deepEqual([entry.detail['hostProcessesVisible'], entry.detail['bindsReadable']], [false, true]);
  t.deepEqual(Object.keys(selfTest).sort(), ['hostPaths', 'writeRoot']);
  t.deepEqual(rt.sandboxExtras, ['emptyroot']);
  t.is(rt.sandbox, 'none', 'the empty root alone is an extra, not the sandbox');
  t.deepEqual([...rt.report.verified!.ownNamespaces].sort(), ['ipc', 'mnt', 'net', 'user']);
  t.true(rt.report.verified!.noCapabilities);
  t.deepEqual(await checkGuestStillWorks(rt), []);
});

maybe('the layer conforms: probe pure and stable, report JSON, requirement off skips it', async (t) => {
  t.deepEqual(await checkLayerConformance(emptyroot()), []);
});

maybe("omitDefaultLayers: ['emptyroot'] leaves it out of the defaults; the worker then shares every namespace", async (t) => {
  await using rt = await IsolatedRuntime.start({ sandbox: 'require', omitDefaultLayers: ['emptyroot'], prewarm: false });
  t.deepEqual(
    rt.report.layers.map((l) => l.name),
    defaultLayers()
      .map((d) => d.module.replace(/^@strata\/layer-(.*)\/layer$/, '$1'))
      .filter((n) => n !== 'emptyroot'),
  );
  t.deepEqual(rt.sandboxExtras, []);
  t.deepEqual(rt.report.verified!.ownNamespaces, []);
  t.is(rt.sandbox, 'landlock+seccomp');
  await t.throwsAsync(IsolatedRuntime.start({ omitDefaultLayers: ['empty-root'] }), { message: /omitDefaultLayers names default layers/ });
});

maybe('bindPaths: a directory is bound read-only (and reported); a path that does not exist refuses the start naming it', async (t) => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'strata-bind-')));
  chmodSync(dir, 0o755);
  try {
    // configures the default empty root (layers add to the defaults; one of the same name takes its place)
    await using rt = await IsolatedRuntime.start({ sandbox: 'require', layers: [emptyroot({ bindPaths: [dir] })], prewarm: false });
    t.deepEqual(
      rt.report.layers.map((l) => l.name),
      ['emptyroot', 'landlock', 'seccomp'],
    );
    const launch = rt.report.layers[0]!.detail['launch'] as { bound: string[] };
    t.true(launch.bound.includes(dir));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const error = await t.throwsAsync(IsolatedRuntime.start({ sandbox: 'require', layers: [emptyroot({ bindPaths: ['/does/not/exist'] })], prewarm: false }), {
    instanceOf: SandboxUnavailable,
  });
  t.regex(error!.message, /emptyroot: .*\/does\/not\/exist.*does not exist/);
});

maybe('with every default layer, sandbox require: landlock+seccomp with the empty root, and the guest still works', async (t) => {
  await using rt = await IsolatedRuntime.start({ sandbox: 'require', bootstrap: WEB_POLYFILLS, prewarm: false });
  t.is(rt.sandbox, 'landlock+seccomp');
  t.deepEqual(rt.sandboxExtras, ['emptyroot']);
  t.is(rt.report.verified!.seccomp, 2);
  t.deepEqual(await checkGuestStillWorks(rt), []);
});
