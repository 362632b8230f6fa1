/**
 * `@strata/layer-seccomp`: a seccomp-bpf filter on every thread of Strata's worker (docs/design.md §3),
 * test-fired in a throwaway child first.
 *
 * ```ts
 * import { IsolatedRuntime } from '@strata/runtime';
 * import { seccomp } from '@strata/layer-seccomp';
 *
 * const rt = await IsolatedRuntime.start({ sandbox: 'require', layers: [seccomp()] });
 * ```
 *
 * @packageDocumentation
 */
import type { LayerDescriptor, LayerRequirement } from '@strata/runtime';
import { LayerConfigError } from '@strata/runtime/layers';

/** The module the worker imports. */
export const SECCOMP_LAYER_MODULE = '@strata/layer-seccomp/layer';

/** Options of {@link seccomp}. */
export interface SeccompOptions {
  /** Overrides the runtime's `sandbox` mode for this layer. */
  requirement?: LayerRequirement;
}

const REQUIREMENTS: readonly LayerRequirement[] = ['require', 'auto', 'off'];

/** Names the seccomp layer for `IsolatedRuntime.start({ layers })`. */
export function seccomp(options: SeccompOptions = {}): LayerDescriptor {
  for (const key of Object.keys(options)) if (key !== 'requirement') throw new LayerConfigError('seccomp', `seccomp(): unknown option ${JSON.stringify(key)}`);
  const { requirement } = options;
  if (requirement !== undefined && !REQUIREMENTS.includes(requirement))
    throw new LayerConfigError('seccomp', `seccomp(): option "requirement" must be 'require', 'auto' or 'off'; got ${JSON.stringify(requirement)}`);
  const descriptor: LayerDescriptor = { module: SECCOMP_LAYER_MODULE, options: {} };
  return Object.freeze(requirement === undefined ? descriptor : { ...descriptor, requirement });
}
