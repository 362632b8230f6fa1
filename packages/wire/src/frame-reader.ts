/**
 * Splits a byte stream from an untrusted peer into frame bodies, with bounded memory
 * and a way to notice a frame that is being dripped in.
 *
 * @module
 */

import { types } from 'node:util';
import { FRAME_HEADER_BYTES, decodeMessage } from './frame.js';
import { resolveLimits, type Limits } from './limits.js';
import { validateMessage, type Message } from './messages.js';
import { ProtocolError } from './protocol-error.js';

/** Options for {@link FrameReader}. */
export interface FrameReaderOptions {
  /** Limits for frame size (and, in {@link FrameReader.readMessages}, decoding); defaults to {@link DEFAULT_LIMITS}. */
  limits?: Partial<Limits>;
  /** Monotonic clock in milliseconds used for stall detection; defaults to `performance.now()`. */
  now?: () => number;
  /**
   * A faster decoder for frames from a trusted peer (Strata's worker passes its native one):
   * a body's value, or `undefined` to hand the body to the strict decoder, which then decodes
   * it or refuses it. Whatever it returns is still checked against the message table.
   */
  fastDecode?: (body: Uint8Array) => unknown;
}

// First allocation for a body that spans chunks; later growth doubles, up to the body length.
const INITIAL_BODY_BYTES = 64 * 1024;

/**
 * Turns chunks of a byte stream into complete frame bodies.
 *
 * - A declared length of 0 or above `maxFrameBytes` is refused as soon as the 4 header
 *   bytes are in, before any of the body is buffered.
 * - Only the one incomplete frame is ever buffered, in a buffer of at most 64 KiB or
 *   twice what has arrived of it, whichever is larger, and never more than its declared
 *   length.
 * - {@link FrameReader.partialSince} and {@link FrameReader.isStalled} tell a supervisor
 *   that a frame has been incomplete for too long, so a worker that sends a frame one
 *   byte a minute can be killed.
 * - After any error the reader is failed: the stream cannot be resynchronised, and every
 *   later {@link FrameReader.push} throws the same {@link ProtocolError}.
 */
export class FrameReader {
  private readonly limits: Limits;
  private readonly now: () => number;
  private readonly fastDecode: ((body: Uint8Array) => unknown) | undefined;
  private readonly header = new Uint8Array(FRAME_HEADER_BYTES);
  /** Header bytes held while the header is incomplete. */
  private headerFill = 0;
  /** Declared length of the body being assembled, or -1 while the header is incomplete. */
  private bodyLength = -1;
  private body: Uint8Array | undefined;
  private bodyFill = 0;
  private since: number | undefined;
  private failure: ProtocolError | undefined;

  /** @param options - limits and clock. */
  constructor(options: FrameReaderOptions = {}) {
    this.limits = resolveLimits(options.limits);
    this.now = options.now ?? (() => performance.now());
    this.fastDecode = options.fastDecode;
  }

  /**
   * Clock time (per the `now` option) when the current incomplete frame's first byte
   * arrived, or `undefined` when no partial frame is buffered.
   */
  get partialSince(): number | undefined {
    return this.since;
  }

  /** Bytes of the incomplete frame (header included) received so far. */
  get bufferedBytes(): number {
    return this.bodyLength < 0 ? this.headerFill : FRAME_HEADER_BYTES + this.bodyFill;
  }

  /** The error that failed this reader, if any. */
  get error(): ProtocolError | undefined {
    return this.failure;
  }

  /**
   * Whether a frame has been incomplete for at least `stallMs` milliseconds.
   *
   * @param stallMs - how long a frame may take to arrive.
   * @param now - current clock time; defaults to the reader's clock.
   */
  isStalled(stallMs: number, now: number = this.now()): boolean {
    return this.since !== undefined && now - this.since >= stallMs;
  }

  /**
   * Feed the next chunk of the stream.
   *
   * @param chunk - bytes as they arrived; the reader does not keep a reference to it.
   * @returns the bodies of the frames this chunk completed, in order. A body that lay
   *   whole inside `chunk` is a view into it: decode it before reusing `chunk`'s memory.
   * @throws ProtocolError for a bad declared length, and forever after any error.
   */
  push(chunk: Uint8Array): Uint8Array[] {
    if (this.failure !== undefined) throw this.failure;
    if (!types.isUint8Array(chunk)) return this.fail('chunk must be a Uint8Array');
    const bodies: Uint8Array[] = [];
    const end = chunk.length;
    let pos = 0;
    if (end > 0 && this.since === undefined) this.since = this.now();
    while (pos < end) {
      if (this.bodyLength < 0) {
        if (this.headerFill === 0 && end - pos >= FRAME_HEADER_BYTES) {
          // fast path: a whole header inside the chunk
          this.bodyLength = this.checkLength(((chunk[pos]! << 24) >>> 0) + ((chunk[pos + 1]! << 16) | (chunk[pos + 2]! << 8) | chunk[pos + 3]!));
          pos += FRAME_HEADER_BYTES;
        } else {
          const take = Math.min(FRAME_HEADER_BYTES - this.headerFill, end - pos);
          this.header.set(chunk.subarray(pos, pos + take), this.headerFill);
          this.headerFill += take;
          pos += take;
          if (this.headerFill < FRAME_HEADER_BYTES) break;
          this.bodyLength = this.checkLength(new DataView(this.header.buffer).getUint32(0));
        }
        if (end - pos >= this.bodyLength) {
          // fast path: the whole body is inside the chunk, no copy
          bodies.push(chunk.subarray(pos, pos + this.bodyLength));
          pos += this.bodyLength;
          this.frameDone(pos < end);
          continue;
        }
      }
      const take = Math.min(this.bodyLength - this.bodyFill, end - pos);
      this.append(chunk.subarray(pos, pos + take));
      pos += take;
      if (this.bodyFill === this.bodyLength) {
        bodies.push(this.body!);
        this.frameDone(pos < end);
      }
    }
    return bodies;
  }

  /**
   * {@link push} and then {@link decodeMessage} each completed body.
   *
   * @returns the decoded messages, in order.
   * @throws ProtocolError as {@link push} does, or for the first body that does not
   *   decode; the reader is then failed, and the messages decoded before it in this
   *   chunk are lost with it (a supervisor ends the peer on any protocol error).
   */
  readMessages(chunk: Uint8Array): Message[] {
    const bodies = this.push(chunk);
    const messages: Message[] = [];
    for (const body of bodies) {
      try {
        const fast = this.fastDecode?.(body);
        messages.push(fast === undefined ? decodeMessage(body, this.limits) : validateMessage(fast));
      } catch (error) {
        this.failure = error as ProtocolError;
        throw error;
      }
    }
    return messages;
  }

  /**
   * Tell the reader the stream has ended.
   *
   * @throws ProtocolError if it ended inside a frame.
   */
  end(): void {
    if (this.failure !== undefined) throw this.failure;
    if (this.since !== undefined) this.fail(`stream ended inside a frame (${this.bufferedBytes} bytes buffered)`);
  }

  private checkLength(length: number): number {
    if (length === 0) return this.fail('empty frame');
    if (length > this.limits.maxFrameBytes) {
      return this.fail(`declared frame length ${length} exceeds maxFrameBytes ${this.limits.maxFrameBytes}`);
    }
    return length;
  }

  private append(bytes: Uint8Array): void {
    const needed = this.bodyFill + bytes.length;
    if (this.body === undefined || this.body.length < needed) {
      // grow geometrically so a dripped frame costs linear copying, capped at the declared size
      const size = Math.min(this.bodyLength, Math.max(INITIAL_BODY_BYTES, needed, (this.body?.length ?? 0) * 2));
      const grown = new Uint8Array(size);
      if (this.body !== undefined) grown.set(this.body.subarray(0, this.bodyFill));
      this.body = grown;
    }
    this.body.set(bytes, this.bodyFill);
    this.bodyFill = needed;
  }

  private frameDone(moreInChunk: boolean): void {
    this.bodyLength = -1;
    this.body = undefined;
    this.bodyFill = 0;
    this.headerFill = 0;
    // the next frame, if its bytes have started, started now
    this.since = moreInChunk ? this.now() : undefined;
  }

  private fail(reason: string): never {
    this.failure = new ProtocolError(reason);
    this.body = undefined;
    throw this.failure;
  }
}
