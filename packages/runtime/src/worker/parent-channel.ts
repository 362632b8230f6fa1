import { readSync, writeSync } from 'node:fs';
import { FrameReader, encodeFrame, type Message, type MessageOf } from '@strata/wire';

/** The file descriptors of the worker's channel to its parent. */
export const CHANNEL_FDS = Object.freeze({
  /** parent → worker: commands, and settlements of async host calls. */
  commands: 0,
  /** worker → parent: every frame the worker sends. */
  out: 1,
  /** parent → worker: the answer to a call the guest is blocked on; only ever read synchronously. */
  replies: 3,
});

// The parent is trusted by the worker, but its frames still go through the same decoder.
const FRAME_LIMITS = { maxFrameBytes: 64 * 1024 * 1024, maxStringBytes: 64 * 1024 * 1024 };

/**
 * The worker's end of the channel. Writes are synchronous (a blocking pipe, so a parent that
 * stops reading stalls the worker, which the parent notices). Commands arrive on a stream;
 * answers to calls the guest is blocked on arrive on a separate pipe read synchronously, so the
 * two readers never share a file descriptor.
 */
export class ParentChannel {
  readonly #replies = new FrameReader({ limits: FRAME_LIMITS });
  readonly #commands = new FrameReader({ limits: FRAME_LIMITS });
  readonly #replyBuffer = Buffer.allocUnsafe(64 * 1024);
  #nextCallId = 1;

  /** Sends one message. */
  send(message: Message): void {
    const frame = encodeFrame(message, FRAME_LIMITS);
    let offset = 0;
    while (offset < frame.length) offset += writeSync(CHANNEL_FDS.out, frame, offset, frame.length - offset);
  }

  /** Calls `onMessage` for each command from the parent, in order; `onEnd` when the parent closes the pipe. */
  listen(onMessage: (message: Message) => void, onEnd: () => void): void {
    process.stdin.on('data', (chunk: Buffer) => {
      for (const message of this.#commands.readMessages(chunk)) onMessage(message);
    });
    process.stdin.on('end', onEnd);
    process.stdin.on('error', onEnd);
  }

  /**
   * Asks the parent to run a host function and blocks until it answers: a `callResult`, or a
   * `callPending` when the host function returned a promise (settled later on the command
   * stream under the same id).
   */
  call(name: string, args: unknown[]): MessageOf<'callResult'> | MessageOf<'callPending'> {
    const id = this.#nextCallId++;
    this.send({ type: 'call', id, name, args: args as never, sync: true });
    for (;;) {
      const message = this.#readReply();
      if ((message.type === 'callResult' || message.type === 'callPending') && message.id === id) return message;
      throw new Error(`protocol: expected the answer to call ${id}, got ${message.type}`);
    }
  }

  /** Asks the parent for a module's canonical specifier and source. */
  requestModule(specifier: string, referrer: string): MessageOf<'callResult'> {
    const id = this.#nextCallId++;
    this.send({ type: 'moduleRequest', id, specifier, referrer });
    const message = this.#readReply();
    if (message.type !== 'callResult' || message.id !== id) throw new Error(`protocol: expected the answer to module request ${id}`);
    return message;
  }

  #readReply(): Message {
    for (;;) {
      const n = readSync(CHANNEL_FDS.replies, this.#replyBuffer, 0, this.#replyBuffer.length, null);
      if (n === 0) throw new Error('the parent closed the reply pipe');
      const messages = this.#replies.readMessages(this.#replyBuffer.subarray(0, n));
      if (messages.length > 1) throw new Error('protocol: the parent sent more than one reply');
      if (messages.length === 1) return messages[0]!;
    }
  }
}
