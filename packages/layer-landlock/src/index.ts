/**
 * `@strata/layer-landlock`: a Landlock domain on Strata's worker (docs/design.md §3), made before Node
 * starts: reads and executes only beneath the runtime's own files, no writes anywhere, no TCP,
 * abstract unix sockets and signals scoped to the worker. On Landlock ABI ≥ 8 the worker also
 * stacks, once every layer has applied (the layer's `seal`), a domain that denies every
 * filesystem access on every thread (TSYNC).
 *
 * ```ts
 * import { IsolatedRuntime } from '@strata/runtime';
 * import { landlock } from '@strata/layer-landlock';
 *
 * const rt = await IsolatedRuntime.start({ sandbox: 'require', layers: [landlock()] });
 * ```
 *
 * @packageDocumentation
 */
import type { LayerDescriptor, LayerRequirement } from '@strata/runtime';
import { checkReadPaths } from './read-set.js';
import { checkStackAfterLoad } from './stack.js';
import { LayerConfigError } from '@strata/runtime/layers';

/** The module the worker imports. */
export const LANDLOCK_LAYER_MODULE = '@strata/layer-landlock/layer';

/** Options of {@link landlock}. */
export interface LandlockOptions {
  /** Absolute paths the worker may also read (directories: beneath them; files: themselves). */
  readPaths?: readonly string[];
  /**
   * On Landlock ABI ≥ 8 (Linux 7.0): once the worker has loaded everything and every layer has
   * applied (in the layer's `seal`), stack a domain that denies every filesystem access, on every
   * thread at once (`LANDLOCK_RESTRICT_SELF_TSYNC`). Test-fired by the probe first. Default
   * `true`; ignored below ABI 8.
   */
  stackAfterLoad?: boolean;
  /** Overrides the runtime's `sandbox` mode for this layer. */
  requirement?: LayerRequirement;
}

const REQUIREMENTS: readonly LayerRequirement[] = ['require', 'auto', 'off'];
const KEYS = new Set(['requirement', 'readPaths', 'stackAfterLoad']);

/** Names the Landlock layer for `IsolatedRuntime.start({ layers })`. */
export function landlock(options: LandlockOptions = {}): LayerDescriptor {
  for (const key of Object.keys(options)) if (!KEYS.has(key)) throw new LayerConfigError('landlock', `landlock(): unknown option ${JSON.stringify(key)}`);
  const { requirement } = options;
  if (requirement !== undefined && !REQUIREMENTS.includes(requirement))
    throw new LayerConfigError('landlock', `landlock(): option "requirement" must be 'require', 'auto' or 'off'; got ${JSON.stringify(requirement)}`);
  const readPaths = checkReadPaths(options.readPaths);
  const stackAfterLoad = checkStackAfterLoad(options.stackAfterLoad);
  const layerOptions = {
    ...(options.readPaths === undefined ? {} : { readPaths }),
    ...(options.stackAfterLoad === undefined ? {} : { stackAfterLoad }),
  };
  const descriptor: LayerDescriptor = { module: LANDLOCK_LAYER_MODULE, options: layerOptions };
  return Object.freeze(requirement === undefined ? descriptor : { ...descriptor, requirement });
}
