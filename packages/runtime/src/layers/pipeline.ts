import { LayerConfigError, LayerFailed, SandboxUnavailable, type LayerHook } from '../errors.js';
import type { Layer, LayerCapability, LayerDescriptor, LayerReport, LayerRequirement } from './layer.js';
import { loadLayer } from './load-layer.js';
import { planLayers } from './plan.js';

/** What the pipeline needs from the worker: how to try guest code in a throwaway isolate. */
export interface PipelineHost {
  readonly platform: NodeJS.Platform;
  readonly arch: string;
  /** Evaluates `code` in a fresh isolate set up with these extra bootstrap scripts. */
  evalInGuest(code: string, contextBootstraps: readonly string[]): Promise<unknown>;
}

/** The pipeline's result: the frozen report, the warnings `auto` produced, the scripts layers added. */
export interface PipelineResult {
  readonly layers: readonly LayerReport[];
  readonly warnings: readonly string[];
  readonly contextBootstraps: readonly string[];
}

interface Loaded {
  readonly layer: Layer;
  readonly requirement: LayerRequirement;
  readonly options: Readonly<Record<string, unknown>>;
}

/**
 * The layer pipeline: validate → order → probe → plan → refuse (before anything is applied,
 * naming every gap) → apply → selfTest → freeze the report. An exception in any hook is fatal in
 * every mode; only a probe result is ever downgraded, and only under `'auto'`.
 */
export async function runPipeline(descriptors: readonly LayerDescriptor[], defaultRequirement: LayerRequirement, host: PipelineHost): Promise<PipelineResult> {
  // validate
  const loaded: Loaded[] = [];
  const names = new Set<string>();
  for (const descriptor of descriptors) {
    const layer = await loadLayer(descriptor);
    if (names.has(layer.name)) throw new LayerConfigError(layer.name, 'two layers have this name; each layer may appear once');
    names.add(layer.name);
    loaded.push({ layer, requirement: descriptor.requirement ?? defaultRequirement, options: Object.freeze({ ...(descriptor.options ?? {}) }) });
  }
  // order: the user's order, within pre / normal / post
  const rank = (l: Loaded) => (l.layer.order === 'pre' ? 0 : l.layer.order === 'post' ? 2 : 1);
  const ordered = loaded.map((l, i) => ({ l, i })).sort((a, b) => rank(a.l) - rank(b.l) || a.i - b.i).map(({ l }) => l);
  // probe
  const capabilities = new Map<string, LayerCapability>();
  for (const { layer, options } of ordered) {
    const capability = await hook(layer.name, 'probe', () => layer.probe({ platform: host.platform, arch: host.arch, options }));
    capabilities.set(layer.name, checkCapability(layer.name, capability));
  }
  // plan, then refuse before anything is applied
  const plan = planLayers(ordered.map(({ layer, requirement }) => ({ name: layer.name, requirement, capability: capabilities.get(layer.name)! })));
  if (plan.decision === 'refuse') {
    throw new SandboxUnavailable(
      `sandbox required but not fully available — ${plan.gaps.join('; ')}. ` +
        "Run on a platform that provides these, or lower the requirement of those layers (requirement: 'auto', or sandbox: 'auto') knowing what is then missing.",
    );
  }
  // apply
  const contextBootstraps: string[] = [];
  const details = new Map<string, Record<string, unknown>>();
  const detailOf = (name: string) => details.get(name) ?? details.set(name, {}).get(name)!;
  const planned = new Map(plan.layers.map((p) => [p.name, p]));
  for (const { layer, options } of ordered) {
    if (!planned.get(layer.name)!.apply) continue;
    await hook(layer.name, 'apply', () =>
      layer.apply({
        platform: host.platform,
        options,
        addContextBootstrap: (source) => {
          if (typeof source !== 'string') throw new TypeError('addContextBootstrap takes the source of a script');
          contextBootstraps.push(source);
        },
        report: (detail) => Object.assign(detailOf(layer.name), detail),
      }),
    );
  }
  // selfTest: every applied layer, against the guest as it will be set up
  const selfTests = new Map<string, LayerReport['selfTest']>();
  for (const { layer, options } of ordered) {
    if (!planned.get(layer.name)!.apply) {
      selfTests.set(layer.name, 'skipped');
      continue;
    }
    await hook(layer.name, 'selfTest', () =>
      layer.selfTest({
        platform: host.platform,
        options,
        evalInGuest: (code) => host.evalInGuest(code, contextBootstraps),
        report: (detail) => Object.assign(detailOf(layer.name), detail),
      }),
    );
    selfTests.set(layer.name, 'passed');
  }
  const layers = ordered.map(({ layer }): LayerReport => {
    const p = planned.get(layer.name)!;
    return deepFreeze({
      name: layer.name,
      version: layer.version,
      requirement: p.requirement,
      capability: capabilities.get(layer.name)!,
      enforcement: p.enforcement,
      selfTest: selfTests.get(layer.name)!,
      detail: JSON.parse(JSON.stringify(details.get(layer.name) ?? {})) as Record<string, unknown>,
    });
  });
  return Object.freeze({ layers: Object.freeze(layers), warnings: Object.freeze([...plan.warnings]), contextBootstraps: Object.freeze(contextBootstraps) });
}

/** Runs a hook; whatever it throws becomes LayerFailed naming the layer and the hook, the original as cause. */
async function hook<T>(layer: string, name: LayerHook, run: () => T | Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw new LayerFailed(layer, name, error instanceof Error ? error.message : String(error), { cause: error });
  }
}

function checkCapability(layer: string, value: unknown): LayerCapability {
  const c = value as Partial<LayerCapability> | null;
  const strings = (x: unknown) => Array.isArray(x) && x.every((s) => typeof s === 'string');
  if (c === null || typeof c !== 'object' || typeof c.available !== 'boolean' || !strings(c.provides) || !strings(c.missing)) {
    throw new LayerFailed(layer, 'probe', 'it must return { available: boolean, provides: string[], missing: string[], detail? }');
  }
  try {
    return deepFreeze(JSON.parse(JSON.stringify(c)) as LayerCapability);
  } catch (error) {
    throw new LayerFailed(layer, 'probe', 'its capability must be JSON-serialisable', { cause: error });
  }
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
