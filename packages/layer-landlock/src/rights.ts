/**
 * What a Landlock ABI lets the helper handle, in the layer's short stable words.
 *
 * @module
 */

/** Filesystem rights handled by native/landlock-uapi.h (the helper and the addon), by the ABI that introduced them. */
export const FS_RIGHTS_BY_ABI: readonly (readonly [number, readonly string[]])[] = Object.freeze([
  [
    1,
    [
      'execute',
      'write_file',
      'read_file',
      'read_dir',
      'remove_dir',
      'remove_file',
      'make_char',
      'make_dir',
      'make_reg',
      'make_sock',
      'make_fifo',
      'make_block',
      'make_sym',
    ],
  ],
  [2, ['refer']],
  [3, ['truncate']],
  [5, ['ioctl_dev']],
  [9, ['resolve_unix']],
]);

/** The newest ABI whose rights this package knows; a newer kernel's added rights are not handled. */
export const LATEST_KNOWN_ABI = 9;

/** Every right the helper's ruleset handles on `abi` (all denied unless a read rule grants them). */
export function handledRights(abi: number): string[] {
  const rights = FS_RIGHTS_BY_ABI.filter(([since]) => abi >= since).flatMap(([, names]) => names.map((n) => `fs.${n}`));
  if (abi >= 4) rights.push('net.bind_tcp', 'net.connect_tcp');
  if (abi >= 6) rights.push('scope.abstract_unix_socket', 'scope.signal');
  return rights;
}

/** The layer's `provides` and `missing` on `abi`. */
export function capabilityWords(abi: number): { provides: string[]; missing: string[] } {
  const provides = ['fs-read-only-runtime', 'fs-no-write'];
  const missing: string[] = [];
  (abi >= 4 ? provides : missing).push('tcp-deny');
  (abi >= 6 ? provides : missing).push('scope-abstract-unix', 'scope-signal');
  if (abi < 2) missing.push('fs-refer');
  if (abi < 3) missing.push('fs-truncate');
  if (abi < 5) missing.push('fs-ioctl-dev');
  return { provides, missing };
}
