import type { GlobalObject, Internal } from './internal.js';

/**
 * Installs `Blob` (File API): parts of strings, ArrayBuffers, views and
 * Blobs; `type`, `size`, `slice()`, `text()`, `arrayBuffer()`, `bytes()`.
 * There is no `stream()`: there is no ReadableStream to return.
 *
 * Self-contained: its source text is embedded in `WEB_POLYFILLS`.
 *
 * @internal
 */
export function installBlob(_g: GlobalObject, internal: Internal): void {
  // A type is kept only if it is printable ASCII, and then lowercased.
  const normalizeType = (type: string): string => (/[^\u0020-\u007e]/.test(type) ? '' : type.toLowerCase());

  // WebIDL [Clamp] long long: clamp, then round half to even.
  const clampLongLong = (value: unknown): number => {
    let x = +(value as number);
    if (x !== x) return 0;
    x = Math.min(Math.max(x, -Number.MAX_SAFE_INTEGER), Number.MAX_SAFE_INTEGER);
    const f = Math.floor(x);
    const d = x - f;
    return d < 0.5 ? f : d > 0.5 ? f + 1 : f % 2 === 0 ? f : f + 1;
  };

  let adopt: Uint8Array | null = null;

  class Blob {
    // Blobs are immutable, so slices share their parent's bytes.
    #bytes: Uint8Array;
    #type: string;

    constructor(blobParts: unknown = undefined, options: unknown = undefined) {
      if (adopt !== null) {
        this.#bytes = adopt;
        adopt = null;
        this.#type = `${(options as { type: string }).type}`;
        return;
      }
      if (blobParts !== undefined && (blobParts === null || (typeof blobParts !== 'object' && typeof blobParts !== 'function'))) {
        throw new TypeError("Failed to construct 'Blob': The provided value cannot be converted to a sequence.");
      }
      if (options !== undefined && options !== null && typeof options !== 'object') {
        throw new TypeError("Failed to construct 'Blob': The provided value is not of type 'BlobPropertyBag'.");
      }
      const o = (options ?? {}) as { type?: unknown; endings?: unknown };
      const endings = o.endings === undefined ? 'transparent' : `${o.endings as string}`;
      if (endings !== 'transparent' && endings !== 'native') {
        throw new TypeError(
          `Failed to construct 'Blob': Failed to read the 'endings' property from 'BlobPropertyBag': The provided value '${endings}' is not a valid enum value of type EndingType.`,
        );
      }
      const type = o.type === undefined ? '' : `${o.type as string}`;
      const chunks: Uint8Array[] = [];
      let size = 0;
      if (blobParts !== undefined) {
        if (typeof (blobParts as { [Symbol.iterator]?: unknown })[Symbol.iterator] !== 'function') {
          throw new TypeError("Failed to construct 'Blob': The object must have a callable @@iterator property.");
        }
        for (const part of blobParts as Iterable<unknown>) {
          let bytes = internal.bufferSourceBytes(part, true);
          if (bytes !== undefined) {
            // Copied: the caller may change its buffer afterwards.
            bytes = bytes.slice();
          } else if (part !== null && typeof part === 'object' && #bytes in part) {
            bytes = (part as Blob).#bytes;
          } else {
            let text = `${part as string}`;
            // "native" line endings: this platform's are "\n".
            if (endings === 'native') text = text.replace(/\r\n?/g, '\n');
            bytes = internal.utf8Encode(text);
          }
          chunks.push(bytes);
          size += bytes.length;
        }
      }
      let all: Uint8Array;
      if (chunks.length === 1) all = chunks[0]!;
      else {
        all = new Uint8Array(size);
        let offset = 0;
        for (const c of chunks) {
          all.set(c, offset);
          offset += c.length;
        }
      }
      this.#bytes = all;
      this.#type = normalizeType(type);
    }

    static #check(blob: unknown): Blob {
      if (blob === null || typeof blob !== 'object' || !(#bytes in blob)) throw new TypeError('Illegal invocation');
      return blob as Blob;
    }

    static {
      internal.isBlob = (value) => value !== null && typeof value === 'object' && #bytes in value;
      internal.blobBytes = (blob) => Blob.#check(blob).#bytes;
    }

    get size(): number {
      return Blob.#check(this).#bytes.length;
    }

    get type(): string {
      return Blob.#check(this).#type;
    }

    slice(start: unknown = undefined, end: unknown = undefined, contentType: unknown = undefined): Blob {
      const bytes = Blob.#check(this).#bytes;
      const size = bytes.length;
      const relative = (value: unknown, fallback: number): number => {
        if (value === undefined) return fallback;
        const n = clampLongLong(value);
        return n < 0 ? Math.max(size + n, 0) : Math.min(n, size);
      };
      const from = relative(start, 0);
      const to = relative(end, size);
      const type = contentType === undefined ? '' : normalizeType(`${contentType as string}`);
      adopt = bytes.subarray(from, Math.max(to - from, 0) + from);
      return new Blob(undefined, { type });
    }

    text(): Promise<string> {
      try {
        return Promise.resolve(internal.decode(Blob.#check(this).#bytes, 'utf-8'));
      } catch (e) {
        return Promise.reject(e);
      }
    }

    arrayBuffer(): Promise<ArrayBuffer> {
      try {
        return Promise.resolve(Blob.#check(this).#bytes.slice().buffer);
      } catch (e) {
        return Promise.reject(e);
      }
    }

    bytes(): Promise<Uint8Array> {
      try {
        return Promise.resolve(Blob.#check(this).#bytes.slice());
      } catch (e) {
        return Promise.reject(e);
      }
    }
  }

  internal.Blob = Blob;
  internal.webidl(Blob, 'Blob');
  internal.define('Blob', Blob);
}
