/**
 * The worker's process as the parent sees it: its pid, the parent's ends of its fds 0–4, its
 * end. On Linux it is started by the spawn addon (`native/worker-spawn.c`: posix_spawn, which
 * shares the parent's memory until the exec, and a pidfd for its end); elsewhere, and on a kernel
 * without pidfd_open, by `node:child_process`, whose fork copies the parent's page tables first
 * (4 ms from a 52 MiB Node on this project's VM, 17 ms from one of 342 MiB). The child is the
 * same either way: fds 0–4 one end of a Unix socket pair each, an empty environment, every
 * signal's disposition the default.
 *
 * With frame rings (Linux), the worker's frames and this process's commands and replies go through
 * memory both map (`native/frame-ring.h`), passed as its fd 5, and fds 1, 0 and 3 carry only their
 * doorbells.
 *
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync } from 'node:fs';
import { Socket } from 'node:net';
import { constants } from 'node:os';
import type { Readable, Writable } from 'node:stream';
import { loadSpawnAddon, type SpawnAddon } from '../native/native-paths.js';
import { CHANNEL_FDS } from '../worker/parent-channel.js';

/** fds 0–4: commands, frames out, stderr, replies to blocking calls, settlements. */
const STDIO_COUNT = 5;

/** A started worker process and the parent's ends of its channel. */
export interface WorkerChild {
  readonly pid: number;
  /** fd 0: commands (with frame rings, their doorbell), and the settlements of a worker's async host calls. */
  readonly commands: Writable;
  /** fd 1: the worker's frames; with frame rings, their doorbell (the bytes mean nothing: take the ring's). */
  readonly frames: Readable;
  /** The worker's frames and this process's commands and replies, when it was started with frame rings. */
  readonly frameRing: FrameRings | undefined;
  /** fd 2: what the worker wrote to stderr. */
  readonly stderr: Readable;
  /** fd 3: answers to the host call the guest is blocked on (with frame rings, their doorbell). */
  readonly replies: Writable;
  /** fd 4: settlements of host calls that returned a promise. */
  readonly settlements: Writable;
  /** SIGKILL, unless it already ended (then nothing: its pid may be another process's). */
  kill(): void;
  /** Whether waiting for its end keeps this process's event loop alive (the streams have their own `ref`/`unref`). */
  ref(): void;
  unref(): void;
  /** Called once, when it has ended and everything it wrote to fds 1 and 2 was read. */
  onClose(listener: (code: number | null, signal: NodeJS.Signals | null) => void): void;
}

/** The parent's ends of the frame rings. */
export interface FrameRings {
  /**
   * What the worker published since the last take, after a spin of up to `spinMicros` for it
   * (0: none); undefined when nothing was. Throws (code `ERR_STRATA_FRAME_RING`) on a ring whose
   * tail is not possible.
   */
  take(spinMicros: number): Buffer | undefined;
  /**
   * Puts `bytes` from `offset` on ring `which` (1, the commands; 2, the replies) as room allows,
   * never waiting: how many went on, and whether a doorbell byte must be written to that ring's
   * pipe (fd 0 or 3). When not all did, the worker writes a byte to fd 1 once it has taken some.
   */
  put(which: 1 | 2, bytes: Uint8Array, offset: number): [number, boolean];
}

/** The fd a worker started with a frame ring finds it at. */
export const FRAME_RING_FD = CHANNEL_FDS.frameRing;

/** How a worker is started: see the module's comment. */
export type SpawnMethod = 'posix_spawn' | 'child_process';

/** How this process starts workers, and why not with `posix_spawn` when it does not (`strata doctor` shows it). */
export interface WorkerSpawnSupport {
  readonly method: SpawnMethod;
  /** Why not `posix_spawn`; `null` when it is used. */
  readonly reason: string | null;
}

let support: WorkerSpawnSupport | undefined;

/**
 * `posix_spawn` on Linux with pidfd_open (5.3), else `child_process`. Asked once per process.
 *
 * @throws Error on Linux when the spawn addon was not built (the message says how to build it).
 */
export function workerSpawnSupport(): WorkerSpawnSupport {
  if (support !== undefined) return support;
  if (process.platform !== 'linux') {
    support = { method: 'child_process', reason: `the spawn addon is Linux only (this is ${process.platform})` };
  } else {
    const unsupported = loadSpawnAddon().unsupportedReason();
    support = unsupported === '' ? { method: 'posix_spawn', reason: null } : { method: 'child_process', reason: unsupported };
  }
  return support;
}

/** {@link workerSpawnSupport}'s method. */
export function defaultSpawnMethod(): SpawnMethod {
  return workerSpawnSupport().method;
}

/**
 * Starts `file` (an absolute path) with `args` and an empty environment. Rejects with the
 * system's error when it cannot be started (the file missing, not executable, out of processes).
 */
export async function spawnWorkerChild(
  file: string,
  args: readonly string[],
  method: SpawnMethod = defaultSpawnMethod(),
  frameRing = false,
): Promise<WorkerChild> {
  // the ring's memfd is the worker's fd 5; this process keeps the mapping only
  const ring = frameRing ? loadSpawnAddon().makeFrameRing() : undefined;
  try {
    const reader = ring === undefined ? undefined : ringReader(ring[0]);
    if (method === 'posix_spawn') return spawnedChild(loadSpawnAddon(), file, args, reader, ring?.[1]);
    const stdio: (number | 'pipe')[] = ['pipe', 'pipe', 'pipe', 'pipe', 'pipe'];
    if (ring !== undefined) stdio.push(ring[1]);
    const child = spawn(file, args, { stdio, env: {}, windowsHide: true });
    if (child.pid === undefined) return await new Promise((_, reject) => child.once('error', reject));
    return nodeChild(child, reader);
  } finally {
    if (ring !== undefined) closeSync(ring[1]);
  }
}

function ringReader(ring: unknown): FrameRings {
  const addon = loadSpawnAddon();
  return { take: (spinMicros) => addon.takeFrames(ring, spinMicros), put: (which, bytes, offset) => addon.putFrames(ring, which, bytes, offset) };
}

function nodeChild(child: ChildProcess, frameRing: FrameRings | undefined): WorkerChild {
  const stdio = child.stdio;
  return {
    pid: child.pid!,
    commands: stdio[0] as Writable,
    frames: stdio[1] as Readable,
    frameRing,
    stderr: stdio[2] as Readable,
    replies: stdio[3] as Writable,
    settlements: stdio[4] as Writable,
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
    ref: () => child.ref(),
    unref: () => child.unref(),
    // 'close', not 'exit': every byte the worker wrote is read before its end is reported.
    onClose: (listener) => child.once('close', listener),
  };
}

const signalNames = new Map<number, NodeJS.Signals>(Object.entries(constants.signals).map(([name, number]) => [number, name as NodeJS.Signals]));

function spawnedChild(addon: SpawnAddon, file: string, args: readonly string[], frameRing: FrameRings | undefined, ringFd: number | undefined): WorkerChild {
  let ended: [number | null, NodeJS.Signals | null] | undefined;
  let readersOpen = 2;
  const listeners: ((code: number | null, signal: NodeJS.Signals | null) => void)[] = [];
  // Filled once the ends are wrapped; the end's callback runs later, from the event loop.
  let writers: Socket[] = [];
  const closeIfDone = () => {
    if (ended === undefined || readersOpen > 0) return;
    for (const listener of listeners.splice(0)) listener(...ended);
  };
  const [handle, pid, ...fds] = addon.spawn(
    file,
    [file, ...args],
    STDIO_COUNT,
    (code, signal) => {
      ended = [code === -1 ? null : code, signal === 0 ? null : (signalNames.get(signal) ?? null)];
      // Nothing reads from these: their end is the worker's.
      for (const socket of writers) socket.destroy();
      closeIfDone();
    },
    ringFd,
  );
  // As child_process wraps its socket pairs: libuv pipes, fds 1 and 2 read, the others written.
  const sockets: Socket[] = [];
  try {
    for (const [index, fd] of fds.entries()) sockets.push(new Socket({ fd, readable: index === 1 || index === 2, writable: index !== 1 && index !== 2 }));
  } catch (error) {
    // Never a child nobody watches: it is killed (and reaped by its watch), every end closed.
    addon.signal(handle, constants.signals.SIGKILL);
    for (const socket of sockets) socket.destroy();
    for (const fd of fds.slice(sockets.length)) closeSync(fd);
    throw error;
  }
  const [commands, frames, stderr, replies, settlements] = sockets as [Socket, Socket, Socket, Socket, Socket];
  writers = [commands, replies, settlements];
  for (const reader of [frames, stderr]) {
    // A read error (ECONNRESET when the worker died with commands unread) ends the stream; its end says why.
    reader.on('error', () => {});
    reader.once('close', () => {
      readersOpen--;
      closeIfDone();
    });
  }
  return {
    pid,
    commands,
    frames,
    frameRing,
    stderr,
    replies,
    settlements,
    kill: () => {
      if (ended === undefined) addon.signal(handle, constants.signals.SIGKILL);
    },
    ref: () => addon.refExit(handle, true),
    unref: () => addon.refExit(handle, false),
    onClose: (listener) => {
      listeners.push(listener);
      closeIfDone();
    },
  };
}
