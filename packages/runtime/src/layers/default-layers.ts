import type { LayerDescriptor } from './layer.js';

/** The OS layers each platform should have by default, by name, with the module that provides each. */
export const PLATFORM_LAYERS: Readonly<Partial<Record<NodeJS.Platform, readonly { name: string; module: string }[]>>> = Object.freeze({
  linux: Object.freeze([
    { name: 'emptyroot', module: '@strata/layer-emptyroot/layer' },
    { name: 'landlock', module: '@strata/layer-landlock/layer' },
    { name: 'seccomp', module: '@strata/layer-seccomp/layer' },
  ]),
  darwin: Object.freeze([{ name: 'seatbelt', module: '@strata/layer-seatbelt/layer' }]),
});

/** Whether a layer module can be imported from here (its package is installed). */
function installed(module: string): boolean {
  try {
    import.meta.resolve(module);
    return true;
  } catch {
    return false;
  }
}

/**
 * This platform's default layers: those of {@link PLATFORM_LAYERS} whose packages are installed
 * (on Linux emptyroot, landlock and seccomp; on macOS seatbelt). A default layer whose package is
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
