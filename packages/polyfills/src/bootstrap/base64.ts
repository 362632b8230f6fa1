import type { GlobalObject, Internal } from './internal.js';

/**
 * Installs `btoa` and `atob`, with HTML's forgiving-base64 decoding and
 * `InvalidCharacterError` DOMExceptions.
 *
 * Self-contained: its source text is embedded in `WEB_POLYFILLS`.
 *
 * @internal
 */
export function installBase64(_g: GlobalObject, internal: Internal): void {
  const fromCharCode = String.fromCharCode;
  const apply = Reflect.apply;
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  const chars = alphabet.split('');
  const values = new Int8Array(128).fill(-1);
  for (let i = 0; i < 64; i++) values[alphabet.charCodeAt(i)] = i;

  function base64Encode(bytes: Uint8Array): string {
    const parts: string[] = [];
    const len = bytes.length;
    const whole = len - (len % 3);
    // Build in slices so huge inputs do not create one giant array.
    const STEP = 3 * 4096;
    for (let start = 0; start < whole; start += STEP) {
      const end = Math.min(start + STEP, whole);
      const out: string[] = [];
      for (let i = start; i < end; i += 3) {
        const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
        out.push(chars[n >> 18]! + chars[(n >> 12) & 63]! + chars[(n >> 6) & 63]! + chars[n & 63]!);
      }
      parts.push(out.join(''));
    }
    if (len - whole === 1) {
      const n = bytes[whole]!;
      parts.push(`${chars[n >> 2]}${chars[(n & 3) << 4]}==`);
    } else if (len - whole === 2) {
      const n = (bytes[whole]! << 8) | bytes[whole + 1]!;
      parts.push(`${chars[n >> 10]}${chars[(n >> 4) & 63]}${chars[(n & 15) << 2]}=`);
    }
    return parts.join('');
  }

  function btoa(data: unknown): string {
    if (arguments.length === 0) {
      throw new TypeError("Failed to execute 'btoa': 1 argument required, but only 0 present.");
    }
    const s = `${data as string}`;
    const bytes = new Uint8Array(s.length);
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c > 0xff) {
        throw new internal.DOMException(
          "Failed to execute 'btoa': The string to be encoded contains characters outside of the Latin1 range.",
          'InvalidCharacterError',
        );
      }
      bytes[i] = c;
    }
    return base64Encode(bytes);
  }

  function atob(data: unknown): string {
    if (arguments.length === 0) {
      throw new TypeError("Failed to execute 'atob': 1 argument required, but only 0 present.");
    }
    const fail = (): never => {
      throw new internal.DOMException("Failed to execute 'atob': The string to be decoded is not correctly encoded.", 'InvalidCharacterError');
    };
    // HTML forgiving-base64 decode.
    let s = `${data as string}`.replace(/[\t\n\f\r ]+/g, '');
    if (s.length % 4 === 0) {
      if (s.endsWith('==')) s = s.slice(0, -2);
      else if (s.endsWith('=')) s = s.slice(0, -1);
    }
    if (s.length % 4 === 1) fail();
    const len = s.length;
    const out = new Uint16Array(Math.floor((len * 3) / 4));
    let n = 0;
    let buffer = 0;
    let bits = 0;
    for (let i = 0; i < len; i++) {
      const c = s.charCodeAt(i);
      const v = c < 128 ? values[c]! : -1;
      if (v < 0) fail();
      buffer = ((buffer << 6) | v) & 0xffffff;
      bits += 6;
      if (bits >= 8) {
        bits -= 8;
        out[n++] = (buffer >> bits) & 0xff;
      }
    }
    // Leftover bits (4 or 2) are discarded, as the standard says.
    const parts: string[] = [];
    for (let i = 0; i < n; i += 8192) {
      parts.push(apply(fromCharCode, null, out.subarray(i, Math.min(i + 8192, n)) as unknown as number[]));
    }
    return parts.join('');
  }

  internal.base64Encode = base64Encode;
  internal.define('btoa', btoa);
  internal.define('atob', atob);
}
