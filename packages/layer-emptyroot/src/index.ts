/**
 * `@strata/layer-emptyroot`: Strata's worker starts in user, mount, network and IPC namespaces of
 * its own, whose root is an empty tmpfs holding read-only binds of exactly the files it needs,
 * with every capability dropped (docs/design.md §3). An escaped guest finds no host path at all: not
 * even whether one exists.
 *
 * ```ts
 * import { IsolatedRuntime } from '@strata/runtime';
 * import { emptyroot } from '@strata/layer-emptyroot';
 *
 * const rt = await IsolatedRuntime.start({ sandbox: 'require', layers: [emptyroot()] });
 * rt.sandboxExtras; // ['emptyroot']
 * ```
 *
 * @packageDocumentation
 */
import type { LayerDescriptor, LayerRequirement } from '@strata/runtime';
import { checkBindPaths } from './layer.js';
import { LayerConfigError } from '@strata/runtime/layers';

/** The module the worker imports. */
export const EMPTYROOT_LAYER_MODULE = '@strata/layer-emptyroot/layer';

/** Options of {@link emptyroot}. */
export interface EmptyrootOptions {
  /** Absolute paths also bound, read-only, into the new root (a directory with everything beneath it). */
  bindPaths?: readonly string[];
  /** Overrides the runtime's `sandbox` mode for this layer. */
  requirement?: LayerRequirement;
}

const REQUIREMENTS: readonly LayerRequirement[] = ['require', 'auto', 'off'];

/** Names the empty-root layer for `IsolatedRuntime.start({ layers })`. */
export function emptyroot(options: EmptyrootOptions = {}): LayerDescriptor {
  for (const key of Object.keys(options))
    if (key !== 'requirement' && key !== 'bindPaths') throw new LayerConfigError('emptyroot', `emptyroot(): unknown option ${JSON.stringify(key)}`);
  const { requirement } = options;
  if (requirement !== undefined && !REQUIREMENTS.includes(requirement))
    throw new LayerConfigError('emptyroot', `emptyroot(): option "requirement" must be 'require', 'auto' or 'off'; got ${JSON.stringify(requirement)}`);
  const bindPaths = checkBindPaths(options.bindPaths);
  const descriptor: LayerDescriptor = { module: EMPTYROOT_LAYER_MODULE, options: options.bindPaths === undefined ? {} : { bindPaths } };
  return Object.freeze(requirement === undefined ? descriptor : { ...descriptor, requirement });
}
