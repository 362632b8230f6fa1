/**
 * The numbers the seccomp filter and its self-test share, apart from the policy's tables, so that
 * the worker's half of the layer loads them without the policy (see filter-templates.ts).
 *
 * @module
 */

/** The errno values the filter returns (the same numbers on x86_64 and aarch64). */
export const ERRNO = Object.freeze({ EPERM: 1, ENOSYS: 38 });

/** An errno the filter returns. */
export type ErrnoName = keyof typeof ERRNO;

/** Constants the rules use (uapi headers; the same values on x86_64 and aarch64). */
export const CONSTANTS = Object.freeze({
  AF_UNIX: 1,
  AF_INET: 2,
  AF_INET6: 10,
  O_CREAT: 0x40,
  O_EXCL: 0x80,
  O_TRUNC: 0x200,
  TIOCSTI: 0x5412,
  TIOCLINUX: 0x541c,
  PRIO_PROCESS: 0,
  IOPRIO_WHO_PROCESS: 1,
  CLONE_VM: 0x100,
  CLONE_FS: 0x200,
  CLONE_FILES: 0x400,
  CLONE_SIGHAND: 0x800,
  CLONE_VFORK: 0x4000,
  CLONE_PARENT: 0x8000,
  CLONE_THREAD: 0x10000,
  CLONE_NEWNS: 0x20000,
  CLONE_SYSVSEM: 0x40000,
  CLONE_SETTLS: 0x80000,
  CLONE_PARENT_SETTID: 0x100000,
  CLONE_CHILD_CLEARTID: 0x200000,
  CLONE_NEWCGROUP: 0x2000000,
  CLONE_NEWUTS: 0x4000000,
  CLONE_NEWIPC: 0x8000000,
  CLONE_NEWUSER: 0x10000000,
  CLONE_NEWPID: 0x20000000,
  CLONE_NEWNET: 0x40000000,
});

/** The x32 ABI's bit in the system call number (x86_64 only; on aarch64 it is simply above the highest number). */
export const X32_SYSCALL_BIT = 0x40000000;

/** The architecture name of the filter for a Node `process.arch`, or undefined where seccomp is not supported by this layer. */
export function archOf(nodeArch: string): 'x86_64' | 'aarch64' | undefined {
  return nodeArch === 'x64' ? 'x86_64' : nodeArch === 'arm64' ? 'aarch64' : undefined;
}
