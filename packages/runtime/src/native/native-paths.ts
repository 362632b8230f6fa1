/**
 * Where the native helpers live: the prebuild this package ships for this platform and arch
 * (`prebuilds/<platform>-<arch>/`), else what node-gyp built at install into `build/Release/`
 * (see `native/README.md` and `native-artifact.ts`).
 *
 * @module
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { requireNativeArtifact } from './native-artifact.js';

/** The exit status of the memory watchdog; the parent reports it as WorkerCrashed('maxMemory'). */
export const WATCHDOG_EXIT_CODE = 57;

/**
 * The memory watchdog addon (`strata_watchdog.node`): one native thread that ends the process when
 * its resident memory goes over a limit, even while JavaScript runs synchronously.
 */
export interface MemoryWatchdog {
  /**
   * Starts the watchdog thread: every `intervalMs` it reads the resident set size and, if it is
   * over `limitBytes`, writes one line to fd 2 and ends the process with `_exit(exitCode)`.
   * Throws if the watchdog was already started in this process (code
   * `ERR_STRATA_WATCHDOG_STARTED`), or if an argument is not an integer in range
   * (`limitBytes` ≥ 1, `intervalMs` 1–60000, `exitCode` 1–255).
   */
  start(limitBytes: number, intervalMs: number, exitCode: number): void;
  /** The process's resident set size now, in bytes. */
  rss(): number;
  /** The number of threads in the process now. */
  threads(): number;
  /**
   * Sets the RLIMIT_CPU soft limit to the CPU time used so far, rounded up to a second, plus
   * `seconds + 1` (at most the hard limit): at least `seconds` more, less than `seconds + 2`. A
   * call before the process can have used a second of CPU since the last (the wall time since,
   * times the CPUs) leaves that limit, which still holds `seconds` more: no syscall.
   */
  setCpuSoftLimit(seconds: number): void;
  /**
   * One blocking read of `fd` into `buffer` (at most its length), after a spin of up to
   * `spinMicros` µs (0–1 000 000) for it, spent on the CPU. While a read that the spin did not
   * answer sleeps with `idle` true (the worker waits for its next command, and no guest code runs
   * until it comes), the watchdog thread waits instead of polling, so an idle worker costs no CPU;
   * it polls again, woken at once, when the read returns. Returns the bytes read (0
   * at the end of the stream) and sets `waited[0]` to the microseconds it waited, spun and slept;
   * throws an Error (code `ERR_STRATA_CHANNEL`, its message names the errno) when the read fails.
   */
  readInput(fd: number, buffer: Uint8Array, spinMicros: number, idle: boolean, waited: Float64Array): number;
  /** Writes every byte of `bytes` to `fd`, blocking; throws as {@link readInput} does when a write fails. */
  writeAll(fd: number, bytes: Uint8Array): void;
  /**
   * Maps the frame rings the parent passed as `fd` (a sealed memfd of the rings' size; anything
   * else is refused, code `ERR_STRATA_FRAME_RING`) and closes `fd`; each ring's doorbell rings on
   * its fd (the frames' on `outBellFd`, the commands' on `commandBellFd`, the replies' on `replyBellFd`).
   */
  attachFrameRing(fd: number, outBellFd: number, commandBellFd: number, replyBellFd: number): void;
  /** Writes every byte of `bytes` onto the frames' ring, waiting while it is full; rings the doorbell unless the parent spins. */
  writeFrames(bytes: Uint8Array): void;
  /**
   * The worker's blocking read of ring `which` (1, its commands; 2, the replies to the host call
   * it is blocked on), as {@link readInput} on the pipe: what is there, else a spin of up to
   * `spinMicros`, else a sleep on its doorbell (with the watchdog when `idle`). The bytes taken, 0
   * once the parent closed the doorbell's pipe and the ring is empty.
   */
  readRing(which: 1 | 2, buffer: Uint8Array, spinMicros: number, idle: boolean, waited: Float64Array): number;
  /** What is on ring `which` now (up to the buffer's length), never waiting; 0 for nothing. */
  takeRing(which: 1 | 2, buffer: Uint8Array): number;
  /** `PR_SET_DUMPABLE 0`: no core dump, no ptrace attach by same-uid processes, /proc/<pid> owned by root. */
  disableDumping(): void;
  /**
   * Makes `fd` non-blocking and watches it from the main thread's event loop, calling `onChunk`
   * with each chunk read (at most 64 KiB), then once with `undefined` at end of file or an error.
   * While it watches, the event loop stays alive. The worker's background reads (settlements; a
   * worker of many isolates' commands) use it instead of node:net, which costs a `--jitless`
   * process about 15 ms to compile, and instead of a reader thread, which costs every chunk a
   * second wake-up.
   */
  streamInput(fd: number, onChunk: (chunk: Buffer | undefined) => void): void;
  /**
   * One TCP connect attempt to an IPv4 address: 0 when it connected (closed again at once), the
   * errno when it was refused (`util.getSystemErrorName(-errno)` names it), -1 when `timeoutMs`
   * (1–60 000) passed. Blocks for at most `timeoutMs`. For the layers' self-tests.
   */
  tcpConnect(ipv4: string, port: number, timeoutMs: number): number;
  /**
   * The FNV-1a 64-bit hash of `bytes`, as 16 hex digits: the key a layer bundle's code cache is
   * filed under (src/worker/layer-scripts.ts). It tells a bundle from an edited or half-upgraded
   * one, not from a forged one. Throws a TypeError for anything but a Uint8Array.
   */
  fingerprint(bytes: Uint8Array): string;
}

// This file compiles to dist/src/native/native-paths.js: three levels below the package root.
const packageRoot = fileURLToPath(new URL('../../../', import.meta.url));
const requireHere = createRequire(import.meta.url);
const addons = new Map<string, unknown>();
/**
 * A native addon by its absolute path, loaded once per process, with `process.dlopen` itself:
 * `require` first resolves the path and builds a module around it, about 0.2 ms an addon in a
 * `--jitless` worker, which loads three of them at every start. An addon something in this
 * process already required by the same path is that one (one instance per process, as with
 * `require`; a test's wrapper put in the require cache is honoured).
 */
function requireAddon(path: string): unknown {
  const required = requireHere.cache[path];
  if (required !== undefined) return required.exports;
  let exports = addons.get(path);
  if (exports === undefined) {
    const module = { exports: {} as unknown };
    process.dlopen(module, path);
    exports = module.exports;
    addons.set(path, exports);
  }
  return exports;
}

function builtArtifact(name: string, platforms: readonly NodeJS.Platform[] = ['linux']): string {
  if (!platforms.includes(process.platform)) {
    throw new Error(`${name} is built for ${platforms.join(' and ')} only: Strata's native helpers are not built on ${process.platform}.`);
  }
  return requireNativeArtifact(packageRoot, name, '@strata/runtime');
}

/**
 * The absolute path of `strata-exec`, the helper that hardens the worker process (resource
 * limits, closed file descriptors, privilege drop, no-new-privs, parent-death signal, a fresh
 * environment) and then execs it.
 *
 * @throws Error when not on Linux, or when the helper was not built (the message says how to build it).
 */
export function execHelperPath(): string {
  return builtArtifact('strata-exec');
}

/**
 * Loads the memory watchdog addon. Loading twice returns the same module; the watchdog itself
 * can be started once per process.
 *
 * @throws Error when not on Linux, or when the addon was not built (the message says how to build it).
 */
export function loadWatchdog(): MemoryWatchdog {
  // Kept: a layer's self-test asks again after the layers took the file system away.
  watchdog ??= requireAddon(builtArtifact('strata_watchdog.node')) as MemoryWatchdog;
  return watchdog;
}
let watchdog: MemoryWatchdog | undefined;

/**
 * The path of the deadline addon (`strata_deadline.node`, Linux and macOS): the watcher thread
 * behind every runtime's soft timeout. isolated-vm loads it into each guest isolate, and Node
 * loads the same file, so both halves share one registry.
 *
 * @throws Error on other platforms, or when the addon was not built (the message says how to build it).
 */
export function deadlineAddonPath(): string {
  return builtArtifact('strata_deadline.node', ['linux', 'darwin']);
}

/** Loads the deadline addon's Node half (see `src/guest-deadline.ts`). */
export function loadDeadlineAddon(): unknown {
  return requireAddon(deadlineAddonPath());
}

/**
 * The worker's wire codec (`strata_wire.node`, native/wire-codec.c): @strata/wire's frames
 * encoded and decoded in C, because the worker's JavaScript runs jitless. A fast path only: each
 * function answers `undefined` for anything outside the plain messages it handles (a tag, a
 * `"__proto__"` key, a crossed limit, a malformed byte), and the caller then runs the JavaScript
 * codec, which encodes the value or refuses it with its own error. The parent never uses it.
 */
export interface WireCodec {
  /** A complete frame (length header and CBOR body), or `undefined`: use `encodeFrame`. */
  encodeFrame(message: unknown, maxDepth: number, maxNodes: number, maxStringBytes: number, maxFrameBytes: number): Buffer | undefined;
  /** The value of one frame body, or `undefined`: use the strict decoder. */
  decodeBody(body: Uint8Array, maxDepth: number, maxNodes: number, maxStringBytes: number): unknown;
  /** The values of the whole frames that fill `chunk`'s first `length` bytes, or `undefined`: use a `FrameReader`. */
  decodeFrames(chunk: Uint8Array, length: number, maxFrameBytes: number, maxDepth: number, maxNodes: number, maxStringBytes: number): unknown[] | undefined;
}

/**
 * Loads the wire codec addon (Linux and macOS).
 *
 * @throws Error elsewhere, or when the addon was not built (the message says how to build it).
 */
export function loadWireCodec(): WireCodec {
  return requireAddon(builtArtifact('strata_wire.node', ['linux', 'darwin'])) as WireCodec;
}

/**
 * The spawn addon (`strata_spawn.node`, native/worker-spawn.c, Linux): how the parent starts a
 * worker without forking itself (see `src/isolated/worker-child.ts`).
 */
export interface SpawnAddon {
  /**
   * Starts `file` (an absolute path) with `argv` (argv[0] included) and an empty environment,
   * its fds 0 .. stdioCount-1 (1–8) one end of a Unix socket pair each. Returns the child's
   * handle, its pid and the parent's ends; `onExit(code, signal)` once it ended and was reaped
   * (code -1 when a signal ended it, signal 0 when none did). Throws an Error (code
   * `ERR_STRATA_SPAWN`, `errno` set) when it could not be started.
   */
  spawn(
    file: string,
    argv: readonly string[],
    stdioCount: number,
    onExit: (code: number, signal: number) => void,
    inheritFd?: number,
  ): [unknown, number, ...number[]];
  /** Whether waiting for the child's end keeps the event loop alive (it does at first). */
  refExit(child: unknown, ref: boolean): void;
  /** pidfd_send_signal: 0, or the errno (ESRCH once the child was reaped). */
  signal(child: unknown, signal: number): number;
  /** Why this kernel cannot (no pidfd_open), or ''. */
  unsupportedReason(): string;
  /** The frame rings (`native/frame-ring.h`): their handle, and the sealed memfd to pass to the worker (then closed). */
  makeFrameRing(): [unknown, number];
  /**
   * Writes `bytes` from `offset` onto ring `which` (1, the commands; 2, the replies) as room
   * allows, never waiting: how many went on, and whether a doorbell byte must go to that ring's
   * pipe. When not all did, the worker says so with a byte on fd 1 once it has taken some.
   */
  putFrames(ring: unknown, which: 1 | 2, bytes: Uint8Array, offset: number): [number, boolean];
  /**
   * The bytes the worker published since the last take, after a spin of up to `spinMicros` for
   * them; undefined when there are none. Throws (code `ERR_STRATA_FRAME_RING`) when the ring's
   * tail is not possible: a protocol violation.
   */
  takeFrames(ring: unknown, spinMicros: number): Buffer | undefined;
}

/**
 * Loads the spawn addon (Linux).
 *
 * @throws Error elsewhere, or when the addon was not built (the message says how to build it).
 */
export function loadSpawnAddon(): SpawnAddon {
  return requireAddon(builtArtifact('strata_spawn.node')) as SpawnAddon;
}
