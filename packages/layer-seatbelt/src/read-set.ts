/**
 * What the worker may read, computed at run time (the repository, the install and Node can be
 * anywhere): the input of `seatbeltProfile`. Not pure: it resolves real paths.
 *
 * @module
 */
import { existsSync, realpathSync, statSync } from 'node:fs';
import { LayerConfigError } from '@strata/runtime/layers';
import { nodeModulesWithRuntime, strataPackages } from '@strata/runtime/worker-files';
import { fileURLToPath } from 'node:url';
import { checkProfilePath, type ReadRule } from './profile.js';

/** One read rule and why the worker needs it. */
export interface ReadEntry extends ReadRule {
  /** Why the worker needs it. */
  readonly why: string;
}

/** Where the read set is computed from; tests substitute parts. */
export interface ReadSetInput {
  /** The Node binary the worker runs (`process.execPath`). */
  readonly execPath: string;
  /** This package's root. */
  readonly packageRoot: string;
  /** The layer's `readPaths` option. */
  readonly extra: readonly string[];
}

export { nodeModulesWithRuntime, strataPackages };

/** This package's root (two levels above dist/src). */
export const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url)).replace(/\/$/, '');

/**
 * The layer's `readPaths` option: absolute paths the profile can hold, as a list of strings.
 * Throws a `LayerConfigError` naming what is wrong (the profile generator's own check, a
 * TypeError, becomes its cause).
 */
export function checkReadPaths(value: unknown, where = 'seatbelt()'): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.some((p) => typeof p !== 'string'))
    throw new LayerConfigError('seatbelt', `${where}: option "readPaths" must be an array of strings`);
  for (const path of value as string[]) {
    try {
      checkProfilePath(path, `${where}: option "readPaths"`);
    } catch (error) {
      throw new LayerConfigError('seatbelt', (error as Error).message, { cause: error });
    }
  }
  return [...(value as string[])];
}

function realpathOr(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

function isDir(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/**
 * The worker's reads, and nothing more: Node's binary (the file, not its install prefix: Node
 * embeds its own JavaScript, and a prefix such as /usr/local would open everything installed
 * there); the `node_modules` holding `@strata/runtime` (isolated-vm, cbor-x, tsyringe...); the real
 * directories of the `@strata` packages and of this one; the layer's `readPaths`. No dynamic
 * libraries: on macOS the system's come from the dyld shared cache, and every library and addon
 * the worker loads is mapped before the profile is applied.
 */
export function computeReadRules(input: ReadSetInput): ReadEntry[] {
  const entries: ReadEntry[] = [{ path: realpathSync(input.execPath), kind: 'literal', why: "Node's binary (process.execPath)" }];
  const nodeModules = nodeModulesWithRuntime(input.packageRoot);
  if (nodeModules !== undefined) {
    entries.push({
      path: realpathOr(nodeModules),
      kind: 'subpath',
      why: 'the installed dependencies the worker imports (@strata/*, isolated-vm, cbor-x, tsyringe, reflect-metadata)',
    });
    for (const pkg of strataPackages(nodeModules)) entries.push({ path: pkg, kind: 'subpath', why: 'a @strata package (real path of the workspace link)' });
  }
  entries.push({ path: realpathOr(input.packageRoot), kind: 'subpath', why: 'this layer (its package.json is the self-test positive control)' });
  for (const path of input.extra) {
    if (!existsSync(path)) throw new Error(`seatbelt: readPaths entry ${JSON.stringify(path)} does not exist`);
    entries.push({ path: realpathSync(path), kind: isDir(path) ? 'subpath' : 'literal', why: 'the layer option readPaths' });
  }
  for (const entry of entries) checkProfilePath(entry.path, 'seatbelt: the read set');
  return entries;
}
