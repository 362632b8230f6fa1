/**
 * The pre-exec helper `strata-emptyroot` (native/emptyroot.c: prebuilt in prebuilds/<platform>-<arch>,
 * else built by node-gyp at install into build/Release), its dry run, and what a failed dry run says about the platform.
 *
 * @module
 */
import { createRequire } from 'node:module';
import { existsSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { nativeArtifactPath } from '@strata/runtime/native';

// Required when a probe spawns its child (in the parent), not at import: the worker imports this
// module too, and node:child_process costs each worker's start milliseconds of compiling (Node's
// own modules compile from source under --jitless).
const childProcess = (): typeof import('node:child_process') => createRequire(import.meta.url)('node:child_process') as typeof import('node:child_process');

// This file compiles to dist/src/helper.js, two levels below the package root.
const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The helper: the package's prebuild for this platform and arch, else the source build (where install builds it). */
export const EMPTYROOT_HELPER = nativeArtifactPath(PACKAGE_ROOT, 'strata-emptyroot');

/** The helper's exit statuses (native/emptyroot.c). */
export const HELPER_EXIT = Object.freeze({ usage: 120, unshare: 121, maps: 122, root: 123, caps: 124, check: 125, exec: 126 });

/**
 * Why the empty root can or cannot be made here. `disabled`: `user.max_user_namespaces` is 0
 * (the kernel answers ENOSPC, as when the count is `exhausted`); `chrooted`: this process is in a
 * chroot, where the kernel refuses a user namespace (EPERM, as when `forbidden`).
 */
export type UsernsVerdict = 'available' | 'unsupported' | 'forbidden' | 'chrooted' | 'disabled' | 'exhausted' | 'failed';

/**
 * What the parent reads of its host to tell apart failures the kernel gives one errno for:
 * `maxUserNamespaces`, the sysctl `user.max_user_namespaces` (as this user namespace sees it), and
 * `chrooted`, whether this process's root is not its mount namespace's root. `undefined`: could not
 * be told.
 */
export interface HostFacts {
  readonly maxUserNamespaces?: number | undefined;
  readonly chrooted?: boolean | undefined;
}

/** A dry run's outcome: the verdict, the errno the helper named, and a sentence for a person. */
export interface DryRunResult {
  readonly verdict: UsernsVerdict;
  readonly errno?: string;
  readonly message: string;
}

const WHAT_TO_DO_OFF = "or turn the layer off (requirement: 'off'), knowing that an escaped guest can then learn which host paths exist";

/**
 * Reads a dry run's exit status and stderr, with what `host` says (pure). The kernel answers
 * `unshare(CLONE_NEWUSER)` with EINVAL when it has no user namespaces; EPERM when they are
 * forbidden (Debian's `kernel.unprivileged_userns_clone=0`, a container's seccomp profile) and
 * also when the caller is chrooted (kernel/user_namespace.c refuses a chrooted process); ENOSPC
 * (EUSERS before 4.9) when `user.max_user_namespaces` is reached, and so also when it is 0.
 * Ubuntu's AppArmor restriction lets unshare succeed and takes the capabilities inside, so its
 * EPERM comes later, writing the maps or mounting.
 */
export function classifyDryRun(status: number | null, signal: string | null, stdout: string, stderr: string, host: HostFacts = {}): DryRunResult {
  if (status === 0 && stdout.trim() === 'ok')
    return { verdict: 'available', message: 'a dry run made the namespaces, the empty root and dropped every capability' };
  const line = stderr.trim().split('\n').pop() ?? '';
  const errno = /^strata-emptyroot: [a-z]+: (E[A-Z?]+):/.exec(line)?.[1];
  const said = line === '' ? `exited with ${status ?? signal}` : line;
  if (status === HELPER_EXIT.unshare && (errno === 'EINVAL' || errno === 'ENOSYS')) {
    return {
      verdict: 'unsupported',
      errno,
      message: `this kernel has no user namespaces (${said}): use a kernel built with CONFIG_USER_NS, ${WHAT_TO_DO_OFF}`,
    };
  }
  if (status === HELPER_EXIT.unshare && (errno === 'ENOSPC' || errno === 'EUSERS')) {
    if (host.maxUserNamespaces === 0) {
      return {
        verdict: 'disabled',
        errno,
        message: `user namespaces are switched off: user.max_user_namespaces is 0 (${said}): allow them with \`sysctl user.max_user_namespaces=15000\` (any number above 0; to keep it, a file in /etc/sysctl.d), ${WHAT_TO_DO_OFF}`,
      };
    }
    const limit =
      host.maxUserNamespaces === undefined
        ? ''
        : ` (user.max_user_namespaces is ${host.maxUserNamespaces} here; an enclosing namespace's own limit also counts)`;
    return {
      verdict: 'exhausted',
      errno,
      message: `no user namespace is left${limit} (${said}): raise the sysctl user.max_user_namespaces, or end processes holding many, ${WHAT_TO_DO_OFF}`,
    };
  }
  if (status === HELPER_EXIT.unshare && errno === 'EPERM') {
    if (host.chrooted === true) {
      return {
        verdict: 'chrooted',
        errno,
        message: `this process runs in a chroot, and the kernel refuses a user namespace to a chrooted process (${said}): run Strata outside the chroot (a container or a pivot_root into that tree works; chroot does not), ${WHAT_TO_DO_OFF}`,
      };
    }
    const chroot = host.chrooted === false ? '' : '; or this process is in a chroot, where the kernel refuses user namespaces: run it outside the chroot';
    return {
      verdict: 'forbidden',
      errno,
      message: `unprivileged user namespaces are forbidden here (${said}): allow them (sysctl kernel.unprivileged_userns_clone=1; in a container, a seccomp profile that permits unshare)${chroot}, ${WHAT_TO_DO_OFF}`,
    };
  }
  if ((status === HELPER_EXIT.maps || status === HELPER_EXIT.root) && (errno === 'EPERM' || errno === 'EACCES')) {
    return {
      verdict: 'forbidden',
      errno,
      message: `a user namespace was made but holds no power (${said}), as under Ubuntu's AppArmor restriction (kernel.apparmor_restrict_unprivileged_userns=1): give Node an AppArmor profile that allows 'userns', ${WHAT_TO_DO_OFF}`,
    };
  }
  return { verdict: 'failed', ...(errno === undefined ? {} : { errno }), message: `the dry run of strata-emptyroot failed (${said})` };
}

/**
 * Runs the helper with `args` and `--dry-run` in a throwaway child, as the worker's user (uid and
 * gid 65534 when this process is root, as strata-exec makes the worker), and reads the outcome.
 */
export function dryRun(args: readonly string[], helper: string = EMPTYROOT_HELPER): DryRunResult {
  if (process.platform !== 'linux') return { verdict: 'unsupported', message: `the empty root is Linux only (this is ${process.platform})` };
  if (!existsSync(helper))
    return { verdict: 'failed', message: `the strata-emptyroot helper is not built (${helper}): run \`npm rebuild @strata/layer-emptyroot\`` };
  const asWorker = process.geteuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
  const child = childProcess().spawnSync(helper, ['--dry-run', ...args, '--', helper], {
    env: {},
    encoding: 'utf8',
    timeout: 10_000,
    stdio: 'pipe',
    cwd: '/',
    ...asWorker,
  });
  if (child.error) return { verdict: 'failed', message: `the dry run of strata-emptyroot could not run: ${child.error.message}` };
  if (child.status === 0) return classifyDryRun(child.status, child.signal, child.stdout, child.stderr);
  return classifyDryRun(child.status, child.signal, child.stdout, child.stderr, readHostFacts());
}

/** Reads {@link HostFacts} from /proc (`proc`: where it is, for tests). Never throws. */
export function readHostFacts(proc = '/proc'): HostFacts {
  let maxUserNamespaces: number | undefined;
  try {
    const text = readFileSync(`${proc}/sys/user/max_user_namespaces`, 'utf8').trim();
    if (/^\d+$/.test(text)) maxUserNamespaces = Number(text);
  } catch {
    // No such sysctl (no CONFIG_USER_NS), or no /proc: unknown.
  }
  return { maxUserNamespaces, chrooted: isChrooted(proc) };
}

/**
 * Whether this process is chrooted, as the kernel decides it for `unshare(CLONE_NEWUSER)`: its
 * root is not the root of its mount namespace. Where pid 1 shares the mount namespace and its root
 * can be stat'd (root can), that root is compared with ours. Else the mount tables: each process's
 * /proc/PID/mountinfo (world-readable) lists the mounts seen from its own root, with ids unique to
 * the namespace. No mount at "/" in ours: the root is a directory inside a mount, a chroot. Ids in
 * common with pid 1's: the same namespace, and then a chroot iff the mounts at "/" differ (a
 * chroot into a mount point). `undefined`: could not be told (no /proc, or pid 1 in another mount
 * namespace and a mount at our "/"). Assumes pid 1 itself is not chrooted.
 */
export function isChrooted(proc = '/proc'): boolean | undefined {
  try {
    if (readlinkSync(`${proc}/1/ns/mnt`) === readlinkSync(`${proc}/self/ns/mnt`)) {
      const ours = statSync('/');
      const init = statSync(`${proc}/1/root/`);
      return ours.dev !== init.dev || ours.ino !== init.ino;
    }
  } catch {
    // pid 1's namespace and root are not ours to read (another user's process): the mount tables.
  }
  const ours = mountTable(`${proc}/self/mountinfo`);
  if (ours === undefined) return undefined;
  if (ours.atRoot.length === 0) return true;
  const init = mountTable(`${proc}/1/mountinfo`);
  if (init === undefined || !init.ids.some((id) => ours.ids.includes(id))) return undefined;
  return ours.atRoot.join(' ') !== init.atRoot.join(' ');
}

/** The mount ids of a mountinfo file, and those mounted at "/" (in order); `undefined` if unreadable. */
function mountTable(path: string): { ids: string[]; atRoot: string[] } | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  // "ID PARENT MAJOR:MINOR ROOT MOUNT-POINT ...".
  const rows = text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => line.split(' '));
  return { ids: rows.map((row) => row[0]!), atRoot: rows.filter((row) => row[4] === '/').map((row) => row[0]!) };
}
