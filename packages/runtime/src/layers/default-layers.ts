import type { LayerDescriptor } from './layer.js';

/** One of a platform's default layers. */
export interface PlatformLayer {
  /** The layer's name (what its module builds). */
  readonly name: string;
  /** The module that provides it. */
  readonly module: string;
  /**
   * Whether it is part of the platform's OS sandbox (`rt.sandbox`: Landlock and seccomp on Linux,
   * Seatbelt on macOS): `sandbox: 'require'` never starts without it.
   */
  readonly confines: boolean;
}

/** The OS layers each platform has by default, in order, by name, with the module that provides each. */
export const PLATFORM_LAYERS: Readonly<Partial<Record<NodeJS.Platform, readonly PlatformLayer[]>>> = Object.freeze({
  linux: Object.freeze([
    Object.freeze({ name: 'emptyroot', module: '@strata/layer-emptyroot/layer', confines: false }),
    Object.freeze({ name: 'landlock', module: '@strata/layer-landlock/layer', confines: true }),
    Object.freeze({ name: 'seccomp', module: '@strata/layer-seccomp/layer', confines: true }),
  ]),
  darwin: Object.freeze([Object.freeze({ name: 'seatbelt', module: '@strata/layer-seatbelt/layer', confines: true })]),
});

/** The names of every platform's default layers: what `omitDefaultLayers` accepts. */
export const DEFAULT_LAYER_NAMES: readonly string[] = Object.freeze([
  ...new Set(Object.values(PLATFORM_LAYERS).flatMap((layers) => (layers ?? []).map((l) => l.name))),
]);

/** Whether a layer module can be imported from here (its package is installed). */
export function installed(module: string): boolean {
  try {
    import.meta.resolve(module);
    return true;
  } catch {
    return false;
  }
}

/**
 * This platform's default layers: those of {@link PLATFORM_LAYERS} whose packages are installed
 * (on Linux emptyroot, landlock and seccomp; on macOS seatbelt). `IsolatedRuntime.start` adds
 * them to its `layers` unless `replaceDefaultLayers: true`. A default layer whose package is
 * missing is named by {@link missingDefaultLayers}, and `sandbox: 'require'` then refuses.
 */
export function defaultLayers(platform: NodeJS.Platform = process.platform): LayerDescriptor[] {
  return (PLATFORM_LAYERS[platform] ?? []).filter((l) => installed(l.module)).map((l) => ({ module: l.module }));
}

/** The default OS layers this platform should have and cannot get here (not built, or not installed). */
export function missingDefaultLayers(platform: NodeJS.Platform = process.platform): readonly string[] {
  const expected = PLATFORM_LAYERS[platform];
  if (expected === undefined) return ['an OS sandbox (none is known for this platform)'];
  return expected.filter((l) => !installed(l.module)).map((l) => l.name);
}
