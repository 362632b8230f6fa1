// The native artifacts of every Strata package: what `npm install` needs per platform (build.mjs
// skips node-gyp when a prebuild has them all) and what scripts/prebuild.mjs at the repository
// root compiles without node-gyp. The sources and the flags mirror each package's binding.gyp:
// change both together.
//
// Plain JavaScript, like build.mjs: it runs during `npm ci`, before anything is compiled.
import { closeSync, openSync, readSync } from 'node:fs';

/**
 * Per package, its artifacts: `executable` (a C program), `addon` (a Node-API module in C) or
 * `cxx-addon` (C++ against V8's headers). `platforms` defaults to Linux only; `relro` is the
 * gyp's `-Wl,-z,relro,-z,now`; `chain`: a helper of the worker's launch chain, linked static-pie
 * where the compiler can (static-pie.mjs; binding.gyp's strata_static_pie).
 */
export const NATIVE_TARGETS = Object.freeze({
  '@strata/runtime': [
    { name: 'strata-exec', kind: 'executable', sources: ['native/exec-helper.c'], relro: true, chain: true },
    { name: 'strata-simulate-platform', kind: 'executable', sources: ['native/simulate-platform.c'] },
    { name: 'strata_watchdog.node', kind: 'addon', sources: ['native/memory-watchdog.c'] },
    { name: 'strata_spawn.node', kind: 'addon', sources: ['native/worker-spawn.c'] },
    { name: 'strata_wire.node', kind: 'addon', sources: ['native/wire-codec.c'], platforms: ['linux', 'darwin'] },
    { name: 'strata_deadline.node', kind: 'cxx-addon', sources: ['native/guest-deadline.cc'], platforms: ['linux', 'darwin'] },
  ],
  '@strata/layer-emptyroot': [{ name: 'strata-emptyroot', kind: 'executable', sources: ['native/emptyroot.c'], relro: true, chain: true }],
  '@strata/layer-landlock': [
    { name: 'strata-landlock', kind: 'executable', sources: ['native/landlock.c'], relro: true, chain: true },
    { name: 'strata_landlock.node', kind: 'addon', sources: ['native/landlock-addon.c'] },
  ],
  '@strata/layer-seccomp': [
    { name: 'strata-no-io-uring', kind: 'executable', sources: ['native/no-io-uring.c'], relro: true, chain: true },
    { name: 'strata_seccomp.node', kind: 'addon', sources: ['native/seccomp.c'] },
  ],
  '@strata/layer-seatbelt': [{ name: 'strata_seatbelt.node', kind: 'addon', sources: ['native/seatbelt.c'], platforms: ['darwin'] }],
});

/** The artifacts `packageName` has on `platform`; undefined for a package not in the table. */
export function targetsFor(packageName, platform) {
  return NATIVE_TARGETS[packageName]?.filter((t) => (t.platforms ?? ['linux']).includes(platform));
}

/**
 * The prebuild directory name for a platform, arch and C library: `linux-x64`, `linux-arm64`...
 * and `linux-x64-musl` on musl, so a glibc prebuild is never picked there (none is shipped for
 * musl: it builds from source). Keep in step with src/native/native-artifact.ts.
 */
export function prebuildKey(platform = process.platform, arch = process.arch, libc = libcOf(process.execPath, platform)) {
  return `${platform}-${arch}${libc === 'musl' ? '-musl' : ''}`;
}

/** 'musl' when the binary's ELF interpreter is musl's (`/lib/ld-musl-<arch>.so.1`), else 'glibc'; undefined off Linux. */
export function libcOf(execPath, platform = process.platform) {
  if (platform !== 'linux') return undefined;
  let fd;
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
