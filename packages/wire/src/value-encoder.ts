/**
 * The encoder: a checked {@link WireValue} in, CBOR bytes out, written by cbor-x.
 *
 * @module
 */

import { Buffer } from 'node:buffer';
import { Encoder, type Options } from 'cbor-x/encode';
import { checkEncodable } from './encodable-check.js';
import { resolveLimits, type Limits } from './limits.js';
import { ProtocolError } from './protocol-error.js';

// cbor-x options pinned to the subset scanCbor accepts: plain maps with preferred
// (shortest) headers, tag 259 for Map, no records, packing, bundles, shared references,
// Uint8Array tags, float32 or toJSON.
const OPTIONS = {
  useRecords: false,
  mapsAsObjects: true,
  useTag259ForMaps: true,
  variableMapSize: true,
  tagUint8Array: false,
  pack: false,
  structuredClone: false,
  bundleStrings: false,
  useToJSON: false,
  largeBigIntToFloat: false,
  useTimestamp32: false,
  useFloat32: 0,
  sequential: false,
} as Options;

const encoder = new Encoder(OPTIONS);
// cbor-x writes -0 as the integer 0; a value holding -0 is written with floats only
const floatEncoder = new Encoder({ ...OPTIONS, alwaysUseFloat: true });

/**
 * Encode a value as one CBOR data item.
 *
 * The value is checked first ({@link checkEncodable}): anything the strict decoder
 * would refuse is refused here, with the path of the offending part.
 *
 * @param value - a {@link WireValue}.
 * @param limits - limits to enforce; defaults to {@link DEFAULT_LIMITS}.
 * @param root - how paths in refusals start; `'$'` by default.
 * @returns fresh bytes (a `Buffer`, not shared with cbor-x's scratch buffer).
 * @throws ProtocolError if the value is outside the closed set or the limits.
 */
export function encodeValue(value: unknown, limits?: Partial<Limits>, root = '$'): Uint8Array {
  const resolved = resolveLimits(limits);
  return encodeChecked(value, resolved, root, 0);
}

/**
 * Check and encode `value`, returning a new array with `offset` spare bytes in front
 * (where a frame header goes), so the body is copied out of cbor-x exactly once.
 * `validate`, if given, runs after the value-kind check (so it reads only data
 * properties) and before encoding.
 *
 * @internal
 */
export function encodeChecked(value: unknown, limits: Limits, root: string, offset: number, validate?: (value: unknown) => void): Uint8Array {
  const info = checkEncodable(value, limits, root);
  validate?.(value);
  let scratch: Uint8Array;
  try {
    scratch = (info.negativeZero ? floatEncoder : encoder).encode(value);
  } catch (error) {
    // the check should make this unreachable; keep the one-error promise regardless
    throw new ProtocolError(`cannot encode ${root}: cbor-x failed (${error instanceof Error ? error.message : 'unknown'})`, {
      cause: error,
    });
  }
  if (scratch.length > limits.maxFrameBytes) {
    throw new ProtocolError(`cannot encode ${root}: ${scratch.length} bytes exceeds maxFrameBytes ${limits.maxFrameBytes}`);
  }
  // Buffer's pool makes small frames several times cheaper than a fresh ArrayBuffer;
  // every byte is overwritten, so "unsafe" exposes nothing
  const out = Buffer.allocUnsafe(offset + scratch.length);
  // the header bytes (a frame's length, written by the caller): a loop, not Buffer#fill's checks
  for (let i = 0; i < offset; i++) out[i] = 0;
  out.set(scratch, offset);
  return out;
}
