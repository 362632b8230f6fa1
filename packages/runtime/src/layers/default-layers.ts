import type { LayerDescriptor } from './layer.js';

/** The OS layers each platform should have by default, by name. */
export const PLATFORM_LAYERS: Readonly<Partial<Record<NodeJS.Platform, readonly string[]>>> = Object.freeze({
  linux: Object.freeze(['emptyroot', 'landlock', 'seccomp']),
  darwin: Object.freeze(['seatbelt']),
});

/**
 * This platform's default layers. Empty in this release: the OS layers (emptyroot, landlock and
 * seccomp on Linux, seatbelt on macOS) are not built yet, so `sandbox: 'require'` with the
 * defaults refuses to start, naming them.
 */
export function defaultLayers(): LayerDescriptor[] {
  return [];
}

/** The default OS layers this platform should have and this release does not provide. */
export function missingDefaultLayers(platform: NodeJS.Platform = process.platform): readonly string[] {
  return PLATFORM_LAYERS[platform] ?? ['an OS sandbox (none is known for this platform)'];
}
