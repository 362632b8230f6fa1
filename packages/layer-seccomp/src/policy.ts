/**
 * The seccomp policy of docs/design.md §3, as data: which system calls are denied (by name, with the
 * errno and a one-line reason each, grouped as the seed groups them), and which are allowed only
 * with certain arguments. {@link compileFilter} turns it into classic BPF for one architecture;
 * the tests check every name against the kernel's tables for x86_64 and aarch64.
 *
 * Everything not named here is allowed: the filter is a deny list over the calls the kernel's
 * tables list up to {@link HIGHEST_REVIEWED}, and answers ENOSYS to every number above it (calls
 * newer than this review, so a newer kernel adds nothing reachable).
 *
 * Paths are Landlock's business, with one exception: truncation. Landlock before ABI 3 (Linux 6.2)
 * has no truncate right, so under it `open(path, O_RDONLY | O_TRUNC)` truncates any file the worker
 * may read and its uid may write (found booting Debian's 6.1, ABI 2), and `truncate(2)` on a path
 * is not governed at all. So, on every kernel: `truncate` and `creat` are denied, `open`/`openat`
 * with O_TRUNC are denied (unless with O_CREAT | O_EXCL, which can only make a new file: Landlock's
 * make-file right decides that, and the other layers' self-tests create their probe files so), and
 * `openat2`, whose flags the filter cannot read, is answered ENOSYS. `ftruncate` stays: it needs an
 * fd opened for writing, which Landlock refuses on every ABI.
 *
 * @module
 */
import type { Arch } from './syscall-table.js';

import { CONSTANTS, type ErrnoName } from './constants.js';

export { CONSTANTS, ERRNO, type ErrnoName } from './constants.js';

/** One denied system call. */
export interface DeniedCall {
  readonly name: string;
  readonly errno: ErrnoName;
  /** Why, in one line. */
  readonly reason: string;
  /** Architectures whose kernel has no such call (checked by a test against the kernel's tables). */
  readonly absentOn?: readonly Arch[];
}

/** A group of denied calls, as the seed groups them. */
export interface DenyGroup {
  readonly group: string;
  readonly calls: readonly DeniedCall[];
}

const eperm = (name: string, reason: string, absentOn?: readonly Arch[]): DeniedCall =>
  Object.freeze(absentOn ? { name, errno: 'EPERM' as const, reason, absentOn } : { name, errno: 'EPERM' as const, reason });
const X86_ONLY: readonly Arch[] = Object.freeze(['aarch64']);

/** The deny list: the seed's groups plus the additions of docs/design.md §3 (each one says so). */
export const DENY_GROUPS: readonly DenyGroup[] = Object.freeze([
  {
    group: 'new processes and other-process access',
    calls: [
      eperm('execve', 'no new programs: the worker runs Node and nothing else'),
      eperm('execveat', 'no new programs (execve relative to a directory fd)'),
      eperm('fork', 'no new processes', X86_ONLY),
      eperm('vfork', 'no new processes', X86_ONLY),
      eperm('ptrace', 'no tracing of any process, itself included'),
      eperm('process_vm_readv', "no reading another process's memory"),
      eperm('process_vm_writev', "no writing another process's memory"),
      eperm('process_madvise', "no advice on another process's memory (DESIGN §3)"),
      eperm('pidfd_open', 'no handles on other processes'),
      eperm('pidfd_getfd', "no stealing another process's file descriptors (DESIGN §3)"),
      eperm('pidfd_send_signal', 'its target is an fd, not a pid, so it cannot be limited to the worker: denied; kill/tgkill remain for the worker itself'),
      eperm('kcmp', 'no comparing kernel objects of other processes'),
    ],
  },
  {
    group: 'the network',
    calls: [
      eperm('connect', 'no outgoing connections, unix ones included (the worker talks over inherited pipes)'),
      eperm('bind', 'no listening addresses'),
      eperm('listen', 'no servers'),
      eperm('accept', 'no servers'),
      eperm('accept4', 'no servers'),
    ],
  },
  {
    group: 'mounts and namespaces',
    calls: [
      eperm('mount', 'no mounts'),
      eperm('umount2', 'no unmounts (which could uncover what a mount hides)'),
      eperm('pivot_root', 'no changing the root'),
      eperm('chroot', 'no changing the root'),
      eperm('setns', 'no joining other namespaces'),
      eperm('unshare', 'no new namespaces'),
      eperm('open_tree', 'the new mount API (DESIGN §3)'),
      eperm('open_tree_attr', 'the new mount API (DESIGN §3)'),
      eperm('move_mount', 'the new mount API (DESIGN §3)'),
      eperm('fsopen', 'the new mount API (DESIGN §3)'),
      eperm('fsconfig', 'the new mount API (DESIGN §3)'),
      eperm('fsmount', 'the new mount API (DESIGN §3)'),
      eperm('fspick', 'the new mount API (DESIGN §3)'),
      eperm('mount_setattr', 'the new mount API (DESIGN §3)'),
      eperm('statmount', "the new mount API: no listing of the host's mounts"),
      eperm('listmount', "the new mount API: no listing of the host's mounts"),
      eperm('listns', "no listing of the host's namespaces"),
      eperm('open_by_handle_at', 'opens files by handle, around every path check (a classic container escape)'),
      eperm('name_to_handle_at', 'the other half of open_by_handle_at'),
    ],
  },
  {
    group: 'the kernel',
    calls: [
      eperm('bpf', 'no eBPF programs or maps: a large kernel attack surface'),
      eperm('perf_event_open', 'no performance counters: side channels and kernel attack surface'),
      eperm('userfaultfd', 'no userfaultfd: a classic kernel exploitation aid'),
      eperm('io_uring_setup', 'no io_uring: a large kernel attack surface that bypasses this filter (libuv falls back)'),
      eperm('keyctl', 'no kernel keyrings (shared with the host user)'),
      eperm('add_key', 'no kernel keyrings'),
      eperm('request_key', 'no kernel keyrings'),
      eperm('init_module', 'no kernel modules'),
      eperm('finit_module', 'no kernel modules'),
      eperm('delete_module', 'no kernel modules'),
      eperm('kexec_load', 'no kexec'),
      eperm('kexec_file_load', 'no kexec'),
      eperm('personality', 'no execution domains (READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE)'),
      eperm('quotactl', 'no disk quotas'),
      eperm('quotactl_fd', 'no disk quotas'),
      eperm('reboot', 'administration'),
      eperm('swapon', 'administration'),
      eperm('swapoff', 'administration'),
      eperm('acct', 'administration'),
      eperm('iopl', 'no I/O port access', X86_ONLY),
      eperm('ioperm', 'no I/O port access', X86_ONLY),
      eperm('lookup_dcookie', 'administration (profiling)'),
      eperm('vhangup', 'administration (terminals)'),
      eperm('syslog', 'no reading or clearing the kernel log (kernel addresses); found reachable by the sweep'),
      eperm('modify_ldt', 'no x86 local descriptor tables: old kernel attack surface Node does not use; found by the sweep', X86_ONLY),
    ],
  },
  {
    group: "IPC with the host user's other processes",
    calls: [
      ...['msgget', 'msgsnd', 'msgrcv', 'msgctl'].map((n) => eperm(n, 'no SysV message queues')),
      ...['semget', 'semop', 'semtimedop', 'semctl'].map((n) => eperm(n, 'no SysV semaphores')),
      ...['shmget', 'shmat', 'shmdt', 'shmctl'].map((n) => eperm(n, 'no SysV shared memory')),
      ...['mq_open', 'mq_unlink', 'mq_timedsend', 'mq_timedreceive', 'mq_notify', 'mq_getsetattr'].map((n) => eperm(n, 'no POSIX message queues')),
      eperm('inotify_init', 'no watching files', X86_ONLY),
      eperm('inotify_init1', 'no watching files'),
      eperm('inotify_add_watch', 'no watching files'),
      eperm('inotify_rm_watch', 'no watching files'),
      eperm('fanotify_init', 'no watching files'),
      eperm('fanotify_mark', 'no watching files'),
    ],
  },
  {
    group: 'file metadata, which Landlock does not govern',
    calls: [
      eperm('chmod', 'no mode changes', X86_ONLY),
      eperm('fchmod', 'no mode changes'),
      eperm('fchmodat', 'no mode changes'),
      eperm('fchmodat2', 'no mode changes (DESIGN §3)'),
      eperm('chown', 'no owner changes', X86_ONLY),
      eperm('fchown', 'no owner changes'),
      eperm('lchown', 'no owner changes', X86_ONLY),
      eperm('fchownat', 'no owner changes'),
      eperm('utime', 'no time stamp changes', X86_ONLY),
      eperm('utimes', 'no time stamp changes', X86_ONLY),
      eperm('futimesat', 'no time stamp changes', X86_ONLY),
      eperm('utimensat', 'no time stamp changes'),
      ...['setxattr', 'lsetxattr', 'fsetxattr', 'removexattr', 'lremovexattr', 'fremovexattr'].map((n) => eperm(n, 'no extended attribute changes')),
      ...['getxattr', 'lgetxattr', 'fgetxattr', 'listxattr', 'llistxattr', 'flistxattr'].map((n) =>
        eperm(n, 'no extended attribute reads (labels and capabilities of host files)'),
      ),
      ...['setxattrat', 'removexattrat', 'getxattrat', 'listxattrat'].map((n) => eperm(n, 'extended attributes, the *xattrat calls (DESIGN §3)')),
      eperm('file_setattr', "no inode attribute changes (the *xattrat calls' sibling)"),
    ],
  },
  {
    group: 'truncating files, which Landlock governs only from ABI 3 (Linux 6.2)',
    calls: [
      eperm('truncate', 'no truncating a file by path: Landlock ABI 1-2 does not govern it, and the worker has no reason to'),
      eperm('creat', 'open(O_CREAT | O_WRONLY | O_TRUNC): truncates an existing file (see the open/openat rules)', X86_ONLY),
    ],
  },
  {
    group: 'identity and time',
    calls: [
      ...['setuid', 'setgid', 'setreuid', 'setregid', 'setresuid', 'setresgid', 'setfsuid', 'setfsgid', 'setgroups'].map((n) =>
        eperm(n, 'no identity changes'),
      ),
      eperm('capset', 'no capability changes'),
      eperm('settimeofday', 'no setting the clock'),
      eperm('clock_settime', 'no setting the clock'),
      eperm('clock_adjtime', 'no adjusting the clock'),
      eperm('adjtimex', 'no adjusting the clock'),
      eperm('sethostname', 'no renaming the host'),
      eperm('setdomainname', 'no renaming the host'),
      eperm('sync', 'no flushing every file system of the host'),
      eperm('syncfs', 'no flushing a whole file system'),
    ],
  },
]) as readonly DenyGroup[];

/**
 * io_uring calls that are denied only when the worker has no io_uring ring already. libuv (≥ 1.45,
 * Node 24 has 1.52) creates an epoll_ctl batching ring for every event loop at loop init, before any
 * JavaScript runs, and aborts the process ("libuv: io_uring_enter(getevents): Operation not
 * permitted") when io_uring_enter then fails. Where such rings exist, these stay allowed (new rings
 * cannot be made: io_uring_setup is denied); where io_uring_setup was already refused before Node
 * started (the pre-exec step native/no-io-uring.c), they are denied like the rest.
 */
export const IO_URING_RING_CALLS: readonly DeniedCall[] = Object.freeze([
  eperm('io_uring_enter', 'no io_uring (allowed only for the rings libuv made before the filter: Node aborts without them)'),
  eperm('io_uring_register', 'no io_uring (allowed only for the rings libuv made before the filter)'),
]);

/** Calls answered ENOSYS rather than EPERM, so the C library falls back to an older call. */
export const ENOSYS_CALLS: readonly DeniedCall[] = Object.freeze([
  Object.freeze({
    name: 'clone3',
    errno: 'ENOSYS' as const,
    reason: 'its flags are behind a pointer the filter cannot read; ENOSYS makes glibc fall back to clone, whose flags it can',
  }),
  Object.freeze({
    name: 'openat2',
    errno: 'ENOSYS' as const,
    reason:
      "its flags (O_TRUNC among them) are behind a pointer the filter cannot read; glibc's open/openat and libuv do not use it, and ENOSYS is what kernels before 5.6 answer, so its callers fall back to openat, whose flags it can",
  }),
]);

/** A value an argument rule compares with: a number, or the worker's own pid (baked in when compiled). */
export type RuleValue = number | 'pid';

/** `arg` (its low 32 bits, as the kernel reads an int) must be one of `values`. */
export interface ArgCondition {
  readonly arg: number;
  readonly values: readonly RuleValue[];
}

/**
 * A call allowed only with certain arguments:
 * - `allow-if`: allowed when every condition holds, else EPERM;
 * - `deny-if`: EPERM when the condition holds, else allowed;
 * - `clone-thread`: allowed when arg 0 has every bit of `required` and none of `forbidden`, else EPERM;
 * - `deny-if-bits`: EPERM when `arg` (its low 32 bits) has any bit of `bits`, unless it also has
 *   every bit of `unlessAll` (when given); else allowed.
 *
 * `absentOn` names the architectures whose kernel has no such call (the rule is left out there).
 */
export type ArgRule = (
  | { readonly kind: 'allow-if'; readonly name: string; readonly conditions: readonly ArgCondition[]; readonly reason: string }
  | { readonly kind: 'deny-if'; readonly name: string; readonly condition: ArgCondition; readonly reason: string }
  | { readonly kind: 'clone-thread'; readonly name: string; readonly required: number; readonly forbidden: number; readonly reason: string }
  | { readonly kind: 'deny-if-bits'; readonly name: string; readonly arg: number; readonly bits: number; readonly unlessAll?: number; readonly reason: string }
) & { readonly absentOn?: readonly Arch[] };

const C = CONSTANTS;
/**
 * Every namespace flag legacy clone() accepts. (CLONE_NEWTIME, 0x80, exists only for clone3 and
 * unshare: in clone()'s flags those bits are the exit signal.)
 */
export const CLONE_NAMESPACE_FLAGS =
  (C.CLONE_NEWNS | C.CLONE_NEWCGROUP | C.CLONE_NEWUTS | C.CLONE_NEWIPC | C.CLONE_NEWUSER | C.CLONE_NEWPID | C.CLONE_NEWNET) >>> 0;

const self = (name: string, arg: number, reason: string, orZero = true): ArgRule =>
  Object.freeze({ kind: 'allow-if' as const, name, conditions: [{ arg, values: orZero ? [0, 'pid' as const] : ['pid' as const] }], reason });

/** open/openat with O_TRUNC: what an open with these flags can do that Landlock ABI 1-2 does not govern. */
const noTruncatingOpen = (name: string, arg: number, absentOn?: readonly Arch[]): ArgRule =>
  Object.freeze({
    kind: 'deny-if-bits' as const,
    name,
    arg,
    bits: C.O_TRUNC,
    unlessAll: C.O_CREAT | C.O_EXCL,
    reason: `no O_TRUNC (arg ${arg}, the flags): Landlock ABI 1-2 lets O_RDONLY | O_TRUNC truncate a readable file; allowed with O_CREAT | O_EXCL, which only ever makes a new file`,
    ...(absentOn ? { absentOn } : {}),
  });

/** Calls allowed only with certain arguments. Pids are compared on their low 32 bits, as the kernel reads a pid_t. */
export const ARG_RULES: readonly ArgRule[] = Object.freeze([
  {
    kind: 'clone-thread',
    name: 'clone',
    required: C.CLONE_THREAD,
    forbidden: CLONE_NAMESPACE_FLAGS,
    reason: 'threads only (CLONE_THREAD, which the kernel accepts only with CLONE_SIGHAND and CLONE_VM); never a new process or namespace',
  },
  {
    kind: 'allow-if',
    name: 'socket',
    conditions: [{ arg: 0, values: [C.AF_UNIX] }],
    reason: 'AF_UNIX only: no network family (AF_INET, AF_INET6, AF_NETLINK, AF_PACKET, MPTCP, …)',
  },
  { kind: 'allow-if', name: 'socketpair', conditions: [{ arg: 0, values: [C.AF_UNIX] }], reason: 'AF_UNIX only (socketpair stays: Node and libuv use it)' },
  {
    kind: 'deny-if',
    name: 'ioctl',
    condition: { arg: 1, values: [C.TIOCSTI, C.TIOCLINUX] },
    reason: 'no pushing input into a terminal (TIOCSTI, TIOCLINUX); matched on the low 32 bits, which is all the kernel reads of the command',
  },
  self('kill', 0, 'signals only to the worker itself: not 0 (its group), not -1 (everything), not the parent', false),
  self('tkill', 0, 'signals only to the worker itself (its main thread)', false),
  self('tgkill', 0, 'signals only to threads of the worker itself', false),
  self('rt_sigqueueinfo', 0, 'signals only to the worker itself', false),
  self('rt_tgsigqueueinfo', 0, 'signals only to threads of the worker itself', false),
  self('sched_setaffinity', 0, 'scheduling of the worker only (0: the calling thread)'),
  self('sched_setparam', 0, 'scheduling of the worker only (0: the calling thread)'),
  self('sched_setscheduler', 0, 'scheduling of the worker only (0: the calling thread)'),
  self('sched_setattr', 0, 'scheduling of the worker only (0: the calling thread)'),
  self('prlimit64', 0, 'resource limits of the worker only (0: itself)'),
  self('migrate_pages', 0, 'memory placement of the worker only (0: itself)'),
  self('move_pages', 0, 'memory placement of the worker only (0: itself)'),
  {
    kind: 'allow-if',
    name: 'setpriority',
    conditions: [
      { arg: 0, values: [C.PRIO_PROCESS] },
      { arg: 1, values: [0, 'pid'] },
    ],
    reason: 'priority of the worker only: PRIO_PROCESS of itself (0 or its pid); never a process group or a user',
  },
  {
    kind: 'allow-if',
    name: 'ioprio_set',
    conditions: [
      { arg: 0, values: [C.IOPRIO_WHO_PROCESS] },
      { arg: 1, values: [0, 'pid'] },
    ],
    reason: 'I/O priority of the worker only: IOPRIO_WHO_PROCESS of itself (0 or its pid); found reachable on other processes by the sweep',
  },
  noTruncatingOpen('open', 1, X86_ONLY),
  noTruncatingOpen('openat', 2),
] as ArgRule[]);

/** Every name the policy mentions (deny list, ENOSYS calls, argument rules). */
export function policyNames(): string[] {
  return [
    ...DENY_GROUPS.flatMap((g) => g.calls.map((c) => c.name)),
    ...IO_URING_RING_CALLS.map((c) => c.name),
    ...ENOSYS_CALLS.map((c) => c.name),
    ...ARG_RULES.map((r) => r.name),
  ];
}
