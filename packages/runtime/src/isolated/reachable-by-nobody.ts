import { realpathSync, statSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * Why uid 65534 (a worker started by root) could not reach `file` — a directory on its way not
 * searchable by others, or the file itself not readable (`need` 0o004) or executable (0o001) by
 * others — or undefined when it can. Checked from the mode bits, without switching users.
 */
export function unreachableByNobody(file: string, need: 0o004 | 0o001): string | undefined {
  const real = realpathSync.native(file);
  if ((statSync(real).mode & need) === 0) return `${real} is not ${need === 0o001 ? 'executable' : 'readable'} by others`;
  for (let dir = dirname(real); ; dir = dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) return `${dir} is not searchable by others`;
    if (dir === dirname(dir)) return undefined;
  }
}
