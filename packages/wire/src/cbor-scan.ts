/**
 * A structural pass over raw CBOR bytes from an untrusted peer, run before any value is
 * built. It touches no allocator in proportion to the input: it only walks heads and
 * skips payloads, so a frame that declares 2^32 elements in ten bytes fails here, in
 * constant memory.
 *
 * @module
 */

import type { Limits } from './limits.js';
import { ProtocolError } from './protocol-error.js';

/** CBOR tags the codec emits. Everything else, tag 27 error/regexp revival included, is refused. */
export const CBOR_TAGS = Object.freeze({
  /** Epoch-based date/time (seconds). */
  date: 1,
  /** Unsigned bignum. */
  posBignum: 2,
  /** Negative bignum. */
  negBignum: 3,
  /** Set (array of distinct elements). */
  set: 258,
  /** Explicit Map (keys of any kind). */
  map: 259,
});

// What a tag demands of the item that follows it.
const ANY = 0;
const DATE_NUMBER = 1;
const BIGNUM_BYTES = 2;
const SET_ARRAY = 3;
const MAP_MAP = 4;

// Item-count stacks, grown on demand and reused: the scan is synchronous and calls out to
// nothing, so one set per process is enough. Float64 holds counts up to 2 * (2^32 - 1).
let remaining = new Float64Array(65);
let textKeys = new Uint8Array(65);

/**
 * Check that `bytes` is exactly one CBOR data item in the subset the encoder emits and
 * within `limits`, without building anything.
 *
 * Enforced, in one linear pass and without recursion:
 * - major types 0–7 only in the forms the encoder writes: shortest-form heads, no
 *   indefinite lengths, no break codes, no reserved additional information;
 * - simple values false/true/null/undefined and float64 only (no float16/32, no other simple values);
 * - tags 1 (followed by a 4-byte unsigned integer or float64), 2/3 (followed by a bignum
 *   byte string of at least 8 bytes with no leading zero), 258 (array) and 259 (map) only;
 *   no nested tags;
 * - keys of untagged maps are text strings;
 * - every declared length fits in the bytes that remain;
 * - container depth, item count, string length and bignum length within `limits`;
 * - no trailing bytes.
 *
 * UTF-8 validity of text strings is checked when they are decoded.
 *
 * @param bytes - one frame body.
 * @param limits - resolved limits.
 * @returns the number of data items (tags not counted).
 * @throws ProtocolError for anything else.
 */
export function scanCbor(bytes: Uint8Array, limits: Limits): number {
  const end = bytes.length;
  const { maxDepth, maxNodes, maxStringBytes, maxBigIntBytes } = limits;
  if (end === 0) throw new ProtocolError('empty CBOR body');
  if (remaining.length <= maxDepth) {
    remaining = new Float64Array(maxDepth + 1);
    textKeys = new Uint8Array(maxDepth + 1);
  }
  const left = remaining;
  const keyed = textKeys;
  let pos = 0;
  let depth = 0;
  let nodes = 0;
  let expect = ANY;
  for (;;) {
    if (pos >= end) throw truncated(pos);
    const at = pos;
    const initial = bytes[pos++]!;
    const major = initial >>> 5;
    const info = initial & 0x1f;
    // keys sit at even counts (2n, 2n - 2, …); ToInt32 keeps the parity of any count
    const isKey = depth > 0 && keyed[depth] === 1 && (left[depth]! & 1) === 0;

    if (major === 7) {
      if (initial === 0xfb) {
        if (end - pos < 8) throw truncated(at);
        pos += 8;
      } else if (initial < 0xf4 || initial > 0xf7) {
        throw new ProtocolError(`CBOR simple value or float form 0x${initial.toString(16)} at byte ${at} is not allowed`);
      }
      if (expect !== ANY && !(expect === DATE_NUMBER && initial === 0xfb)) throw tagMismatch(at);
      if (isKey) throw nonTextKey(at);
    } else {
      // the head's argument: a count, a length, a tag number or an integer value
      let arg: number;
      if (info < 24) {
        arg = info;
      } else if (info === 24) {
        if (end - pos < 1) throw truncated(at);
        arg = bytes[pos]!;
        pos += 1;
        if (arg < 24) throw nonMinimal(at);
      } else if (info === 25) {
        if (end - pos < 2) throw truncated(at);
        arg = (bytes[pos]! << 8) | bytes[pos + 1]!;
        pos += 2;
        if (arg < 0x100) throw nonMinimal(at);
      } else if (info === 26) {
        if (end - pos < 4) throw truncated(at);
        arg = ((bytes[pos]! << 24) >>> 0) + ((bytes[pos + 1]! << 16) | (bytes[pos + 2]! << 8) | bytes[pos + 3]!);
        pos += 4;
        // cbor-x writes whole-second dates as a 4-byte integer whatever their size
        if (arg < 0x10000 && expect !== DATE_NUMBER) throw nonMinimal(at);
      } else if (info === 27 && major <= 1) {
        // 64-bit integers are how bigints travel; numbers never use this form
        if (end - pos < 8) throw truncated(at);
        pos += 8;
        arg = 0;
        if (expect !== ANY) throw tagMismatch(at);
      } else {
        throw new ProtocolError(
          info === 31
            ? `indefinite-length item at byte ${at} is not allowed`
            : `CBOR additional information ${info} at byte ${at} is not allowed for major type ${major}`,
        );
      }

      if (major === 6) {
        if (expect !== ANY) throw new ProtocolError(`nested tag at byte ${at} is not allowed`);
        if (isKey) throw nonTextKey(at);
        if (arg === CBOR_TAGS.date) expect = DATE_NUMBER;
        else if (arg === CBOR_TAGS.posBignum || arg === CBOR_TAGS.negBignum) expect = BIGNUM_BYTES;
        else if (arg === CBOR_TAGS.set) expect = SET_ARRAY;
        else if (arg === CBOR_TAGS.map) expect = MAP_MAP;
        else throw new ProtocolError(`CBOR tag ${arg} at byte ${at} is not allowed`);
        // a tag is not an item of its own: the tagged item fills the slot
        continue;
      }

      if (isKey && major !== 3) throw nonTextKey(at);
      if (major <= 1) {
        if (expect !== ANY && !(expect === DATE_NUMBER && major === 0 && info === 26)) throw tagMismatch(at);
      } else if (major <= 3) {
        if (arg > maxStringBytes) {
          throw new ProtocolError(`string of ${arg} bytes at byte ${at} exceeds maxStringBytes ${maxStringBytes}`);
        }
        if (arg > end - pos) throw truncated(at);
        if (expect === BIGNUM_BYTES) {
          if (major !== 2) throw tagMismatch(at);
          // cbor-x writes bignums only past 64 bits (8 bytes for exactly -2^64), never with a leading zero
          if (arg < 8 || bytes[pos] === 0) throw new ProtocolError(`non-canonical bignum at byte ${at}`);
          if (arg > maxBigIntBytes) {
            throw new ProtocolError(`bignum of ${arg} bytes at byte ${at} exceeds maxBigIntBytes ${maxBigIntBytes}`);
          }
        } else if (expect !== ANY) {
          throw tagMismatch(at);
        }
        pos += arg;
      } else {
        // major 4 (array) or 5 (map)
        if (major === 4 ? expect !== ANY && expect !== SET_ARRAY : expect !== ANY && expect !== MAP_MAP) {
          throw tagMismatch(at);
        }
        if (depth + 1 > maxDepth) throw new ProtocolError(`nesting deeper than maxDepth ${maxDepth} at byte ${at}`);
        const items = major === 4 ? arg : arg * 2;
        // every item takes at least one byte, so a count beyond the rest of the body is a lie
        if (items > end - pos) throw truncated(at);
        if (++nodes > maxNodes) throw tooManyNodes(maxNodes);
        if (depth > 0) left[depth]!--;
        if (items > 0) {
          depth++;
          left[depth] = items;
          keyed[depth] = major === 5 && expect !== MAP_MAP ? 1 : 0;
          expect = ANY;
          continue;
        }
        expect = ANY;
        while (depth > 0 && left[depth] === 0) depth--;
        if (depth === 0) break;
        continue;
      }
    }
    // a complete scalar: count it, fill its slot, close finished containers
    if (++nodes > maxNodes) throw tooManyNodes(maxNodes);
    expect = ANY;
    if (depth === 0) break;
    left[depth]!--;
    while (depth > 0 && left[depth] === 0) depth--;
    if (depth === 0) break;
  }
  if (pos !== end) throw new ProtocolError(`${end - pos} trailing bytes after the CBOR item`);
  return nodes;
}

function truncated(at: number): ProtocolError {
  return new ProtocolError(`CBOR item at byte ${at} runs past the end of the frame`);
}

function nonMinimal(at: number): ProtocolError {
  return new ProtocolError(`CBOR head at byte ${at} is not in shortest form`);
}

function nonTextKey(at: number): ProtocolError {
  return new ProtocolError(`object key at byte ${at} is not a text string`);
}

function tagMismatch(at: number): ProtocolError {
  return new ProtocolError(`tagged item at byte ${at} has the wrong kind for its tag`);
}

function tooManyNodes(maxNodes: number): ProtocolError {
  return new ProtocolError(`more than maxNodes ${maxNodes} items`);
}
