/**
 * The Seatbelt layer module (`@strata/layer-seatbelt/layer`): its default export is the factory
 * the worker (and the parent) call with the layer's options.
 *
 * - probe (parent): macOS, the addon built, and a dry run: a throwaway child applies the same
 *   profile, must be denied everything it tries and must still run (dry-run.ts).
 * - apply (worker): computes the read set, writes the profile, checks it, and applies it to the
 *   whole process with `sandbox_init` (Seatbelt covers every thread, the ones Node started
 *   before any JavaScript included, so no launch step is needed).
 * - selfTest (worker): tries what the profile exists to stop, and throws naming what got through.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { ApplyContext, Layer, LayerCapability, ProbeContext, SelfTestContext } from '@strata/runtime/layers';
import { addonUnavailableReason, loadAddon } from './addon.js';
import { tryForbidden } from './attempts.js';
import { dryRun } from './dry-run.js';
import { checkProfile, normalizeReads, seatbeltProfile } from './profile.js';
import { PACKAGE_ROOT, checkReadPaths, computeReadRules, type ReadEntry } from './read-set.js';

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

const OPTIONS = new Set(['readPaths']);

/** What the layer enforces where it is available, in short stable words. */
export const PROVIDES: readonly string[] = Object.freeze(['fs-deny', 'net-deny', 'exec-deny', 'signal-self', 'process-info-self']);

/**
 * The worker's profile, as {@link profileFor} computes it.
 *
 * @internal
 */
export interface WorkerProfile {
  /** What it lets the worker read, and why. */
  readonly reads: readonly ReadEntry[];
  /** The SBPL text handed to `sandbox_init`. */
  readonly profile: string;
  /** The SHA-256 of the text, hex (reported, so a profile can be compared across runs and machines). */
  readonly sha256: string;
}

/**
 * The worker's profile for these options: its read set and its SBPL text, checked by `checkProfile`. Throws if a readPaths entry does not exist.
 *
 * @internal
 */
export function profileFor(options: Readonly<Record<string, unknown>>): WorkerProfile {
  const reads = computeReadRules({ execPath: process.execPath, packageRoot: PACKAGE_ROOT, extra: checkReadPaths(options.readPaths, '@strata/layer-seatbelt') });
  const profile = seatbeltProfile({ reads });
  // A bug in the generator must fail the start, never widen the sandbox.
  const problems = checkProfile(profile);
  if (problems.length > 0) throw new Error(`@strata/layer-seatbelt: the generated profile breaks its own rules: ${problems.join('; ')}`);
  return { reads, profile, sha256: createHash('sha256').update(profile).digest('hex') };
}

/** Dry-run answers by profile: the same profile gets the same answer for the whole process. */
const dryRuns = new Map<string, string | undefined>();

function probe(context: ProbeContext): LayerCapability {
  const unavailable = addonUnavailableReason(context.platform);
  if (unavailable !== undefined) return { available: false, provides: [], missing: [unavailable] };
  const { profile, sha256 } = profileFor(context.options);
  if (!dryRuns.has(sha256)) dryRuns.set(sha256, dryRun(profile));
  const gap = dryRuns.get(sha256);
  if (gap !== undefined) return { available: false, provides: [], missing: [gap] };
  return { available: true, provides: [...PROVIDES], missing: [], detail: { dryRun: 'passed' } };
}

function apply(context: ApplyContext): void {
  if (context.platform !== 'darwin') throw new Error(`Seatbelt is macOS only (this is ${context.platform})`);
  // Loaded before the profile: afterwards only the read set can be read.
  const addon = loadAddon();
  const { reads, profile, sha256 } = profileFor(context.options);
  addon.apply(profile);
  context.report({ profileSha256: sha256, readPaths: checkReadPaths(context.options.readPaths).length, readRules: normalizeReads(reads).length });
}

async function selfTest(context: SelfTestContext): Promise<void> {
  const { results, problems } = await tryForbidden(loadAddon(), `${PACKAGE_ROOT}/package.json`);
  if (problems.length > 0) throw new Error(`the Seatbelt profile let through: ${problems.join('; ')}`);
  context.report({ selfTest: { ...results } });
}

/** The Seatbelt layer. Options: `readPaths` (absolute paths the worker may also read). */
export default function seatbeltLayer(options: Readonly<Record<string, unknown>> = {}): Layer {
  const unknown = Object.keys(options).filter((k) => !OPTIONS.has(k));
  if (unknown.length > 0) throw new Error(`@strata/layer-seatbelt: unknown option(s) ${unknown.join(', ')}; the layer takes readPaths`);
  checkReadPaths(options.readPaths, '@strata/layer-seatbelt');
  return { name: 'seatbelt', version: VERSION, probe, apply, selfTest };
}
