// The helper for real, in children (never in ava's own process): the empty root alone, attacked
// from inside by a Node program, and checked from outside through /proc.
import test from 'ava';
import { spawn, spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { readFileSync, readlinkSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dryRun, EMPTYROOT_HELPER, HELPER_EXIT } from '../src/helper.js';
import { rootPlanFor } from '../src/layer.js';
import { helperArguments } from '../src/root-plan.js';
import { platformTest } from '@strata/runtime/testing';

const linux = process.platform === 'linux';
const maybe = platformTest(test, { feature: 'linux', available: linux, reason: 'Linux only (x64 or arm64)' });
const root = process.getuid?.() === 0;
const SIMULATE = join(dirname(fileURLToPath(import.meta.resolve('@strata/runtime/package.json'))), 'build', 'Release', 'strata-simulate-platform');

/** The ids a child runs as: the test's own, or uid/gid 65534 (as strata-exec makes the worker) when `nobody` and root. */
const as = (nobody: boolean) => (nobody && root ? { uid: 65534, gid: 65534 } : {});

const ATTACK = `
import { lstatSync, readdirSync, writeFileSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
const errno = (run) => { try { run(); return 'none'; } catch (e) { return e.code ?? String(e); } };
const tryConnect = (target) => new Promise((resolve) => {
  const s = connect(target);
  const timer = setTimeout(() => { s.destroy(); resolve('timeout'); }, 5000);
  s.once('connect', () => { clearTimeout(timer); s.destroy(); resolve('connected'); });
  s.once('error', (e) => { clearTimeout(timer); resolve(e.code); });
});
const [tcpPort, abstractName, nodeModules] = __ARGS__;
const out = {
  uid: process.getuid(),
  root: readdirSync('/').sort(),
  hostPaths: Object.fromEntries(['/etc/passwd', '/etc/shadow', '/proc/1', '/proc/self/environ', '/proc/self/exe', '/dev/null', '/sys', '/usr/bin/env', '/bin/sh'].map((p) => [p, errno(() => lstatSync(p))])),
  writeRoot: errno(() => writeFileSync('/planted', 'x')),
  writeBound: errno(() => writeFileSync(nodeModules + '/planted', 'x')),
  mkdirProc: errno(() => writeFileSync('/proc/planted', 'x')),
  readBound: errno(() => readFileSync(nodeModules + '/.package-lock.json')),
  tcp: await tryConnect({ host: '127.0.0.1', port: tcpPort }),
  abstractUnix: await tryConnect({ path: '\\0' + abstractName }),
};
console.log(JSON.stringify(out));
`;

let listenerCount = 0;

/** A TCP listener and an abstract unix socket listener in this (the host's) network namespace. */
async function hostListeners(): Promise<{ port: number; abstract: string; servers: Server[]; accepted: () => number }> {
  let accepted = 0;
  const onConnection = (socket: { destroy(): void }) => {
    accepted++;
    socket.destroy();
  };
  const tcp = createServer(onConnection);
  const unix = createServer(onConnection);
  const abstract = `strata-emptyroot-test-${process.pid}-${++listenerCount}`;
  await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
  await new Promise<void>((resolve) => unix.listen({ path: `\0${abstract}` }, resolve));
  return { port: (tcp.address() as { port: number }).port, abstract, servers: [tcp, unix], accepted: () => accepted };
}

for (const nobody of root ? [false, true] : [false]) {
  const who = nobody ? 'as uid 65534' : root ? 'as root' : 'as this user';
  // --no-pivot: the way taken where / is the initramfs's rootfs (pivot_root answers EINVAL there):
  // the new root moved onto / and chroot("."), with the old root's mounts left beneath it.
  for (const noPivot of [false, true]) {
    const how = noPivot ? ' (--no-pivot: MS_MOVE onto / and chroot, as on the initramfs rootfs)' : '';
    maybe(`${who}${how}: inside the empty root the host's paths do not exist, nothing is writable, and the host's network is out of reach`, async (t) => {
      const listeners = await hostListeners();
      try {
        const nodeModules = realpathSync(join(dirname(fileURLToPath(import.meta.resolve('@strata/runtime/package.json'))), '..', '..', 'node_modules'));
        const script = ATTACK.replace('__ARGS__', JSON.stringify([listeners.port, listeners.abstract, nodeModules]));
        const out = await new Promise<Record<string, any>>((resolve, reject) => {
          // Asynchronously: the listeners answer from this process's event loop.
          const args = [...(noPivot ? ['--no-pivot'] : []), ...helperArguments(rootPlanFor({})), '--', process.execPath, '--input-type=module', '-e', script];
          const child = spawn(EMPTYROOT_HELPER, args, { env: {}, cwd: '/', stdio: ['ignore', 'pipe', 'pipe'], ...as(nobody) });
          let stdout = '';
          let stderr = '';
          child.stdout.on('data', (c: Buffer) => (stdout += c));
          child.stderr.on('data', (c: Buffer) => (stderr += c));
          child.on('close', (code) => (code === 0 ? resolve(JSON.parse(stdout.trim().split('\n').pop()!)) : reject(new Error(`exit ${code}: ${stderr}`))));
        });
        t.is(out.uid, nobody && root ? 65534 : process.getuid!(), 'the uid inside is the uid outside');
        for (const [path, code] of Object.entries(out.hostPaths)) t.is(code, 'ENOENT', path);
        // Only what the plan made: no etc/passwd, tmp, home, var... at the top of the new root.
        const top = new Set(rootPlanFor({}).ops.map((o) => o.path.split('/')[1]));
        t.deepEqual(out.root, [...top].sort());
        t.is(out.writeRoot, 'EROFS');
        t.is(out.writeBound, 'EROFS', 'a bound directory is read-only, even to root inside');
        t.is(out.mkdirProc, 'EROFS');
        t.is(out.readBound, 'none', 'the bound files are readable');
        t.true(['ENETUNREACH', 'ECONNREFUSED'].includes(out.tcp), `TCP to the host's 127.0.0.1 gave ${out.tcp}`);
        t.is(out.abstractUnix, 'ECONNREFUSED', "the host's abstract unix sockets are in another network namespace");
        t.is(listeners.accepted(), 0, 'the host accepted no connection');
      } finally {
        for (const server of listeners.servers) server.close();
      }
    });
  }

  maybe(`${who}: from outside, the child has its own user, mount, network and IPC namespaces and no capability at all`, async (t) => {
    const args = [
      ...helperArguments(rootPlanFor({})),
      '--',
      process.execPath,
      '-e',
      'process.stdout.write("ready\\n"); process.stdin.resume(); process.stdin.on("end", () => process.exit(0))',
    ];
    const child = spawn(EMPTYROOT_HELPER, args, { env: {}, cwd: '/', stdio: ['pipe', 'pipe', 'pipe'], ...as(nobody) });
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.once('data', () => resolve());
        child.once('exit', (code) => reject(new Error(`exited ${code}`)));
      });
      const pid = child.pid!;
      for (const ns of ['user', 'mnt', 'net', 'ipc']) t.not(readlinkSync(`/proc/${pid}/ns/${ns}`), readlinkSync(`/proc/self/ns/${ns}`), ns);
      t.is(readlinkSync(`/proc/${pid}/ns/pid`), readlinkSync('/proc/self/ns/pid'), 'no pid namespace: the parent supervises the worker by pid');
      for (const task of spawnSync('ls', [`/proc/${pid}/task`], { encoding: 'utf8' })
        .stdout.trim()
        .split('\n')) {
        const status = readFileSync(`/proc/${pid}/task/${task}/status`, 'latin1');
        for (const set of ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb']) t.regex(status, new RegExp(`^${set}:\\s+0+$`, 'm'), `${set} of thread ${task}`);
      }
      const root = readlinkSync(`/proc/${pid}/root`);
      t.is(root, '/', 'its root is its own (the kernel shows it relative to itself)');
    } finally {
      child.stdin.end();
      await new Promise((resolve) => child.once('close', resolve));
    }
  });
}

maybe("the dry run of the real plan passes here, as the worker's user", (t) => {
  const result = dryRun(helperArguments(rootPlanFor({})));
  t.is(result.verdict, 'available', result.message);
});

maybe('user namespaces forbidden (simulated): the dry run says forbidden, EPERM, and what to do', (t) => {
  const args = ['--no-userns', '--', EMPTYROOT_HELPER, '--dry-run', ...helperArguments(rootPlanFor({})), '--', EMPTYROOT_HELPER];
  const child = spawnSync(SIMULATE, args, { env: {}, encoding: 'utf8', timeout: 10_000, cwd: '/', ...as(true) });
  t.is(child.status, HELPER_EXIT.unshare);
  t.regex(child.stderr, /^strata-emptyroot: unshare: EPERM: /m);
});

maybe('--no-pivot: the dry run passes, and the host is out of reach from the moved root as from the pivoted one', (t) => {
  const child = spawnSync(EMPTYROOT_HELPER, ['--no-pivot', '--dry-run', ...helperArguments(rootPlanFor({})), '--', EMPTYROOT_HELPER], {
    env: {},
    encoding: 'utf8',
    timeout: 10_000,
    cwd: '/',
    ...as(true),
  });
  t.is(child.status, 0, child.stderr);
  t.is(child.stdout, 'ok\n');
});

maybe('bad arguments are usage errors (status 120), before anything is unshared', (t) => {
  const run = (...args: string[]) => spawnSync(EMPTYROOT_HELPER, args, { env: {}, encoding: 'utf8', timeout: 10_000 });
  for (const args of [
    ['--', '/bin/true'],
    ['--stage', '/mnt', '--bind-dir', '/usr/../etc', '--', '/bin/true'],
    ['--stage', '/mnt', '--bind-dir', 'usr', '--', '/bin/true'],
    ['--stage', '/mnt', '--bind-dir', '/usr//lib', '--', '/bin/true'],
    ['--stage', '/mnt', '--mkdir', '/', '--', '/bin/true'],
    ['--stage', '/mnt', '--bind', '/usr', '--', '/bin/true'],
    ['--stage', '/mnt', '--', 'true'],
    ['--stage', '/mnt', '--bind-dir', '/usr'],
    ['--stage', '/mnt', '--symlink', 'x'],
  ]) {
    const child = run(...args);
    t.is(child.status, HELPER_EXIT.usage, args.join(' '));
    t.regex(child.stderr, /^strata-emptyroot: usage: /, args.join(' '));
  }
});

maybe('a failing op names its path and stops the launch (status 123)', (t) => {
  const child = spawnSync(EMPTYROOT_HELPER, ['--stage', '/mnt', '--bind-file', '/does/not/exist', '--', '/bin/true'], {
    env: {},
    encoding: 'utf8',
    timeout: 10_000,
    cwd: '/',
    ...as(true),
  });
  t.is(child.status, HELPER_EXIT.root);
  t.regex(child.stderr, /strata-emptyroot: root: ENOENT: \/does\/not\/exist/);
});
