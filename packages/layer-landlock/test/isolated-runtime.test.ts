// End to end through Strata itself: IsolatedRuntime starts a worker (a child process) whose launch
// chain runs strata-landlock before Node; the domain is never made in ava's process.
import test from 'ava';
import { mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IsolatedRuntime, type IsolatedRuntime as Rt } from '@strata/runtime';
import { WEB_POLYFILLS } from '@strata/polyfills';
import { seccomp } from '@strata/layer-seccomp';
import { checkGuestStillWorks, platformTest } from '@strata/runtime/testing';
import { landlock } from '../src/index.js';
import { landlockAbi } from '../src/helper.js';
import { STACK_MIN_ABI } from '../src/stack.js';
import { LayerConfigError } from '@strata/runtime/layers';

const descriptor = (options: Parameters<typeof landlock>[0] = {}) => landlock(options);

const linux = process.platform === 'linux' && (process.arch === 'x64' || process.arch === 'arm64');
const maybe = platformTest(test.serial, { feature: 'linux', available: linux, reason: 'Linux only (x64 or arm64)' });

const kernel = linux ? landlockAbi() : undefined;
const abiHere = kernel && 'abi' in kernel ? kernel.abi : 0;
const stacks = abiHere >= STACK_MIN_ABI;

/** What the report says about the ABI ≥ 8 stacking on this kernel, with stackAfterLoad on. */
const stackedHere = stacks ? 'deny-all-fs (TSYNC)' : `not available on ABI ${abiHere} (needs ${STACK_MIN_ABI})`;

async function guestStillWorks(t: import('ava').ExecutionContext, rt: Rt): Promise<void> {
  t.deepEqual(await checkGuestStillWorks(rt), []);
}

function landlockEntry(t: import('ava').ExecutionContext, rt: Rt) {
  const entry = rt.report.layers.find((l) => l.name === 'landlock');
  t.truthy(entry);
  t.is(entry!.enforcement, 'full');
  t.is(entry!.selfTest, 'passed');
  t.true(entry!.capability.available);
  t.is(entry!.version, '0.1.0');
  return entry!;
}

maybe("sandbox 'auto' with the Landlock layer alone: full, self-tested; guest code still works", async (t) => {
  const rt = await IsolatedRuntime.start({ sandbox: 'auto', replaceDefaultLayers: true, layers: [descriptor()], bootstrap: WEB_POLYFILLS });
  try {
    const entry = landlockEntry(t, rt);
    const abi = entry.capability.detail!.abi as number;
    t.true(abi >= 1);
    t.is(entry.detail.abi, abi);
    t.is(entry.detail.readPaths, 0);
    t.is(entry.detail.ownFilesReadable, true, "apply's positive control: the read set works");
    t.true((entry.detail.rights as string[]).includes('fs.write_file'));
    // errata: the same answer in the parent's probe (the helper) and in the worker (the addon)
    t.is(typeof entry.capability.detail!.errata, 'number');
    t.is(entry.detail.errata, entry.capability.detail!.errata);
    t.is(entry.capability.detail!.stackAfterLoad, stacks ? 'deny-all-fs (TSYNC), test-fired' : stackedHere);
    t.is(entry.detail.stacked, stackedHere);
    const covered = entry.detail.threadsCovered as Record<string, unknown>;
    // Node runs several threads before any JavaScript (main, V8 platform workers, libuv's pool)
    t.true(typeof covered.threads === 'number' && covered.threads >= 4, JSON.stringify(covered));
    t.is(covered.how, 'inherited: the domain was made before Node started (pre-exec)');
    t.is(covered.checked, "listing / from libuv's pool refused (8 of 8 EACCES)");
    t.is('stack' in covered, stacks);
    const selfTest = entry.detail.selfTest as Record<string, string>;
    t.is(selfTest.readOutside, 'EACCES');
    t.is(selfTest.write, 'EACCES');
    t.is(selfTest.readOwn, stacks ? 'EACCES' : 'none');
    if (abi >= 4) t.is(selfTest.tcpConnect, 'EACCES');
    if (abi >= 6) t.is(selfTest.signalParent, 'EPERM');
    // from outside: the worker runs with no_new_privs (the helper set it before execve)
    t.regex(readFileSync(`/proc/${rt.pid}/status`, 'utf8'), /^NoNewPrivs:\s+1$/m);
    await guestStillWorks(t, rt);
  } finally {
    await rt.close();
  }
});

maybe("sandbox 'require' with Landlock and seccomp: rt.sandbox is 'landlock+seccomp'", async (t) => {
  // The defaults without the empty root (its named opt-out): Landlock and seccomp.
  const rt = await IsolatedRuntime.start({ sandbox: 'require', omitDefaultLayers: ['emptyroot'], layers: [descriptor(), seccomp()], bootstrap: WEB_POLYFILLS });
  try {
    t.is(rt.sandbox, 'landlock+seccomp');
    const entry = landlockEntry(t, rt);
    const selfTest = entry.detail.selfTest as Record<string, string>;
    // seccomp refuses socket(AF_INET) before Landlock sees the connect: either denial is fine
    t.true(['EACCES', 'EPERM'].includes(selfTest.tcpConnect!));
    const sec = rt.report.layers.find((l) => l.name === 'seccomp');
    t.is(sec?.enforcement, 'full');
    t.is(sec?.selfTest, 'passed');
    await guestStillWorks(t, rt);
  } finally {
    await rt.close();
  }
});

maybe('stackAfterLoad: false is reported as off, in the probe and in the worker', async (t) => {
  const rt = await IsolatedRuntime.start({ sandbox: 'require', omitDefaultLayers: ['emptyroot'], layers: [descriptor({ stackAfterLoad: false })] });
  try {
    const entry = landlockEntry(t, rt);
    t.is(entry.capability.detail!.stackAfterLoad, 'off (stackAfterLoad: false)');
    t.is(entry.detail.stacked, 'off (stackAfterLoad: false)');
    t.false(entry.capability.provides.includes('tsync-stack'));
    t.is((entry.detail.selfTest as Record<string, string>).readOwn, 'none');
    t.is(await rt.eval('6 * 7'), 42);
  } finally {
    await rt.close();
  }
  t.throws(() => descriptor({ stackAfterLoad: 'no' as never }), { instanceOf: LayerConfigError, code: 'ERR_STRATA_LAYER_CONFIG' });
});

maybe('readPaths are counted in the report; a relative one is refused', async (t) => {
  const extra = mkdtempSync(join(realpathSync(tmpdir()), 'strata-landlock-extra-'));
  // Without the empty root: under it, `extra` would also need emptyroot({ bindPaths }).
  const rt = await IsolatedRuntime.start({ sandbox: 'require', omitDefaultLayers: ['emptyroot'], layers: [descriptor({ readPaths: [extra] })] });
  try {
    t.is(landlockEntry(t, rt).detail.readPaths, 1);
  } finally {
    await rt.close();
    rmSync(extra, { recursive: true, force: true });
  }
  t.throws(() => descriptor({ readPaths: ['etc'] }), { instanceOf: LayerConfigError, code: 'ERR_STRATA_LAYER_CONFIG' });
});

maybe('seccomp before Landlock: still full and self-tested; the addon still tells the ABI and errata (no exec needed)', async (t) => {
  // The whole list, in this order (merged into the defaults, they would keep the platform's order).
  const rt = await IsolatedRuntime.start({
    sandbox: 'require',
    omitDefaultLayers: ['emptyroot'],
    replaceDefaultLayers: true,
    layers: [seccomp(), descriptor()],
  });
  t.deepEqual(
    rt.report.layers.map((l) => l.name),
    ['seccomp', 'landlock'],
  );
  try {
    t.is(rt.sandbox, 'landlock+seccomp');
    const entry = landlockEntry(t, rt);
    t.is(entry.detail.abi, abiHere);
    t.is(entry.detail.errata, entry.capability.detail!.errata);
    t.is(entry.detail.stacked, stackedHere);
    const selfTest = entry.detail.selfTest as Record<string, string>;
    t.is(selfTest.readOutside, 'EACCES');
    t.is(selfTest.write, 'EACCES');
    t.is(selfTest.signalParent, 'EPERM');
    t.is(await rt.eval('6 * 7'), 42);
  } finally {
    await rt.close();
  }
});
