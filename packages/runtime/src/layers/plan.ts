import type { Enforcement, LayerCapability, LayerRequirement } from './layer.js';

/** One layer as the planner sees it: its name, how much it is insisted on, what the platform can give. */
export interface PlanInput {
  readonly name: string;
  readonly requirement: LayerRequirement;
  readonly capability: LayerCapability;
}

/** What happens to one layer. */
export interface PlannedLayer {
  readonly name: string;
  readonly requirement: LayerRequirement;
  readonly enforcement: Enforcement;
  /** Whether its `apply` and `selfTest` run. */
  readonly apply: boolean;
}

/** The plan: go ahead (with warnings for what `auto` had to give up), or refuse naming every gap. */
export type LayerPlan =
  | { readonly decision: 'proceed'; readonly layers: readonly PlannedLayer[]; readonly warnings: readonly string[] }
  | { readonly decision: 'refuse'; readonly gaps: readonly string[] };

/** How much of a layer the platform can enforce, from its probe. */
export function enforcementOf(capability: LayerCapability): Enforcement {
  if (!capability.available) return 'none';
  return capability.missing.length === 0 ? 'full' : 'partial';
}

/**
 * Decides, without side effects, what the pipeline does with each layer. Only a probe result
 * (a platform gap) is ever downgraded, and only under `'auto'`; a `'require'` layer that is
 * not fully provided refuses the start, and every such gap is named at once.
 */
export function planLayers(inputs: readonly PlanInput[]): LayerPlan {
  const gaps: string[] = [];
  const warnings: string[] = [];
  const layers: PlannedLayer[] = [];
  for (const { name, requirement, capability } of inputs) {
    const enforcement = enforcementOf(capability);
    const missing = capability.missing.length > 0 ? capability.missing.join(', ') : 'not available on this platform';
    if (requirement === 'off') {
      layers.push({ name, requirement, enforcement: 'none', apply: false });
      continue;
    }
    if (requirement === 'require' && enforcement !== 'full') {
      gaps.push(`${name}: ${missing}`);
      continue;
    }
    if (enforcement !== 'full') warnings.push(`${name} is ${enforcement === 'none' ? 'not in force' : 'only partly in force'}: ${missing}`);
    layers.push({ name, requirement, enforcement, apply: enforcement !== 'none' });
  }
  return gaps.length > 0 ? { decision: 'refuse', gaps } : { decision: 'proceed', layers, warnings };
}
