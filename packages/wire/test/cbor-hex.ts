/**
 * Test helpers for writing CBOR and frames by hand.
 *
 * @module
 */

/** Bytes from hex text; spaces and `|` are ignored, so heads can be set apart. */
export function hex(text: string): Uint8Array {
  const clean = text.replace(/[\s|]/g, '');
  if (clean.length % 2 !== 0 || /[^0-9a-f]/i.test(clean)) throw new Error(`bad hex: ${text}`);
  return Uint8Array.from(Buffer.from(clean, 'hex'));
}

/** Hex text of bytes. */
export function toHex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

/** A frame: 4-byte big-endian length, then `body`. */
export function frameOf(body: Uint8Array): Uint8Array {
  const out = new Uint8Array(4 + body.length);
  new DataView(out.buffer).setUint32(0, body.length);
  out.set(body, 4);
  return out;
}

/** Concatenate byte arrays. */
export function concat(...parts: Uint8Array[]): Uint8Array {
  return Uint8Array.from(Buffer.concat(parts));
}

/** The shortest CBOR head for `major` and argument `n` (n below 2^32). */
export function head(major: number, n: number): Uint8Array {
  const m = major << 5;
  if (n < 24) return Uint8Array.of(m | n);
  if (n < 0x100) return Uint8Array.of(m | 24, n);
  if (n < 0x10000) return Uint8Array.of(m | 25, n >>> 8, n & 255);
  return Uint8Array.of(m | 26, n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255);
}
