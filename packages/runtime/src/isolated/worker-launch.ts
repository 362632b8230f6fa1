/**
 * The parent's start of a worker, shared by a runtime that has a worker to itself and a
 * SandboxHost whose worker holds many isolates: the plan (layers probed and planned, flags,
 * the launch chain), and the report once the worker says what it applied, checked from outside.
 *
 * @module
 */
import type { WireObject } from '@strata/wire';
import { StrataError, WorkerCrashed } from '../errors.js';
import type { LayerReport } from '../layers/layer.js';
import { finishReport, planPipeline, type LayerPlanResult, type SandboxReport } from '../layers/pipeline.js';
import type { ResolvedIsolatedOptions } from './isolated-options.js';
import type { HostIsolates } from './sandbox-host.js';
import { unreachableByNobody } from './reachable-by-nobody.js';
import { buildWorkerFlags } from './v8-flags.js';
import { WorkerEndedWhileChecked, verifyWorker } from './verify-worker.js';
import { engineAddonFor, resolveWorkerNode } from './worker-node.js';
import { WORKER_ENTRY, type LaunchPlan, type WorkerProcess } from './worker-process.js';
import { timelineRecording } from '../timeline.js';
import { type BootstrapFile, bootstrapFileFor } from './bootstrap-files.js';
import { strataLayerBundle } from './layer-bundle-files.js';
import { sourceDigest } from './source-digest.js';

/** A worker's first request id: its configure, written when the worker is spawned (a spare's when it is taken). */
export const FIRST_REQUEST_ID = 1;

/** Everything decided before a worker exists. */
export interface PreparedLaunch {
  readonly plan: LaunchPlan;
  readonly layerPlan: LayerPlanResult;
  readonly base: SandboxReport['base'];
  readonly startedAsRoot: boolean;
  /** The bootstrap scripts (by index) the worker reads from a file instead of the configuration. */
  readonly bootstrapFiles: ReadonlyMap<number, BootstrapFile>;
}

/**
 * The parent's half of the layer pipeline (the layers with this platform's defaults merged in,
 * loaded once, ordered, probed and planned) and the launch plan. Refuses before any worker exists.
 */
export async function prepareLaunch(resolved: ResolvedIsolatedOptions, entry: string | undefined): Promise<PreparedLaunch> {
  const workerNode = resolveWorkerNode(resolved.workerNode);
  const layerPlan = await planPipeline(resolved, { platform: process.platform, arch: process.arch, workerNode });
  const flags = buildWorkerFlags({ jitless: resolved.jitless, strictEval: resolved.runtime.strictEval, v8Flags: resolved.v8Flags });
  const plan: LaunchPlan = {
    workerNode,
    // --expose-gc: the buffer cap collects before it refuses; the prelude hides gc() from the guest.
    nodeArgs: [...flags.node, '--expose-gc', ...flags.v8],
    cpuSeconds: resolved.requestTimeout === undefined ? undefined : Math.ceil((2 * resolved.requestTimeout) / 1000),
    entry: entry ?? WORKER_ENTRY,
    launch: layerPlan.launch,
    engineAddon: engineAddonFor(workerNode),
    // Strata's own entry takes its frames' ring (Linux); another entry (a test's) speaks on fd 1 alone.
    frameRing: process.platform === 'linux' && (entry ?? WORKER_ENTRY) === WORKER_ENTRY,
  };
  const startedAsRoot = process.geteuid?.() === 0;
  if (startedAsRoot) assertReachableByNobody(plan.workerNode, plan.entry);
  const base: SandboxReport['base'] = {
    jitless: resolved.jitless,
    strictEval: resolved.runtime.strictEval,
    flags: plan.nodeArgs,
    privilegesDropped: startedAsRoot,
    workerNode,
  };
  const bootstrapFiles = new Map<number, BootstrapFile>();
  for (const [i, source] of resolved.runtime.bootstrap.entries()) {
    const file = await bootstrapFileFor(source);
    if (file !== undefined) bootstrapFiles.set(i, file);
  }
  return { plan, layerPlan, base, startedAsRoot, bootstrapFiles };
}

/** The report of a configured worker: what it says it applied, checked from outside (in /proc) where the platform allows. */
export function finishLaunch(launch: PreparedLaunch, pid: number, configured: readonly LayerReport[]): SandboxReport {
  const verify = process.platform === 'linux' ? (layers: readonly LayerReport[]) => verifyWorker(pid, layers, launch.startedAsRoot) : undefined;
  return finishReport(launch.layerPlan, configured, launch.base, verify);
}

/** How long a worker the check from outside saw ended has to be reported gone before it is killed for the check. */
const ENDED_GRACE_MS = 2000;

/**
 * Ends a start whose check from outside failed; resolves with the worker's end. A worker that had
 * ended when it was looked at (its memory cap, a crash) ends as it ended: a broken promise would
 * misname it. One that is not reported gone within a moment after all is killed for the check.
 */
export function endUnverified(worker: WorkerProcess, error: unknown): Promise<StrataError> {
  const reason = error instanceof StrataError ? error : new WorkerCrashed(`the worker's sandbox could not be verified: ${String(error)}`, 'start');
  const release = worker.hold();
  return new Promise((resolve) => {
    const timer = error instanceof WorkerEndedWhileChecked ? setTimeout(() => worker.kill(reason), ENDED_GRACE_MS) : undefined;
    worker.onExit((end) => {
      clearTimeout(timer);
      release();
      resolve(end);
    });
    if (timer === undefined) worker.kill(reason);
  });
}

/** What the worker is configured with: the Runtime options, its memory watchdog, its layers, and (for a worker of many isolates) how many it may hold and keep made ahead. */
export function configureOptions(o: ResolvedIsolatedOptions, launch: PreparedLaunch, isolates?: HostIsolates): WireObject {
  const options: WireObject = { ...isolateOptions(o, true), strictEval: o.runtime.strictEval };
  // a script the worker reads from its file goes as its path and fingerprint, its text left empty (src/isolated/bootstrap-files.ts)
  if (launch.bootstrapFiles.size > 0) {
    options['bootstrap'] = o.runtime.bootstrap.map((source, i) => (launch.bootstrapFiles.has(i) ? '' : source));
    options['bootstrapFiles'] = Object.fromEntries([...launch.bootstrapFiles].map(([i, file]) => [String(i), { ...file }]));
  }
  if (o.maxMemory !== undefined) options['maxMemory'] = o.maxMemory;
  options['layerSteps'] = launch.layerPlan.steps as never;
  if (launch.plan.cpuSeconds !== undefined) options['cpuSecondsPerCommand'] = launch.plan.cpuSeconds;
  if (isolates !== undefined) {
    options['maxIsolates'] = isolates.maxIsolates;
    options['spareIsolates'] = isolates.spareIsolates;
  }
  if (timelineRecording()) options['timeline'] = true;
  // the key of each bootstrap script's build-time code cache in the worker (src/bootstrap-code-cache.ts)
  options['bootstrapDigests'] = o.runtime.bootstrap.map(sourceDigest);
  // Strata's own layers by path: the worker compiles each with its build's code cache (src/layers/layer-bundles.ts)
  options['layerBundles'] = Object.fromEntries(
    launch.layerPlan.steps.flatMap(({ descriptor }) => {
      const bundle = strataLayerBundle(descriptor.module);
      return bundle === undefined ? [] : [[descriptor.module, bundle]];
    }),
  );
  return options;
}

/**
 * The Runtime options of one isolate of a worker of many, as `open` carries them. The bootstrap
 * only when the isolate has one of its own: the worker holds its own (a snapshot of it), and
 * sending 568 KB of polyfills with every open would cost more than the open.
 */
export function isolateOptions(o: ResolvedIsolatedOptions, ownBootstrap: boolean): WireObject {
  const r = o.runtime;
  const options: WireObject = {
    timeout: r.timeout === Infinity ? 2 ** 31 - 1 : r.timeout,
    maxHeapSize: r.maxHeapSize,
    maxBufferBytes: r.maxBufferBytes,
    allowGlobals: [...r.allowGlobals],
    maxOutputBytes: r.maxOutputBytes,
    maxResultBytes: r.maxResultBytes,
  };
  if (ownBootstrap) options['bootstrap'] = [...r.bootstrap];
  return options;
}

/**
 * Started as root, the worker drops to uid 65534 before Node runs: Node and Strata's files must be
 * reachable by others. Said plainly here rather than as a failed exec.
 */
function assertReachableByNobody(node: string, entry: string): void {
  const problem = unreachableByNobody(node, 0o001) ?? unreachableByNobody(entry, 0o004);
  if (problem !== undefined) {
    throw new WorkerCrashed(
      `the worker cannot start: started as root, it runs as uid 65534, and ${problem}. ` +
        'Install Strata (and the Node it runs on) where others can read it (not under /root), or start this process as an ordinary user.',
      'start',
    );
  }
}
