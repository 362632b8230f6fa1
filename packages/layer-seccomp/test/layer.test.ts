// The layer module and the addon, without ever installing a filter in this (ava's) process.
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import seccompLayer, { selfTestAttempts, testFire } from '../src/layer.js';
import { addonUnavailableReason, loadAddon } from '../src/addon.js';
import { syscallNumber } from '../src/compile-filter.js';
import { ERRNO } from '../src/policy.js';
import { platformTest } from '@strata/runtime/testing';

const linux = process.platform === 'linux' && (process.arch === 'x64' || process.arch === 'arm64');
const maybe = platformTest(test, { feature: 'linux', available: linux, reason: 'Linux only (x64 or arm64)' });
const version = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

test('the factory makes a layer named seccomp with the package version, and refuses options', (t) => {
  const layer = seccompLayer({});
  t.is(layer.name, 'seccomp');
  t.is(layer.version, version);
  for (const hook of ['probe', 'apply', 'selfTest'] as const) t.is(typeof layer[hook], 'function');
  t.throws(() => seccompLayer({ strict: true }), { message: /unknown option\(s\) strict/ });
});

test('probe: unavailable off Linux and on other architectures, naming why', async (t) => {
  const layer = seccompLayer();
  const mac = await layer.probe({ platform: 'darwin', arch: 'arm64', options: {} });
  t.false(mac.available);
  t.regex(mac.missing[0]!, /Linux only/);
  const riscv = await layer.probe({ platform: 'linux', arch: 'riscv64', options: {} });
  t.false(riscv.available);
  t.regex(riscv.missing[0]!, /x86_64 and aarch64 only/);
});

maybe('probe on this machine: the test-fire child succeeds, so the layer is available', async (t) => {
  t.is(addonUnavailableReason(), undefined);
  t.is(testFire(), undefined);
  const capability = await seccompLayer().probe({ platform: process.platform, arch: process.arch, options: {} });
  t.true(capability.available, capability.missing.join('; '));
  t.deepEqual(capability.missing, []);
  t.true(capability.provides.includes('all-threads'));
  t.true(JSON.parse(JSON.stringify(capability)).available); // serialisable
});

maybe('the addon: rawSyscall reaches the kernel; this process has no filter; bad filters are refused before any effect', (t) => {
  const addon = loadAddon();
  const arch = process.arch === 'x64' ? 'x86_64' : 'aarch64';
  t.is(addon.rawSyscall(syscallNumber('getpid', arch)!), process.pid);
  t.is(addon.rawSyscall(syscallNumber('close', arch)!, -1), -9); // EBADF
  t.is(addon.rawSyscall(syscallNumber('read', arch)!, -1, 0n, 0), -9);
  t.is(addon.mode(), 0, "no filter in ava's own process");
  t.is(addon.noNewPrivs(), 0);
  t.throws(() => addon.install('nope' as never), { instanceOf: TypeError, message: /must be a Buffer/ });
  t.throws(() => addon.install(Buffer.alloc(0)), { instanceOf: RangeError });
  t.throws(() => addon.install(Buffer.alloc(12)), { instanceOf: RangeError });
  t.throws(() => addon.rawSyscall(1.5), { instanceOf: TypeError });
  t.is(addon.mode(), 0);
  t.is(addon.noNewPrivs(), 0);
});

maybe('the addon, in a child: an invalid program fails loudly with the errno; a valid one is in force on every thread', (t) => {
  const script = `
    import { loadAddon } from ${JSON.stringify(new URL('../src/addon.js', import.meta.url).href)};
    const addon = loadAddon();
    let message = '';
    // a jump past the end of the program: the kernel's checker refuses it (EINVAL)
    try { addon.install(Buffer.from([0x05, 0, 0, 0, 9, 0, 0, 0])); } catch (e) { message = e.message + ' ' + e.code; }
    const ret = Buffer.from([0x06, 0, 0, 0, 0, 0, 0xff, 0x7f]); // ret ALLOW
    addon.install(ret);
    console.log(JSON.stringify({ message, mode: addon.mode(), nnp: addon.noNewPrivs() }));`;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  t.is(child.status, 0, child.stderr);
  const out = JSON.parse(child.stdout) as { message: string; mode: number; nnp: number };
  t.regex(out.message, /^strata-seccomp: seccomp\(SECCOMP_SET_MODE_FILTER, TSYNC\): Invalid argument \(errno 22\) ERR_STRATA_SECCOMP$/);
  t.is(out.mode, 2);
  t.is(out.nnp, 1);
});

test('selfTestAttempts: each expects EPERM except clone3 and openat2 (ENOSYS), for both architectures', (t) => {
  for (const arch of ['x86_64', 'aarch64'] as const) {
    const attempts = selfTestAttempts(arch, 1234);
    t.true(attempts.length >= 17);
    for (const a of attempts) t.is(a.expect, a.what === 'clone3' || a.what === 'openat2' ? -ERRNO.ENOSYS : -ERRNO.EPERM, a.what);
    t.true(attempts.some((a) => a.what.startsWith('openat(') && a.what.includes('O_TRUNC')));
    t.true(attempts.some((a) => a.what.startsWith('truncate(')));
    t.true(attempts.some((a) => a.what.startsWith('x32') && a.nr >= 0x40000000));
  }
});
