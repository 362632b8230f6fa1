import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LayerConfigError, LayerFailed, SandboxUnavailable, type LayerHook } from '../errors.js';
import type { Enforcement, LaunchStep, Layer, LayerCapability, LayerDescriptor, LayerReport, LayerRequirement } from './layer.js';
import { loadLayer } from './load-layer.js';
import { planLayers } from './plan.js';

/**
 * The layer pipeline, in two halves. In the parent, before any worker exists: validate → order →
 * probe (cached per process) → plan → refuse, naming every gap. In the worker, before the guest's
 * isolate exists: apply all → seal all → selfTest all → freeze the report. An exception in any hook
 * is fatal in every mode; only a probe result is ever downgraded, and only under `'auto'`.
 */

/** One layer as planned in the parent and carried to the worker (plain data). */
export interface PlannedStep {
  readonly descriptor: LayerDescriptor;
  readonly name: string;
  readonly requirement: LayerRequirement;
  readonly capability: LayerCapability;
  readonly enforcement: Enforcement;
  /** Whether the worker runs its `apply`, `seal` and `selfTest`. */
  readonly apply: boolean;
}

/** The parent's half: what to apply, in order, the launch chain's links, and what `auto` gave up. */
export interface LayerPlanResult {
  readonly steps: readonly PlannedStep[];
  readonly launch: readonly LaunchStep[];
  /** Each launching layer's part of its report entry, by layer name. */
  readonly launchReports: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  readonly warnings: readonly string[];
}

/** What the parent's half needs to know of the platform. */
export interface ProbeHost {
  readonly platform: NodeJS.Platform;
  readonly arch: string;
  /** The Node.js executable the worker will run, for `launch` hooks. */
  readonly workerNode: string;
}

/** What the worker's half needs: how to try guest code in a throwaway isolate. */
export interface ApplyHost {
  readonly platform: NodeJS.Platform;
  /** Evaluates `code` in a fresh isolate set up with these extra bootstrap scripts. */
  evalInGuest(code: string, contextBootstraps: readonly string[]): Promise<unknown>;
}

/** The worker's half's result: the frozen report and the scripts layers added to every context. */
export interface PipelineResult {
  readonly layers: readonly LayerReport[];
  readonly contextBootstraps: readonly string[];
}

// Probes describe the platform, which does not change while this process runs.
const probeCache = new Map<string, Promise<LayerCapability>>();

/** Forgets cached probe results (tests of probes use it). */
export function clearProbeCache(): void {
  probeCache.clear();
}

/** The parent's half: validate → order → probe → plan; throws SandboxUnavailable, naming every gap, before anything exists to apply it to. */
export async function planPipeline(descriptors: readonly LayerDescriptor[], defaultRequirement: LayerRequirement, host: ProbeHost): Promise<LayerPlanResult> {
  const loaded: { layer: Layer; descriptor: LayerDescriptor; requirement: LayerRequirement }[] = [];
  const names = new Set<string>();
  for (const descriptor of descriptors) {
    const layer = await loadLayer(descriptor);
    if (names.has(layer.name)) throw new LayerConfigError(layer.name, 'two layers have this name; each layer may appear once');
    names.add(layer.name);
    loaded.push({ layer, descriptor, requirement: descriptor.requirement ?? defaultRequirement });
  }
  const rank = (layer: Layer) => (layer.order === 'pre' ? 0 : layer.order === 'post' ? 2 : 1);
  const ordered = loaded.map((l, i) => ({ l, i })).sort((a, b) => rank(a.l.layer) - rank(b.l.layer) || a.i - b.i).map(({ l }) => l);
  const capabilities = new Map<string, LayerCapability>();
  for (const { layer, descriptor } of ordered) {
    const options = Object.freeze({ ...(descriptor.options ?? {}) });
    const key = JSON.stringify([descriptor.module, options]);
    let capability = probeCache.get(key);
    if (capability === undefined) {
      capability = hook(layer.name, 'probe', () => layer.probe({ platform: host.platform, arch: host.arch, options })).then((c) => checkCapability(layer.name, c));
      probeCache.set(key, capability);
      capability.catch(() => probeCache.delete(key));
    }
    capabilities.set(layer.name, await capability);
  }
  const plan = planLayers(ordered.map(({ layer, requirement }) => ({ name: layer.name, requirement, capability: capabilities.get(layer.name)! })));
  if (plan.decision === 'refuse') {
    throw new SandboxUnavailable(
      `sandbox required but not fully available — ${plan.gaps.join('; ')}. ` +
        "Run on a platform that provides these, or lower the requirement of those layers (requirement: 'auto', or sandbox: 'auto') knowing what is then missing.",
    );
  }
  const steps = ordered.map(({ layer, descriptor }, i): PlannedStep => {
    const p = plan.layers[i]!;
    return { descriptor, name: layer.name, requirement: p.requirement, capability: capabilities.get(layer.name)!, enforcement: p.enforcement, apply: p.apply };
  });
  // The launch chain, in layer order, from the layers that will be applied.
  const layerPaths = Object.freeze(descriptors.map((d) => layerPathOf(d.module)).filter((p): p is string => p !== undefined));
  const launch: LaunchStep[] = [];
  const launchReports: Record<string, Readonly<Record<string, unknown>>> = {};
  for (const [i, { layer, descriptor }] of ordered.entries()) {
    if (!steps[i]!.apply || layer.launch === undefined) continue;
    const options = Object.freeze({ ...(descriptor.options ?? {}) });
    const step = await hook(layer.name, 'launch', () => layer.launch!({ platform: host.platform, arch: host.arch, options, layerPaths, workerNode: host.workerNode }));
    if (step === undefined) continue;
    const checked = checkLaunchStep(layer.name, step);
    launch.push(Object.freeze({ program: checked.program, args: checked.args }));
    if (checked.report !== undefined) launchReports[layer.name] = checked.report;
  }
  return Object.freeze({ steps: Object.freeze(steps), launch: Object.freeze(launch), launchReports: Object.freeze(launchReports), warnings: Object.freeze([...plan.warnings]) });
}

/**
 * The worker's half, in phases over the layers to apply, each in layer order: every `apply`, then
 * every `seal` (restrictions that would stop a later layer's apply from loading what it needs),
 * then every `selfTest` (against the guest as it will be set up) → the frozen report.
 */
export async function applyPipeline(steps: readonly PlannedStep[], host: ApplyHost): Promise<PipelineResult> {
  const layers: Layer[] = [];
  for (const step of steps) {
    const layer = await loadLayer(step.descriptor);
    // The parent planned by name; a module that builds a different layer here is misconfigured.
    if (layer.name !== step.name) throw new LayerConfigError(step.name, `its module built a layer named ${JSON.stringify(layer.name)} in the worker`);
    layers.push(layer);
    // Hooks see the capability the report will carry: no hook may change it.
    deepFreeze(step.capability);
  }
  const contextBootstraps: string[] = [];
  const details = new Map<string, Record<string, unknown>>();
  const detailOf = (name: string) => details.get(name) ?? details.set(name, {}).get(name)!;
  // What every hook's context shares: the layer's options and its probe's verdict, and its report.
  const applied = layers.flatMap((layer, i) => {
    const step = steps[i]!;
    if (!step.apply) return [];
    const shared = {
      platform: host.platform,
      options: Object.freeze({ ...(step.descriptor.options ?? {}) }),
      capability: step.capability,
      report: (detail: Readonly<Record<string, unknown>>) => void Object.assign(detailOf(layer.name), detail),
    };
    return [{ layer, shared }];
  });
  for (const { layer, shared } of applied) {
    await hook(layer.name, 'apply', () =>
      layer.apply({
        ...shared,
        addContextBootstrap: (source) => {
          if (typeof source !== 'string') throw new TypeError('addContextBootstrap takes the source of a script');
          contextBootstraps.push(source);
        },
      }),
    );
  }
  for (const { layer, shared } of applied) {
    if (layer.seal !== undefined) await hook(layer.name, 'seal', () => layer.seal!({ ...shared }));
  }
  const selfTests = new Map<string, LayerReport['selfTest']>(layers.map((layer) => [layer.name, 'skipped']));
  for (const { layer, shared } of applied) {
    await hook(layer.name, 'selfTest', () => layer.selfTest({ ...shared, evalInGuest: (code) => host.evalInGuest(code, contextBootstraps) }));
    selfTests.set(layer.name, 'passed');
  }
  const reports = layers.map((layer, i): LayerReport => {
    const step = steps[i]!;
    return deepFreeze({
      name: layer.name,
      version: layer.version,
      requirement: step.requirement,
      capability: step.capability,
      enforcement: step.enforcement,
      selfTest: selfTests.get(layer.name)!,
      detail: JSON.parse(JSON.stringify(details.get(layer.name) ?? {})) as Record<string, unknown>,
    });
  });
  return Object.freeze({ layers: Object.freeze(reports), contextBootstraps: Object.freeze(contextBootstraps) });
}

/** Runs a hook; whatever it throws becomes LayerFailed naming the layer and the hook, the original as cause. */
async function hook<T>(layer: string, name: LayerHook, run: () => T | Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw new LayerFailed(layer, name, error instanceof Error ? error.message : String(error), { cause: error });
  }
}

/** For a layer named by a `file:` URL: its package's root, else its directory. Undefined for a package specifier (found in node_modules). */
export function layerPathOf(module: string): string | undefined {
  if (!module.startsWith('file:')) return undefined;
  const file = fileURLToPath(module);
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) return dirname(file);
  }
}

function checkLaunchStep(layer: string, value: unknown): LaunchStep {
  const step = value as Partial<LaunchStep> | null;
  if (step === null || typeof step !== 'object' || typeof step.program !== 'string' || !step.program.startsWith('/')) {
    throw new LayerFailed(layer, 'launch', 'it must return { program: an absolute path, args?: string[] } or undefined');
  }
  const args = step.args ?? [];
  if (!Array.isArray(args) || args.some((a) => typeof a !== 'string' || a === '--')) {
    throw new LayerFailed(layer, 'launch', "its args must be strings, without '--' (the chain adds it)");
  }
  if (step.report === undefined) return Object.freeze({ program: step.program, args: Object.freeze([...args]) });
  if (step.report === null || typeof step.report !== 'object' || Array.isArray(step.report)) throw new LayerFailed(layer, 'launch', 'its report must be a plain object');
  let report: Readonly<Record<string, unknown>>;
  try {
    report = deepFreeze(JSON.parse(JSON.stringify(step.report)) as Record<string, unknown>);
  } catch (error) {
    throw new LayerFailed(layer, 'launch', 'its report must be JSON-serialisable', { cause: error });
  }
  return Object.freeze({ program: step.program, args: Object.freeze([...args]), report });
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
