import { createRequire } from 'node:module';
import type * as Tsyringe from 'tsyringe';
import { importModule } from '../worker/entry-handle.js';
import { LayerConfigError } from '../errors.js';
import type { Layer, LayerDescriptor, LayerModuleExport } from './layer.js';
import { STRATA_LAYER_MODULE } from './layer-bundles.js';
import { LAYER_OPTIONS } from './tokens.js';

const NAME = /^[a-z][a-z0-9-]{0,63}$/;
// Strata's own layer modules (STRATA_LAYER_MODULE) are factories, never decorated classes, each
// also one CommonJS file (its package's `require` condition), which is required, or in a worker
// compiled from the bundle the parent named, with its build's code cache (src/layers/layer-bundles.ts): a few modules fewer per
// layer, and Node's ESM loader never started (every worker would compile it from source, --jitless).

// Loaded on first use, not at import: under --jitless every worker would compile them at start
// (about 25 ms), and Strata's own layers need neither. Both are CommonJS, so a layer module's
// own import of tsyringe gets this same copy.
const requireHere = createRequire(import.meta.url);

/** The Reflect metadata polyfill, which tsyringe and a decorated layer class need before either is defined. */
function loadReflectMetadata(): void {
  requireHere('reflect-metadata');
}

function tsyringe(): typeof Tsyringe {
  loadReflectMetadata();
  return requireHere('tsyringe') as typeof Tsyringe;
}

/**
 * A module's exports from somewhere other than its specifier (a worker compiles Strata's own
 * layers with their build's code caches), or undefined to load it by name.
 */
export type LayerModuleSource = (module: string) => unknown;

/**
 * Imports a layer module by specifier (or takes it from `source`) and builds the layer from its
 * default export: a factory is called with the options; a class is resolved through a child
 * container in which only the options are registered (tsyringe; the layer never sees the
 * container). Then checks its shape.
 */
export async function loadLayer(descriptor: LayerDescriptor, source?: LayerModuleSource): Promise<Layer> {
  return validateLayer(await buildLayer(descriptor, source), descriptor.module);
}

/** What {@link loadLayer} builds, before its shape is checked (conformance checks list every problem). */
export async function buildLayer(descriptor: LayerDescriptor, source?: LayerModuleSource): Promise<unknown> {
  const where = descriptor.module;
  let exported: unknown;
  try {
    const given = source?.(where);
    if (given !== undefined) {
      exported = (given as { default?: unknown }).default;
    } else if (STRATA_LAYER_MODULE.test(where)) {
      exported = (requireHere(where) as { default?: unknown }).default;
    } else {
      // a third party's layer may import tsyringe, which throws without the polyfill
      loadReflectMetadata();
      exported = ((await importModule(descriptor.module)) as { default?: unknown }).default;
    }
  } catch (error) {
    throw new LayerConfigError(where, `cannot import its module: ${(error as Error).message}`, { cause: error });
  }
  if (typeof exported !== 'function') throw new LayerConfigError(where, 'its module has no default export that builds a layer (a factory or a class)');
  const options = Object.freeze({ ...(descriptor.options ?? {}) });
  try {
    if (isClass(exported)) {
      const scope = tsyringe().container.createChildContainer();
      scope.register(LAYER_OPTIONS, { useValue: options });
      return scope.resolve(exported as unknown as new () => Layer);
    }
    return (exported as Exclude<LayerModuleExport, new (...args: never[]) => Layer>)(options);
  } catch (error) {
    throw new LayerConfigError(where, `building the layer failed: ${(error as Error).message}`, { cause: error });
  }
}

function isClass(fn: unknown): boolean {
  return typeof fn === 'function' && /^class[\s{]/.test(Function.prototype.toString.call(fn));
}

/**
 * What is wrong with a layer's shape, in the spirit of Rollup's plugin validation: a name,
 * a version, every required hook a function, the optional hooks (`launch`, `seal`) functions
 * when present, `order` 'pre' or 'post'. Empty when the shape is right.
 */
export function layerShapeProblems(layer: unknown): string[] {
  if (layer === null || typeof layer !== 'object') return ['the factory did not return an object'];
  const candidate = layer as Partial<Record<keyof Layer, unknown>>;
  const problems: string[] = [];
  if (typeof candidate.name !== 'string' || !NAME.test(candidate.name))
    problems.push(`its name must be lower-case letters, digits and dashes (got ${JSON.stringify(candidate.name)})`);
  if (typeof candidate.version !== 'string' || candidate.version === '') problems.push('it has no version');
  for (const hook of ['probe', 'apply', 'selfTest'] as const) {
    if (typeof candidate[hook] !== 'function') problems.push(`its ${hook} hook must be a function`);
  }
  for (const hook of ['launch', 'seal'] as const) {
    if (candidate[hook] !== undefined && typeof candidate[hook] !== 'function') problems.push(`its ${hook} hook must be a function when present`);
  }
  if (candidate.order !== undefined && candidate.order !== 'pre' && candidate.order !== 'post')
    problems.push(`order must be 'pre' or 'post' (got ${JSON.stringify(candidate.order)})`);
  return problems;
}

/** Checks a layer's shape ({@link layerShapeProblems}); throws LayerConfigError naming the first problem. */
export function validateLayer(layer: unknown, where: string): Layer {
  const [problem] = layerShapeProblems(layer);
  if (problem === undefined) return layer as Layer;
  const name =
    layer !== null && typeof layer === 'object' && typeof (layer as Partial<Layer>).name === 'string' && NAME.test((layer as Layer).name)
      ? (layer as Layer).name
      : where;
  throw new LayerConfigError(name, problem);
}
