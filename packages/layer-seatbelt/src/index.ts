/**
 * `@strata/layer-seatbelt`: a deny-by-default Seatbelt profile on Strata's worker (macOS,
 * docs/design.md §2): no file access beyond reading the runtime's own files, no network, no fork or
 * exec, signals only to itself. Applied in the worker with `sandbox_init` by a small native addon;
 * the profile is written by a pure function of the package (`seatbeltProfile`, described in the
 * README; it is not part of this entry). Elsewhere its probe reports it unavailable.
 *
 * ```ts
 * import { IsolatedRuntime } from '@strata/runtime';
 * import { seatbelt } from '@strata/layer-seatbelt';
 *
 * const rt = await IsolatedRuntime.start({ sandbox: 'require', layers: [seatbelt()] });
 * rt.sandbox; // 'seatbelt'
 * ```
 *
 * @packageDocumentation
 */
import type { LayerDescriptor, LayerRequirement } from '@strata/runtime';
import { checkReadPaths } from './read-set.js';
import { LayerConfigError } from '@strata/runtime/layers';

/** The module the worker imports. */
export const SEATBELT_LAYER_MODULE = '@strata/layer-seatbelt/layer';

/** Options of {@link seatbelt}. */
export interface SeatbeltOptions {
  /** Absolute paths the worker may also read (a directory: everything beneath it; a file: itself). They must exist when the worker starts. */
  readPaths?: readonly string[];
  /** Overrides the runtime's `sandbox` mode for this layer. */
  requirement?: LayerRequirement;
}

const REQUIREMENTS: readonly LayerRequirement[] = ['require', 'auto', 'off'];

/** Names the Seatbelt layer for `IsolatedRuntime.start({ layers })`. Throws a `LayerConfigError` (`ERR_STRATA_LAYER_CONFIG`) for an unknown option or a bad value. */
export function seatbelt(options: SeatbeltOptions = {}): LayerDescriptor {
  if (options === null || typeof options !== 'object') throw new LayerConfigError('seatbelt', 'seatbelt(): options must be an object');
  for (const key of Object.keys(options))
    if (key !== 'requirement' && key !== 'readPaths')
      throw new LayerConfigError('seatbelt', `seatbelt(): unknown option ${JSON.stringify(key)}; it takes readPaths and requirement`);
  const { requirement } = options;
  if (requirement !== undefined && !REQUIREMENTS.includes(requirement))
    throw new LayerConfigError('seatbelt', `seatbelt(): option "requirement" must be 'require', 'auto' or 'off'; got ${JSON.stringify(requirement)}`);
  const readPaths = checkReadPaths(options.readPaths);
  const descriptor: LayerDescriptor = { module: SEATBELT_LAYER_MODULE, options: options.readPaths === undefined ? {} : { readPaths } };
  return Object.freeze(requirement === undefined ? descriptor : { ...descriptor, requirement });
}
