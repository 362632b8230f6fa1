/**
 * Which layers a runtime gets: this platform's default layers with `layers` merged in, and
 * whether `sandbox: 'require'` can be met with them (docs/design.md §2: `'require'` means the
 * platform's OS confinement is in force; no layer list, option or missing package may drop it
 * silently, an explicit, named opt-out may). The decision is {@link composeLayers}, a pure
 * function (table-tested); the pipeline's `planPipeline` feeds it the names, which are known only
 * once each layer module is loaded, and loads each layer once.
 *
 * @module
 */
import type { SandboxMode } from '../isolated/isolated-options.js';
import type { PlatformLayer } from './default-layers.js';
import type { LayerDescriptor, LayerRequirement } from './layer.js';

/** A layer descriptor with the name its module builds. */
export interface NamedDescriptor {
  readonly name: string;
  readonly descriptor: LayerDescriptor;
}

/** A default layer of the platform, and whether its package can be imported here. */
export interface DefaultLayerFact extends PlatformLayer {
  readonly installed: boolean;
}

/** What {@link composeLayers} decides from. */
export interface CompositionInput {
  /** The platform, for messages. */
  readonly platform: string;
  /** This platform's default layers in their order (`PLATFORM_LAYERS`); `undefined` when Strata has no OS layers for it. */
  readonly defaults: readonly DefaultLayerFact[] | undefined;
  /** The layers given (`layers`, then the clock layer of `clock`), in the user's order, named. */
  readonly given: readonly NamedDescriptor[];
  /** `replaceDefaultLayers: true`: `given` is the whole list. */
  readonly replaceDefaultLayers: boolean;
  /** Default layers left out by name (`omitDefaultLayers`). */
  readonly omitDefaultLayers: readonly string[];
  readonly sandbox: SandboxMode;
}

/** The layers to plan, in order, with what `'auto'` warns about; or why `'require'` cannot be met. */
export type LayerComposition =
  | { readonly decision: 'proceed'; readonly layers: readonly LayerDescriptor[]; readonly missing: readonly string[]; readonly warnings: readonly string[] }
  | { readonly decision: 'refuse'; readonly missing: readonly string[]; readonly reason: string }
  /** A list that cannot work whatever the platform: default layers out of the platform's order. */
  | { readonly decision: 'invalid'; readonly layer: string; readonly reason: string };

const requirementOf = (descriptor: LayerDescriptor, sandbox: SandboxMode): LayerRequirement =>
  descriptor.requirement ?? (sandbox === 'require' ? 'require' : sandbox === 'auto' ? 'auto' : 'off');

const omitting = (name: string) => `omitDefaultLayers: ['${name}']`;

const packageOf = (layer: PlatformLayer) => layer.module.replace(/\/layer$/, '');

// Default layers whose relative order matters, whatever else is between them.
const MUST_PRECEDE: readonly (readonly [string, string])[] = [['emptyroot', 'landlock']];
const MUST_PRECEDE_WHY = "the empty root's launch link writes the worker's uid maps, which Landlock's link would refuse (EACCES on /proc/self/setgroups)";

/**
 * Merges `given` into the platform's default layers and decides, without side effects, whether
 * the start may go ahead:
 *
 * - **The list.** The defaults, in the platform's order, then the other given layers in the
 *   user's order. A given layer named like a default layer takes that default's place (so
 *   `layers: [landlock({ readPaths })]` configures the default instead of adding a second one):
 *   the defaults keep their order whatever order the user names them in, since it matters (the
 *   empty root's launch link must come before Landlock's). The same name given twice stays twice,
 *   for the plan to refuse. `replaceDefaultLayers: true` makes `given` the whole list, in the
 *   user's order. A layer left out by name (`omitDefaultLayers`) is left out wherever it is named.
 * - **`'require'`** refuses, naming each and what to do, when a default layer is not in the list
 *   (not installed, or left out by `replaceDefaultLayers`) and was not opted out by name; when a
 *   layer of the OS sandbox (`confines`) is in the list with a requirement below `'require'`
 *   (`'auto'` could let it go on a platform without it, `'off'` turns it off); and
 *   when Strata has no OS sandbox for the platform at all.
 *   A layer of the OS sandbox left out by name (`omitDefaultLayers`) is refused too.
 * - **`'auto'`** starts and warns naming each default layer not in the list without a named
 *   opt-out (and when the platform has no OS sandbox); what was left out by name it leaves out
 *   without a warning, as asked. **`'off'`** requires and warns nothing.
 *
 * Only the configuration is judged here; what the platform can provide is the probes' and
 * {@link planLayers}'s part.
 */
export function composeLayers(input: CompositionInput): LayerComposition {
  const defaults = input.defaults ?? [];
  const defaultNames = defaults.map((d) => d.name);
  const optedOut = new Set(input.omitDefaultLayers);
  const given = input.given.filter((g) => !optedOut.has(g.name));
  let layers: NamedDescriptor[] = given;
  if (!input.replaceDefaultLayers) {
    // The defaults in the platform's order, each replaced by the given layer of its name; then the rest as given.
    const named = new Map<string, NamedDescriptor>();
    for (const g of given) if (defaultNames.includes(g.name) && !named.has(g.name)) named.set(g.name, g);
    const placed = new Set(named.values());
    const kept = defaults.filter((d) => !optedOut.has(d.name) && (named.has(d.name) || d.installed));
    layers = [...kept.map((d) => named.get(d.name) ?? { name: d.name, descriptor: { module: d.module } }), ...given.filter((g) => !placed.has(g))];
  }

  // A default layer whose package is not installed is a broken install (@strata/runtime brings
  // them), not a limit of the platform: never run without it unless it was left out by name.
  if (!input.replaceDefaultLayers && input.sandbox !== 'off') {
    const absent = defaults.find((d) => !d.installed && !optedOut.has(d.name) && !given.some((g) => g.name === d.name));
    if (absent !== undefined) {
      return {
        decision: 'invalid',
        layer: absent.name,
        reason:
          `it is one of this platform's default layers and its package is not installed: install ${packageOf(absent)} ` +
          `(npm installs it with @strata/runtime unless peer dependencies are skipped)` +
          (absent.confines ? '' : `, or leave it out by name (${omitting(absent.name)})`),
      };
    }
  }

  // Under replaceDefaultLayers the user orders the list, but some defaults must keep their order.
  for (const [first, second] of MUST_PRECEDE) {
    const a = layers.findIndex((l) => l.name === first);
    const b = layers.findIndex((l) => l.name === second);
    if (a >= 0 && b >= 0 && b < a) {
      return { decision: 'invalid', layer: second, reason: `comes before ${first} in layers, and ${first} must come first: ${MUST_PRECEDE_WHY}` };
    }
  }

  const missing: string[] = [];
  const reasons: string[] = [];
  const optOuts: string[] = [];
  const turnedOff: string[] = [];
  const omittedSandbox: string[] = [];
  if (input.defaults === undefined || !defaults.some((d) => d.confines)) reasons.push(`Strata has no OS sandbox layer for ${input.platform}`);
  for (const d of defaults) {
    if (optedOut.has(d.name)) {
      // A named opt-out of the OS sandbox itself cannot meet 'require'; under 'auto' it is what was asked.
      if (d.confines) omittedSandbox.push(`${d.name} is left out by omitDefaultLayers, and it is part of the OS sandbox`);
      continue;
    }
    const entry = layers.find((l) => l.name === d.name);
    if (entry === undefined) {
      missing.push(d.name);
      if (!d.confines) optOuts.push(`${d.name} (${omitting(d.name)})`);
      reasons.push(
        input.replaceDefaultLayers
          ? `${d.name} is not in layers, which replaceDefaultLayers: true makes the whole list (add ${d.name}() from ${packageOf(d)}${d.installed ? '' : ', once it is installed'})`
          : `${d.name} is not installed (install ${packageOf(d)})`,
      );
    } else if (d.confines) {
      // Under 'require' the OS sandbox may not be downgraded by a layer's own requirement either.
      const requirement = requirementOf(entry.descriptor, input.sandbox);
      if (requirement === 'off' || (input.sandbox === 'require' && requirement !== 'require')) {
        turnedOff.push(`${d.name} has requirement: '${requirement}', and it is part of the OS sandbox (remove the requirement to have it required)`);
      }
    }
  }
  if (input.sandbox === 'off') return { decision: 'proceed', layers: layers.map((l) => l.descriptor), missing, warnings: [] };
  if (input.sandbox === 'require' && reasons.length + turnedOff.length + omittedSandbox.length > 0) {
    const them = missing.length + turnedOff.length + omittedSandbox.length > 1 ? 'them' : 'it';
    return {
      decision: 'refuse',
      missing,
      reason:
        `sandbox: 'require' needs this platform's OS sandbox and default layers, and cannot be met: ${[...reasons, ...omittedSandbox, ...turnedOff].join('; ')}. ` +
        (optOuts.length > 0 ? `Leave out by name what you mean to run without: ${optOuts.join(', ')}. ` : '') +
        `Or use sandbox: 'auto' to start without ${them} (with a warning naming ${them}), knowing that a V8 escape would then get more of the worker's authority.`,
    };
  }
  const warnings =
    reasons.length === 0
      ? []
      : [
          `the worker runs without ${missing.length === 0 ? 'an OS sandbox' : `the default layer${missing.length === 1 ? '' : 's'} ${missing.join(', ')}`}: ${reasons.join('; ')}`,
        ];
  if (turnedOff.length > 0) warnings.push(`the OS sandbox is turned down: ${turnedOff.join('; ')}`);
  return { decision: 'proceed', layers: layers.map((l) => l.descriptor), missing, warnings };
}
