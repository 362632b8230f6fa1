import type { GlobalObject, Internal } from './internal.js';

/**
 * Installs `TextEncoder` and `TextDecoder` following the WHATWG Encoding
 * standard. The decoder knows UTF-8, UTF-16LE, UTF-16BE and windows-1252
 * (which the standard also uses for "latin1", "ascii" and "iso-8859-1"),
 * each with every label the standard lists; `fatal`, `ignoreBOM` and
 * streaming (`{ stream: true }`) behave as specified.
 *
 * Self-contained: its source text is embedded in `WEB_POLYFILLS`.
 *
 * @internal
 */
export function installEncoding(_g: GlobalObject, internal: Internal): void {
  const fromCharCode = String.fromCharCode;
  const apply = Reflect.apply;

  const labels: Record<string, string[]> = {
    'utf-8': ['unicode-1-1-utf-8', 'unicode11utf8', 'unicode20utf8', 'utf-8', 'utf8', 'x-unicode20utf8'],
    'utf-16le': ['csunicode', 'iso-10646-ucs-2', 'ucs-2', 'unicode', 'unicodefeff', 'utf-16', 'utf-16le'],
    'utf-16be': ['unicodefffe', 'utf-16be'],
    'windows-1252': [
      'ansi_x3.4-1968',
      'ascii',
      'cp1252',
      'cp819',
      'csisolatin1',
      'ibm819',
      'iso-8859-1',
      'iso-ir-100',
      'iso8859-1',
      'iso88591',
      'iso_8859-1',
      'iso_8859-1:1987',
      'l1',
      'latin1',
      'us-ascii',
      'windows-1252',
      'x-cp1252',
    ],
  };
  const encodings = new Map<string, string>();
  for (const name of Object.keys(labels)) for (const label of labels[name]!) encodings.set(label, name);

  // windows-1252 bytes 0x80-0x9F; every other byte maps to itself.
  const cp1252 = [
    0x20ac, 0x81, 0x201a, 0x192, 0x201e, 0x2026, 0x2020, 0x2021, 0x2c6, 0x2030, 0x160, 0x2039, 0x152, 0x8d, 0x17d, 0x8f, 0x90, 0x2018, 0x2019, 0x201c, 0x201d,
    0x2022, 0x2013, 0x2014, 0x2dc, 0x2122, 0x161, 0x203a, 0x153, 0x9d, 0x17e, 0x178,
  ];

  // "get an encoding": strip ASCII whitespace, lowercase, look up.
  const encodingFor = (label: string): string | undefined => encodings.get(label.replace(/^[\t\n\f\r ]+|[\t\n\f\r ]+$/g, '').toLowerCase());

  /** Collects UTF-16 code units and turns them into a string in chunks. */
  class Sink {
    units: Uint16Array;
    n = 0;
    parts: string[] = [];
    // Sized to the input, so decoding many short strings stays cheap.
    constructor(capacity: number) {
      this.units = new Uint16Array(capacity < 8192 ? capacity : 8192);
    }
    push(unit: number): void {
      if (this.n === this.units.length) this.flush();
      this.units[this.n++] = unit;
    }
    pushCodePoint(cp: number): void {
      if (cp > 0xffff) {
        cp -= 0x10000;
        this.push(0xd800 + (cp >> 10));
        this.push(0xdc00 + (cp & 0x3ff));
      } else {
        this.push(cp);
      }
    }
    flush(): void {
      // apply() on a typed array: one call per 8 KiB instead of per character.
      this.parts.push(apply(fromCharCode, null, this.units.subarray(0, this.n) as unknown as number[]));
      this.n = 0;
    }
    finish(): string {
      this.flush();
      return this.parts.length === 1 ? this.parts[0]! : this.parts.join('');
    }
  }

  interface Decoder {
    decode(bytes: Uint8Array, flush: boolean, sink: Sink, error: () => void): void;
  }

  // The UTF-8 decoder of the Encoding standard, state kept across chunks.
  function utf8Decoder(): Decoder {
    let needed = 0;
    let seen = 0;
    let cp = 0;
    let lower = 0x80;
    let upper = 0xbf;
    return {
      decode(bytes, flush, sink, error) {
        const len = bytes.length;
        let i = 0;
        while (i < len) {
          const b = bytes[i]!;
          if (needed === 0) {
            i++;
            if (b < 0x80) sink.push(b);
            else if (b >= 0xc2 && b <= 0xdf) {
              needed = 1;
              cp = b & 0x1f;
            } else if (b >= 0xe0 && b <= 0xef) {
              if (b === 0xe0) lower = 0xa0;
              if (b === 0xed) upper = 0x9f;
              needed = 2;
              cp = b & 0xf;
            } else if (b >= 0xf0 && b <= 0xf4) {
              if (b === 0xf0) lower = 0x90;
              if (b === 0xf4) upper = 0x8f;
              needed = 3;
              cp = b & 0x7;
            } else error();
            continue;
          }
          if (b < lower || b > upper) {
            // The byte ends the broken sequence and is read again (not consumed).
            needed = seen = cp = 0;
            lower = 0x80;
            upper = 0xbf;
            error();
            continue;
          }
          i++;
          lower = 0x80;
          upper = 0xbf;
          cp = (cp << 6) | (b & 0x3f);
          if (++seen === needed) {
            sink.pushCodePoint(cp);
            needed = seen = cp = 0;
          }
        }
        if (flush && needed !== 0) {
          needed = seen = cp = 0;
          lower = 0x80;
          upper = 0xbf;
          error();
        }
      },
    };
  }

  function utf16Decoder(bigEndian: boolean): Decoder {
    let leadByte = -1;
    let leadSurrogate = -1;
    return {
      decode(bytes, flush, sink, error) {
        for (let i = 0; i < bytes.length; i++) {
          const b = bytes[i]!;
          if (leadByte === -1) {
            leadByte = b;
            continue;
          }
          const unit = bigEndian ? (leadByte << 8) | b : leadByte | (b << 8);
          leadByte = -1;
          if (leadSurrogate !== -1) {
            const lead = leadSurrogate;
            leadSurrogate = -1;
            if (unit >= 0xdc00 && unit <= 0xdfff) {
              sink.push(lead);
              sink.push(unit);
              continue;
            }
            // An unpaired lead: report it, then read this unit afresh.
            error();
          }
          if (unit >= 0xd800 && unit <= 0xdbff) leadSurrogate = unit;
          else if (unit >= 0xdc00 && unit <= 0xdfff) error();
          else sink.push(unit);
        }
        if (flush && (leadByte !== -1 || leadSurrogate !== -1)) {
          leadByte = leadSurrogate = -1;
          error();
        }
      },
    };
  }

  const singleByteDecoder: Decoder = {
    decode(bytes, _flush, sink) {
      for (let i = 0; i < bytes.length; i++) {
        const b = bytes[i]!;
        sink.push(b >= 0x80 && b <= 0x9f ? cp1252[b - 0x80]! : b);
      }
    },
  };

  const newDecoder = (encoding: string): Decoder =>
    encoding === 'utf-8' ? utf8Decoder() : encoding === 'windows-1252' ? singleByteDecoder : utf16Decoder(encoding === 'utf-16be');

  // BufferSource, [AllowShared]: any ArrayBuffer, SharedArrayBuffer or view.
  const toBytes = (input: unknown, what: string): Uint8Array => {
    const bytes = internal.bufferSourceBytes(input, true);
    if (bytes !== undefined) return bytes;
    throw new TypeError(`Failed to execute '${what}': The provided value is not of type '(ArrayBuffer or ArrayBufferView)'.`);
  };

  // UTF-8 encode; lone surrogates become U+FFFD, as USVString conversion does.
  function utf8Encode(s: string): Uint8Array {
    const len = s.length;
    let size = 0;
    for (let i = 0; i < len; i++) {
      const c = s.charCodeAt(i);
      if (c < 0x80) size += 1;
      else if (c < 0x800) size += 2;
      else if (c >= 0xd800 && c <= 0xdbff && i + 1 < len && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
        size += 4;
        i++;
      } else size += 3;
    }
    const out = new Uint8Array(size);
    let n = 0;
    for (let i = 0; i < len; i++) {
      let c = s.charCodeAt(i);
      if (c < 0x80) {
        out[n++] = c;
        continue;
      }
      if (c < 0x800) {
        out[n++] = 0xc0 | (c >> 6);
        out[n++] = 0x80 | (c & 0x3f);
        continue;
      }
      if (c >= 0xd800 && c <= 0xdfff) {
        const next = i + 1 < len ? s.charCodeAt(i + 1) : 0;
        if (c <= 0xdbff && (next & 0xfc00) === 0xdc00) {
          c = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
          i++;
          out[n++] = 0xf0 | (c >> 18);
          out[n++] = 0x80 | ((c >> 12) & 0x3f);
          out[n++] = 0x80 | ((c >> 6) & 0x3f);
          out[n++] = 0x80 | (c & 0x3f);
          continue;
        }
        c = 0xfffd;
      }
      out[n++] = 0xe0 | (c >> 12);
      out[n++] = 0x80 | ((c >> 6) & 0x3f);
      out[n++] = 0x80 | (c & 0x3f);
    }
    return out;
  }

  class TextEncoder {
    get encoding(): string {
      return 'utf-8';
    }

    encode(input: unknown = ''): Uint8Array {
      return utf8Encode(`${input as string}`);
    }

    encodeInto(source: unknown, destination: unknown): { read: number; written: number } {
      if (arguments.length < 2) {
        throw new TypeError(`Failed to execute 'encodeInto' on 'TextEncoder': 2 arguments required, but only ${arguments.length} present.`);
      }
      const s = `${source as string}`;
      if (!(destination instanceof Uint8Array)) {
        throw new TypeError("Failed to execute 'encodeInto' on 'TextEncoder': parameter 2 is not of type 'Uint8Array'.");
      }
      const cap = destination.length;
      let read = 0;
      let written = 0;
      while (read < s.length) {
        let c = s.charCodeAt(read);
        let units = 1;
        if (c >= 0xd800 && c <= 0xdfff) {
          const next = read + 1 < s.length ? s.charCodeAt(read + 1) : 0;
          if (c <= 0xdbff && (next & 0xfc00) === 0xdc00) {
            c = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
            units = 2;
          } else c = 0xfffd;
        }
        const size = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
        // Never write part of a character.
        if (written + size > cap) break;
        if (size === 1) destination[written] = c;
        else if (size === 2) {
          destination[written] = 0xc0 | (c >> 6);
          destination[written + 1] = 0x80 | (c & 0x3f);
        } else if (size === 3) {
          destination[written] = 0xe0 | (c >> 12);
          destination[written + 1] = 0x80 | ((c >> 6) & 0x3f);
          destination[written + 2] = 0x80 | (c & 0x3f);
        } else {
          destination[written] = 0xf0 | (c >> 18);
          destination[written + 1] = 0x80 | ((c >> 12) & 0x3f);
          destination[written + 2] = 0x80 | ((c >> 6) & 0x3f);
          destination[written + 3] = 0x80 | (c & 0x3f);
        }
        written += size;
        read += units;
      }
      return { read, written };
    }
  }

  class TextDecoder {
    #encoding: string;
    #fatal: boolean;
    #ignoreBOM: boolean;
    #decoder: Decoder | null = null;
    #bomSeen = false;
    #doNotFlush = false;

    constructor(label: unknown = 'utf-8', options: unknown = undefined) {
      const labelString = `${label as string}`;
      const encoding = encodingFor(labelString);
      if (encoding === undefined) {
        throw new RangeError(`Failed to construct 'TextDecoder': The encoding label provided ('${labelString}') is invalid.`);
      }
      if (options !== undefined && options !== null && typeof options !== 'object') {
        throw new TypeError("Failed to construct 'TextDecoder': The provided value is not of type 'TextDecoderOptions'.");
      }
      const o = (options ?? {}) as { fatal?: unknown; ignoreBOM?: unknown };
      this.#encoding = encoding;
      this.#fatal = !!o.fatal;
      this.#ignoreBOM = !!o.ignoreBOM;
    }

    get encoding(): string {
      return this.#encoding;
    }
    get fatal(): boolean {
      return this.#fatal;
    }
    get ignoreBOM(): boolean {
      return this.#ignoreBOM;
    }

    decode(input: unknown = undefined, options: unknown = undefined): string {
      const bytes = input === undefined ? new Uint8Array(0) : toBytes(input, "decode' on 'TextDecoder");
      if (options !== undefined && options !== null && typeof options !== 'object') {
        throw new TypeError("Failed to execute 'decode' on 'TextDecoder': The provided value is not of type 'TextDecodeOptions'.");
      }
      const stream = !!(options as { stream?: unknown } | null | undefined)?.stream;
      if (!this.#doNotFlush || this.#decoder === null) {
        this.#decoder = newDecoder(this.#encoding);
        this.#bomSeen = false;
      }
      this.#doNotFlush = stream;
      // A byte yields at most one code unit, plus one U+FFFD when flushing.
      const sink = new Sink(bytes.length + 1);
      const fatal = this.#fatal;
      const encoding = this.#encoding;
      const error = (): void => {
        if (fatal) {
          // The stream is unusable after a fatal error: start afresh next time.
          this.#doNotFlush = false;
          throw new TypeError(`Failed to execute 'decode' on 'TextDecoder': The encoded data was not valid for encoding ${encoding}`);
        }
        sink.push(0xfffd);
      };
      this.#decoder.decode(bytes, !stream, sink, error);
      let text = sink.finish();
      // Drop a leading BOM once per stream, unless asked to keep it.
      if (!this.#bomSeen && text.length > 0 && encoding !== 'windows-1252') {
        this.#bomSeen = true;
        if (!this.#ignoreBOM && text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      }
      return text;
    }
  }

  internal.utf8Encode = utf8Encode;
  internal.encodingFor = encodingFor;
  internal.decode = (bytes, label) => new TextDecoder(label).decode(bytes);
  internal.platformBrands.push((v) => v instanceof TextEncoder || v instanceof TextDecoder);

  internal.webidl(TextEncoder, 'TextEncoder');
  internal.webidl(TextDecoder, 'TextDecoder');
  internal.define('TextEncoder', TextEncoder);
  internal.define('TextDecoder', TextDecoder);
}
