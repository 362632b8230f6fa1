/**
 * The native addon (native/seatbelt.c; macOS only): prebuilt in prebuilds/<platform>-<arch>, else
 * built by node-gyp at install into build/Release.
 *
 * @module
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { nativeArtifactPath } from '@strata/runtime/native';

/** What native/seatbelt.c exports. */
export interface SeatbeltAddon {
  /** `sandbox_init(profile, 0, &error)`: puts this whole process, every thread, in the profile. Irreversible. Throws with Seatbelt's error text. */
  apply(profile: string): void;
  /** Tries to read another process's arguments and environment (sysctl `kern.procargs2`): 0 when it could, else the errno. For the self-test. */
  processArgsErrno(pid: number): number;
}

// This file compiles to dist/src/addon.js, two levels below the package root.
const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The addon: the package's prebuild for this platform and arch, else the source build (where install builds it). */
export const ADDON_PATH = nativeArtifactPath(PACKAGE_ROOT, 'strata_seatbelt.node');

let cached: SeatbeltAddon | undefined;

/** Why the addon cannot be loaded on `platform`, or undefined when it can. */
export function addonUnavailableReason(platform: NodeJS.Platform = process.platform): string | undefined {
  if (platform !== 'darwin') return `Seatbelt is macOS only (this is ${platform})`;
  if (!existsSync(ADDON_PATH))
    return `the seatbelt addon is not built (${ADDON_PATH}): run \`npm rebuild @strata/layer-seatbelt\` (it needs the Xcode command line tools)`;
  return undefined;
}

/** Loads the addon (once). Throws naming the reason when it cannot. */
export function loadAddon(): SeatbeltAddon {
  if (cached) return cached;
  const reason = addonUnavailableReason();
  if (reason) throw new Error(`@strata/layer-seatbelt: ${reason}`);
  cached = createRequire(import.meta.url)(ADDON_PATH) as SeatbeltAddon;
  return cached;
}
