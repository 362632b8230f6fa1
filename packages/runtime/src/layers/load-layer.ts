import 'reflect-metadata';
import { container } from 'tsyringe';
import { LayerConfigError } from '../errors.js';
import type { Layer, LayerDescriptor, LayerModuleExport } from './layer.js';
import { LAYER_OPTIONS } from './tokens.js';

const NAME = /^[a-z][a-z0-9-]{0,63}$/;

/**
 * Imports a layer module by specifier and builds the layer from its default export: a factory
 * is called with the options; a class is resolved through a child container in which only the
 * options are registered (tsyringe; the layer never sees the container).
 */
export async function loadLayer(descriptor: LayerDescriptor): Promise<Layer> {
  const where = descriptor.module;
  let exported: unknown;
  try {
    exported = ((await import(descriptor.module)) as { default?: unknown }).default;
  } catch (error) {
    throw new LayerConfigError(where, `cannot import its module: ${(error as Error).message}`, { cause: error });
  }
  if (typeof exported !== 'function') throw new LayerConfigError(where, 'its module has no default export that builds a layer (a factory or a class)');
  const options = Object.freeze({ ...(descriptor.options ?? {}) });
  let layer: unknown;
  try {
    if (isClass(exported)) {
      const scope = container.createChildContainer();
      scope.register(LAYER_OPTIONS, { useValue: options });
      layer = scope.resolve(exported as unknown as new () => Layer);
    } else {
      layer = (exported as Exclude<LayerModuleExport, new (...args: never[]) => Layer>)(options);
    }
  } catch (error) {
    throw new LayerConfigError(where, `building the layer failed: ${(error as Error).message}`, { cause: error });
  }
  return validateLayer(layer, where);
}

function isClass(fn: unknown): boolean {
  return typeof fn === 'function' && /^class[\s{]/.test(Function.prototype.toString.call(fn));
}

/** Checks a layer's shape, in the spirit of Rollup's plugin validation: every hook a function. */
export function validateLayer(layer: unknown, where: string): Layer {
  if (layer === null || typeof layer !== 'object') throw new LayerConfigError(where, 'the factory did not return an object');
  const candidate = layer as Partial<Layer>;
  const name = typeof candidate.name === 'string' ? candidate.name : where;
  if (typeof candidate.name !== 'string' || !NAME.test(candidate.name)) {
    throw new LayerConfigError(where, `its name must be lower-case letters, digits and dashes (got ${JSON.stringify(candidate.name)})`);
  }
  if (typeof candidate.version !== 'string' || candidate.version === '') throw new LayerConfigError(name, 'it has no version');
  for (const hook of ['probe', 'apply', 'selfTest'] as const) {
    if (typeof candidate[hook] !== 'function') throw new LayerConfigError(name, `its ${hook} hook must be a function`);
  }
  if (candidate.launch !== undefined && typeof candidate.launch !== 'function') throw new LayerConfigError(name, 'its launch hook must be a function when present');
  if (candidate.order !== undefined && candidate.order !== 'pre' && candidate.order !== 'post') {
    throw new LayerConfigError(name, `order must be 'pre' or 'post' (got ${JSON.stringify(candidate.order)})`);
  }
  return candidate as Layer;
}
