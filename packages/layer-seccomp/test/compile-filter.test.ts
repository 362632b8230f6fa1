import test from 'ava';
import { AUDIT_ARCH, BPF, compileFilter, SECCOMP_DATA, SECCOMP_RET, serializeFilter, syscallNumber, X32_SYSCALL_BIT, archOf } from '../src/compile-filter.js';
import { ARG_RULES, CONSTANTS as C, DENY_GROUPS, ENOSYS_CALLS, ERRNO, IO_URING_RING_CALLS } from '../src/policy.js';
import { HIGHEST_REVIEWED, SYSCALLS, type Arch } from '../src/syscall-table.js';
import { verdict, type SeccompInput, type Verdict } from './bpf-interpreter.js';

const PID = 4242;
const OTHER = 4243;
const ARCHES: Arch[] = ['x86_64', 'aarch64'];
const ALLOW: Verdict = { action: 'allow' };
const EPERM: Verdict = { action: 'errno', errno: ERRNO.EPERM };
const ENOSYS: Verdict = { action: 'errno', errno: ERRNO.ENOSYS };
const KILL: Verdict = { action: 'kill_process' };

const programs = new Map(ARCHES.map((arch) => [arch, compileFilter(arch, PID).instructions]));
const nr = (name: string, arch: Arch) => {
  const n = syscallNumber(name, arch);
  if (n === undefined) throw new Error(`${name} is absent on ${arch}`);
  return n;
};
const call = (arch: Arch, name: string, ...args: (number | bigint)[]): SeccompInput => ({ nr: nr(name, arch), arch: AUDIT_ARCH[arch], args });
const judge = (arch: Arch, input: SeccompInput, options?: Parameters<typeof compileFilter>[2]) =>
  verdict(options ? compileFilter(arch, PID, options).instructions : programs.get(arch)!, input);

const THREAD_FLAGS =
  C.CLONE_VM |
  C.CLONE_FS |
  C.CLONE_FILES |
  C.CLONE_SIGHAND |
  C.CLONE_THREAD |
  C.CLONE_SYSVSEM |
  C.CLONE_SETTLS |
  C.CLONE_PARENT_SETTID |
  C.CLONE_CHILD_CLEARTID;
const SIGCHLD = 17;

// [description, name, args, expected]
const TABLE: [string, string, (number | bigint)[], Verdict][] = [
  ['read is allowed', 'read', [0, 0, 0], ALLOW],
  ['write is allowed', 'write', [1, 0, 0], ALLOW],
  ['futex is allowed', 'futex', [], ALLOW],
  ['mmap is allowed', 'mmap', [], ALLOW],
  ['epoll_pwait is allowed', 'epoll_pwait', [], ALLOW],
  ['getpid is allowed', 'getpid', [], ALLOW],
  ['openat is allowed (Landlock governs paths)', 'openat', [], ALLOW],
  ['execve is denied', 'execve', [0, 0, 0], EPERM],
  ['execveat is denied', 'execveat', [], EPERM],
  ['ptrace is denied', 'ptrace', [16, OTHER], EPERM],
  ['process_vm_readv is denied', 'process_vm_readv', [OTHER], EPERM],
  ['process_vm_writev is denied', 'process_vm_writev', [OTHER], EPERM],
  ['bpf is denied', 'bpf', [], EPERM],
  ['io_uring_setup is denied', 'io_uring_setup', [], EPERM],
  ['io_uring_enter is denied by default', 'io_uring_enter', [], EPERM],
  ['io_uring_register is denied by default', 'io_uring_register', [], EPERM],
  ['unshare is denied', 'unshare', [C.CLONE_NEWUSER], EPERM],
  ['mount is denied', 'mount', [], EPERM],
  ['fsopen is denied', 'fsopen', [], EPERM],
  ['pidfd_getfd is denied', 'pidfd_getfd', [], EPERM],
  ['process_madvise is denied', 'process_madvise', [], EPERM],
  ['fchmodat2 is denied', 'fchmodat2', [], EPERM],
  ['setxattrat is denied', 'setxattrat', [], EPERM],
  ['getxattrat is denied', 'getxattrat', [], EPERM],
  ['connect is denied', 'connect', [3, 0, 0], EPERM],
  ['clone with CLONE_NEWUSER is denied', 'clone', [C.CLONE_NEWUSER | SIGCHLD], EPERM],
  ['clone with thread flags and CLONE_NEWUSER is denied', 'clone', [THREAD_FLAGS | C.CLONE_NEWUSER], EPERM],
  ['clone with thread flags and CLONE_NEWNET is denied', 'clone', [THREAD_FLAGS | C.CLONE_NEWNET], EPERM],
  ['clone with thread flags and CLONE_NEWNS is denied', 'clone', [THREAD_FLAGS | C.CLONE_NEWNS], EPERM],
  ['clone with thread flags is allowed', 'clone', [THREAD_FLAGS], ALLOW],
  ['clone with thread flags and junk high bits is allowed (the kernel reads 32 bits)', 'clone', [BigInt(THREAD_FLAGS) | (1n << 40n)], ALLOW],
  ['fork-like clone (SIGCHLD) is denied', 'clone', [SIGCHLD], EPERM],
  ['vfork-like clone (CLONE_VM|CLONE_VFORK) is denied', 'clone', [C.CLONE_VM | C.CLONE_VFORK | SIGCHLD], EPERM],
  ['clone3 is ENOSYS', 'clone3', [0, 88], ENOSYS],
  ['socket(AF_UNIX) is allowed', 'socket', [C.AF_UNIX, 1, 0], ALLOW],
  ['socket(AF_INET) is denied', 'socket', [C.AF_INET, 1, 0], EPERM],
  ['socket(AF_INET6) is denied', 'socket', [C.AF_INET6, 1, 0], EPERM],
  ['socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP) is denied', 'socket', [C.AF_INET, 1, 262], EPERM],
  ['socket(AF_NETLINK) is denied', 'socket', [16, 3, 0], EPERM],
  ['socket(AF_PACKET) is denied', 'socket', [17, 3, 0], EPERM],
  ['socket(AF_UNIX | 1<<32) is allowed (the kernel reads an int)', 'socket', [(1n << 32n) | 1n, 1, 0], ALLOW],
  ['socket(AF_INET | 1<<32) is denied', 'socket', [(1n << 32n) | 2n, 1, 0], EPERM],
  ['socketpair(AF_UNIX) is allowed', 'socketpair', [C.AF_UNIX, 1, 0, 0], ALLOW],
  ['socketpair(AF_INET) is denied', 'socketpair', [C.AF_INET, 1, 0, 0], EPERM],
  ['ioctl(TIOCSTI) is denied', 'ioctl', [0, C.TIOCSTI, 0], EPERM],
  ['ioctl(TIOCSTI | 1<<32) is denied (matched on the low 32 bits)', 'ioctl', [0, (1n << 32n) | BigInt(C.TIOCSTI), 0], EPERM],
  ['ioctl(TIOCSTI | 0xffffffff00000000) is denied', 'ioctl', [0, 0xffffffff00000000n | BigInt(C.TIOCSTI), 0], EPERM],
  ['ioctl(TIOCLINUX) is denied', 'ioctl', [0, C.TIOCLINUX, 0], EPERM],
  ['ioctl(FIONBIO) is allowed', 'ioctl', [0, 0x5421, 0], ALLOW],
  ['ioctl(TCGETS) is allowed', 'ioctl', [0, 0x5401, 0], ALLOW],
  ['kill(own pid) is allowed', 'kill', [PID, 15], ALLOW],
  ['kill(other pid) is denied', 'kill', [OTHER, 9], EPERM],
  ['kill(0) (own group) is denied', 'kill', [0, 9], EPERM],
  ['kill(-1) (everything) is denied', 'kill', [-1, 9], EPERM],
  ['kill(-pid) (a group) is denied', 'kill', [-PID, 9], EPERM],
  ['kill(own pid | 1<<32) is allowed (the kernel reads a pid_t)', 'kill', [(1n << 32n) | BigInt(PID), 0], ALLOW],
  ['tgkill(own, tid) is allowed', 'tgkill', [PID, PID + 5, 6], ALLOW],
  ['tgkill(other, tid) is denied', 'tgkill', [OTHER, OTHER, 6], EPERM],
  ['tkill(own) is allowed', 'tkill', [PID, 6], ALLOW],
  ['tkill(other) is denied', 'tkill', [OTHER, 6], EPERM],
  ['rt_sigqueueinfo(own) is allowed', 'rt_sigqueueinfo', [PID, 10, 0], ALLOW],
  ['rt_sigqueueinfo(other) is denied', 'rt_sigqueueinfo', [OTHER, 10, 0], EPERM],
  ['rt_tgsigqueueinfo(own) is allowed', 'rt_tgsigqueueinfo', [PID, PID, 10, 0], ALLOW],
  ['rt_tgsigqueueinfo(other) is denied', 'rt_tgsigqueueinfo', [OTHER, OTHER, 10, 0], EPERM],
  ['pidfd_send_signal is denied', 'pidfd_send_signal', [3, 9, 0, 0], EPERM],
  ['pidfd_open is denied', 'pidfd_open', [OTHER, 0], EPERM],
  ['sched_setaffinity(0) is allowed', 'sched_setaffinity', [0, 8, 0], ALLOW],
  ['sched_setaffinity(own) is allowed', 'sched_setaffinity', [PID, 8, 0], ALLOW],
  ['sched_setaffinity(other) is denied', 'sched_setaffinity', [OTHER, 8, 0], EPERM],
  ['sched_setscheduler(other) is denied', 'sched_setscheduler', [OTHER, 0, 0], EPERM],
  ['sched_setparam(other) is denied', 'sched_setparam', [OTHER, 0], EPERM],
  ['sched_setattr(other) is denied', 'sched_setattr', [OTHER, 0, 0], EPERM],
  ['sched_getaffinity(other) is allowed (reading)', 'sched_getaffinity', [OTHER, 8, 0], ALLOW],
  ['prlimit64(0) is allowed', 'prlimit64', [0, 7, 0, 0], ALLOW],
  ['prlimit64(own) is allowed', 'prlimit64', [PID, 7, 0, 0], ALLOW],
  ['prlimit64(other) is denied', 'prlimit64', [OTHER, 7, 0, 0], EPERM],
  ['setpriority(PRIO_PROCESS, 0) is allowed', 'setpriority', [0, 0, 5], ALLOW],
  ['setpriority(PRIO_PROCESS, own) is allowed', 'setpriority', [0, PID, 5], ALLOW],
  ['setpriority(PRIO_PROCESS, other) is denied', 'setpriority', [0, OTHER, 5], EPERM],
  ['setpriority(PRIO_PGRP, 0) is denied', 'setpriority', [1, 0, 5], EPERM],
  ['setpriority(PRIO_USER, 0) is denied', 'setpriority', [2, 0, 5], EPERM],
  ['migrate_pages(0) is allowed', 'migrate_pages', [0, 0, 0, 0], ALLOW],
  ['migrate_pages(other) is denied', 'migrate_pages', [OTHER, 0, 0, 0], EPERM],
  ['move_pages(other) is denied', 'move_pages', [OTHER, 0, 0, 0, 0, 0], EPERM],
  ['ioprio_set(IOPRIO_WHO_PROCESS, 0) is allowed', 'ioprio_set', [1, 0, 0], ALLOW],
  ['ioprio_set(IOPRIO_WHO_PROCESS, own) is allowed', 'ioprio_set', [1, PID, 0], ALLOW],
  ['ioprio_set(IOPRIO_WHO_PROCESS, other) is denied', 'ioprio_set', [1, OTHER, 0], EPERM],
  ['ioprio_set(IOPRIO_WHO_PGRP, 0) is denied', 'ioprio_set', [2, 0, 0], EPERM],
  ['ioprio_set(IOPRIO_WHO_USER, 0) is denied', 'ioprio_set', [3, 0, 0], EPERM],
  ['syslog is denied', 'syslog', [3, 0, 0], EPERM],
  ['setuid is denied', 'setuid', [0], EPERM],
  ['clock_settime is denied', 'clock_settime', [0, 0], EPERM],
  ['shmget is denied', 'shmget', [0, 0, 0], EPERM],
  ['open_by_handle_at is denied', 'open_by_handle_at', [], EPERM],
  // truncation, which Landlock ABI 1-2 does not govern (O_RDONLY is 0)
  ['openat(O_RDONLY) is allowed', 'openat', [-100, 0, 0, 0], ALLOW],
  ['openat(O_RDONLY | O_CLOEXEC) is allowed', 'openat', [-100, 0, 0x80000, 0], ALLOW],
  ['openat(O_WRONLY | O_CREAT | O_APPEND) is allowed (Landlock decides)', 'openat', [-100, 0, 0x1 | C.O_CREAT | 0x400, 0o644], ALLOW],
  ['openat(O_RDONLY | O_TRUNC) is denied', 'openat', [-100, 0, C.O_TRUNC, 0], EPERM],
  ['openat(O_RDONLY | O_TRUNC | O_CLOEXEC) is denied', 'openat', [-100, 0, C.O_TRUNC | 0x80000, 0], EPERM],
  ['openat(O_WRONLY | O_CREAT | O_TRUNC) ("w") is denied', 'openat', [-100, 0, 0x1 | C.O_CREAT | C.O_TRUNC, 0o666], EPERM],
  ['openat(O_RDWR | O_TRUNC) is denied', 'openat', [-100, 0, 0x2 | C.O_TRUNC, 0], EPERM],
  ['openat(O_CREAT | O_TRUNC) without O_EXCL is denied', 'openat', [-100, 0, C.O_CREAT | C.O_TRUNC, 0o666], EPERM],
  ['openat(O_EXCL | O_TRUNC) without O_CREAT is denied', 'openat', [-100, 0, C.O_EXCL | C.O_TRUNC, 0], EPERM],
  [
    'openat(O_WRONLY | O_CREAT | O_EXCL | O_TRUNC) ("wx": only ever a new file) is allowed',
    'openat',
    [-100, 0, 0x1 | C.O_CREAT | C.O_EXCL | C.O_TRUNC | 0x80000, 0o666],
    ALLOW,
  ],
  ['openat(O_RDONLY | O_TRUNC | 1<<32 junk) is denied (the kernel reads an int)', 'openat', [-100, 0, (1n << 32n) | BigInt(C.O_TRUNC), 0], EPERM],
  ['openat(O_TRUNC only in the high 32 bits) is allowed (the kernel never sees it)', 'openat', [-100, 0, BigInt(C.O_TRUNC) << 32n, 0], ALLOW],
  ['openat with O_TRUNC in the mode, not the flags, is allowed', 'openat', [-100, 0, 0, C.O_TRUNC], ALLOW],
  ['openat with O_TRUNC as the dirfd, not the flags, is allowed', 'openat', [C.O_TRUNC, 0, 0, 0], ALLOW],
  ['openat2 is ENOSYS (its flags are behind a pointer)', 'openat2', [-100, 0, 0, 24], ENOSYS],
  ['truncate is denied', 'truncate', [0, 0], EPERM],
  ['ftruncate is allowed (it needs an fd opened for writing: Landlock)', 'ftruncate', [3, 0], ALLOW],
];

// x86_64 only: open(2) and creat(2) (aarch64 has neither)
const X86_TABLE: [string, string, (number | bigint)[], Verdict][] = [
  ['open(O_RDONLY) is allowed', 'open', [0, 0, 0], ALLOW],
  ['open(O_RDONLY | O_CLOEXEC) is allowed', 'open', [0, 0x80000, 0], ALLOW],
  ['open(O_RDONLY | O_TRUNC) is denied', 'open', [0, C.O_TRUNC, 0], EPERM],
  ['open(O_WRONLY | O_CREAT | O_TRUNC) is denied', 'open', [0, 0x1 | C.O_CREAT | C.O_TRUNC, 0o666], EPERM],
  ['open(O_WRONLY | O_CREAT | O_EXCL | O_TRUNC) is allowed', 'open', [0, 0x1 | C.O_CREAT | C.O_EXCL | C.O_TRUNC, 0o666], ALLOW],
  ['open with O_TRUNC in arg 2 (the mode) is allowed', 'open', [0, 0, C.O_TRUNC], ALLOW],
  ['creat is denied', 'creat', [0, 0o666], EPERM],
];

for (const [description, name, args, expected] of X86_TABLE) {
  test(`x86_64: ${description}`, (t) => {
    t.deepEqual(judge('x86_64', call('x86_64', name, ...args)), expected);
  });
}

test('aarch64 has no open or creat: no rule or denial for them is compiled there', (t) => {
  t.is(syscallNumber('open', 'aarch64'), undefined);
  t.is(syscallNumber('creat', 'aarch64'), undefined);
  t.is(compileFilter('aarch64', PID).argRules, compileFilter('x86_64', PID).argRules - 1);
});

test('the deny-if-bits rule compiles to a load of the flags word and bit tests (BPF_JSET), on both architectures', (t) => {
  const ins = (code: number, k: number, jt = 0, jf = 0) => ({ code, jt, jf, k });
  const ALLOW_RET = ins(BPF.RET_K, SECCOMP_RET.ALLOW);
  const EPERM_RET = ins(BPF.RET_K, (SECCOMP_RET.ERRNO | ERRNO.EPERM) >>> 0);
  // the rule, as emitted after "jeq nr": ld flags; jset O_TRUNC → the O_CREAT|O_EXCL checks, else
  // ALLOW; O_CREAT missing → EPERM; O_EXCL missing → EPERM; ALLOW; EPERM
  const body = (arg: number) => [
    ins(BPF.LD_W_ABS, SECCOMP_DATA.argLow(arg)),
    ins(BPF.JMP_JSET_K, C.O_TRUNC, 1, 0),
    ALLOW_RET,
    ins(BPF.JMP_JSET_K, C.O_CREAT, 0, 2),
    ins(BPF.JMP_JSET_K, C.O_EXCL, 0, 1),
    ALLOW_RET,
    EPERM_RET,
  ];
  const ruleAt = (arch: Arch, name: string, arg: number) => {
    const program = compileFilter(arch, PID).instructions;
    const expected = body(arg);
    // the rule's own "jeq nr" skips exactly the body when the number does not match
    const at = program.findIndex((i, n) => i.code === BPF.JMP_JEQ_K && i.k === nr(name, arch) && i.jt === 0 && i.jf === expected.length && n > 8);
    t.true(at > 0, `${arch}: the rule for ${name} is in the program`);
    t.deepEqual(program.slice(at + 1, at + 1 + expected.length), expected, `${arch}: ${name}`);
  };
  for (const arch of ARCHES) ruleAt(arch, 'openat', 2);
  ruleAt('x86_64', 'open', 1);
  t.is(SECCOMP_DATA.argLow(2), 32);
  t.deepEqual([C.O_CREAT, C.O_EXCL, C.O_TRUNC], [0o100, 0o200, 0o1000], 'the uapi values (asm-generic/fcntl.h: x86_64 and aarch64 alike)');
});

for (const arch of ARCHES) {
  test(`${arch}: every O_TRUNC combination of the 12 low flag bits is denied unless with O_CREAT and O_EXCL`, (t) => {
    for (let flags = 0; flags < 1 << 12; flags++) {
      const truncates = (flags & C.O_TRUNC) !== 0 && (flags & (C.O_CREAT | C.O_EXCL)) !== (C.O_CREAT | C.O_EXCL);
      t.deepEqual(judge(arch, call(arch, 'openat', -100, 0, flags, 0)), truncates ? EPERM : ALLOW, `openat flags 0o${flags.toString(8)}`);
      if (arch === 'x86_64') t.deepEqual(judge(arch, call(arch, 'open', 0, flags, 0)), truncates ? EPERM : ALLOW, `open flags 0o${flags.toString(8)}`);
    }
  });
}

for (const arch of ARCHES) {
  for (const [description, name, args, expected] of TABLE) {
    test(`${arch}: ${description}`, (t) => {
      t.deepEqual(judge(arch, call(arch, name, ...args)), expected);
    });
  }

  test(`${arch}: a foreign architecture is killed`, (t) => {
    const foreign = arch === 'x86_64' ? AUDIT_ARCH.aarch64 : AUDIT_ARCH.x86_64;
    t.deepEqual(judge(arch, { nr: 0, arch: foreign }), KILL);
    t.deepEqual(judge(arch, { nr: 0, arch: 0x40000003 /* AUDIT_ARCH_I386 */ }), KILL);
    t.deepEqual(judge(arch, { nr: 0, arch: 0 }), KILL);
  });

  test(`${arch}: every number ≥ 0x40000000 (x32) is denied`, (t) => {
    for (const n of [
      X32_SYSCALL_BIT,
      X32_SYSCALL_BIT | 0,
      X32_SYSCALL_BIT | 39,
      X32_SYSCALL_BIT | 59,
      X32_SYSCALL_BIT | 520,
      X32_SYSCALL_BIT | 545,
      0x7fffffff,
      0xffffffff,
      0x80000000,
    ]) {
      t.deepEqual(judge(arch, { nr: n, arch: AUDIT_ARCH[arch] }), EPERM, `nr 0x${n.toString(16)}`);
    }
  });

  test(`${arch}: numbers above the highest reviewed (${HIGHEST_REVIEWED[arch]}) are ENOSYS, the highest itself is not`, (t) => {
    const highest = HIGHEST_REVIEWED[arch];
    for (const n of [highest + 1, highest + 2, 512, 1000, X32_SYSCALL_BIT - 1]) t.deepEqual(judge(arch, { nr: n, arch: AUDIT_ARCH[arch] }), ENOSYS, `nr ${n}`);
    t.deepEqual(judge(arch, { nr: highest, arch: AUDIT_ARCH[arch] }), ALLOW);
  });

  test(`${arch}: every call of the deny list is EPERM, whatever its arguments`, (t) => {
    for (const group of DENY_GROUPS) {
      for (const denied of group.calls) {
        if (denied.absentOn?.includes(arch)) continue;
        for (const args of [[], [PID, PID, PID], [0xffffffffn, 1n << 63n]]) {
          t.deepEqual(judge(arch, call(arch, denied.name, ...args)), EPERM, `${denied.name} (${group.group})`);
        }
      }
    }
  });

  test(`${arch}: the ENOSYS calls are ENOSYS`, (t) => {
    for (const c of ENOSYS_CALLS) t.deepEqual(judge(arch, call(arch, c.name, 0x10000000)), ENOSYS, c.name);
  });

  test(`${arch}: io_uring_enter/register are allowed only with allowIoUringEnter, io_uring_setup never`, (t) => {
    for (const c of IO_URING_RING_CALLS) {
      t.deepEqual(judge(arch, call(arch, c.name)), EPERM, c.name);
      t.deepEqual(judge(arch, call(arch, c.name), { allowIoUringEnter: true }), ALLOW, c.name);
    }
    t.deepEqual(judge(arch, call(arch, 'io_uring_setup'), { allowIoUringEnter: true }), EPERM);
    t.false(compileFilter(arch, PID).ioUringEnterAllowed);
    t.true(compileFilter(arch, PID, { allowIoUringEnter: true }).ioUringEnterAllowed);
  });

  test(`${arch}: every call not named by the policy is allowed, with any arguments`, (t) => {
    const named = new Set(
      [...DENY_GROUPS.flatMap((g) => g.calls), ...ENOSYS_CALLS, ...IO_URING_RING_CALLS].map((c) => c.name).concat(ARG_RULES.map((r) => r.name)),
    );
    let checked = 0;
    for (const [name, numbers] of Object.entries(SYSCALLS)) {
      const n = numbers[arch];
      if (n === null || named.has(name)) continue;
      t.deepEqual(judge(arch, { nr: n, arch: AUDIT_ARCH[arch], args: [OTHER, 0xffffffffn, 1n << 40n] }), ALLOW, name);
      checked++;
    }
    t.true(checked > 150, `checked ${checked}`);
  });

  test(`${arch}: every number 0..highest+10 gets a verdict (no jump lands outside the program)`, (t) => {
    for (let n = 0; n <= HIGHEST_REVIEWED[arch] + 10; n++) {
      for (const args of [[], [PID, PID], [OTHER, OTHER, OTHER]]) t.notThrows(() => judge(arch, { nr: n, arch: AUDIT_ARCH[arch], args }));
    }
  });

  test(`${arch}: the pid is baked in: another pid's filter denies this one`, (t) => {
    const other = compileFilter(arch, OTHER).instructions;
    t.deepEqual(verdict(other, call(arch, 'kill', PID, 0)), EPERM);
    t.deepEqual(verdict(other, call(arch, 'kill', OTHER, 0)), ALLOW);
  });

  test(`${arch}: the program is within BPF limits and counts what it holds`, (t) => {
    const f = compileFilter(arch, PID);
    t.true(f.instructions.length < 4096);
    t.is(f.highestReviewed, HIGHEST_REVIEWED[arch]);
    t.is(f.argRules, ARG_RULES.filter((r) => !r.absentOn?.includes(arch)).length);
    t.true(f.deniedCalls > 100);
    for (const i of f.instructions) t.true(i.jt <= 255 && i.jf <= 255 && i.k >= 0 && i.k <= 0xffffffff);
  });
}

test('compileFilter is pure: the same inputs give the same program', (t) => {
  t.deepEqual(compileFilter('x86_64', PID), compileFilter('x86_64', PID));
  t.notDeepEqual(compileFilter('x86_64', PID).instructions, compileFilter('aarch64', PID).instructions);
});

test('compileFilter refuses a bad pid or architecture', (t) => {
  for (const pid of [0, -1, 1.5, NaN, 2 ** 31]) t.throws(() => compileFilter('x86_64', pid), { instanceOf: RangeError });
  t.throws(() => compileFilter('riscv64' as Arch, PID), { instanceOf: RangeError });
});

test('serializeFilter writes struct sock_filter, 8 bytes each, little-endian', (t) => {
  const bytes = serializeFilter([
    { code: 0x20, jt: 0, jf: 0, k: 4 },
    { code: 0x15, jt: 1, jf: 2, k: 0xc000003e },
    { code: 0x06, jt: 0, jf: 0, k: 0x7fff0000 },
  ]);
  t.is(bytes.length, 24);
  t.deepEqual([...bytes], [0x20, 0, 0, 0, 4, 0, 0, 0, 0x15, 0, 1, 2, 0x3e, 0, 0, 0xc0, 0x06, 0, 0, 0, 0, 0, 0xff, 0x7f]);
  t.is(serializeFilter(compileFilter('aarch64', PID).instructions).length, compileFilter('aarch64', PID).instructions.length * 8);
});

test('archOf maps Node architectures', (t) => {
  t.is(archOf('x64'), 'x86_64');
  t.is(archOf('arm64'), 'aarch64');
  t.is(archOf('ia32'), undefined);
  t.is(archOf('riscv64'), undefined);
});
