/**
 * `@strata/runtime/testing`: helpers for layer authors. Every check runs the layer in a real,
 * separate worker process: restrictions a layer applies can never be undone, so they must
 * never be applied to the test process itself.
 *
 * @packageDocumentation
 */
// First: an unsupported Node.js fails with Strata's error, before isolated-vm is loaded.
import '../require-node.js';
import { SandboxUnavailable, StrataError } from '../errors.js';
import { IsolatedRuntime } from '../isolated/isolated-runtime.js';
import type { IsolatedRuntimeOptions, SandboxMode } from '../isolated/isolated-options.js';
import type { LayerDescriptor, LayerReport, LayerRequirement } from '../layers/layer.js';
import { buildLayer, layerShapeProblems, loadLayer } from '../layers/load-layer.js';
import { enforcementOf } from '../layers/plan.js';

/** Guest code the layer must stop (it must throw, or evaluate to something other than `true`), or must let through (it must evaluate to `true`). */
export interface LayerCase {
  /** What the case checks, for the failure message. */
  readonly name: string;
  /** Guest code; a returned promise is awaited. */
  readonly code: string;
}

/** Options of {@link testLayer}. */
export interface TestLayerOptions {
  /** Code that must be stopped with the layer in force: each must throw, or evaluate to anything but `true`. */
  readonly mustDeny?: readonly LayerCase[];
  /** Code that must still work with the layer in force: each must evaluate to `true`. */
  readonly mustAllow?: readonly LayerCase[];
  /**
   * Extra options for the worker (a fresh one per call). Its `sandbox` (default `'require'`) is
   * the layer's requirement unless the descriptor has its own; the worker gets exactly this layer
   * (`replaceDefaultLayers`), never this platform's defaults, and nothing else is required of it.
   */
  readonly runtime?: IsolatedRuntimeOptions;
}

/** What {@link testLayer} found. */
export interface LayerTestResult {
  /** The layer's entry in the report. */
  readonly report: LayerReport;
  /** One line per case that went the wrong way; empty when the layer passed. */
  readonly failures: readonly string[];
}

/**
 * Starts a worker with the layer alone (required, by default) and runs the must-deny and
 * must-allow cases in it, like ESLint's RuleTester runs valid and invalid lists. Throws an Error
 * listing every failure; returns the layer's report entry otherwise.
 */
export async function testLayer(descriptor: LayerDescriptor, options: TestLayerOptions = {}): Promise<LayerTestResult> {
  await using rt = await startAlone(descriptor, descriptor.requirement ?? requirementFor(options.runtime?.sandbox ?? 'require'), options.runtime);
  const report = rt.report.layers[rt.report.layers.length - 1]!;
  const failures: string[] = [];
  for (const { name, code } of options.mustDeny ?? []) {
    const outcome = await rt.eval(code).then(
      (value) => value,
      () => 'denied',
    );
    if (outcome === true) failures.push(`must deny, but it got through: ${name}`);
  }
  for (const { name, code } of options.mustAllow ?? []) {
    const outcome = await rt.eval(code).then(
      (value) => (value === true ? undefined : `evaluated to ${String(value)}`),
      (error: unknown) => `threw ${error instanceof Error ? error.message : String(error)}`,
    );
    if (outcome !== undefined) failures.push(`must allow, but it ${outcome}: ${name}`);
  }
  if (failures.length > 0) throw new Error(`layer ${report.name} failed ${failures.length} case(s):\n- ${failures.join('\n- ')}`);
  return { report, failures };
}

/**
 * The contract every layer must keep, checked from outside in fresh workers that run the layer
 * alone (without this platform's default layers): its shape (a
 * lower-case name, a version, `probe`, `apply` and `selfTest` functions, `launch` and `seal`
 * functions when present; a misshapen layer is reported without starting a worker); it starts
 * when its requirement is `'auto'`; its report entry is well-formed, JSON-serialisable and consistent with its probe;
 * the probe gives the same answer twice (no side effects; called directly, since the runtime caches
 * probe results per process); under `'require'` it starts exactly
 * when its probe says it is fully provided, and otherwise refuses naming the layer; under
 * `'off'` it is skipped. Returns the problems found (empty when the layer conforms).
 */
export async function checkLayerConformance(descriptor: LayerDescriptor, runtime: IsolatedRuntimeOptions = {}): Promise<string[]> {
  const shape = layerShapeProblems(await buildLayer(descriptor));
  if (shape.length > 0) return shape;
  const problems: string[] = [];
  const start = (requirement: 'require' | 'auto' | 'off') => startAlone(descriptor, requirement, runtime);
  const entryOf = (rt: IsolatedRuntime) => rt.report.layers[rt.report.layers.length - 1]!;

  let first: LayerReport;
  {
    await using rt = await start('auto');
    first = entryOf(rt);
    if (!/^[a-z][a-z0-9-]*$/.test(first.name)) problems.push(`name ${JSON.stringify(first.name)} is not lower-case-dashed`);
    if (typeof first.version !== 'string' || first.version === '') problems.push('version is empty');
    if (JSON.stringify(JSON.parse(JSON.stringify(first))) !== JSON.stringify(first)) problems.push('report entry does not survive JSON');
    if (first.enforcement !== enforcementOf(first.capability)) problems.push(`enforcement ${first.enforcement} does not follow from the probe`);
    const applied = first.enforcement !== 'none';
    if (applied && first.selfTest !== 'passed') problems.push(`applied, but selfTest is ${first.selfTest}`);
    if (!applied && first.selfTest !== 'skipped') problems.push(`not applied, but selfTest is ${first.selfTest}`);
  }
  {
    // Probes are cached per process by the runtime, so purity is checked by calling the probe
    // itself twice (a probe has no side effects, so calling it here is safe by its contract).
    const layer = await loadLayer(descriptor);
    const context = { platform: process.platform, arch: process.arch, options: Object.freeze({ ...(descriptor.options ?? {}) }) };
    const [a, b] = [await layer.probe(context), await layer.probe(context)];
    if (JSON.stringify(a) !== JSON.stringify(b)) problems.push('the probe answered differently the second time');
  }
  const full = first.enforcement === 'full';
  try {
    await using rt = await start('require');
    if (!full) problems.push(`required while its probe reports ${first.enforcement}, and it started anyway`);
    if (entryOf(rt).requirement !== 'require') problems.push('the requirement is not reported');
  } catch (error) {
    if (full) problems.push(`required and fully provided, but refused: ${(error as Error).message}`);
    else if (!(error instanceof SandboxUnavailable) || !error.message.includes(first.name)) {
      problems.push(`a required gap must refuse with SandboxUnavailable naming the layer; got ${error instanceof StrataError ? error.name : String(error)}`);
    }
  }
  {
    await using rt = await start('off');
    const off = entryOf(rt);
    if (off.enforcement !== 'none' || off.selfTest !== 'skipped') problems.push(`under 'off' it must be skipped (got ${off.enforcement}, ${off.selfTest})`);
  }
  return problems;
}

/**
 * A worker with exactly this layer, at this requirement: the platform's default layers are not
 * added (`replaceDefaultLayers`), and `sandbox: 'off'` so that nothing else is required of the
 * worker and no warning names the defaults it leaves out on purpose. The layer itself is held to
 * `requirement` as under any sandbox mode (a `'require'` gap refuses; an `'auto'` one warns).
 */
function startAlone(descriptor: LayerDescriptor, requirement: LayerRequirement, runtime: IsolatedRuntimeOptions = {}): Promise<IsolatedRuntime> {
  return IsolatedRuntime.start({ prewarm: false, ...runtime, sandbox: 'off', replaceDefaultLayers: true, layers: [{ ...descriptor, requirement }] });
}

/** The requirement a sandbox mode gives a layer without one of its own. */
const requirementFor = (sandbox: SandboxMode): LayerRequirement => sandbox;

/**
 * What every layer must leave working, tried on a runtime the layer is in force in: eval, sync
 * and async host functions, modules, timers (when the runtime has `WEB_POLYFILLS`), console
 * capture, a large allocation and many commands. Binds `strataCheckLookup` and
 * `strataCheckLater`, and adds the module `strata-check-math`. Returns the problems found
 * (empty when the guest still works), for any test framework.
 */
export async function checkGuestStillWorks(rt: IsolatedRuntime): Promise<string[]> {
  const problems: string[] = [];
  const expect = async (what: string, run: () => Promise<unknown>, wanted: unknown) => {
    try {
      const got = await run();
      if (JSON.stringify(got) !== JSON.stringify(wanted)) problems.push(`${what}: got ${JSON.stringify(got)}, wanted ${JSON.stringify(wanted)}`);
    } catch (error) {
      problems.push(`${what}: threw ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
    }
  };
  rt.bindFunction('strataCheckLookup', (sku: string) => ({ A1: 3.5 })[sku]);
  rt.bindFunction('strataCheckLater', async (x: number) => {
    await new Promise((resolve) => setTimeout(resolve, 5));
    return x + 1;
  });
  rt.addModule('strata-check-math', 'export const twice = (x) => 2 * x;');
  await expect('eval', () => rt.eval('1 + 2'), 3);
  await expect('a sync host function', () => rt.eval("strataCheckLookup('A1') * 2"), 7);
  await expect('async host functions', () => rt.eval('Promise.all([strataCheckLater(1), strataCheckLater(2)])'), [2, 3]);
  await expect('a module', () => rt.evalModule('import { twice } from "strata-check-math"; export const v = twice(21);'), { v: 42 });
  if ((await rt.eval('typeof setTimeout')) === 'function') {
    await expect('a timer on virtual time', () => rt.eval('new Promise((resolve) => setTimeout(() => resolve("later"), 60_000))'), 'later');
  }
  await expect('console capture', async () => {
    const run = await rt.execute('console.log("hi"); [1, 2, 3].map((x) => x * x).join(",")');
    return [run.status, run.result, run.stdout];
  }, ['ok', '1,4,9', 'hi\n']);
  await expect('a large allocation', () => rt.eval('new Array(1e6).fill(1).reduce((a, b) => a + b, 0)'), 1e6);
  await expect(
    'many commands',
    async () => {
      let sum = 0;
      for (let i = 0; i < 50; i++) sum += (await rt.eval(`${i} * 2`)) as number;
      return sum;
    },
    2450,
  );
  return problems;
}

export { PLATFORM_ENV, declaredFeatures, isDeclared, platformTest, platformVerdict } from './platform.js';
export type { PlatformNeed, PlatformVerdict, TestRegistrar } from './platform.js';
export { recordTimeline, stopRecordingTimeline, collectTimeline, type TimelineMark } from './timeline.js';
