import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { Writable } from 'node:stream';
import { FrameReader, ProtocolError, encodeFrame, type Message } from '@strata/wire';
import { WorkerCrashed, type StrataError } from '../errors.js';
import type { LaunchStep } from '../layers/layer.js';
import { execHelperPath } from '../native/native-paths.js';
import { ENGINE_ADDON_ARGUMENT } from '../engine.js';
import { classifyWorkerEnd, type WorkerActivity } from './worker-end.js';
import { FRAME_RING_FD, spawnWorkerChild, type FrameRings, type WorkerChild } from './worker-child.js';
import { SpinPolicy } from '../worker/spin-policy.js';
import { FRAME_RING_ARGUMENT } from '../worker/parent-channel.js';

import { WORKER_FRAME_LIMITS } from '../channel-limits.js';
import { mark } from '../timeline.js';

export { WORKER_FRAME_LIMITS } from '../channel-limits.js';

/** How to start one worker; a spare started from the same plan can be handed out. */
export interface LaunchPlan {
  /** The Node.js executable the worker runs (`resolveWorkerNode`). */
  readonly workerNode: string;
  /** Node options and V8 flags, in order, before the entry script. */
  readonly nodeArgs: readonly string[];
  /** The exec helper's `--cpu-seconds`, or undefined for none. */
  readonly cpuSeconds: number | undefined;
  /** Entry script; tests substitute a compromised worker here. */
  readonly entry: string;
  /** Links layers add to the chain, between the base hardening and Node. */
  readonly launch: readonly LaunchStep[];
  /** The engine's addon for the worker to load directly (`engineAddonFor`); undefined: it resolves isolated-vm itself. */
  readonly engineAddon?: string | undefined;
  /** The worker sends its frames through a frame ring (`native/frame-ring.h`; Strata's own entry on Linux). */
  readonly frameRing?: boolean;
}

/** The worker entry shipped with the package. */
// It compiles the worker's code, bundled into one CommonJS file at build time
// (scripts/bundle-worker.mjs), with the code cache made for it then (scripts/make-worker-cache.mjs).
export const WORKER_ENTRY = fileURLToPath(new URL('../worker/worker-entry.cjs', import.meta.url));

/** A plan's identity, for matching a prewarmed spare. */
export function planKey(plan: LaunchPlan): string {
  return JSON.stringify([plan.workerNode, plan.nodeArgs, plan.cpuSeconds, plan.entry, plan.launch, plan.engineAddon, plan.frameRing === true]);
}

/** The exec helper's command line: base hardening, then Node with the worker entry (and its own arguments). */
export function launchArguments(plan: LaunchPlan): string[] {
  const args: string[] = [];
  if (plan.cpuSeconds !== undefined) args.push('--cpu-seconds', String(plan.cpuSeconds));
  // fds 0-4 are the channel: commands, frames out, stderr, replies to blocking calls, settlements; 5 the frame ring.
  args.push('--keep-fds', plan.frameRing === true ? String(FRAME_RING_FD + 1) : String(FRAME_RING_FD), '--drop-privileges', '--');
  // Each link runs `program ...args -- next...` and execs the rest of the chain.
  for (const step of plan.launch) args.push(step.program, ...(step.args ?? []), '--');
  args.push(plan.workerNode, ...plan.nodeArgs, plan.entry);
  if (plan.engineAddon !== undefined) args.push(ENGINE_ADDON_ARGUMENT, plan.engineAddon);
  if (plan.frameRing === true) args.push(FRAME_RING_ARGUMENT, String(FRAME_RING_FD));
  return args;
}

/** Resident memory, thread count and CPU time of a live process, from /proc (Linux). */
export interface ProcessSample {
  readonly rssBytes: number;
  readonly threads: number;
  readonly cpuMs: number;
  /** Stopped (SIGSTOP, or a tracer's stop): it runs nothing until continued. */
  readonly stopped: boolean;
}

const CLOCK_TICKS_MS = 10; // USER_HZ is 100 on every Linux architecture Node supports.

/** A /proc stat line's fields after the command name, which may itself hold spaces and parentheses: [0] is the state. */
function statFields(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** `pid`'s state letter from /proc (R, S, D, T, Z for a zombie, X…); undefined once it is gone or on other platforms. */
export function processState(pid: number): string | undefined {
  try {
    return statFields(readFileSync(`/proc/${pid}/stat`, 'latin1'))[0];
  } catch {
    return undefined;
  }
}

/** Reads a sample of `pid` from /proc; undefined once the process is gone or on other platforms. */
export function sampleProcess(pid: number): ProcessSample | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'latin1');
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const rss = /VmRSS:\s+(\d+) kB/.exec(status);
    const threads = /Threads:\s+(\d+)/.exec(status);
    const fields = statFields(stat);
    const cpuTicks = Number(fields[11]) + Number(fields[12]);
    return {
      rssBytes: rss === null ? 0 : Number(rss[1]) * 1024,
      threads: threads === null ? 0 : Number(threads[1]),
      cpuMs: cpuTicks * CLOCK_TICKS_MS,
      stopped: fields[0] === 'T' || fields[0] === 't',
    };
  } catch {
    return undefined;
  }
}

/**
 * The CPU time of `pid`'s main thread (the thread that runs the guests), from /proc (Linux):
 * unlike the process's, it leaves out V8's helper threads (the GC's), which a guest that allocates
 * keeps busy in parallel. Undefined once the process is gone or on other platforms.
 */
export function sampleMainThreadCpuMs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'latin1');
    const fields = statFields(stat);
    return (Number(fields[11]) + Number(fields[12])) * CLOCK_TICKS_MS;
  } catch {
    return undefined;
  }
}

/**
 * The longest this process spins for an answer it expects from a worker with a frame ring: its
 * event loop waits that long at most. The policy spins twice the last answer's wait, and not at
 * all once one took more than five times longer (SpinPolicy).
 */
const PARENT_MAX_SPIN_MICROS = 200;
/** Answers taken by spinning in a row before the event loop must turn once (timers and other I/O wait meanwhile). */
const SPINS_PER_TURN = 32;
/**
 * What the parent spins for the answer to: an eval, and the guest going on after a host call's
 * answer (in microseconds when it is plain code). A command (an open, a bind, a close) takes
 * longer, and a spin for it would only take a CPU from the worker's own threads (an open after
 * an eval, spun for, read 0.40 → 0.50 ms).
 */
const SPUN_FOR: ReadonlySet<string> = new Set(['eval', 'callResult', 'callPending']);
/** On one CPU a spinning parent would take the CPU from the worker it waits for. */
const MAY_SPIN = availableParallelism() > 1;
/** Workers of this process with a command in flight: the parent spins only while one is, or it would keep the others' answers waiting. */
let busyWorkers = 0;
let spinsThisTurn = 0;

/** One more answer taken by spinning; the count starts again once the event loop has turned. */
function countSpin(): void {
  if (spinsThisTurn++ === 0) setImmediate(() => (spinsThisTurn = 0));
}

/** The byte that wakes a worker sleeping on its commands' ring (its value means nothing). */
const DOORBELL = Buffer.of(1);

/**
 * The parent's writes to one of a worker's rings (its commands, the replies to its blocking host
 * calls): a copy, never a wait. What does not fit waits here, in order, until the worker has taken
 * some (it says so with a byte on fd 1). A doorbell byte goes to the pipe the ring replaced when
 * the worker is not spinning for it.
 *
 * @internal Exported for its tests.
 */
export class RingWriter {
  readonly #rings: FrameRings;
  readonly #which: 1 | 2;
  readonly #doorbell: Writable;
  readonly #waiting: Uint8Array[] = [];
  /** How much of the first waiting frame is on the ring already. */
  #offset = 0;

  constructor(rings: FrameRings, which: 1 | 2, doorbell: Writable) {
    this.#rings = rings;
    this.#which = which;
    this.#doorbell = doorbell;
  }

  /** Frames wait for the worker to take some. */
  get stalled(): boolean {
    return this.#waiting.length > 0;
  }

  /** Whether the worker was asleep on this ring when the last frame went on it (it was not spinning for it). */
  wokeReader = false;

  write(frame: Uint8Array): void {
    if (this.#waiting.length > 0 || !this.#put(frame, 0)) this.#waiting.push(frame);
  }

  /** What waits, in order, as far as it goes on now. */
  flush(): void {
    while (this.#waiting.length > 0 && this.#put(this.#waiting[0]!, this.#offset)) {
      this.#waiting.shift();
      this.#offset = 0;
    }
  }

  /**
   * Puts `frame` from `offset`; whether all of it is on the ring now. No doorbell byte while one
   * waits in this process: the pipe is full of them, and the worker's next sleep returns at once
   * (a worker that finds its input by spinning leaves the bytes rung meanwhile in the pipe; it
   * reads them when it next sleeps).
   */
  #put(frame: Uint8Array, offset: number): boolean {
    const [written, ring] = this.#rings.put(this.#which, frame, offset);
    this.wokeReader = ring;
    if (ring && this.#doorbell.writableLength === 0) this.#doorbell.write(DOORBELL);
    this.#offset = offset + written;
    return this.#offset === frame.length;
  }
}

/** How many messages a worker started with its first command may send before its caller takes them (it answers that command once: a result, and a report before it). */
const KEPT_BEFORE_HANDLER = 8;

/**
 * One worker process and the parent's end of its channel. Every frame from the worker goes
 * through the wire's strict decoder; any violation kills the worker. The first reason given
 * to {@link kill} (or found when it dies) is the one reported, exactly once, to `onExit`.
 */
export class WorkerProcess {
  readonly #child: WorkerChild;
  readonly pid: number;
  readonly reader = new FrameReader({ limits: WORKER_FRAME_LIMITS });
  readonly #commands: Writable;
  readonly #replies: Writable;
  readonly #settlements: Writable;
  #stderrTail = '';
  #killReason: StrataError | undefined;
  #exited = false;
  #exitError: StrataError | undefined;
  #onMessage: (message: Message) => void = () => {};
  #handler: ((message: Message) => void) | undefined;
  // From the hello of a worker started with its first command until the caller takes them: what it sent.
  #kept: Message[] | undefined;
  readonly #exitListeners: ((error: StrataError) => void)[] = [];
  #writeStalledSince: number | undefined;
  #holds = 0;
  readonly #cpuSeconds: number | undefined;
  #activity: WorkerActivity = 'idle';
  /** With frame rings: the writes to the commands' and the replies' rings, by the stream (the doorbell) they replace. */
  readonly #ringWriters: Map<Writable, RingWriter> | undefined;
  /** Bytes taken off the frame ring by a spin, read in a microtask (never inside the caller's call). */
  #ringBacklog: Buffer[] = [];
  readonly #spin = new SpinPolicy(PARENT_MAX_SPIN_MICROS);
  /** When the parent last wrote to a busy worker and has seen nothing from it since. */
  #expectedSince: number | undefined;

  private constructor(child: WorkerChild, cpuSeconds: number | undefined) {
    this.#child = child;
    this.pid = child.pid;
    this.#cpuSeconds = cpuSeconds;
    this.#commands = child.commands;
    this.#replies = child.replies;
    this.#settlements = child.settlements;
    const rings = child.frameRing;
    this.#ringWriters =
      rings === undefined
        ? undefined
        : new Map([
            [child.commands, new RingWriter(rings, 1, child.commands)],
            [child.replies, new RingWriter(rings, 2, child.replies)],
          ]);
    // With a frame ring, fd 1 is only its doorbell: each byte says "look at the ring".
    if (child.frameRing === undefined) child.frames.on('data', (chunk: Buffer) => this.#receive(chunk));
    else
      child.frames.on('data', () => {
        this.#takeRing(0);
        // the worker took some of what waited for room
        for (const ring of this.#ringWriters!.values()) ring.flush();
      });
    child.stderr.on('data', (chunk: Buffer) => {
      // Only a tail is kept: enough to name a crash, never a flood.
      this.#stderrTail = (this.#stderrTail + chunk.toString('utf8')).slice(-4096);
    });
    for (const stream of [this.#commands, this.#replies, this.#settlements]) stream.on('error', () => {});
    // Once every frame the worker wrote is read: its death is reported after them.
    child.onClose((code, signal) => {
      // what the worker published before it ended, then its end
      if (child.frameRing !== undefined) this.#takeRing(0);
      this.#exit(code, signal);
    });
    this.#unrefAll();
  }

  /**
   * Starts a worker from a plan. Resolves once it said hello; rejects with WorkerCrashed
   * otherwise, and kills it when no hello came within `helloTimeoutMs` (a worker stopped or stuck
   * in its launch chain must not hang the start).
   *
   * `first`, when the caller already knows its first command (a start's configure), is written at
   * once: the pipe holds it while Node starts, and the worker reads it right after its hello
   * instead of waiting for this process to wake, read the hello and answer (about 1.7 ms of a cold
   * start here). What the worker sends after its hello is kept until the caller has registered
   * that command ({@link deliverKeptMessages}); a few messages at most: more is a protocol violation.
   */
  static async start(plan: LaunchPlan, helloTimeoutMs: number, first?: Message): Promise<WorkerProcess> {
    let child: WorkerChild;
    try {
      mark('spawn');
      child = await spawnWorkerChild(execHelperPath(), launchArguments(plan), undefined, plan.frameRing === true);
      mark('spawned');
    } catch (error) {
      throw new WorkerCrashed(`the worker could not be started: ${(error as Error).message}`, 'start', { cause: error });
    }
    return new Promise((resolve, reject) => {
      const worker = new WorkerProcess(child, plan.cpuSeconds);
      if (first !== undefined) worker.send(first);
      // Kept referenced only while starting: an idle worker never keeps this process alive.
      const releaseStart = worker.hold();
      const deadline = setTimeout(
        () => worker.kill(new WorkerCrashed(`the worker did not start within ${helloTimeoutMs} ms (no hello); it was killed`, 'start')),
        helloTimeoutMs,
      );
      worker.onExit(() => clearTimeout(deadline));
      worker.#onMessage = (message) => {
        if (message.type === 'hello') {
          clearTimeout(deadline);
          releaseStart();
          if (first === undefined) {
            worker.#onMessage = (other) => worker.kill(new WorkerCrashed(`protocol violation: unexpected ${other.type} message`, 'protocol'));
          } else {
            // kept until deliverKeptMessages hands them over and replaces this handler
            const kept: Message[] = [];
            worker.#kept = kept;
            worker.#onMessage = (other) => {
              if (kept.push(other) > KEPT_BEFORE_HANDLER)
                worker.kill(new WorkerCrashed(`protocol violation: ${kept.length} messages before any request was answered`, 'protocol'));
            };
          }
          resolve(worker);
        } else {
          worker.kill(new WorkerCrashed(`protocol violation: the worker's first message was ${message.type}, not hello`, 'protocol'));
        }
      };
      worker.onExit((error) => reject(error));
    });
  }

  /**
   * Receives every message after hello. A worker started with its first command keeps what comes
   * until {@link deliverKeptMessages}: the caller registers that command's answer first.
   */
  setMessageHandler(handler: (message: Message) => void): void {
    this.#handler = handler;
    if (this.#kept === undefined) this.#onMessage = handler;
  }

  /** What a worker started with its first command sent since its hello, to the handler, in order; then everything as it comes. */
  deliverKeptMessages(): void {
    const kept = this.#kept;
    const handler = this.#handler;
    if (kept === undefined || handler === undefined) return;
    this.#kept = undefined;
    this.#onMessage = handler;
    for (const message of kept) {
      if (this.#killReason !== undefined) return;
      handler(message);
    }
  }

  /** Called once, with the reason, when the worker is gone. */
  onExit(listener: (error: StrataError) => void): void {
    if (this.#exited && this.#exitError !== undefined) listener(this.#exitError);
    else this.#exitListeners.push(listener);
  }

  get exited(): boolean {
    return this.#exited;
  }

  /** Says what the worker is doing now; how its end is named depends on it (`classifyWorkerEnd`). */
  setActivity(activity: WorkerActivity): void {
    if (this.#exited) return;
    if (this.#activity === 'idle' && activity !== 'idle') busyWorkers++;
    else if (this.#activity !== 'idle' && activity === 'idle') busyWorkers--;
    this.#activity = activity;
    if (activity === 'idle') this.#expectedSince = undefined;
  }

  /**
   * After a write to a busy worker with a frame ring: its answer usually comes within
   * microseconds, so this process spins for it a moment instead of sleeping in its event loop and
   * paying the wake-up (about as long as the answer). Only with more than one CPU, while this is
   * the process's one busy worker, as long as {@link SpinPolicy} says, and never for more than
   * SPINS_PER_TURN answers without the event loop turning. What the spin took is read in a
   * microtask.
   *
   * When the write woke the worker (it was not spinning for it), the spin is held to answers that
   * came within the longest spin ({@link SpinPolicy.microsAfterWaking}): a pipe's wake-up hints
   * that the waker will sleep, so the woken worker is often put on this process's CPU, and a spin
   * here would hold it off (an open's first command in a warm SandboxHost, 1 ms apart: 0.31 ms
   * without the spin, 0.50 with it).
   */
  #spinForAnswer(wokeWorker: boolean): void {
    if (this.#child.frameRing === undefined || this.#activity === 'idle') return;
    const began = performance.now();
    this.#expectedSince ??= began;
    const micros = wokeWorker ? this.#spin.microsAfterWaking : this.#spin.micros;
    if (micros === 0 || !MAY_SPIN || busyWorkers > 1 || spinsThisTurn >= SPINS_PER_TURN) return;
    const bytes = this.#takeFromRing(micros);
    if (bytes === undefined) return;
    countSpin();
    if (this.#ringBacklog.push(bytes) === 1) queueMicrotask(() => this.#deliverBacklog());
  }

  /** The frame ring's bytes: what a spin took first, then what is there now (at the doorbell, and at the worker's end). */
  #takeRing(spinMicros: number): void {
    this.#deliverBacklog();
    const bytes = this.#takeFromRing(spinMicros);
    if (bytes !== undefined) this.#receive(bytes);
  }

  #deliverBacklog(): void {
    const backlog = this.#ringBacklog;
    if (backlog.length === 0) return;
    this.#ringBacklog = [];
    for (const bytes of backlog) this.#receive(bytes);
  }

  /** A take off the ring; the first bytes after a write feed the spin policy with how long they took. A ring that is not possible kills the worker. */
  #takeFromRing(spinMicros: number): Buffer | undefined {
    if (this.#killReason !== undefined) return undefined;
    let bytes: Buffer | undefined;
    try {
      bytes = this.#child.frameRing!.take(spinMicros);
    } catch (error) {
      this.kill(new WorkerCrashed(`protocol violation: ${(error as Error).message}; the worker was killed`, 'protocol', { cause: error }));
      return undefined;
    }
    if (bytes !== undefined && this.#expectedSince !== undefined) {
      this.#spin.waited((performance.now() - this.#expectedSince) * 1000);
      this.#expectedSince = undefined;
    }
    return bytes;
  }

  /** A command, or the settlement of an async host call. */
  send(message: Message): void {
    this.#write(this.#commands, message);
  }

  /** The answer to the call the guest is blocked on. */
  reply(message: Message): void {
    this.#write(this.#replies, message);
  }

  /** The settlement of a host call that returned a promise. */
  settle(message: Message): void {
    this.#write(this.#settlements, message);
  }

  #write(stream: Writable, message: Message): void {
    if (this.#exited || this.#killReason !== undefined) return;
    mark('encode');
    const frame = encodeFrame(message, WORKER_FRAME_LIMITS);
    mark('write');
    const ring = this.#ringWriters?.get(stream);
    if (ring !== undefined) ring.write(frame);
    else stream.write(frame);
    mark('written');
    if (this.#writeStalledSince === undefined && this.#unread(stream)) this.#writeStalledSince = performance.now();
    else if (SPUN_FOR.has(message.type) && ring !== undefined) this.#spinForAnswer(ring.wokeReader);
  }

  /** Since when the worker has left written bytes unread, if it has. */
  writeStalledSince(): number | undefined {
    if (!this.#unread(this.#commands) && !this.#unread(this.#replies) && !this.#unread(this.#settlements)) this.#writeStalledSince = undefined;
    return this.#writeStalledSince;
  }

  /** What was written to `stream` (or its ring) waits for the worker. A ring's doorbell pipe does not count: see RingWriter. */
  #unread(stream: Writable): boolean {
    const ring = this.#ringWriters?.get(stream);
    return ring === undefined ? stream.writableLength > 0 : ring.stalled;
  }

  /** SIGKILLs the worker; `reason` is what every waiter is told. Idempotent: the first reason wins. */
  kill(reason: StrataError): void {
    if (this.#exited) return;
    this.#killReason ??= reason;
    this.#child.kill();
  }

  /**
   * Keeps this process's event loop alive while something waits on the worker (a start, a
   * command, a close) until the returned function is called. Holds nest: the worker stays
   * referenced until the last one is released, so a command that ends while `close()` waits for
   * the worker's exit cannot let the process exit under it.
   */
  hold(): () => void {
    if (this.#holds++ === 0) this.#refAll();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.#holds === 0) this.#unrefAll();
    };
  }

  #refAll(): void {
    this.#child.ref();
    for (const stream of [this.#child.frames, this.#child.stderr]) (stream as unknown as { ref?: () => void }).ref?.();
  }

  #unrefAll(): void {
    this.#child.unref();
    for (const stream of [this.#child.frames, this.#child.stderr, this.#commands, this.#replies, this.#settlements])
      (stream as unknown as { unref?: () => void }).unref?.();
  }

  #receive(chunk: Buffer): void {
    if (this.#killReason !== undefined) return;
    let messages: Message[];
    try {
      mark('read');
      messages = this.reader.readMessages(chunk);
      mark('decoded');
    } catch (error) {
      const reason = error instanceof ProtocolError ? error.message : 'undecodable frame';
      this.kill(new WorkerCrashed(`protocol violation: ${reason}; the worker was killed`, 'protocol', { cause: error }));
      return;
    }
    for (const message of messages) {
      if (this.#killReason !== undefined) return;
      this.#onMessage(message);
    }
  }

  #exit(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.#exited) return;
    if (this.#activity !== 'idle') busyWorkers--;
    this.#exited = true;
    const tail = this.#stderrTail.trim().split('\n').slice(-3).join(' | ').slice(0, 500);
    const error = classifyWorkerEnd({ killedFor: this.#killReason, code, signal, activity: this.#activity, cpuSeconds: this.#cpuSeconds, stderrTail: tail });
    this.#exitError = error;
    for (const listener of this.#exitListeners.splice(0)) listener(error);
  }
}
