/**
 * The seccomp layer module (`@strata/layer-seccomp/layer`): its default export is the factory the
 * worker calls with the layer's options.
 *
 * - probe: Linux x86_64/aarch64 with the addon built, and a test-fire: a throwaway child installs
 *   the same filter and must exit cleanly (under architecture emulation the filter can kill it).
 * - apply: installs the policy as the build compiled it for `process.arch`, with `process.pid`
 *   filled in (filter-templates.ts), on every thread (TSYNC), after PR_SET_NO_NEW_PRIVS.
 * - selfTest: fires, in this process, what the filter exists to stop, and checks every thread.
 *
 * @module
 */
import { createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ApplyContext, LaunchContext, LaunchStep, Layer, LayerCapability, ProbeContext, SelfTestContext } from '@strata/runtime/layers';
import { NO_IO_URING_HELPER, addonUnavailableReason, loadAddon } from './addon.js';
// Not the policy, the kernel's tables or the compiler: the worker imports this module, and installs
// the build's compiled filter (filter-templates.ts).
import { archOf, CONSTANTS, ERRNO, X32_SYSCALL_BIT } from './constants.js';
import { ioUringCallsOf, programFor, readFilterTemplates, templateFor, workerCallNumber, type FilterTemplates } from './filter-templates.js';
import { threadStatus } from './status.js';
import type { Arch } from './syscall-table.js';
import { TEST_FIRE_MARKER } from './test-fire-marker.js';
import { ioUringMayBeInUse } from './io-uring.js';

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
const TEST_FIRE_SCRIPT = fileURLToPath(new URL('./test-fire.js', import.meta.url));
// Required when a probe spawns its child (in the parent), not at import: the worker imports this
// module too, and node:child_process costs each worker's start milliseconds of compiling (Node's
// own modules compile from source under --jitless).
const childProcess = (): typeof import('node:child_process') => createRequire(import.meta.url)('node:child_process') as typeof import('node:child_process');

const PROVIDES = Object.freeze([
  'seccomp-filter',
  'all-threads',
  'no-new-privs',
  'no-exec',
  'no-fork',
  'no-network-sockets',
  'no-namespaces',
  'signals-self-only',
  'no-path-truncate',
]);

/** Why the build's compiled filter cannot be used here (a build that did not make it), or undefined. */
function templatesUnavailableReason(): string | undefined {
  try {
    readFilterTemplates();
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/** The test-fire's answer is the same for the whole process: it runs once. */
let fired: { gap: string | undefined } | undefined;

/** Runs the test-fire child (once per process); undefined when it exited cleanly, else why not. */
export function testFire(): string | undefined {
  fired ??= { gap: runTestFire() };
  return fired.gap;
}

function runTestFire(): string | undefined {
  const child = childProcess().spawnSync(process.execPath, [TEST_FIRE_SCRIPT], {
    env: {},
    encoding: 'utf8',
    timeout: 20_000,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (child.error) return `the seccomp test-fire could not run: ${child.error.message}`;
  if (child.signal) return `seccomp filter would kill the process (architecture emulation?): the test-fire child died of ${child.signal}`;
  if (child.status !== 0 || !child.stdout.includes(TEST_FIRE_MARKER)) {
    const why = child.stderr.trim().split('\n').pop() || `exit status ${child.status}`;
    return `the seccomp test-fire failed: ${why}`;
  }
  return undefined;
}

function probe(context: ProbeContext): LayerCapability {
  const arch = context.platform === 'linux' ? archOf(context.arch) : undefined;
  const gap =
    context.platform !== 'linux'
      ? `seccomp is Linux only (this is ${context.platform})`
      : !arch
        ? `the seccomp filter is written for x86_64 and aarch64 only (this is ${context.arch})`
        : (addonUnavailableReason() ?? templatesUnavailableReason() ?? testFire());
  return gap
    ? { available: false, provides: [], missing: [gap], detail: arch ? { arch } : {} }
    : { available: true, provides: [...PROVIDES], missing: [], detail: { arch: arch!, testFired: true } };
}

/**
 * The launch chain's link: strata-no-io-uring refuses io_uring_setup before Node starts, so libuv
 * makes no ring and apply() can deny io_uring_enter and io_uring_register too (an operation
 * submitted through a ring is not a system call seccomp could see).
 */
function launch(context: LaunchContext): LaunchStep | undefined {
  if (context.platform !== 'linux' || !existsSync(NO_IO_URING_HELPER)) return undefined;
  return { program: NO_IO_URING_HELPER };
}

let installed: { arch: Arch } | undefined;

function apply(context: ApplyContext): void {
  const arch = archOf(process.arch);
  if (!arch) throw new Error(`the seccomp filter is written for x86_64 and aarch64 only (this is ${process.arch})`);
  const addon = loadAddon();
  // Read before anything is installed, while every file can still be opened.
  const templates = readFilterTemplates();
  const allowIoUringEnter = ioUringMayBeInUse(addon, ioUringCallsOf(templates, arch));
  const template = templateFor(templates, arch, allowIoUringEnter);
  addon.install(programFor(template, process.pid));
  installed = { arch };
  context.report({
    arch,
    pid: process.pid,
    instructions: template.instructions,
    rules: template.argRules,
    deniedCalls: template.deniedCalls,
    highestReviewed: template.highestReviewed,
    ioUring: allowIoUringEnter ? "setup denied; enter/register allowed for libuv's existing rings" : 'denied',
  });
}

/** One attempt: a call and the errno the filter must answer. */
/**
 * One call the self-test fires: what it is, its number and arguments, and the answer expected.
 *
 * @internal
 */
export interface Attempt {
  readonly what: string;
  readonly nr: number;
  readonly args: readonly (number | bigint)[];
  readonly expect: number;
}

/**
 * What the self-test fires: each must come back -EPERM (or -ENOSYS). Arguments are chosen so that, were a call let through, the kernel would refuse it (EINVAL, EFAULT) rather than act.
 *
 * @internal
 */
export function selfTestAttempts(arch: Arch, parentPid: number, templates: FilterTemplates = readFilterTemplates()): Attempt[] {
  const nr = (name: string) => workerCallNumber(templates, arch, name);
  const C = CONSTANTS;
  return [
    { what: 'socket(AF_INET)', nr: nr('socket'), args: [C.AF_INET, 1, 0], expect: -ERRNO.EPERM },
    { what: 'socket(AF_INET6)', nr: nr('socket'), args: [C.AF_INET6, 1, 0], expect: -ERRNO.EPERM },
    // CLONE_THREAD without CLONE_SIGHAND is EINVAL to the kernel: harmless if it got through
    { what: 'clone(CLONE_NEWUSER)', nr: nr('clone'), args: [C.CLONE_NEWUSER | C.CLONE_THREAD, 0, 0, 0, 0], expect: -ERRNO.EPERM },
    // CLONE_SIGHAND without CLONE_VM is EINVAL to the kernel: a non-thread clone that cannot fork
    { what: 'clone without CLONE_THREAD (fork)', nr: nr('clone'), args: [C.CLONE_SIGHAND, 0, 0, 0, 0], expect: -ERRNO.EPERM },
    { what: 'clone3', nr: nr('clone3'), args: [0, 0], expect: -ERRNO.ENOSYS },
    { what: 'unshare(CLONE_NEWUSER)', nr: nr('unshare'), args: [C.CLONE_NEWUSER], expect: -ERRNO.EPERM },
    { what: 'ptrace(PTRACE_ATTACH, parent)', nr: nr('ptrace'), args: [16, parentPid, 0, 0], expect: -ERRNO.EPERM },
    { what: 'kill(parent, 0)', nr: nr('kill'), args: [parentPid, 0], expect: -ERRNO.EPERM },
    { what: 'kill(-1, 0)', nr: nr('kill'), args: [-1, 0], expect: -ERRNO.EPERM },
    { what: 'execve(NULL)', nr: nr('execve'), args: [0, 0, 0], expect: -ERRNO.EPERM },
    { what: 'io_uring_setup', nr: nr('io_uring_setup'), args: [0, 0], expect: -ERRNO.EPERM },
    { what: 'bpf', nr: nr('bpf'), args: [0, 0, 0], expect: -ERRNO.EPERM },
    { what: 'mount', nr: nr('mount'), args: [0, 0, 0, 0, 0], expect: -ERRNO.EPERM },
    // a NULL path: EFAULT to the kernel, were these let through
    { what: 'openat(AT_FDCWD, NULL, O_RDONLY | O_TRUNC)', nr: nr('openat'), args: [-100, 0, C.O_TRUNC, 0], expect: -ERRNO.EPERM },
    { what: 'truncate(NULL, 0)', nr: nr('truncate'), args: [0, 0], expect: -ERRNO.EPERM },
    { what: 'openat2', nr: nr('openat2'), args: [-100, 0, 0, 0], expect: -ERRNO.ENOSYS },
    { what: 'x32 getpid', nr: (X32_SYSCALL_BIT | nr('getpid')) >>> 0, args: [], expect: -ERRNO.EPERM },
  ];
}

function selfTest(context: SelfTestContext): void {
  const addon = loadAddon();
  const arch = installed?.arch ?? archOf(process.arch)!;
  const templates = readFilterTemplates();
  const nr = (name: string) => workerCallNumber(templates, arch, name);
  if (addon.mode() !== 2 || addon.noNewPrivs() !== 1)
    throw new Error(`the filter is not in force on this thread (Seccomp ${addon.mode()}, NoNewPrivs ${addon.noNewPrivs()})`);
  const through: string[] = [];
  const attempts = selfTestAttempts(arch, process.ppid, templates);
  for (const attempt of attempts) {
    const result = addon.rawSyscall(attempt.nr, ...attempt.args);
    if (result !== attempt.expect) through.push(`${attempt.what} returned ${result}, expected ${attempt.expect}`);
  }
  // positive controls: what the worker needs still works
  const getpid = addon.rawSyscall(nr('getpid'));
  if (getpid !== process.pid) through.push(`getpid returned ${getpid}: allowed calls are broken`);
  const killSelf = addon.rawSyscall(nr('kill'), process.pid, 0);
  if (killSelf !== 0) through.push(`kill(self, 0) returned ${killSelf}: signals to the worker itself are broken`);
  const openNull = addon.rawSyscall(nr('openat'), -100, 0, 0, 0);
  if (openNull !== -14) through.push(`openat(AT_FDCWD, NULL, O_RDONLY) returned ${openNull}, expected EFAULT: opens without O_TRUNC are broken`);
  if (through.length > 0) throw new Error(`the seccomp filter let through: ${through.join('; ')}`);
  let threads: string | number;
  try {
    const statuses = threadStatus();
    const uncovered = statuses.filter((t) => t.mode !== 2 || t.noNewPrivs !== 1);
    if (uncovered.length > 0)
      throw new Error(`threads without the filter: ${uncovered.map((t) => `${t.tid} (Seccomp ${t.mode}, NoNewPrivs ${t.noNewPrivs})`).join(', ')}`);
    threads = statuses.length;
  } catch (error) {
    if (error instanceof Error && error.message.startsWith('threads without')) throw error;
    // Another layer (Landlock, an empty root) may hide /proc from the worker: the parent checks from outside.
    threads = `unreadable here (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); left to the parent's check of /proc/<pid>/task`;
  }
  context.report({ selfTestAttempts: attempts.length, threadsCovered: threads });
}

/** The seccomp layer. Options: none yet (reserved). */
export default function seccompLayer(options: Readonly<Record<string, unknown>> = {}): Layer {
  const unknown = Object.keys(options);
  if (unknown.length > 0) throw new Error(`@strata/layer-seccomp: unknown option(s) ${unknown.join(', ')}; the layer takes none`);
  return { name: 'seccomp', version: VERSION, probe, launch, apply, selfTest };
}
