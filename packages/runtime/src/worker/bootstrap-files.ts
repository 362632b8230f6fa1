/**
 * The worker's half of src/isolated/bootstrap-files.ts: the bootstrap scripts the parent named by
 * file, read and checked against the fingerprint the parent took of the same file.
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { StrataError } from '../errors.js';
import type { MemoryWatchdog } from '../native/native-paths.js';
import { mark } from '../timeline.js';

/**
 * `bootstrap` with each script the parent named in `files` (by index: a path and the fingerprint
 * of its bytes) read from its file.
 *
 * @throws StrataError when a file cannot be read, or its bytes are not those the parent
 *   fingerprinted (replaced since the parent read it), or the worker cannot fingerprint it.
 */
export function readBootstrapFiles(bootstrap: readonly string[], files: unknown, watchdog: Pick<MemoryWatchdog, 'fingerprint'> | undefined): string[] {
  const scripts = [...bootstrap];
  if (files === undefined) return scripts;
  if (files === null || typeof files !== 'object') throw new StrataError('configure: bootstrapFiles must be an object');
  for (const [key, file] of Object.entries(files)) {
    const index = Number(key);
    const { path, fingerprint } = (file ?? {}) as { path?: unknown; fingerprint?: unknown };
    if (!Number.isInteger(index) || index < 0 || index >= scripts.length || scripts[index] !== '')
      throw new StrataError(`configure: bootstrapFiles names script ${JSON.stringify(key)}, which is not an empty place in bootstrap`);
    if (typeof path !== 'string' || !isAbsolute(path) || typeof fingerprint !== 'string')
      throw new StrataError(`configure: bootstrapFiles[${key}] must be { path: an absolute path, fingerprint: a string }`);
    if (typeof watchdog?.fingerprint !== 'function')
      throw new StrataError(`bootstrap script ${index} was named by file, and this worker cannot fingerprint one`);
    let bytes: Buffer;
    try {
      bytes = readFileSync(path);
    } catch (error) {
      throw new StrataError(`bootstrap script ${index}: cannot read ${path} (${(error as Error).message})`, { cause: error });
    }
    if (watchdog.fingerprint(bytes) !== fingerprint)
      throw new StrataError(
        `bootstrap script ${index}: ${path} is not the file the parent read (it was replaced during this start, as by an upgrade); start again`,
      );
    scripts[index] = bytes.toString('utf8');
    mark(`bootstrap read from its file: ${index}`);
  }
  return scripts;
}
