/**
 * `@strata/runtime/layers`: what a layer author needs, beside `@strata/runtime/testing`. The layer
 * interface and its contexts, the pure plan, the files a worker needs (the read set a confinement
 * layer grants), the attempts a self-test makes, the token for options injected through tsyringe,
 * and the platform's default layers. An application needs none of this: the main entry has the
 * runtimes, their options and the report.
 *
 * @packageDocumentation
 */
// First: an unsupported Node.js fails with Strata's error, before anything else is loaded.
import '../require-node.js';

export type {
  Layer,
  LayerCapability,
  LayerDescriptor,
  LayerReport,
  LayerRequirement,
  LayerOrder,
  LayerModuleExport,
  Enforcement,
  ProbeContext,
  LaunchContext,
  LaunchStep,
  ApplyContext,
  SealContext,
  SelfTestContext,
} from './layer.js';
export { StrataError, LayerFailed, LayerConfigError } from '../errors.js';
export type { LayerHook } from '../errors.js';
export { defaultLayers, missingDefaultLayers, PLATFORM_LAYERS } from './default-layers.js';
export type { PlatformLayer } from './default-layers.js';
// What a worker reads, for a layer that confines it. The pieces it is computed from (the /proc
// parsers, Node's install, the system files) are Strata's own layers' business, in
// @strata/runtime/worker-files.
export { computeWorkerFiles, isBeneath } from './worker-files.js';
export type { WorkerFile, WorkerFilesInput } from './worker-files.js';
export { errnoOf, tryConnect } from './attempts.js';
export { planLayers, enforcementOf } from './plan.js';
export type { LayerPlan, PlanInput, PlannedLayer } from './plan.js';
export { LAYER_OPTIONS } from './tokens.js';
