/**
 * The empty root, planned: which directories, symlinks and read-only binds the new root holds,
 * and where its tmpfs is staged. A pure function of what the host's file system shows
 * ({@link HostFs}); the helper `strata-emptyroot` only carries the plan out.
 *
 * @module
 */
import { lstatSync, readlinkSync } from 'node:fs';
import { dirname, posix } from 'node:path';
import { isBeneath, type WorkerFile } from '@strata/runtime/layers';

/** What the planner may ask of the host's file system. */
export interface HostFs {
  /** The kind of `path` itself (a symlink is not followed). */
  kind(path: string): 'dir' | 'file' | 'symlink' | 'missing';
  /** The target of the symlink at `path`, as stored. */
  readlink(path: string): string;
}

/** The host's real file system. */
export const HOST_FS: HostFs = Object.freeze({
  kind(path: string) {
    try {
      const st = lstatSync(path);
      return st.isSymbolicLink() ? 'symlink' : st.isDirectory() ? 'dir' : 'file';
    } catch {
      return 'missing';
    }
  },
  readlink: (path: string) => readlinkSync(path, 'utf8'),
});

/** `host`, asked once per path: answers (and a throw from readlink) are kept for the caller's plan. */
function memoized(host: HostFs): HostFs {
  const kinds = new Map<string, ReturnType<HostFs['kind']>>();
  const targets = new Map<string, { target: string } | { error: unknown }>();
  return {
    kind(path) {
      let kind = kinds.get(path);
      if (kind === undefined) kinds.set(path, (kind = host.kind(path)));
      return kind;
    },
    readlink(path) {
      let answer = targets.get(path);
      if (answer === undefined) {
        try {
          answer = { target: host.readlink(path) };
        } catch (error) {
          answer = { error };
        }
        targets.set(path, answer);
      }
      if ('error' in answer) throw answer.error;
      return answer.target;
    },
  };
}

/** One step of building the new root, in the helper's terms. */
export type RootOp =
  | { readonly op: 'mkdir'; readonly path: string }
  | { readonly op: 'symlink'; readonly path: string; readonly target: string }
  | { readonly op: 'bind-dir'; readonly path: string }
  | { readonly op: 'bind-file'; readonly path: string };

/** The new root: where its tmpfs is staged, and the ops, in the order the helper runs them. */
export interface RootPlan {
  readonly stage: string;
  readonly ops: readonly RootOp[];
}

/**
 * Where the new root's tmpfs may be mounted (in the worker's own mount namespace only): the first
 * of these that is a directory on the host and neither holds nor lies beneath a bound path, so
 * that mounting over it hides nothing that must be bound.
 */
export const STAGE_CANDIDATES: readonly string[] = Object.freeze(['/mnt', '/media', '/srv', '/opt', '/run', '/tmp', '/var/tmp', '/home']);

/**
 * The worker's own /proc entries are bound by the path the helper sees: `/proc/self` is the
 * helper's pid, which the worker keeps across execve(). So they are not resolved here, where
 * `self` would be the parent.
 */
const PROC_SELF = '/proc/self';

const MAX_SYMLINKS = 40; // as the kernel (MAXSYMLINKS)

/** A symlink met while resolving: its path (with a real parent) and target. */
export interface Link {
  readonly path: string;
  readonly target: string;
}

/**
 * Resolves `path` as the kernel does, component by component, recording every symlink crossed
 * (the new root recreates them so the path works there too). Throws naming a missing path or a
 * loop.
 */
export function resolveOnHost(path: string, fs: HostFs): { real: string; kind: 'dir' | 'file'; links: Link[] } {
  if (!path.startsWith('/')) throw new TypeError(`emptyroot: ${JSON.stringify(path)} is not an absolute path`);
  const links: Link[] = [];
  const pending = path.split('/').filter((c) => c !== '');
  const resolved: string[] = [];
  let hops = 0;
  let kind: 'dir' | 'file' = 'dir';
  while (pending.length > 0) {
    const component = pending.shift()!;
    if (component === '.') continue;
    if (component === '..') {
      resolved.pop(); // `resolved` holds no symlink: its parent is its real parent
      continue;
    }
    const here = `/${[...resolved, component].join('/')}`;
    const found = fs.kind(here);
    if (found === 'missing') throw new Error(`emptyroot: ${here} does not exist on this host (needed for ${path})`);
    if (found === 'symlink') {
      if (++hops > MAX_SYMLINKS) throw new Error(`emptyroot: too many symlinks resolving ${path}`);
      const target = fs.readlink(here);
      links.push({ path: here, target });
      if (target.startsWith('/')) resolved.length = 0;
      pending.unshift(...target.split('/').filter((c) => c !== ''));
      continue;
    }
    if (pending.length > 0 && found !== 'dir') throw new Error(`emptyroot: ${here} is not a directory (resolving ${path})`);
    resolved.push(component);
    kind = found;
  }
  return { real: `/${resolved.join('/')}`, kind, links };
}

/** Every ancestor of `path` but `/`, outermost first. */
function ancestors(path: string): string[] {
  const out: string[] = [];
  for (let dir = dirname(path); dir !== '/'; dir = dirname(dir)) out.unshift(dir);
  return out;
}

const depth = (path: string) => path.split('/').length;

/**
 * Plans the new root for `files`: a read-only bind of each file's real path (directories
 * beneath a bound directory are not bound again), the symlinks on the way to each path as given
 * (so `/lib64/ld-linux-x86-64.so.2` works where `/lib64` is a link), and the directories that hold
 * them. Throws naming a path that is missing, or when no staging directory fits.
 */
export function planRoot(files: readonly WorkerFile[], host: HostFs = HOST_FS): RootPlan {
  // One view of the host per plan: the same components (/usr, the install's root) lie on the way
  // to most paths, and each lstat is a system call (about 340 of them per plan without this).
  const fs = memoized(host);
  const binds = new Map<string, 'dir' | 'file'>();
  const links = new Map<string, string>();
  for (const file of files) {
    const asked = posix.normalize(file.path);
    if (isBeneath(asked, PROC_SELF)) {
      binds.set(asked, file.kind);
      continue;
    }
    const { real, kind, links: crossed } = resolveOnHost(asked, fs);
    if (real === '/') throw new Error(`emptyroot: ${file.path} resolves to / — the host's whole root cannot be bound`);
    for (const link of crossed) links.set(link.path, link.target);
    binds.set(real, kind);
  }
  const boundDirs = [...binds].filter(([, kind]) => kind === 'dir').map(([path]) => path);
  const covered = (path: string, self?: string) => boundDirs.some((dir) => dir !== self && isBeneath(path, dir));
  const bindOps: RootOp[] = [...binds]
    .filter(([path]) => !covered(path, path))
    .sort(([a], [b]) => depth(a) - depth(b) || (a < b ? -1 : 1))
    .map(([path, kind]) => ({ op: kind === 'dir' ? 'bind-dir' : 'bind-file', path }));
  const linkOps: RootOp[] = [...links]
    .filter(([path]) => !covered(path))
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([path, target]) => ({ op: 'symlink', path, target }));
  const placed = new Set([...bindOps, ...linkOps].map((o) => o.path));
  const dirs = new Set<string>();
  for (const op of [...bindOps, ...linkOps]) {
    for (const dir of ancestors(op.path)) {
      if (covered(dir) || boundDirs.includes(dir)) break;
      if (placed.has(dir)) throw new Error(`emptyroot: ${dir} is needed both as a directory and as ${op.path}'s parent link or file`);
      dirs.add(dir);
    }
  }
  const mkdirOps: RootOp[] = [...dirs].sort((a, b) => depth(a) - depth(b) || (a < b ? -1 : 1)).map((path) => ({ op: 'mkdir', path }));
  const sources = [...binds.keys()];
  const stage = STAGE_CANDIDATES.find((dir) => fs.kind(dir) === 'dir' && !sources.some((s) => isBeneath(s, dir) || isBeneath(dir, s)));
  if (stage === undefined) {
    throw new Error(
      `emptyroot: no staging directory for the new root: each of ${STAGE_CANDIDATES.join(', ')} is missing or holds a bound path (make /mnt an empty directory)`,
    );
  }
  return Object.freeze({ stage, ops: Object.freeze([...mkdirOps, ...linkOps, ...bindOps]) });
}

/** The helper's arguments for a plan (without the program that follows `--`). */
export function helperArguments(plan: RootPlan): string[] {
  const args = ['--stage', plan.stage];
  for (const op of plan.ops) {
    if (op.op === 'symlink') args.push('--symlink', op.target, op.path);
    else args.push(`--${op.op}`, op.path);
  }
  return args;
}
