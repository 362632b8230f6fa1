/**
 * One frame: a 4-byte big-endian unsigned body length, then the CBOR body.
 *
 * @module
 */

import { resolveLimits, type Limits } from './limits.js';
import { validateMessage, type Message } from './messages.js';
import { encodeChecked } from './value-encoder.js';
import { decodeValue } from './value-decoder.js';

/** Bytes in the length header in front of every frame body. */
export const FRAME_HEADER_BYTES = 4;

/**
 * Encode a protocol message as a complete frame, header included.
 *
 * The message is held to the same rules the receiving decoder applies: the value
 * kinds and limits ({@link encodeValue}) and the message table ({@link validateMessage}).
 *
 * @param message - the message to send.
 * @param limits - limits to enforce; defaults to {@link DEFAULT_LIMITS}.
 * @returns a fresh frame (a `Buffer`) ready to write to the stream.
 * @throws ProtocolError if the receiver would refuse the message.
 */
export function encodeFrame(message: Message, limits?: Partial<Limits>): Uint8Array {
  const frame = encodeChecked(message, resolveLimits(limits), '$', FRAME_HEADER_BYTES, validateMessage);
  const length = frame.length - FRAME_HEADER_BYTES;
  frame[0] = length >>> 24;
  frame[1] = (length >>> 16) & 0xff;
  frame[2] = (length >>> 8) & 0xff;
  frame[3] = length & 0xff;
  return frame;
}

/**
 * Decode one frame body (as returned by {@link FrameReader.push}) into a validated
 * protocol message.
 *
 * @param body - the CBOR body, without the length header.
 * @param limits - limits to enforce; defaults to {@link DEFAULT_LIMITS}.
 * @throws ProtocolError for a malformed body or anything but a valid message.
 */
export function decodeMessage(body: Uint8Array, limits?: Partial<Limits>): Message {
  return validateMessage(decodeValue(body, limits));
}
