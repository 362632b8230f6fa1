/**
 * The native addon (native/landlock-addon.c: prebuilt in prebuilds/<platform>-<arch>, else built by
 * node-gyp at install into build/Release):
 * what the worker asks of Landlock in-process.
 *
 * @module
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { nativeArtifactPath } from '@strata/runtime/native';

/** What native/landlock-addon.c exports. */
export interface LandlockAddon {
  /** The kernel's Landlock ABI. Throws when Landlock is missing or disabled. */
  abi(): number;
  /**
   * The kernel's errata bitmask, or -errno when it cannot say (-EINVAL where the kernel lacks the
   * query: mainline before 6.15, unless the distribution backported it, as Debian's 6.1.192 did).
   */
  errata(): number;
  /**
   * PR_SET_NO_NEW_PRIVS, then a domain handling every filesystem right of the running ABI with no
   * rule, on every thread at once (`LANDLOCK_RESTRICT_SELF_TSYNC`, ABI 8). Returns the handled
   * rights (a bitmask). Throws with the errno, naming ABI 8 when the kernel lacks thread sync;
   * nothing is stacked then. Irreversible: call it only in a process meant to lose all file access.
   */
  stackDenyAll(): number;
  /**
   * For tests only; the layer never calls it. The same deny-all domain on the calling thread
   * alone (no thread sync), which every ABI accepts: on an ABI < 8 kernel it simulates, on the
   * main thread, what {@link stackDenyAll} takes from the worker
   * (test/fixtures/simulated-stack-layer.ts). Irreversible, like stackDenyAll.
   *
   * @internal
   */
  stackDenyAllThisThread(): number;
}

// This file compiles to dist/src/addon.js, two levels below the package root.
const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The addon: the package's prebuild for this platform and arch, else the source build (where install builds it). */
export const ADDON_PATH = nativeArtifactPath(PACKAGE_ROOT, 'strata_landlock.node');

let cached: LandlockAddon | undefined;

/** Why the addon cannot be loaded here, or undefined when it can. */
export function addonUnavailableReason(): string | undefined {
  if (process.platform !== 'linux') return `Landlock is Linux only (this is ${process.platform})`;
  if (!existsSync(ADDON_PATH)) return `the Landlock addon is not built (${ADDON_PATH}): run \`npm rebuild @strata/layer-landlock\``;
  return undefined;
}

/** Loads the addon (once). Throws naming the reason when it cannot. */
export function loadAddon(): LandlockAddon {
  if (cached) return cached;
  const reason = addonUnavailableReason();
  if (reason) throw new Error(`@strata/layer-landlock: ${reason}`);
  // process.dlopen itself, as require would after resolving the path and building a module around
  // it (about 0.2 ms of the worker's start, --jitless); loaded once, above.
  const module = { exports: {} as unknown };
  process.dlopen(module, ADDON_PATH);
  cached = module.exports as LandlockAddon;
  return cached;
}
