/**
 * Finds a Strata package's native artifact (a helper program or an addon) for this process: the
 * prebuild the package ships, `prebuilds/<platform>-<arch>/<name>` (written by `npm run prebuilds`
 * at the repository root), else the one `npm install` built from source, `build/Release/<name>`.
 * Exported as `@strata/runtime/native` for the layer packages.
 *
 * @module
 */
import { closeSync, existsSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';

/** Where an artifact may be, in the order looked at. */
export interface ArtifactCandidates {
  /** `<packageRoot>/prebuilds/<key>/<name>`. */
  readonly prebuild: string;
  /** `<packageRoot>/build/Release/<name>`: where the install script's node-gyp build writes it. */
  readonly source: string;
}

let libc: 'glibc' | 'musl' | undefined;

/**
 * The prebuild directory for this process: `linux-x64`, `linux-arm64`, `darwin-arm64`... and
 * `linux-<arch>-musl` under musl, so a glibc prebuild is never picked there (none ships for musl;
 * it builds from source). The same rule as `prebuildKey` in native/scripts/targets.mjs.
 */
export function prebuildKey(platform: NodeJS.Platform = process.platform, arch: string = process.arch): string {
  if (platform === 'linux' && platform === process.platform) libc ??= libcOf(process.execPath);
  return `${platform}-${arch}${platform === 'linux' && libc === 'musl' ? '-musl' : ''}`;
}

/** 'musl' when the binary's ELF interpreter is musl's (`/lib/ld-musl-<arch>.so.1`), else 'glibc'. */
function libcOf(execPath: string): 'glibc' | 'musl' {
  let fd: number | undefined;
  try {
    fd = openSync(execPath, 'r');
    const head = Buffer.alloc(4096);
    const n = readSync(fd, head, 0, head.length, 0);
    return head.subarray(0, n).includes('/ld-musl-') ? 'musl' : 'glibc';
  } catch {
    return 'glibc';
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** The two places `name` may be under `packageRoot`. */
export function artifactCandidates(packageRoot: string, name: string, key: string = prebuildKey()): ArtifactCandidates {
  return { prebuild: join(packageRoot, 'prebuilds', key, name), source: join(packageRoot, 'build', 'Release', name) };
}

/** The prebuild when it exists, else the source build when it exists, else undefined. */
export function findNativeArtifact(packageRoot: string, name: string, key?: string): string | undefined {
  const { prebuild, source } = artifactCandidates(packageRoot, name, key);
  return existsSync(prebuild) ? prebuild : existsSync(source) ? source : undefined;
}

/**
 * The artifact's path: as {@link findNativeArtifact}, but when neither exists the source-build
 * path (where a build would put it), for callers that check existence themselves and name it.
 */
export function nativeArtifactPath(packageRoot: string, name: string, key?: string): string {
  return findNativeArtifact(packageRoot, name, key) ?? artifactCandidates(packageRoot, name, key).source;
}

/** Why `name` cannot be found: the two paths looked at and how to build it from source. */
export function missingArtifactMessage(packageRoot: string, name: string, packageName: string, key: string = prebuildKey()): string {
  const { prebuild, source } = artifactCandidates(packageRoot, name, key);
  return (
    `${packageName} has no prebuilt ${name} for ${key} (${prebuild}), and ${source} is missing: ` +
    `run \`npm ci\` (or \`npm rebuild ${packageName}\`) to build it from source; building needs python3, make and a C compiler.`
  );
}

/**
 * The artifact's path (prebuild first, then source build).
 *
 * @throws Error when neither exists, naming both paths and how to build from source.
 */
export function requireNativeArtifact(packageRoot: string, name: string, packageName: string, key?: string): string {
  const found = findNativeArtifact(packageRoot, name, key);
  if (found === undefined) throw new Error(missingArtifactMessage(packageRoot, name, packageName, key));
  return found;
}
