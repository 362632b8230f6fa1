/**
 * The strict decoder: untrusted frame body in, a value from the closed set out.
 *
 * cbor-x is not used on this side: its decoder renames a `"__proto__"` key (so it
 * cannot round-trip), keeps its tag handlers in process-wide state that any other
 * importer can extend, and may parse strings in a native addon. After
 * {@link scanCbor} has proven the structure, building the value from the small subset
 * we accept is a short recursive descent that calls no extension and evaluates nothing.
 *
 * @module
 */

import { Buffer } from 'node:buffer';
import { types } from 'node:util';
import { scanCbor, CBOR_TAGS } from './cbor-scan.js';
import { resolveLimits, type Limits } from './limits.js';
import { ProtocolError } from './protocol-error.js';
import type { WireObject, WireValue } from './wire-value.js';

const { isUint8Array } = types;
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

// Dates must stay within ECMAScript's time range (±8.64e15 ms).
const MAX_TIME_MS = 8.64e15;

// Recently seen object keys, by a hash of their bytes: saves building and interning the
// same short strings again for every object of a list.
const KEY_CACHE_SIZE = 4096;
const MAX_CACHED_KEY = 24;
const keyCache: (string | undefined)[] = new Array<string | undefined>(KEY_CACHE_SIZE).fill(undefined);

const fromCharCode = String.fromCharCode;

// Eight bytes and one view over them for floats and 64-bit integers, so a decode does
// not have to create a DataView over its input.
const scratch = new Uint8Array(8);
const scratchView = new DataView(scratch.buffer);

/**
 * Decode `length` bytes at `start` if they are all ASCII, eight at a time; `undefined`
 * if any is not, for the caller to hand to the validating UTF-8 decoder. Cheaper than a
 * TextDecoder call for the short strings that dominate messages.
 */
function asciiString(src: Uint8Array, start: number, length: number): string | undefined {
  const end = start + length;
  let out = '';
  let i = start;
  for (; end - i >= 8; i += 8) {
    const a = src[i]!,
      b = src[i + 1]!,
      c = src[i + 2]!,
      d = src[i + 3]!;
    const e = src[i + 4]!,
      f = src[i + 5]!,
      g = src[i + 6]!,
      h = src[i + 7]!;
    if ((a | b | c | d | e | f | g | h) >= 0x80) return undefined;
    out += fromCharCode(a, b, c, d, e, f, g, h);
  }
  for (; i < end; i++) {
    const a = src[i]!;
    if (a >= 0x80) return undefined;
    out += fromCharCode(a);
  }
  return out;
}

/**
 * Decode one CBOR data item from an untrusted peer into a {@link WireValue}.
 *
 * The bytes are first scanned ({@link scanCbor}) for structure, depth, item count and
 * sizes; only then is anything allocated. Objects are built with `Object.prototype`
 * and a `"__proto__"` key is defined as an own data property, never as a prototype.
 * Duplicate object keys, duplicate primitive Map keys or Set elements, malformed UTF-8
 * and out-of-range dates are refused. Byte strings are copied, so the result never
 * aliases `bytes`.
 *
 * @param bytes - one frame body (no length header).
 * @param limits - limits to enforce; defaults to {@link DEFAULT_LIMITS}.
 * @throws ProtocolError for any input outside the accepted subset; nothing else.
 */
export function decodeValue(bytes: Uint8Array, limits?: Partial<Limits>): WireValue {
  const resolved = resolveLimits(limits);
  try {
    // isUint8Array looks at the object itself: no prototype walk, no Proxy trap
    if (!isUint8Array(bytes)) throw new ProtocolError('frame body must be a Uint8Array');
    if (bytes.length > resolved.maxFrameBytes) {
      throw new ProtocolError(`frame body of ${bytes.length} bytes exceeds maxFrameBytes ${resolved.maxFrameBytes}`);
    }
    scanCbor(bytes, resolved);
    return new ValueBuilder(bytes).build();
  } catch (error) {
    if (error instanceof ProtocolError) throw error;
    // a bug or an engine limit (say, out of memory) must still surface as a refusal
    throw new ProtocolError(`internal decoder error: ${error instanceof Error ? error.name : typeof error}`, {
      cause: error,
    });
  }
}

/** Builds the value from bytes that {@link scanCbor} has already accepted. */
class ValueBuilder {
  private readonly src: Uint8Array;

  private pos = 0;

  constructor(bytes: Uint8Array) {
    // a plain Uint8Array view, so slice() copies even when the caller passed a Buffer
    this.src = Object.getPrototypeOf(bytes) === Uint8Array.prototype ? bytes : new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  build(): WireValue {
    return this.item();
  }

  /** Read a head's argument; the scan guaranteed the form is valid and in bounds. */
  private arg(info: number): number {
    const { src } = this;
    if (info < 24) return info;
    const p = this.pos;
    if (info === 24) {
      this.pos = p + 1;
      return src[p]!;
    }
    if (info === 25) {
      this.pos = p + 2;
      return (src[p]! << 8) | src[p + 1]!;
    }
    this.pos = p + 4;
    return ((src[p]! << 24) >>> 0) + ((src[p + 1]! << 16) | (src[p + 2]! << 8) | src[p + 3]!);
  }

  private item(): WireValue {
    const initial = this.src[this.pos++]!;
    const major = initial >>> 5;
    const info = initial & 0x1f;
    switch (major) {
      case 0:
        if (info === 27) return this.uint64();
        return this.arg(info);
      case 1:
        if (info === 27) return -1n - this.uint64();
        return -1 - this.arg(info);
      case 2:
        return this.bytes(this.arg(info));
      case 3:
        return this.text(this.arg(info));
      case 4:
        return this.array(this.arg(info));
      case 5:
        return this.object(this.arg(info));
      case 6:
        return this.tagged(this.arg(info));
      default:
        return this.simple(initial);
    }
  }

  private uint64(): bigint {
    this.toScratch();
    return scratchView.getBigUint64(0);
  }

  /** Move the next 8 bytes into the scratch buffer, where a shared DataView reads them. */
  private toScratch(): void {
    const { src, pos } = this;
    for (let i = 0; i < 8; i++) scratch[i] = src[pos + i]!;
    this.pos = pos + 8;
  }

  private simple(initial: number): WireValue {
    switch (initial) {
      case 0xf4:
        return false;
      case 0xf5:
        return true;
      case 0xf6:
        return null;
      case 0xf7:
        return undefined;
      default: {
        // 0xfb, the only other form the scan lets through
        this.toScratch();
        return scratchView.getFloat64(0);
      }
    }
  }

  private bytes(length: number): Uint8Array {
    const start = this.pos;
    this.pos = start + length;
    return this.src.slice(start, start + length);
  }

  private text(length: number): string {
    const start = this.pos;
    this.pos = start + length;
    if (length < 64) {
      const ascii = asciiString(this.src, start, length);
      if (ascii !== undefined) return ascii;
    }
    try {
      return utf8.decode(this.src.subarray(start, start + length));
    } catch {
      throw new ProtocolError(`malformed UTF-8 in text string at byte ${start}`);
    }
  }

  /** An object key: short ASCII keys repeat, so they come from a small cache. */
  private key(): string {
    const length = this.arg(this.src[this.pos++]! & 0x1f);
    if (length > MAX_CACHED_KEY) return this.text(length);
    const { src } = this;
    const start = this.pos;
    const end = start + length;
    let hash = length;
    for (let i = start; i < end; i++) hash = (Math.imul(hash, 31) + src[i]!) | 0;
    const slot = (hash ^ (hash >>> 12)) & (KEY_CACHE_SIZE - 1);
    const cached = keyCache[slot];
    if (cached !== undefined && cached.length === length) {
      let same = true;
      for (let i = 0; i < length; i++) {
        if (cached.charCodeAt(i) !== src[start + i]) {
          same = false;
          break;
        }
      }
      if (same) {
        this.pos = end;
        return cached;
      }
    }
    const key = this.text(length);
    if (key.length === length) keyCache[slot] = key; // ASCII only: one char per byte
    return key;
  }

  private array(count: number): WireValue[] {
    // sized up front: growing by push costs far more on long arrays, and the scan has
    // proven that `count` items follow (so `count` is at most the body length)
    const out = new Array<WireValue>(count);
    const { src } = this;
    for (let i = 0; i < count; i++) {
      // small non-negative integers are one byte; skip the dispatch for them
      const initial = src[this.pos]!;
      if (initial < 24) {
        this.pos++;
        out[i] = initial;
      } else {
        out[i] = this.item();
      }
    }
    return out;
  }

  private object(count: number): WireObject {
    const out: WireObject = {};
    for (let i = 0; i < count; i++) {
      const at = this.pos;
      const key = this.key(); // the scan only lets text keys through
      const value = this.item();
      if (Object.hasOwn(out, key)) throw new ProtocolError(`duplicate object key at byte ${at}`);
      if (key === '__proto__') {
        // assignment would call the inherited __proto__ setter and swap the prototype
        Object.defineProperty(out, key, { value, writable: true, enumerable: true, configurable: true });
      } else {
        out[key] = value;
      }
    }
    return out;
  }

  private tagged(tag: number): WireValue {
    const at = this.pos;
    switch (tag) {
      case CBOR_TAGS.date:
        return this.date(this.item() as number, at);
      case CBOR_TAGS.posBignum:
        return this.bignum();
      case CBOR_TAGS.negBignum:
        return -1n - this.bignum();
      case CBOR_TAGS.set:
        return this.set(this.arg(this.src[this.pos++]! & 0x1f), at);
      default:
        // CBOR_TAGS.map, the only other tag the scan lets through
        return this.map(this.arg(this.src[this.pos++]! & 0x1f), at);
    }
  }

  private bignum(): bigint {
    const length = this.arg(this.src[this.pos++]! & 0x1f);
    const start = this.pos;
    this.pos = start + length;
    // hex parsing is linear; shifting byte by byte would be quadratic in the length
    return BigInt(`0x${Buffer.from(this.src.buffer, this.src.byteOffset + start, length).toString('hex')}`);
  }

  private date(seconds: number, at: number): Date {
    if (Number.isNaN(seconds)) return new Date(NaN);
    // the encoder sends ms / 1000; find the integer millisecond count that produced it
    let ms = Math.round(seconds * 1000);
    if (ms / 1000 !== seconds) {
      if ((ms - 1) / 1000 === seconds) ms -= 1;
      else if ((ms + 1) / 1000 === seconds) ms += 1;
      else throw new ProtocolError(`date at byte ${at} is not a whole number of milliseconds`);
    }
    if (!(Math.abs(ms) <= MAX_TIME_MS)) throw new ProtocolError(`date at byte ${at} is out of range`);
    return new Date(ms);
  }

  private set(count: number, at: number): Set<WireValue> {
    const out = new Set<WireValue>();
    for (let i = 0; i < count; i++) {
      const value = this.item();
      if (out.has(value)) throw new ProtocolError(`duplicate Set element in Set at byte ${at}`);
      out.add(value);
    }
    return out;
  }

  private map(count: number, at: number): Map<WireValue, WireValue> {
    const out = new Map<WireValue, WireValue>();
    for (let i = 0; i < count; i++) {
      const key = this.item();
      const value = this.item();
      if (out.has(key)) throw new ProtocolError(`duplicate Map key in Map at byte ${at}`);
      out.set(key, value);
    }
    return out;
  }
}
