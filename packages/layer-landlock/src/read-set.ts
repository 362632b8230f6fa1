/**
 * What the worker may read: the read set handed to `strata-landlock`. It is exactly the files the
 * worker needs (`computeWorkerFiles` of @strata/runtime, shared with the empty root), plus the
 * layer's `readPaths`.
 *
 * @module
 */
import { isAbsolute } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LayerConfigError, computeWorkerFiles, type WorkerFile } from '@strata/runtime/layers';

export {
  isBeneath,
  normalizeWorkerFiles as normalizeReadSet,
  nodeInstallDir,
  nodeModulesWithRuntime,
  parseLoadedObjects,
  parseMaps,
  SYSTEM_WORKER_FILES as SYSTEM_FILES,
} from '@strata/runtime/worker-files';

/** One entry of the read set: a directory (read, list and execute beneath it) or a single file (read and execute). */
export type ReadEntry = WorkerFile;

/** This package's root (two levels above dist/src). */
export const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url)).replace(/\/$/, '');

/** The helper's arguments for a read set: `--read DIR` / `--read-file FILE`, in order. */
export function helperArguments(entries: readonly ReadEntry[]): string[] {
  return entries.flatMap((e) => [e.kind === 'dir' ? '--read' : '--read-file', e.path]);
}

/** The layer's `readPaths` option: absolute paths, as a list of strings. Throws naming what is wrong. */
export function checkReadPaths(value: unknown): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.some((p) => typeof p !== 'string'))
    throw new LayerConfigError('landlock', 'landlock(): option "readPaths" must be an array of strings');
  for (const path of value as string[]) {
    if (!isAbsolute(path)) throw new LayerConfigError('landlock', `landlock(): option "readPaths" takes absolute paths only; got ${JSON.stringify(path)}`);
    if (path.includes('\0')) throw new LayerConfigError('landlock', 'landlock(): option "readPaths" must not contain NUL');
  }
  return [...(value as string[])];
}

/** Where the read set is computed from; tests substitute parts. */
export interface ReadSetInput {
  readonly execPath: string;
  readonly packageRoot: string;
  readonly extra: readonly string[];
}

/** The worker's read set: the files it needs (Node, the runtime's packages, the libraries, a few system files), then `readPaths`. */
export function computeReadSet(input: ReadSetInput): ReadEntry[] {
  const extra = input.extra.map((path) => ({ path, why: 'the layer option readPaths' }));
  return computeWorkerFiles({ execPath: input.execPath, packageRoot: input.packageRoot, extra });
}
