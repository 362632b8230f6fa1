import type { AnyClass, GlobalObject, Internal } from './internal.js';

/**
 * Installs `CompressionStream` and `DecompressionStream` (Compression Streams
 * standard) for the formats `'gzip'`, `'deflate'` (the zlib wrapper) and
 * `'deflate-raw'`, each a `TransformStream` from `internal.streamClasses()`
 * behind the `readable` / `writable` pair. The classes are defined at once;
 * the first construction loads the streams bundle and the bundled fflate.
 *
 * Compression is fflate's `Gzip`, `Zlib` and `Deflate` (level 6, as zlib's
 * default; the gzip header has no modification time, as browsers write it).
 * Decompression is fflate's raw `Inflate` for all three formats, with the
 * gzip and zlib wrappers read here: header checks (a zlib preset dictionary
 * is refused, a gzip FHCRC checked), the CRC-32 and length or Adler-32
 * trailer checked, and the end of the deflate data found from `Inflate`'s
 * state (`s.f`, `s.l`, `s.p`, `p`: fflate 0.8.3's, tested in
 * test/compression.test.ts). Corrupt input, input that ends early and any
 * byte after the end (a second gzip member too, as the standard has one) error
 * the stream with a TypeError; the output decoded before that is enqueued.
 *
 * Self-contained: its source text is embedded in `WEB_POLYFILLS`.
 *
 * @internal
 */
export function installCompression(g: GlobalObject, internal: Internal): void {
  const { freeze } = Object;
  const U8 = Uint8Array;
  const min = Math.min;

  const chunkBytes = (chunk: unknown, what: string): Uint8Array => {
    const bytes = internal.bufferSourceBytes(chunk);
    if (bytes === undefined) {
      throw new TypeError(`Failed to execute 'transform' on '${what}': chunk is not an ArrayBuffer or ArrayBufferView.`);
    }
    return bytes;
  };
  const concat = (a: Uint8Array, b: Uint8Array): Uint8Array => {
    const out = new U8(a.length + b.length);
    out.set(a);
    out.set(b, a.length);
    return out;
  };

  const formats = ['gzip', 'deflate', 'deflate-raw'];
  const formatOf = (format: unknown, what: string): string => {
    const name = `${format as string}`;
    if (!formats.includes(name)) {
      throw new TypeError(`Failed to construct '${what}': Unsupported compression format: '${name}' (gzip, deflate, deflate-raw).`);
    }
    return name;
  };

  // fflate runs on the first construction, against the built-ins of bootstrap time. It probes
  // `TextDecoder` when it loads (for string helpers these streams never call): the one of
  // bootstrap time, as without one the probe throws, which costs about 0.8 ms. `Date` (a gzip
  // header's time, never asked for: mtime is 0) is left undefined.
  const intrinsics = freeze({
    __proto__: null,
    globalThis: freeze({ __proto__: null }),
    Object,
    Math,
    Error,
    Uint8Array,
    Uint16Array,
    Int32Array,
    TextDecoder: g.TextDecoder,
    Date: undefined,
  });
  type Fflate = ReturnType<Internal['runCompressionBundle']>;
  let fflate: Fflate | undefined;
  const library = (): Fflate => (fflate ??= internal.runCompressionBundle(intrinsics));

  let crcTable: Int32Array | undefined;
  const crc32 = (crc: number, bytes: Uint8Array): number => {
    if (crcTable === undefined) {
      crcTable = new Int32Array(256);
      for (let n = 0; n < 256; n++) {
        let c = n;
        for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
        crcTable[n] = c;
      }
    }
    const table = crcTable;
    let c = ~crc;
    for (let i = 0; i < bytes.length; i++) c = table[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
    return ~c >>> 0;
  };
  const adler32 = (adler: number, bytes: Uint8Array): number => {
    let a = adler & 0xffff;
    let b = adler >>> 16;
    const len = bytes.length;
    for (let i = 0; i < len; ) {
      for (const end = min(i + 5552, len); i < end; i++) {
        a += bytes[i]!;
        b += a;
      }
      a %= 65521;
      b %= 65521;
    }
    return ((b << 16) | a) >>> 0;
  };
  const u32le = (p: Uint8Array, i: number): number => (p[i]! | (p[i + 1]! << 8) | (p[i + 2]! << 16) | (p[i + 3]! << 24)) >>> 0;
  const u32be = (p: Uint8Array, i: number): number => ((p[i]! << 24) | (p[i + 1]! << 16) | (p[i + 2]! << 8) | p[i + 3]!) >>> 0;

  interface Controller {
    enqueue(chunk: unknown): void;
  }
  interface Pair {
    readable: object;
    writable: object;
  }
  // fflate's Inflate, with the parts of its state that tell where the deflate data ended.
  interface Inflater {
    push(chunk: Uint8Array, final: boolean): void;
    /** Input not consumed yet; after the end, from the byte holding the last bit. */
    p: Uint8Array;
    /** f: the last block was the final one; l: a block is under way; p: bit offset into `p`. */
    s: { f?: number; l?: unknown; p?: number };
  }

  const HEADER = 0;
  const BODY = 1;
  const TRAILER = 2;
  const DONE = 3;

  // One decompression: the wrapper's header, the deflate data, the wrapper's trailer.
  const decompressor = (format: string, Inflate: AnyClass) => {
    const gzip = format === 'gzip';
    const zlib = format === 'deflate';
    const trailerSize = gzip ? 8 : zlib ? 4 : 0;
    let state = gzip || zlib ? HEADER : BODY;
    // The header or trailer bytes seen so far.
    let pending: Uint8Array = new U8(0);
    let check = gzip ? 0 : 1;
    let length = 0;
    let emit: (bytes: Uint8Array) => void = () => {};
    const inflater = new Inflate((data: Uint8Array) => {
      if (data.length === 0) return;
      check = gzip ? crc32(check, data) : zlib ? adler32(check, data) : 0;
      length = (length + data.length) % 4294967296;
      emit(data);
    }) as Inflater;
    const fail = (message: string): never => {
      state = DONE;
      throw new TypeError(`Failed to decompress '${format}' data: ${message}.`);
    };

    // The length of the header at the start of `pending`, or 0 while it is incomplete.
    const header = (): number => {
      const p = pending;
      const n = p.length;
      if (zlib) {
        if (n < 2) return 0;
        const cmf = p[0]!;
        const flg = p[1]!;
        if ((cmf & 0x0f) !== 8 || cmf >> 4 > 7 || ((cmf << 8) | flg) % 31 !== 0) fail('incorrect header');
        if (flg & 0x20) fail('a preset dictionary is needed');
        return 2;
      }
      if (n < 10) return 0;
      if (p[0] !== 0x1f || p[1] !== 0x8b) fail('incorrect header');
      if (p[2] !== 8) fail('unknown compression method');
      const flags = p[3]!;
      if (flags & 0xe0) fail('unknown header flags set');
      let i = 10;
      if (flags & 0x04) {
        // FEXTRA
        if (n < i + 2) return 0;
        i += 2 + (p[i]! | (p[i + 1]! << 8));
        if (n < i) return 0;
      }
      // FNAME, then FCOMMENT: zero-terminated.
      for (const bit of [0x08, 0x10]) {
        if (flags & bit) {
          while (i < n && p[i] !== 0) i++;
          if (i >= n) return 0;
          i++;
        }
      }
      if (flags & 0x02) {
        // FHCRC: the low 16 bits of the header's CRC-32.
        if (n < i + 2) return 0;
        if ((p[i]! | (p[i + 1]! << 8)) !== (crc32(0, p.subarray(0, i)) & 0xffff)) fail('header checksum mismatch');
        i += 2;
      }
      return i;
    };

    const trailer = (bytes: Uint8Array): void => {
      if (bytes.length > 0) pending = concat(pending, bytes);
      if (pending.length < trailerSize) return;
      if (gzip) {
        if (u32le(pending, 0) !== check) fail('incorrect data check');
        if (u32le(pending, 4) !== length) fail('incorrect length check');
      } else if (zlib && u32be(pending, 0) !== check) fail('incorrect data check');
      if (pending.length > trailerSize) fail('data after the end of the compressed stream');
      state = DONE;
      pending = new U8(0);
    };

    const body = (bytes: Uint8Array): void => {
      try {
        inflater.push(bytes, false);
      } catch (e) {
        fail(e instanceof Error ? e.message : `${e as string}`);
      }
      const s = inflater.s;
      if (s.f && !s.l) {
        // The final block ended in the byte at inflater.p[0] when bits of it were used.
        state = TRAILER;
        pending = new U8(0);
        trailer(inflater.p.subarray(s.p! & 7 ? 1 : 0));
      }
    };

    return {
      push(bytes: Uint8Array, enqueue: (bytes: Uint8Array) => void): void {
        emit = enqueue;
        if (state === HEADER) {
          pending = concat(pending, bytes);
          const size = header();
          if (size === 0) return;
          state = BODY;
          bytes = pending.subarray(size);
          pending = new U8(0);
        }
        if (state === BODY) body(bytes);
        else if (state === TRAILER) trailer(bytes);
        else if (bytes.length > 0) fail('data after the end of the compressed stream');
      },
      finish(): void {
        if (state !== DONE) fail('unexpected end of data');
      },
    };
  };

  class CompressionStream {
    #transform: Pair;

    constructor(format: unknown) {
      const name = formatOf(format, 'CompressionStream');
      const { TransformStream } = internal.streamClasses();
      const lib = library();
      let controller: Controller | undefined;
      // No modification time in a gzip header (mtime 0), as browsers write it.
      const compressor = new (name === 'gzip' ? lib.Gzip : name === 'deflate' ? lib.Zlib : lib.Deflate)({ mtime: 0 }, (data: Uint8Array) => {
        if (data.length > 0) controller!.enqueue(data);
      }) as { push(chunk: Uint8Array, final: boolean): void };
      this.#transform = new TransformStream({
        transform(chunk: unknown, c: Controller) {
          const bytes = chunkBytes(chunk, 'CompressionStream');
          controller = c;
          compressor.push(bytes, false);
        },
        flush(c: Controller) {
          controller = c;
          compressor.push(new U8(0), true);
        },
      });
    }

    static {
      // structuredClone refuses them, as platform objects that are not serializable.
      internal.platformBrands.push((v) => #transform in v);
    }

    static #check(stream: unknown): CompressionStream {
      if (stream === null || typeof stream !== 'object' || !(#transform in stream)) throw new TypeError('Illegal invocation');
      return stream as CompressionStream;
    }

    get readable(): object {
      return CompressionStream.#check(this).#transform.readable;
    }
    get writable(): object {
      return CompressionStream.#check(this).#transform.writable;
    }
  }

  class DecompressionStream {
    #transform: Pair;

    constructor(format: unknown) {
      const name = formatOf(format, 'DecompressionStream');
      const { TransformStream } = internal.streamClasses();
      const d = decompressor(name, library().Inflate);
      this.#transform = new TransformStream({
        transform(chunk: unknown, c: Controller) {
          // fflate keeps no reference to the chunk once push returns, and neither does the header.
          d.push(chunkBytes(chunk, 'DecompressionStream'), (bytes) => c.enqueue(bytes));
        },
        flush() {
          d.finish();
        },
      });
    }

    static {
      internal.platformBrands.push((v) => #transform in v);
    }

    static #check(stream: unknown): DecompressionStream {
      if (stream === null || typeof stream !== 'object' || !(#transform in stream)) throw new TypeError('Illegal invocation');
      return stream as DecompressionStream;
    }

    get readable(): object {
      return DecompressionStream.#check(this).#transform.readable;
    }
    get writable(): object {
      return DecompressionStream.#check(this).#transform.writable;
    }
  }

  internal.webidl(CompressionStream, 'CompressionStream');
  internal.webidl(DecompressionStream, 'DecompressionStream');
  internal.define('CompressionStream', CompressionStream);
  internal.define('DecompressionStream', DecompressionStream);
}
