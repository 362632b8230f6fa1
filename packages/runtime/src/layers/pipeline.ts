import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LayerConfigError, LayerFailed, SandboxUnavailable, type LayerHook } from '../errors.js';
import type { ResolvedIsolatedOptions } from '../isolated/isolated-options.js';
import type { OutsideView } from '../isolated/verify-worker.js';
import { composeLayers, type NamedDescriptor } from './compose.js';
import { installed, PLATFORM_LAYERS } from './default-layers.js';
import type { Enforcement, LaunchStep, Layer, LayerCapability, LayerDescriptor, LayerReport, LayerRequirement } from './layer.js';
import { loadLayer, type LayerModuleSource } from './load-layer.js';
import { planLayers } from './plan.js';
import { mark } from '../timeline.js';

/**
 * The layer pipeline, in two halves, as Rollup's PluginDriver owns its sorted plugins: this module
 * alone loads, orders and runs the layers.
 *
 * In the parent, before any worker exists, {@link planPipeline}: load each layer once → merge with
 * the platform's default layers → order → probe (cached per process) → plan → refuse, naming every
 * gap → the launch chain. Once the worker has applied the layers, {@link finishReport}: the launch
 * links' facts joined in → checked from outside → the OS sandbox named → the report frozen.
 *
 * In the worker, before the guest's isolate exists, {@link applyPipeline}: apply all → seal all →
 * selfTest all → freeze the layers' entries.
 *
 * An exception in any hook is fatal in every mode; only a probe result is ever downgraded, and only
 * under `'auto'`. What `'auto'` gives up is said here only ({@link warnOnce}): the composition's
 * warnings before any probe, the plan's once the worker is verified.
 */

/** The layer report of a runtime. JSON-serialisable; stable field names. */
export interface SandboxReport {
  /** `'landlock+seccomp'`, `'seatbelt'` or `'none'`. */
  readonly sandbox: string;
  /** Extra protections in force, such as `'emptyroot'`. */
  readonly sandboxExtras: readonly string[];
  /** One entry per layer, in the order they were applied. */
  readonly layers: readonly LayerReport[];
  /** What the parent checked from outside, in /proc, before any guest code ran (Linux). */
  readonly verified?: OutsideView;
  /** The tenant whose isolates share this worker (a SandboxHost's worker); absent for a worker of one runtime. */
  readonly tenant?: string;
  /**
   * How many other isolates share this worker now: its OS sandbox, its CPU and its fate (a V8
   * escape in one reaches the others, never another tenant's). Absent for a worker of one runtime.
   */
  readonly sharedWith?: number;
  /** Hardening the launcher always applies. */
  readonly base: {
    readonly jitless: boolean;
    readonly strictEval: boolean;
    readonly flags: readonly string[];
    readonly privilegesDropped: boolean;
    /** The Node.js executable the worker runs (`workerNode`). */
    readonly workerNode: string;
  };
}

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

/** The parent's half: the layers it loaded, what to apply, in order, the launch chain's links, and what `auto` gave up. */
export interface LayerPlanResult {
  /** The layers as the parent built them, once, in the order of `steps` (the worker builds its own from the steps). */
  readonly layers: readonly Layer[];
  readonly steps: readonly PlannedStep[];
  readonly launch: readonly LaunchStep[];
  /** Each launching layer's part of its report entry, by layer name. */
  readonly launchReports: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /** What `'auto'` gave up of the platform (probe results): said by {@link finishReport}, once the worker is verified. */
  readonly warnings: readonly string[];
}

/** What the parent's half takes of the resolved options: the layers given and how they combine with the defaults. */
export type PipelineOptions = Pick<ResolvedIsolatedOptions, 'layers' | 'replaceDefaultLayers' | 'omitDefaultLayers' | 'sandbox'>;

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
  /** A layer module's exports when the worker has them other than by name (Strata's own, compiled with their build's code caches). */
  readonly layerModule?: LayerModuleSource;
  /** Evaluates `code` in a fresh isolate set up with these extra bootstrap scripts. */
  evalInGuest(code: string, contextBootstraps: readonly string[]): Promise<unknown>;
}

/** The worker's half's result: the frozen report and the scripts layers added to every context. */
export interface PipelineResult {
  readonly layers: readonly LayerReport[];
  readonly contextBootstraps: readonly string[];
}

/** A layer built in the parent, with the descriptor it came from and how much it is insisted on. */
interface LoadedLayer {
  readonly layer: Layer;
  readonly descriptor: LayerDescriptor;
  readonly requirement: LayerRequirement;
}

// Probes describe the platform, which does not change while this process runs.
const probeCache = new Map<string, Promise<LayerCapability>>();

/** Forgets cached probe results (tests of probes use it). */
export function clearProbeCache(): void {
  probeCache.clear();
}

/**
 * The parent's half: load → compose → order → probe → plan → launch. Throws before anything
 * exists to apply the layers to: LayerConfigError for a layer that cannot be loaded or a list that
 * cannot work, SandboxUnavailable naming every gap, LayerFailed for a hook that throws.
 */
export async function planPipeline(options: PipelineOptions, host: ProbeHost): Promise<LayerPlanResult> {
  const composed = await loadComposed(options, host.platform);
  const ordered = inLayerOrder(composed);
  const capabilities = await probeAll(ordered, host);
  const plan = planLayers(ordered.map(({ layer, requirement }, i) => ({ name: layer.name, requirement, capability: capabilities[i]! })));
  if (plan.decision === 'refuse') {
    throw new SandboxUnavailable(
      `sandbox required but not fully available — ${plan.gaps.join('; ')}. ` +
        "Run on a platform that provides these, or lower the requirement of those layers (requirement: 'auto', or sandbox: 'auto') knowing what is then missing.",
    );
  }
  const steps = ordered.map(({ layer, descriptor }, i): PlannedStep => {
    const p = plan.layers[i]!;
    return { descriptor, name: layer.name, requirement: p.requirement, capability: capabilities[i]!, enforcement: p.enforcement, apply: p.apply };
  });
  const layerPaths = Object.freeze(composed.map(({ descriptor }) => layerPathOf(descriptor.module)).filter((p): p is string => p !== undefined));
  const { launch, launchReports } = await launchChain(ordered, steps, layerPaths, host);
  return Object.freeze({
    layers: Object.freeze(ordered.map(({ layer }) => layer)),
    steps: Object.freeze(steps),
    launch: Object.freeze(launch),
    launchReports: Object.freeze(launchReports),
    warnings: Object.freeze([...plan.warnings]),
  });
}

/**
 * Builds each given layer (its name decides where it goes), merges the list with this platform's
 * default layers ({@link composeLayers}: refuses or warns here, before any probe), then builds
 * the defaults it kept. Every layer is built once; the same name twice is refused.
 */
async function loadComposed(options: PipelineOptions, platform: NodeJS.Platform): Promise<LoadedLayer[]> {
  const built = new Map<LayerDescriptor, Layer>();
  const given: NamedDescriptor[] = [];
  for (const descriptor of options.layers) {
    const layer = await loadLayer(descriptor);
    built.set(descriptor, layer);
    given.push({ name: layer.name, descriptor });
  }
  const defaults = PLATFORM_LAYERS[platform]?.map((d) => ({ ...d, installed: installed(d.module) }));
  const composition = composeLayers({
    platform,
    defaults,
    given,
    replaceDefaultLayers: options.replaceDefaultLayers,
    omitDefaultLayers: options.omitDefaultLayers,
    sandbox: options.sandbox,
  });
  if (composition.decision === 'invalid') throw new LayerConfigError(composition.layer, composition.reason);
  if (composition.decision === 'refuse') throw new SandboxUnavailable(composition.reason);
  for (const warning of composition.warnings) warnOnce(warning);
  const loaded: LoadedLayer[] = [];
  const names = new Set<string>();
  for (const descriptor of composition.layers) {
    const layer = built.get(descriptor) ?? (await loadLayer(descriptor));
    if (names.has(layer.name)) throw new LayerConfigError(layer.name, 'two layers have this name; each layer may appear once');
    names.add(layer.name);
    loaded.push({ layer, descriptor, requirement: descriptor.requirement ?? options.sandbox });
  }
  return loaded;
}

/** `pre`, then normal, then `post`, keeping the given order within each (a stable sort). */
function inLayerOrder(layers: readonly LoadedLayer[]): LoadedLayer[] {
  const rank = ({ layer }: LoadedLayer) => (layer.order === 'pre' ? 0 : layer.order === 'post' ? 2 : 1);
  return layers
    .map((l, i) => ({ l, i }))
    .sort((a, b) => rank(a.l) - rank(b.l) || a.i - b.i)
    .map(({ l }) => l);
}

/** Each layer's capability, in order; a probe runs once per module and options in this process. */
async function probeAll(layers: readonly LoadedLayer[], host: ProbeHost): Promise<LayerCapability[]> {
  const capabilities: LayerCapability[] = [];
  for (const { layer, descriptor } of layers) {
    const options = Object.freeze({ ...(descriptor.options ?? {}) });
    const key = JSON.stringify([descriptor.module, options]);
    let capability = probeCache.get(key);
    if (capability === undefined) {
      capability = hook(layer.name, 'probe', () => layer.probe({ platform: host.platform, arch: host.arch, options })).then((c) =>
        checkCapability(layer.name, c),
      );
      probeCache.set(key, capability);
      capability.catch(() => probeCache.delete(key));
    }
    capabilities.push(await capability);
  }
  return capabilities;
}

/** The launch chain, in layer order, from the layers that will be applied, and each link's part of its layer's report. */
async function launchChain(layers: readonly LoadedLayer[], steps: readonly PlannedStep[], layerPaths: readonly string[], host: ProbeHost) {
  const launch: LaunchStep[] = [];
  const launchReports: Record<string, Readonly<Record<string, unknown>>> = {};
  for (const [i, { layer, descriptor }] of layers.entries()) {
    if (!steps[i]!.apply || layer.launch === undefined) continue;
    const options = Object.freeze({ ...(descriptor.options ?? {}) });
    const step = await hook(layer.name, 'launch', () =>
      layer.launch!({ platform: host.platform, arch: host.arch, options, layerPaths, workerNode: host.workerNode }),
    );
    if (step === undefined) continue;
    const checked = checkLaunchStep(layer.name, step);
    launch.push(Object.freeze({ program: checked.program, args: checked.args }));
    if (checked.report !== undefined) launchReports[layer.name] = checked.report;
  }
  return { launch, launchReports };
}

/**
 * The parent's last step, once the worker reported its layers: joins each launch link's facts
 * (what the worker cannot see of itself) to its layer's entry, checks from outside what the worker
 * claims (`verify`, where the platform allows it; it throws on a broken promise), names the OS
 * sandbox in force and the extras, freezes the report, and only then says what `'auto'` gave up.
 */
export function finishReport(
  plan: LayerPlanResult,
  workerLayers: readonly LayerReport[],
  base: SandboxReport['base'],
  verify?: (layers: readonly LayerReport[]) => OutsideView,
): SandboxReport {
  const layers = workerLayers.map((l) => {
    const launched = plan.launchReports[l.name];
    return launched === undefined ? l : { ...l, detail: { ...l.detail, launch: launched } };
  });
  const verified = verify?.(layers);
  const report = deepFreeze({
    sandbox: sandboxName(layers),
    sandboxExtras: layers.filter((l) => l.name === 'emptyroot' && l.enforcement === 'full').map((l) => l.name),
    layers,
    base,
    ...(verified === undefined ? {} : { verified }),
  });
  for (const warning of plan.warnings) warnOnce(warning);
  return report;
}

/** `'landlock+seccomp'`, `'seatbelt'` or `'none'`: the OS sandbox fully in force. */
function sandboxName(layers: readonly LayerReport[]): string {
  const full = new Set(layers.filter((l) => l.enforcement === 'full').map((l) => l.name));
  if (full.has('landlock') && full.has('seccomp')) return 'landlock+seccomp';
  if (full.has('seatbelt')) return 'seatbelt';
  return 'none';
}

const warned = new Set<string>();
/** The one place `STRATA_SANDBOX_DEGRADED` comes from: a process warning naming what `auto` had to give up, once per text. */
function warnOnce(what: string): void {
  if (warned.has(what)) return;
  warned.add(what);
  process.emitWarning(`Strata: sandbox 'auto': ${what}`, { code: 'STRATA_SANDBOX_DEGRADED' });
}

/**
 * The worker's half, in phases over the layers to apply, each in layer order: every `apply`, then
 * every `seal` (restrictions that would stop a later layer's apply from loading what it needs),
 * then every `selfTest` (against the guest as it will be set up) → the frozen report.
 */
export async function applyPipeline(steps: readonly PlannedStep[], host: ApplyHost): Promise<PipelineResult> {
  const layers: Layer[] = [];
  mark('layers: pipeline');
  for (const step of steps) {
    const layer = await loadLayer(step.descriptor, host.layerModule);
    mark(`${step.name} loaded`);
    // The parent planned by name; a module that builds a different layer here is misconfigured.
    if (layer.name !== step.name) throw new LayerConfigError(step.name, `its module built a layer named ${JSON.stringify(layer.name)} in the worker`);
    layers.push(layer);
    // Hooks see the capability the report will carry: no hook may change it.
    deepFreeze(step.capability);
  }
  mark('layers: loaded');
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
    const done = await run();
    mark(`${layer} ${name}`);
    return done;
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
  if (step.report === null || typeof step.report !== 'object' || Array.isArray(step.report))
    throw new LayerFailed(layer, 'launch', 'its report must be a plain object');
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
  if (
    c === null ||
    typeof c !== 'object' ||
    typeof c.available !== 'boolean' ||
    !strings(c.provides) ||
    !strings(c.missing) ||
    (c.notes !== undefined && !strings(c.notes))
  ) {
    throw new LayerFailed(layer, 'probe', 'it must return { available: boolean, provides: string[], missing: string[], detail?, notes?: string[] }');
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
