import test from 'ava';
import { platformTest } from '../src/testing/platform.js';
import { unreachableByNobody } from '../src/isolated/reachable-by-nobody.js';
import { spawn, spawnSync, type StdioOptions } from 'node:child_process';
import { closeSync, copyFileSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { execHelperPath } from '../src/native/native-paths.js';

// strata-exec runs `node -e PROBE`, and PROBE prints the state the helper left behind as JSON.

const node = process.execPath;
const helper = execHelperPath();
const NOBODY = 65534;
// Linux only, so process.getuid() and friends exist.
const self = { uid: process.getuid!(), gid: process.getgid!(), groups: process.getgroups!() };
const isRoot = self.uid === 0;

const PROBE = `
const fs = require('fs');
const status = fs.readFileSync('/proc/self/status', 'utf8');
const field = (name) => status.match(new RegExp('^' + name + ':[ \\\\t]*(.*)$', 'm'))[1];
const limits = fs.readFileSync('/proc/self/limits', 'utf8');
const limit = (label) => limits.match(new RegExp('^' + label + '\\\\s+(\\\\S+)\\\\s+(\\\\S+)', 'm')).slice(1);
const fds = {};
for (const fd of fs.readdirSync('/proc/self/fd')) {
  try { fds[fd] = fs.readlinkSync('/proc/self/fd/' + fd); } catch {}
}
let regain;
try { process.setuid(0); regain = 'root'; } catch (error) { regain = error.code; }
console.log(JSON.stringify({
  env: process.env,
  uid: process.getuid(), gid: process.getgid(), groups: process.getgroups(),
  supplementaryGroups: field('Groups'),
  uids: field('Uid').split(/\\s+/).map(Number), gids: field('Gid').split(/\\s+/).map(Number),
  capPrm: field('CapPrm'), capEff: field('CapEff'), capAmb: field('CapAmb'),
  noNewPrivs: field('NoNewPrivs'),
  core: limit('Max core file size'), cpu: limit('Max cpu time'), nofile: limit('Max open files'),
  fds, regain,
}));
`;

interface Probe {
  env: Record<string, string>;
  uid: number;
  gid: number;
  groups: number[];
  supplementaryGroups: string;
  uids: number[];
  gids: number[];
  capPrm: string;
  capEff: string;
  capAmb: string;
  noNewPrivs: string;
  core: string[];
  cpu: string[];
  nofile: string[];
  fds: Record<string, string>;
  regain: string;
}

interface Exit {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], stdio: StdioOptions = ['ignore', 'pipe', 'pipe']): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio, env: { ...process.env, STRATA_TEST_SECRET: 'must not leak' } });
    let stdout = '';
    let stderr = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (status, signal) => resolve({ status, signal, stdout, stderr }));
  });
}

async function probe(options: string[], stdio?: StdioOptions): Promise<Probe> {
  const exit = await run(helper, [...options, '--', node, '-e', PROBE], stdio);
  if (exit.status !== 0) throw new Error(`strata-exec exited with ${exit.status ?? exit.signal}: ${exit.stderr}`);
  return JSON.parse(exit.stdout) as Probe;
}

/** Why uid 65534 cannot execute `file` (mode bits for "other" on it and every directory above), or undefined. */
const notExecutableByNobody = (file: string) => unreachableByNobody(file, 0o001);

function firstLine(stream: Readable): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      text += chunk;
      if (text.includes('\n')) resolve(text.slice(0, text.indexOf('\n')));
    });
    stream.on('end', () => reject(new Error(`no line before end of output: ${JSON.stringify(text)}`)));
  });
}

/** 'gone', 'Z' (dead, not yet reaped) or the live state letter of a process. */
function processState(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return 'gone';
  }
}

async function isDeadWithin(pid: number, ms: number): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((resolve) => setTimeout(resolve, 20))) {
    const state = processState(pid);
    if (state === 'gone' || state === 'Z') return true;
  }
  return false;
}

/** Starts `sh` as the parent of `program...`; resolves with the shell and the pid the program prints first. */
async function underShell(program: string[]): Promise<{ shell: ReturnType<typeof spawn>; pid: number }> {
  const shell = spawn('/bin/sh', ['-c', '"$@" & wait', 'sh', ...program], { stdio: ['ignore', 'pipe', 'inherit'] });
  const pid = Number(await firstLine(shell.stdout!));
  return { shell, pid };
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

const SLEEPER = 'console.log(process.pid); setInterval(() => {}, 1000);';

test('execHelperPath() is the prebuilt strata-exec for this platform and arch, else the one built in build/Release', (t) => {
  t.regex(helper, /\/(prebuilds\/linux-[a-z0-9]+(-musl)?|build\/Release)\/strata-exec$/);
  t.true((statSync(helper).mode & 0o111) !== 0);
});

test('execHelperPath() without a build says how to build it', async (t) => {
  // A copy of the compiled module in a package root that has no build/ directory.
  const root = mkdtempSync(join(tmpdir(), 'strata-native-paths-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, 'dist/src/native'), { recursive: true });
  copyFileSync(fileURLToPath(new URL('../src/native/native-paths.js', import.meta.url)), join(root, 'dist/src/native/native-paths.js'));
  copyFileSync(fileURLToPath(new URL('../src/native/native-artifact.js', import.meta.url)), join(root, 'dist/src/native/native-artifact.js'));
  const copy = (await import(pathToFileURL(join(root, 'dist/src/native/native-paths.js')).href)) as { execHelperPath(): string };
  const error = t.throws(() => copy.execHelperPath());
  t.regex(error?.message ?? '', /build\/Release\/strata-exec is missing: run `npm ci` \(or `npm rebuild @strata\/runtime`\)/);
});

test('the program gets exactly TZ=UTC, LANG=C and LC_ALL=C, never the parent environment', async (t) => {
  const state = await probe([]);
  t.deepEqual(state.env, { TZ: 'UTC', LANG: 'C', LC_ALL: 'C' });
});

test('core dumps are off; --cpu-seconds N sets the RLIMIT_CPU soft limit, keeping the hard one; --nofile N sets RLIMIT_NOFILE', async (t) => {
  const own = /^Max cpu time\s+(\S+)\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.slice(1);
  const state = await probe(['--cpu-seconds', '30', '--nofile', '256']);
  t.deepEqual(state.core, ['0', '0']);
  t.deepEqual(state.cpu, ['30', own?.[1]]);
  t.deepEqual(state.nofile, ['256', '256']);
});

test('without --cpu-seconds the CPU limit is inherited; core dumps are still off', async (t) => {
  const own = /^Max cpu time\s+(\S+)\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.slice(1);
  const state = await probe([]);
  t.deepEqual(state.core, ['0', '0']);
  t.deepEqual(state.cpu, own);
});

test('NoNewPrivs is set', async (t) => {
  t.is((await probe([])).noNewPrivs, '1');
});

test('every signal reaches the program with its default disposition and unblocked, whatever was ignored before it', async (t) => {
  // sh ignores SIGPIPE, SIGUSR1 and SIGRTMIN+3 (trap ''), and an ignored signal stays ignored across exec.
  const statusOf = (program: string) => run('/bin/sh', ['-c', `trap '' PIPE USR1 37; exec ${program} /bin/grep -E '^Sig(Ign|Blk):' /proc/self/status`]);
  const masks = (exit: Exit) =>
    Object.fromEntries(
      exit.stdout
        .trim()
        .split('\n')
        .map((line) => line.split(':\t') as [string, string]),
    );
  const direct = masks(await statusOf(''));
  t.not(direct.SigIgn, '0000000000000000', 'control: without the helper, grep starts with those signals ignored');
  const helped = masks(await statusOf(`${helper} --`));
  t.deepEqual(helped, { SigIgn: '0000000000000000', SigBlk: '0000000000000000' });
});

test('every inherited fd above 2 is closed before the program starts', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'strata-exec-fds-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const marker = join(dir, 'inherited-fd-marker');
  const fd = openSync(marker, 'w');
  t.teardown(() => closeSync(fd));
  // The marker file is the child's fd 3 and fd 9 before the helper runs.
  const stdio: StdioOptions = ['ignore', 'pipe', 'pipe', fd, 'ignore', 'ignore', 'ignore', 'ignore', 'ignore', fd];

  const direct = await run(node, ['-e', PROBE], stdio);
  const seen = JSON.parse(direct.stdout) as Probe;
  t.is(seen.fds['3'], marker, 'control: without the helper, node sees the inherited fd 3');
  t.is(seen.fds['9'], marker, 'control: without the helper, node sees the inherited fd 9');

  const state = await probe([], stdio);
  t.deepEqual(
    Object.entries(state.fds).filter(([, target]) => target === marker),
    [],
    'no fd of the program is the inherited file',
  );
  t.true(['0', '1', '2'].every((n) => n in state.fds));
});

test('--drop-privileges as root: uid and gid 65534, no groups, no capabilities, root cannot be regained', async (t) => {
  if (!isRoot) {
    t.log(`skipped the root-only assertions: running as uid ${self.uid}, not root`);
    const state = await probe(['--drop-privileges']);
    t.is(state.uid, self.uid);
    t.is(state.gid, self.gid);
    t.deepEqual(state.groups, self.groups);
    return;
  }
  const blocked = notExecutableByNobody(node);
  if (blocked) {
    // A checkout nobody cannot reach: the drop still happens, and the exec then fails loudly.
    t.log(`uid 65534 cannot run ${node} (${blocked}); move the checkout somewhere world-searchable`);
    const exit = await run(helper, ['--drop-privileges', '--', node, '-e', '0']);
    t.is(exit.status, 126);
    t.regex(exit.stderr, ONE_LINE);
    return;
  }
  const state = await probe(['--drop-privileges']);
  t.is(state.uid, NOBODY);
  t.is(state.gid, NOBODY);
  t.is(state.supplementaryGroups, '', 'no supplementary groups');
  t.deepEqual(state.groups, [NOBODY], 'process.getgroups() always adds the effective gid');
  t.deepEqual(state.uids, [NOBODY, NOBODY, NOBODY, NOBODY], 'real, effective, saved and filesystem uid');
  t.deepEqual(state.gids, [NOBODY, NOBODY, NOBODY, NOBODY], 'real, effective, saved and filesystem gid');
  t.deepEqual([state.capPrm, state.capEff, state.capAmb], ['0000000000000000', '0000000000000000', '0000000000000000']);
  t.is(state.regain, 'EPERM');
});

test('--drop-privileges when already unprivileged changes nothing', async (t) => {
  if (!isRoot) {
    const state = await probe(['--drop-privileges']);
    t.is(state.uid, self.uid);
    return;
  }
  const blocked = notExecutableByNobody(node) ?? notExecutableByNobody(helper);
  if (blocked) {
    // A checkout nobody cannot reach: the outer helper drops, then cannot exec the inner one.
    t.log(`uid 65534 cannot run the helper and node (${blocked})`);
    const exit = await run(helper, ['--drop-privileges', '--', helper, '--drop-privileges', '--', node, '-e', '0']);
    t.is(exit.status, 126);
    return;
  }
  // The outer helper drops to 65534; the inner one then starts unprivileged.
  const state = await probe(['--drop-privileges', '--', helper, '--drop-privileges']);
  t.is(state.uid, NOBODY);
  t.is(state.supplementaryGroups, '');
  t.is(state.noNewPrivs, '1');
});

test('without --drop-privileges the ids are unchanged', async (t) => {
  const state = await probe([]);
  t.is(state.uid, self.uid);
  t.is(state.gid, self.gid);
  t.deepEqual(state.groups, self.groups);
});

test('the program dies with its parent (PR_SET_PDEATHSIG)', async (t) => {
  const { shell, pid } = await underShell([helper, '--', node, '-e', SLEEPER]);
  t.teardown(() => killQuietly(pid));
  t.not(processState(pid), 'gone');
  shell.kill('SIGKILL');
  // Polled: dead at once normally; 10 s leaves a loaded machine room.
  t.true(await isDeadWithin(pid, 10_000), `node ${pid} outlived its parent: state ${processState(pid)}`);
});

test('control: without the helper, the same program outlives its parent', async (t) => {
  const { shell, pid } = await underShell([node, '-e', SLEEPER]);
  t.teardown(() => killQuietly(pid));
  shell.kill('SIGKILL');
  t.false(await isDeadWithin(pid, 300));
});

test('--cpu-seconds trips: a busy loop ends with SIGXCPU', async (t) => {
  const exit = await run(helper, ['--cpu-seconds', '1', '--', node, '-e', 'for (;;) {}']);
  t.is(exit.signal, 'SIGXCPU');
});

test('--nofile trips: opening past N files fails with EMFILE', async (t) => {
  const script = `
    const fs = require('fs');
    let code;
    try { for (;;) fs.openSync('/dev/null', 'r'); } catch (error) { code = error.code; }
    console.log(code);`;
  const exit = await run(helper, ['--nofile', '64', '--', node, '-e', script]);
  t.is(exit.stdout.trim(), 'EMFILE');
});

const ONE_LINE = /^strata-exec: [^\n]+ — [^\n]+\n$/;

const refusals: [string, string[], number, RegExp][] = [
  ['an unknown option', ['--frobnicate', '--', node, '-e', '0'], 120, /^strata-exec: usage: unknown option '--frobnicate' — usage: strata-exec /],
  ['a non-numeric --cpu-seconds', ['--cpu-seconds', 'abc', '--', node], 120, /usage: expected a positive integer, got 'abc'/],
  ['--cpu-seconds 0', ['--cpu-seconds', '0', '--', node], 120, /usage: expected a positive integer up to 2147483647, got '0'/],
  ['a negative --nofile', ['--nofile', '-5', '--', node], 120, /usage: expected a positive integer, got '-5'/],
  ['trailing garbage in --nofile', ['--nofile', '64k', '--', node], 120, /got '64k'/],
  ['a missing value', ['--nofile'], 120, /usage: missing value after '--nofile'/],
  ['an option given twice', ['--drop-privileges', '--drop-privileges', '--', node], 120, /usage: option given twice: '--drop-privileges'/],
  ['no --', [node, '-e', '0'], 120, /usage: unknown option '\//],
  ['no arguments', [], 120, /usage: missing '--' before the program/],
  ['nothing after --', ['--'], 120, /usage: missing the program after '--'/],
  ['a relative program', ['--', 'node'], 120, /usage: the program must be an absolute path, got 'node'/],
  [
    'a program that does not exist',
    ['--', '/nonexistent/strata-program'],
    126,
    /^strata-exec: exec \/nonexistent\/strata-program: No such file or directory — /,
  ],
  ['a program that is not executable', ['--', '/proc/self/status'], 126, /^strata-exec: exec \/proc\/self\/status: Permission denied — /],
];
for (const [label, args, status, message] of refusals) {
  test(`refuses ${label}: exit ${status} and one line on stderr`, async (t) => {
    const exit = await run(helper, args);
    t.is(exit.status, status);
    t.regex(exit.stderr, message);
    t.regex(exit.stderr, ONE_LINE);
    t.is(exit.stdout, '');
  });
}

test('refuses --nofile above the kernel limit (fs.nr_open): exit 121', async (t) => {
  const nrOpen = Number(readFileSync('/proc/sys/fs/nr_open', 'utf8'));
  const exit = await run(helper, ['--nofile', String(nrOpen + 1), '--', node, '-e', '0']);
  t.is(exit.status, 121);
  t.regex(exit.stderr, /^strata-exec: RLIMIT_NOFILE: Operation not permitted — /);
  t.regex(exit.stderr, ONE_LINE);
});

// The failures the kernel never produces on demand, forced with strace's fault injection.
// Skipped, with the reason logged, where strace is missing or cannot trace.
const straceProblem = ((): string | undefined => {
  const check = spawnSync('strace', ['-o', '/dev/null', '/bin/true']);
  if (check.error) return `strace is not available (${check.error.message})`;
  return check.status === 0 ? undefined : `strace cannot trace here: ${String(check.stderr).trim()}`;
})();

const injected: [string, string[], string[], number, RegExp, boolean][] = [
  [
    'close_range() and the /proc fallback fail',
    ['close_range:error=ENOSYS', 'getdents64:error=EIO'],
    [],
    122,
    /^strata-exec: close fds: Input\/output error — /,
    false,
  ],
  ['setresuid() fails', ['setresuid:error=EPERM'], ['--drop-privileges'], 123, /^strata-exec: setresuid: Operation not permitted — /, true],
  [
    'root can be regained after the drop',
    ['setuid:retval=0'],
    ['--drop-privileges'],
    123,
    /^strata-exec: drop privileges: root can be regained after dropping to 65534 — /,
    true,
  ],
  ['prctl() fails', ['prctl:error=EINVAL'], [], 124, /^strata-exec: PR_SET_NO_NEW_PRIVS: Invalid argument — /, false],
  [
    'the parent exited before PR_SET_PDEATHSIG',
    ['getppid:retval=1:when=2'],
    [],
    125,
    /^strata-exec: parent: the process that started strata-exec has exited — /,
    false,
  ],
];
/** What a fault-injection test needs: strace that can trace, and root for the privilege drops. */
const needs = (rootOnly: boolean) =>
  straceProblem !== undefined
    ? { feature: 'strace', available: false, reason: straceProblem }
    : { feature: 'root', available: !rootOnly || isRoot, reason: 'needs root' };

for (const [label, faults, options, status, message, rootOnly] of injected) {
  platformTest(test, needs(rootOnly))(`fails closed when ${label}: exit ${status} and one line on stderr`, async (t) => {
    const inject = faults.flatMap((fault) => ['-e', `inject=${fault}`]);
    const exit = await run('strace', ['-o', '/dev/null', ...inject, helper, ...options, '--', '/bin/true']);
    t.is(exit.status, status);
    t.regex(exit.stderr, message);
    t.regex(exit.stderr, ONE_LINE);
  });
}

platformTest(test, needs(false))('without close_range() the /proc/self/fd fallback closes every inherited fd', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'strata-exec-fds-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const marker = join(dir, 'inherited-fd-marker');
  const fd = openSync(marker, 'w');
  t.teardown(() => closeSync(fd));
  const stdio: StdioOptions = ['ignore', 'pipe', 'pipe', fd, 'ignore', 'ignore', 'ignore', 'ignore', 'ignore', fd];
  const exit = await run('strace', ['-o', '/dev/null', '-e', 'inject=close_range:error=ENOSYS', helper, '--', node, '-e', PROBE], stdio);
  t.is(exit.status, 0, exit.stderr);
  const state = JSON.parse(exit.stdout) as Probe;
  t.deepEqual(
    Object.entries(state.fds).filter(([, target]) => target === marker),
    [],
  );
});
