/**
 * The pre-exec helper `strata-landlock` (native/landlock.c: prebuilt in prebuilds/<platform>-<arch>,
 * else built by node-gyp at install into build/Release), and the ABI and errata it reports.
 *
 * @module
 */
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { nativeArtifactPath } from '@strata/runtime/native';
import { ERRATA_FROM_OLD_HELPER, errataFromKernel, type Errata } from './errata.js';

// Required when a probe spawns its child (in the parent), not at import: the worker imports this
// module too, and node:child_process costs each worker's start milliseconds of compiling (Node's
// own modules compile from source under --jitless).
const childProcess = (): typeof import('node:child_process') => createRequire(import.meta.url)('node:child_process') as typeof import('node:child_process');

// This file compiles to dist/src/helper.js, two levels below the package root.
const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The helper: the package's prebuild for this platform and arch, else the source build (where install builds it). */
export const LANDLOCK_HELPER = nativeArtifactPath(PACKAGE_ROOT, 'strata-landlock');

/** The helper's exit statuses (native/landlock.c). */
export const HELPER_EXIT = Object.freeze({ usage: 120, abi: 121, ruleset: 122, rule: 123, restrict: 124, exec: 126 });

/** The kernel's Landlock ABI and errata, from `strata-landlock --print-abi`; or why they cannot be known. */
export type AbiResult = { readonly abi: number; readonly errata: Errata } | { readonly gap: string };

/**
 * Reads `--print-abi`'s output: `ABI ERRATA`, where ERRATA is the bitmask or `unknown:ERRNO`.
 * A bare `ABI` (a helper built before errata were reported) still parses, errata unknown.
 */
export function parsePrintAbi(stdout: string): AbiResult {
  const match = /^(\d+)(?: (\d+|unknown:\d+))?$/.exec(stdout.trim());
  const abi = Number(match?.[1]);
  if (!match || !Number.isSafeInteger(abi) || abi < 1) return { gap: `strata-landlock --print-abi printed ${JSON.stringify(stdout.trim())}` };
  const word = match[2];
  if (word === undefined) return { abi, errata: ERRATA_FROM_OLD_HELPER };
  return { abi, errata: word.startsWith('unknown:') ? errataFromKernel(-Number(word.slice('unknown:'.length))) : Number(word) };
}

/** Asks the helper for the running kernel's Landlock ABI and errata. */
export function landlockAbi(helper: string = LANDLOCK_HELPER): AbiResult {
  if (process.platform !== 'linux') return { gap: `Landlock is Linux only (this is ${process.platform})` };
  if (!existsSync(helper)) return { gap: `the strata-landlock helper is not built (${helper}): run \`npm rebuild @strata/layer-landlock\`` };
  const child = childProcess().spawnSync(helper, ['--print-abi'], { env: {}, encoding: 'utf8', timeout: 10_000, stdio: 'pipe' }); // 'pipe', not 'ignore': /dev/null is outside the worker's read set
  if (child.error) return { gap: `strata-landlock --print-abi could not run: ${child.error.message}` };
  if (child.status !== 0) return { gap: child.stderr.trim().split('\n').pop() || `strata-landlock --print-abi exited with ${child.status ?? child.signal}` };
  return parsePrintAbi(child.stdout);
}
