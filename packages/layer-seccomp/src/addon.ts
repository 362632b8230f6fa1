/**
 * The native addon (native/seccomp.c) and the helper strata-no-io-uring: prebuilt in
 * prebuilds/<platform>-<arch>, else built by node-gyp at install into build/Release.
 *
 * @module
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { nativeArtifactPath } from '@strata/runtime/native';

/** What native/seccomp.c exports. */
export interface SeccompAddon {
  /** PR_SET_NO_NEW_PRIVS, then the filter (struct sock_filter[] bytes) on every thread (TSYNC). Throws with the errno, or the thread TSYNC could not sync. */
  install(filter: Buffer): void;
  /** prctl(PR_GET_SECCOMP) of the calling thread: 0 none, 2 filter. */
  mode(): number;
  /** prctl(PR_GET_NO_NEW_PRIVS) of the calling thread. */
  noNewPrivs(): number;
  /** syscall(nr, a0..a5): its result, or -errno. The filter governs it like any other call. */
  rawSyscall(nr: number, ...args: (number | bigint)[]): number;
}

// This file compiles to dist/src/addon.js, two levels below the package root.
const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The addon: the package's prebuild for this platform and arch, else the source build (where install builds it). */
export const ADDON_PATH = nativeArtifactPath(PACKAGE_ROOT, 'strata_seccomp.node');

/**
 * The pre-exec helper `strata-no-io-uring -- /abs/program [arg...]` (native/no-io-uring.c): refuses
 * io_uring_setup (ENOSYS) before Node starts, so libuv makes no io_uring ring and the layer can deny
 * io_uring_enter/register too. For the launch chain.
 */
export const NO_IO_URING_HELPER = nativeArtifactPath(PACKAGE_ROOT, 'strata-no-io-uring');

let cached: SeccompAddon | undefined;

/** Why the addon cannot be loaded here, or undefined when it can. */
export function addonUnavailableReason(): string | undefined {
  if (process.platform !== 'linux') return `seccomp is Linux only (this is ${process.platform})`;
  if (!existsSync(ADDON_PATH)) return `the seccomp addon is not built (${ADDON_PATH}): run \`npm rebuild @strata/layer-seccomp\``;
  return undefined;
}

/** Loads the addon (once). Throws naming the reason when it cannot. */
export function loadAddon(): SeccompAddon {
  if (cached) return cached;
  const reason = addonUnavailableReason();
  if (reason) throw new Error(`@strata/layer-seccomp: ${reason}`);
  // process.dlopen itself, as require would after resolving the path and building a module around
  // it (about 0.2 ms of the worker's start, --jitless); loaded once, above.
  const module = { exports: {} as unknown };
  process.dlopen(module, ADDON_PATH);
  cached = module.exports as SeccompAddon;
  return cached;
}
