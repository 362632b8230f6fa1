/**
 * What a Strata worker needs to read, and nothing more, computed at run time (the repository,
 * the install and Node can be anywhere): Node, the installed packages it imports, the shared
 * libraries, and the few system files Node opens at start. The OS layers confine the worker to
 * this set: Landlock grants reads beneath it, the empty root binds exactly it.
 *
 * @module
 */
import { closeSync, existsSync, openSync, readdirSync, readFileSync, readSync, realpathSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, sep, basename } from 'node:path';
import { fileURLToPath } from 'node:url';

/** One file or directory the worker needs: a directory (read, list and execute beneath it) or a single file (read and execute). */
export interface WorkerFile {
  readonly path: string;
  readonly kind: 'dir' | 'file';
  /** Why the worker needs it. */
  readonly why: string;
}

/**
 * Files outside the runtime's directories that the worker needs: what strace shows Node opening
 * from execve() to the worker's hello that fails it when denied. The dynamic linker's cache (the
 * libraries themselves come from {@link sharedLibraries}).
 */
export const SYSTEM_WORKER_FILES: readonly WorkerFile[] = Object.freeze([
  { path: '/etc/ld.so.cache', kind: 'file', why: 'the dynamic linker looks up libc, libstdc++... in it' },
  // /proc/self is resolved by the helper, whose pid the worker keeps across execve(): the rule is
  // on the worker's own /proc/<pid> entries, never another process's.
  { path: '/proc/self/statm', kind: 'file', why: "the runtime's memory watchdog reads the worker's resident size" },
  { path: '/proc/self/task', kind: 'dir', why: "the runtime's memory watchdog counts the worker's threads" },
]);

/** Whether `path` is `parent` or beneath it. */
export function isBeneath(path: string, parent: string): boolean {
  return path === parent || path.startsWith(parent.endsWith(sep) ? parent : parent + sep);
}

/** Keeps the first of equal paths and drops every entry beneath a directory entry; order kept otherwise. */
export function normalizeWorkerFiles(entries: readonly WorkerFile[]): WorkerFile[] {
  const dirs = entries.filter((e) => e.kind === 'dir');
  const out: WorkerFile[] = [];
  for (const entry of entries) {
    if (out.some((o) => o.path === entry.path)) continue;
    if (dirs.some((d) => d !== entry && d.path !== entry.path && isBeneath(entry.path, d.path))) continue;
    out.push(entry);
  }
  return out;
}

/** The nearest `node_modules` at or above `from` that holds `@strata/runtime`. */
export function nodeModulesWithRuntime(from: string): string | undefined {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules');
    if (existsSync(join(candidate, '@strata', 'runtime'))) return candidate;
    if (dirname(dir) === dir) return undefined;
  }
}

/** Node's install directory: `<prefix>` of `<prefix>/bin/node`, else the binary's own directory. */
export function nodeInstallDir(execPath: string): string {
  const real = realpathSync.native(execPath);
  const bin = dirname(real);
  return basename(bin) === 'bin' ? dirname(bin) : bin;
}

/**
 * The shared libraries (and the ELF interpreter) `execPath` loads, by the paths the dynamic linker
 * itself opens (symlinks kept: the empty root recreates them), as it lists them (glibc's LD_TRACE_LOADED_OBJECTS, what ldd uses: the program is not run). Falls back
 * to this process's own mappings when that lists nothing (another libc): the worker runs this
 * same binary.
 */
export function sharedLibraries(execPath: string): string[] {
  let libraries = librariesOf.get(execPath);
  if (libraries === undefined) {
    libraries = traceLibraries(execPath);
    librariesOf.set(execPath, libraries);
  }
  return [...libraries];
}

/** Per binary, once per process: every worker start (spares included) asks for the read set. */
const librariesOf = new Map<string, readonly string[]>();

function traceLibraries(execPath: string): string[] {
  // node:child_process on first use: the worker imports this module, and never traces
  const traced = process
    .getBuiltinModule('node:child_process')
    .spawnSync(execPath, [], { env: { LD_TRACE_LOADED_OBJECTS: '1' }, encoding: 'utf8', timeout: 10_000, stdio: ['ignore', 'pipe', 'pipe'] });
  const fromTrace = traced.status === 0 ? parseLoadedObjects(traced.stdout) : [];
  const libraries = fromTrace.length > 0 ? fromTrace : parseMaps(readFileSync('/proc/self/maps', 'utf8'));
  return [...new Set(libraries)];
}

/** Absolute paths in LD_TRACE_LOADED_OBJECTS output (`name => /path (0x...)`, `/lib64/ld... (0x...)`). */
export function parseLoadedObjects(output: string): string[] {
  const paths: string[] = [];
  for (const line of output.split('\n')) {
    const match = /(?:=>\s*)?(\/\S+)\s+\(0x[0-9a-f]+\)\s*$/.exec(line.trim());
    if (match) paths.push(match[1]!);
  }
  return paths;
}

/** Shared objects (`*.so`, `*.so.N`, not Node addons) mapped in a /proc/<pid>/maps text. */
export function parseMaps(maps: string): string[] {
  const paths = new Set<string>();
  for (const line of maps.split('\n')) {
    const path = line.split(/\s+/).slice(5).join(' ');
    if (path.startsWith('/') && /\.so(\.\d+)*$/.test(path)) paths.add(path);
  }
  return [...paths];
}

/** The real path (the C library's realpath: Node's own walks every component in JavaScript, an lstat each), or `path` itself when it cannot be resolved. */
function realpathOr(path: string): string {
  try {
    return realpathSync.native(path);
  } catch {
    return path;
  }
}

const opensslDirs = new Map<string, string | undefined>();

/**
 * The OpenSSL configuration file Node reads at start (the worker's environment has no
 * OPENSSL_CONF): `<OPENSSLDIR>/openssl.cnf`, OPENSSLDIR as compiled into the binary (its
 * `OPENSSLDIR: "..."` version string). Undefined when there is none (a missing file is fine to
 * Node; an unreadable one is fatal).
 */
export function opensslConfig(execPath: string): string | undefined {
  let dir = opensslDirs.get(execPath);
  if (!opensslDirs.has(execPath)) {
    dir = findOpensslDir(realpathSync.native(execPath));
    opensslDirs.set(execPath, dir);
  }
  if (dir === undefined || !dir.startsWith('/')) return undefined;
  const file = join(dir, 'openssl.cnf');
  return existsSync(file) ? realpathOr(file) : undefined;
}

const MARKER = Buffer.from('OPENSSLDIR: "', 'latin1');
const CHUNK = 1 << 20;

/**
 * OPENSSLDIR from the binary's version string, read in 1 MiB chunks until found (the binary is
 * ~100 MiB: reading it whole cost ~90 ms and a transient ~100 MiB in the parent).
 */
function findOpensslDir(binaryPath: string): string | undefined {
  const fd = openSync(binaryPath, 'r');
  try {
    // Each chunk keeps the previous one's last 4 KiB, so a marker (and the path after it) split
    // across a boundary is still found whole.
    const buffer = Buffer.alloc(CHUNK + 4096);
    let carried = 0;
    for (let position = 0; ; ) {
      const read = readSync(fd, buffer, carried, CHUNK, position);
      if (read === 0) return undefined;
      const filled = carried + read;
      const at = buffer.subarray(0, filled).indexOf(MARKER);
      if (at >= 0) {
        const rest =
          filled - at >= 4096 || read < CHUNK ? buffer.subarray(at, filled) : Buffer.concat([buffer.subarray(at, filled), readAt(fd, position + read, 4096)]);
        return /^OPENSSLDIR: "([^"]*)"/.exec(rest.subarray(0, 4096).toString('latin1'))?.[1];
      }
      position += read;
      carried = Math.min(4096, filled);
      buffer.copy(buffer, 0, filled - carried, filled);
    }
  } finally {
    closeSync(fd);
  }
}

function readAt(fd: number, position: number, length: number): Buffer {
  const out = Buffer.alloc(length);
  return out.subarray(0, readSync(fd, out, 0, length, position));
}

/** The real path of every package in `<nodeModules>/@strata` (workspace links resolve into packages/). */
export function strataPackages(nodeModules: string): string[] {
  const scope = join(nodeModules, '@strata');
  let names: string[];
  try {
    names = readdirSync(scope);
  } catch {
    return [];
  }
  return names.map((n) => realpathOr(join(scope, n))).filter((p) => isDir(p));
}

function isDir(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** This package's root (three levels above dist/src/layers). */
const RUNTIME_ROOT = fileURLToPath(new URL('../../../', import.meta.url)).replace(/\/$/, '');

/** Where the worker's files are computed from; tests substitute parts. */
export interface WorkerFilesInput {
  /** The Node binary the worker runs. */
  readonly execPath: string;
  /** A package directory to find the installed `node_modules` from (default: @strata/runtime's own). */
  readonly packageRoot?: string;
  /** More absolute paths the worker must read (a layer's option), with why. */
  readonly extra?: readonly { readonly path: string; readonly why: string }[];
}

/**
 * The files the worker needs, and nothing more: Node's install directory; the `node_modules`
 * holding `@strata/runtime` (isolated-vm, cbor-x, tsyringe, reflect-metadata...); the real
 * directories of the `@strata` packages (linked from packages/ in a workspace) and of
 * `packageRoot`; the libraries Node loads and the linker's cache; OpenSSL's configuration; the
 * worker's own /proc entries its watchdog reads; then `extra`. Throws naming an `extra` path
 * that does not exist.
 */
export function computeWorkerFiles(input: WorkerFilesInput): WorkerFile[] {
  const packageRoot = input.packageRoot ?? RUNTIME_ROOT;
  const entries: WorkerFile[] = [{ path: nodeInstallDir(input.execPath), kind: 'dir', why: "Node's install directory (the binary the worker execs)" }];
  const nodeModules = nodeModulesWithRuntime(packageRoot);
  if (nodeModules !== undefined) {
    entries.push({
      path: realpathOr(nodeModules),
      kind: 'dir',
      why: 'the installed dependencies the worker imports (@strata/*, isolated-vm, cbor-x, tsyringe, reflect-metadata)',
    });
    for (const pkg of strataPackages(nodeModules)) entries.push({ path: pkg, kind: 'dir', why: 'a @strata package (real path of the workspace link)' });
  }
  entries.push({ path: realpathOr(packageRoot), kind: 'dir', why: 'the package asking (imported by the worker)' });
  for (const library of sharedLibraries(input.execPath)) entries.push({ path: library, kind: 'file', why: 'a shared library or the ELF interpreter of Node' });
  for (const file of SYSTEM_WORKER_FILES) if (existsSync(file.path)) entries.push(file);
  const opensslConf = opensslConfig(input.execPath);
  if (opensslConf !== undefined)
    entries.push({ path: opensslConf, kind: 'file', why: "OpenSSL's configuration: Node reads it at start and exits (status 13) when it is unreadable" });
  for (const { path, why } of input.extra ?? []) {
    if (!isAbsolute(path)) throw new TypeError(`worker files: ${JSON.stringify(path)} is not an absolute path`);
    if (!existsSync(path)) throw new Error(`worker files: ${JSON.stringify(path)} (${why}) does not exist`);
    entries.push({ path: realpathOr(path), kind: isDir(path) ? 'dir' : 'file', why });
  }
  return normalizeWorkerFiles(entries);
}
