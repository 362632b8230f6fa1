/**
 * Whether libuv may hold io_uring rings in this process (see IO_URING_RING_CALLS in policy.ts).
 *
 * @module
 */
import type { SeccompAddon } from './addon.js';
import { ERRNO } from './constants.js';

/** The two calls the check makes, by their numbers on this architecture. */
export interface IoUringCalls {
  readonly io_uring_setup: number;
  readonly close: number;
}

/**
 * True unless io_uring_setup is refused in this process (ENOSYS or EPERM: a pre-exec filter, or
 * the kernel's io_uring_disabled sysctl), in which case libuv could not have made its rings.
 * Asks with entries = 0, which the kernel refuses (EINVAL) without making a ring.
 */
export function ioUringMayBeInUse(addon: SeccompAddon, calls: IoUringCalls): boolean {
  const result = addon.rawSyscall(calls.io_uring_setup, 0, 0);
  if (result >= 0) addon.rawSyscall(calls.close, result);
  return result !== -ERRNO.ENOSYS && result !== -ERRNO.EPERM;
}
