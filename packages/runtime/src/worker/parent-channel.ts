import { readSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { FrameReader, encodeFrame, resolveLimits, validateMessage, type Message, type MessageOf } from '@strata/wire';
import { PARENT_FRAME_LIMITS, WORKER_FRAME_LIMITS } from '../channel-limits.js';
import type { WireCodec } from '../native/native-paths.js';
import { mark } from '../timeline.js';
import { SpinPolicy } from './spin-policy.js';
import { monotonicMs } from '../monotonic.js';

/**
 * The worker's reads and writes on its channel, and how it waits (the watchdog addon, in C: under
 * `--jitless` each call into Node's `fs` wrappers costs microseconds of interpreted JavaScript).
 */
export interface ChannelIo {
  /**
   * One blocking read of `fd` into `buffer`, after a spin of up to `spinMicros` µs for it; while
   * a read that the spin did not answer sleeps with `idle` true, the watchdog sleeps too. The
   * bytes read (0 at the end); `waited[0]` is set to the µs it waited, spun and slept.
   */
  readInput(fd: number, buffer: Uint8Array, spinMicros: number, idle: boolean, waited: Float64Array): number;
  /** Writes every byte of `bytes` to `fd` (blocking). */
  writeAll(fd: number, bytes: Uint8Array): void;
  /** Maps the frame rings at `fd` (and closes `fd`); each ring's doorbell rings on its fd. */
  attachFrameRing(fd: number, outBellFd: number, commandBellFd: number, replyBellFd: number): void;
  /** Writes every byte of `bytes` onto the frames' ring (blocking while it is full). */
  writeFrames(bytes: Uint8Array): void;
  /** {@link readInput} for ring `which` (1 the commands, 2 the replies; 0: the parent closed its doorbell's pipe and the ring is empty). */
  readRing(which: 1 | 2, buffer: Uint8Array, spinMicros: number, idle: boolean, waited: Float64Array): number;
  /** What is on ring `which` now, never waiting; 0 for nothing. */
  takeRing(which: 1 | 2, buffer: Uint8Array): number;
  /**
   * Watches `fd` from the main thread's event loop until its end, calling `onChunk` with each
   * chunk, then with `undefined`. (Node's sockets would do it, and cost a `--jitless` worker
   * about 15 ms of start-up to compile node:net and its streams.)
   */
  streamInput(fd: number, onChunk: (chunk: Buffer | undefined) => void): void;
}

/** The file descriptors of the worker's channel to its parent. */
export const CHANNEL_FDS = Object.freeze({
  /** parent → worker: commands; read synchronously, one at a time, while the worker is idle. */
  commands: 0,
  /** worker → parent: every frame the worker sends. */
  out: 1,
  /** parent → worker: the answer to a call the guest is blocked on; only ever read synchronously. */
  replies: 3,
  /** parent → worker: settlements of host calls that returned promises; read as a stream during a command. */
  settlements: 4,
  /** both ways, when the parent passed them: the frame rings (`native/frame-ring.h`); `out` and `commands` then carry only their doorbells. */
  frameRing: 5,
});

/** The worker entry's argument that says it was given a frame ring, followed by its fd. */
export const FRAME_RING_ARGUMENT = '--frame-ring';

/** The rings after the frames' (ring 0), in `native/frame-ring.h`'s order. */
const COMMANDS_RING = 1;
const REPLIES_RING = 2;

// The parent is trusted by the worker; its frames are held to these limits all the same.
const FRAME_LIMITS = resolveLimits(PARENT_FRAME_LIMITS);
const SEND_LIMITS = resolveLimits(WORKER_FRAME_LIMITS);
// The same numbers as plain constants for the native codec's calls, read once rather than per frame.
const { maxFrameBytes: IN_FRAME_BYTES, maxDepth: IN_DEPTH, maxNodes: IN_NODES, maxStringBytes: IN_STRING_BYTES } = FRAME_LIMITS;
const { maxFrameBytes: OUT_FRAME_BYTES, maxDepth: OUT_DEPTH, maxNodes: OUT_NODES, maxStringBytes: OUT_STRING_BYTES } = SEND_LIMITS;

/** Whether every message is for the same isolate. */
function oneIsolate(messages: readonly Message[]): boolean {
  const first = 'isolate' in messages[0]! ? messages[0].isolate : undefined;
  for (const message of messages) if (('isolate' in message ? message.isolate : undefined) !== first) return false;
  return true;
}

/** Writes `frame` whole to `fd` with Node's own `fs` (a worker without the addon). */
function writeAllSync(fd: number, frame: Uint8Array): void {
  let offset = 0;
  while (offset < frame.length) offset += writeSync(fd, frame, offset, frame.length - offset);
}

/**
 * The worker's end of the channel. Writes are synchronous (a blocking pipe, so a parent that
 * stops reading stalls the worker, which the parent notices). Commands arrive on a stream;
 * answers to calls the guest is blocked on arrive on a separate pipe read synchronously, so the
 * two readers never share a file descriptor.
 */
export class ParentChannel {
  readonly #replies: FrameReader;
  readonly #commands: FrameReader;
  readonly #settlements: FrameReader;
  readonly #codec: WireCodec | undefined;
  readonly #pendingCommands: Message[] = [];
  /** Frames held back to be written together by {@link flush}, or undefined when every frame is written at once. */
  #held: Uint8Array[] | undefined;
  readonly #replyBuffer = Buffer.allocUnsafe(64 * 1024);
  readonly #commandBuffer = Buffer.allocUnsafe(64 * 1024);
  #nextCallId = 1;
  readonly #io: ChannelIo | undefined;
  /** Where {@link ChannelIo.readInput} puts how long a read waited. */
  readonly #waited = new Float64Array(1);
  readonly #commandSpin = new SpinPolicy();
  readonly #replySpin = new SpinPolicy();
  /** Frames go onto the frame ring ({@link ChannelIo.attachFrameRing} was called), not to `out`. */
  readonly #ring: boolean;

  /**
   * @param io - reads with a spin before them when an answer is expected soon ({@link SpinPolicy}) and the watchdog's idle switch, and writes; none: Node's `fs`, always sleeping.
   * @param codec - the native codec, tried first for every frame each way (the worker's JavaScript runs jitless); none: @strata/wire's alone.
   * @param ring - `io` has the frame ring attached: every frame goes onto it
   */
  constructor(io?: ChannelIo, codec?: WireCodec, ring = false) {
    this.#io = io;
    this.#ring = ring && io !== undefined;
    this.#codec = codec;
    const fastDecode = codec === undefined ? undefined : (body: Uint8Array) => codec.decodeBody(body, IN_DEPTH, IN_NODES, IN_STRING_BYTES);
    // the monotonic clock, not performance.now(): see ../monotonic.ts
    const options = { limits: FRAME_LIMITS, fastDecode, now: monotonicMs };
    this.#replies = new FrameReader(options);
    this.#commands = new FrameReader(options);
    this.#settlements = new FrameReader(options);
  }

  /**
   * A blocking read of the commands or the replies (their ring, or their pipe `fd`), after a spin
   * as long as `policy` says; the wait is fed back to it. Waiting for a command (`idle`), a worker
   * that did not find it by spinning tells the watchdog it sleeps (no guest code runs until the
   * command comes).
   */
  #read(fd: typeof CHANNEL_FDS.commands | typeof CHANNEL_FDS.replies, buffer: Buffer, policy: SpinPolicy, idle: boolean): number {
    // nothing waits on the parent with a frame of ours held back
    this.flush();
    const io = this.#io;
    if (io === undefined) return readSync(fd, buffer, 0, buffer.length, null);
    const n = this.#ring
      ? io.readRing(fd === CHANNEL_FDS.commands ? COMMANDS_RING : REPLIES_RING, buffer, policy.micros, idle, this.#waited)
      : io.readInput(fd, buffer, policy.micros, idle, this.#waited);
    policy.waited(this.#waited[0]!);
    return n;
  }

  #writeAll(frame: Uint8Array): void {
    if (this.#ring) this.#io!.writeFrames(frame);
    else if (this.#io !== undefined) this.#io.writeAll(CHANNEL_FDS.out, frame);
    else writeAllSync(CHANNEL_FDS.out, frame);
  }

  /** Sends one message. */
  send(message: Message): void {
    mark('encode');
    let frame: Uint8Array | undefined = this.#codec?.encodeFrame(message, OUT_DEPTH, OUT_NODES, OUT_STRING_BYTES, OUT_FRAME_BYTES);
    // the message table, checked after the value as encodeFrame does, so a refusal reads the same
    if (frame !== undefined) validateMessage(message);
    // anything the native codec does not handle: encoded, or refused with the path of what is wrong
    else frame = encodeFrame(message, SEND_LIMITS);
    if (this.#held !== undefined) {
      this.#held.push(frame);
      return;
    }
    mark('write');
    this.#writeAll(frame);
    mark('written');
  }

  /**
   * Writes the frames held back while the messages of one chunk were served (see
   * {@link streamCommands}), in one write: the parent then wakes once for all their answers.
   */
  flush(): void {
    const held = this.#held;
    if (held === undefined) return;
    this.#held = undefined;
    if (held.length === 0) return;
    mark('write');
    this.#writeAll(held.length === 1 ? held[0]! : Buffer.concat(held));
    mark('written');
  }

  /**
   * The next command, blocking while there is none: an idle worker has nothing else to do, and
   * reading synchronously spares every command a trip through Node's stream machinery (which
   * runs interpreted under --jitless). `undefined` when the parent closed the pipe.
   */
  nextCommand(): Message | undefined {
    for (;;) {
      const queued = this.#pendingCommands.shift();
      if (queued !== undefined) return queued;
      const n = this.#read(CHANNEL_FDS.commands, this.#commandBuffer, this.#commandSpin, true);
      mark('read');
      if (n === 0) return undefined;
      this.#pendingCommands.push(...this.#decodeChunk(this.#commands, this.#commandBuffer, n));
      mark('decoded');
    }
  }

  /**
   * From now on, commands arrive as a stream: `onMessage` is called for each, while earlier ones
   * may still be waiting on host calls. A worker of many isolates reads so, because one isolate's
   * command that awaits its host must not hold up the others'. The worker ends when the parent
   * closes the pipe.
   */
  streamCommands(onMessage: (message: Message) => void): void {
    for (const queued of this.#pendingCommands.splice(0)) onMessage(queued);
    this.#streamInput(CHANNEL_FDS.commands, (chunk) => {
      // With the rings, fd 0 carries only the doorbell: what rang is on the commands' ring.
      if (this.#ring) {
        for (let n: number; (n = this.#io!.takeRing(COMMANDS_RING, this.#commandBuffer)) > 0; ) this.#serveChunk(this.#commandBuffer, n, onMessage);
      }
      // the parent closed the pipe (or it broke): the worker's work is over
      if (chunk === undefined) process.exit(0);
      if (!this.#ring) this.#serveChunk(chunk, chunk.length, onMessage);
    });
  }

  /** The messages of a chunk of commands, to `onMessage` (see {@link streamCommands}). */
  #serveChunk(chunk: Buffer, n: number, onMessage: (message: Message) => void): void {
    {
      mark('read');
      const messages = this.#decodeChunk(this.#commands, chunk, n);
      mark('decoded');
      // Several requests of one isolate at once (an open and the first command the parent sent
      // behind it, read together after the worker slept): their answers go out together, once
      // this turn of the event loop has served what it can (setImmediate runs before the loop
      // waits again; a blocking read flushes first). The parent sends an isolate's commands one
      // at a time, so nothing else of that isolate waits behind them; another isolate's never
      // has its answer held.
      if (messages.length > 1 && this.#held === undefined && oneIsolate(messages)) {
        this.#held = [];
        setImmediate(() => this.flush());
      }
      for (const message of messages) onMessage(message);
    }
  }

  /**
   * Calls `onMessage` for each settlement of an async host call; they arrive while a command
   * awaits them. The reader is referenced: while a command awaits a settlement, it is what keeps
   * the event loop (and so the worker) alive. The worker ends when the parent closes the command
   * pipe, not this one.
   */
  listenForSettlements(onMessage: (message: Message) => void): void {
    this.#streamInput(CHANNEL_FDS.settlements, (chunk) => {
      if (chunk === undefined) return;
      for (const message of this.#decodeChunk(this.#settlements, chunk, chunk.length)) onMessage(message);
    });
  }

  /** `fd`'s chunks as they come: the watchdog addon's watch on the event loop, or (without the addon) a Node socket. */
  #streamInput(fd: number, onChunk: (chunk: Buffer | undefined) => void): void {
    if (this.#io !== undefined) return this.#io.streamInput(fd, onChunk);
    const { Socket } = createRequire(import.meta.url)('node:net') as typeof import('node:net');
    const stream = new Socket({ fd, readable: true, writable: false });
    stream.on('data', onChunk);
    stream.on('end', () => onChunk(undefined));
    stream.on('error', () => onChunk(undefined));
  }

  /**
   * Asks the parent to run a host function and blocks until it answers: a `callResult`, or a
   * `callPending` when the host function returned a promise (settled later on the command
   * stream under the same id).
   */
  call(name: string, args: unknown[], isolate?: number): MessageOf<'callResult'> | MessageOf<'callPending'> {
    const id = this.#nextCallId++;
    const message: MessageOf<'call'> = { type: 'call', id, name, args: args as never, sync: true };
    if (isolate !== undefined) message.isolate = isolate;
    this.send(message);
    for (;;) {
      const message = this.#readReply();
      if ((message.type === 'callResult' || message.type === 'callPending') && message.id === id) return message;
      throw new Error(`protocol: expected the answer to call ${id}, got ${message.type}`);
    }
  }

  /** Asks the parent for a module's canonical specifier and source. */
  requestModule(specifier: string, referrer: string, isolate?: number): MessageOf<'callResult'> {
    const id = this.#nextCallId++;
    const request: MessageOf<'moduleRequest'> = { type: 'moduleRequest', id, specifier, referrer };
    if (isolate !== undefined) request.isolate = isolate;
    this.send(request);
    const reply = this.#readReply();
    if (reply.type !== 'callResult' || reply.id !== id) throw new Error(`protocol: expected the answer to module request ${id}`);
    return reply;
  }

  /**
   * The messages in the first `n` bytes of `buffer`: when they are whole frames
   * and `reader` holds no part of one, the native codec decodes them all in one call; otherwise
   * (or when it hands them back) `reader` does.
   */
  #decodeChunk(reader: FrameReader, buffer: Buffer, n: number): Message[] {
    if (this.#codec !== undefined && reader.bufferedBytes === 0 && reader.error === undefined) {
      const values = this.#codec.decodeFrames(buffer, n, IN_FRAME_BYTES, IN_DEPTH, IN_NODES, IN_STRING_BYTES);
      if (values !== undefined) {
        const messages: Message[] = [];
        for (const value of values) messages.push(validateMessage(value));
        return messages;
      }
    }
    return reader.readMessages(buffer.subarray(0, n));
  }

  #readReply(): Message {
    for (;;) {
      const n = this.#read(CHANNEL_FDS.replies, this.#replyBuffer, this.#replySpin, false);
      mark('read reply');
      if (n === 0) throw new Error('the parent closed the reply pipe');
      const messages = this.#decodeChunk(this.#replies, this.#replyBuffer, n);
      mark('decoded reply');
      if (messages.length > 1) throw new Error('protocol: the parent sent more than one reply');
      if (messages.length === 1) return messages[0]!;
    }
  }
}
