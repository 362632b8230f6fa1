/**
 * Whether libuv may hold io_uring rings in this process (see IO_URING_RING_CALLS in policy.ts).
 *
 * @module
 */
import type { SeccompAddon } from './addon.js';
import { syscallNumber } from './compile-filter.js';
import { ERRNO } from './policy.js';
import type { Arch } from './syscall-table.js';

/**
 * True unless io_uring_setup is refused in this process (ENOSYS or EPERM: a pre-exec filter, or
 * the kernel's io_uring_disabled sysctl), in which case libuv could not have made its rings.
 * Asks with entries = 0, which the kernel refuses (EINVAL) without making a ring.
 */
export function ioUringMayBeInUse(addon: SeccompAddon, arch: Arch): boolean {
  const result = addon.rawSyscall(syscallNumber('io_uring_setup', arch)!, 0, 0);
  if (result >= 0) addon.rawSyscall(syscallNumber('close', arch)!, result);
  return result !== -ERRNO.ENOSYS && result !== -ERRNO.EPERM;
}
