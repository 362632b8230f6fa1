import type { GlobalObject, Internal } from './internal.js';

/**
 * Installs `crypto` (a `Crypto`) with `getRandomValues`, `randomUUID` and
 * `subtle` (a `SubtleCrypto` with only `digest`, by the bundled
 * @noble/hashes, loaded on the first digest).
 *
 * The bootstrap cannot make entropy. A host that has some defines the
 * global function `__strataEntropy(byteLength): Uint8Array` before the
 * bootstrap runs; it is captured here and deleted from the global. Without
 * it, `getRandomValues` and `randomUUID` throw `NotSupportedError`: never a
 * Math.random fallback, which would look random and be predictable. Both
 * are own writable properties of `crypto`, so a later layer (the frozen
 * clock) can replace them with seeded versions.
 *
 * Self-contained: its source text is embedded in `WEB_POLYFILLS`.
 *
 * @internal
 */
export function installCrypto(g: GlobalObject, internal: Internal): void {
  const { defineProperty, getOwnPropertyDescriptor, getPrototypeOf, freeze } = Object;
  const apply = Reflect.apply;
  const DOMException = internal.DOMException;
  const U8 = Uint8Array;
  const typedArray = getPrototypeOf(U8.prototype) as object;
  const getter = (proto: object, key: PropertyKey) => getOwnPropertyDescriptor(proto, key)!.get!;
  // Brand-checking getters, captured before any guest code can replace them.
  const tagOf = getter(typedArray, Symbol.toStringTag) as (this: unknown) => string | undefined;
  const viewBuffer = getter(typedArray, 'buffer');
  const viewOffset = getter(typedArray, 'byteOffset');
  const viewLength = getter(typedArray, 'byteLength');
  const dataViewBuffer = getter(DataView.prototype, 'buffer');
  const dataViewOffset = getter(DataView.prototype, 'byteOffset');
  const dataViewLength = getter(DataView.prototype, 'byteLength');
  const setBytes = U8.prototype.set;
  const isDataView = (value: unknown): boolean => {
    try {
      apply(dataViewLength, value, []);
      return true;
    } catch {
      return false;
    }
  };
  const integerArrays = [
    'Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array',
    'Int32Array', 'Uint32Array', 'BigInt64Array', 'BigUint64Array',
  ];

  const ENTROPY = '__strataEntropy';
  const entropy: unknown = g[ENTROPY];
  Reflect.deleteProperty(g, ENTROPY);
  const source = typeof entropy === 'function' ? (entropy as (n: number) => unknown) : undefined;

  // Fills `target` with `n` bytes from the host.
  const fill = (target: Uint8Array, n: number): void => {
    if (source === undefined) {
      throw new DOMException("no entropy source: this isolate's host gave none (Strata's runtimes do)", 'NotSupportedError');
    }
    const bytes: unknown = apply(source, undefined, [n]);
    if (apply(tagOf, bytes, []) !== 'Uint8Array' || apply(viewLength, bytes, []) < n) {
      throw new DOMException(`the host's entropy source did not return a Uint8Array of ${n} bytes`, 'OperationError');
    }
    apply(setBytes, target, [new U8(apply(viewBuffer, bytes, []), apply(viewOffset, bytes, []), n)]);
  };

  function getRandomValues<T>(array: T): T {
    const tag = apply(tagOf, array, []);
    if (tag === undefined || !integerArrays.includes(tag)) {
      if (tag === undefined && !isDataView(array)) {
        throw new TypeError("Failed to execute 'getRandomValues' on 'Crypto': parameter 1 is not of type 'ArrayBufferView'.");
      }
      throw new DOMException(`getRandomValues takes an integer typed array, not a ${tag ?? 'DataView'}`, 'TypeMismatchError');
    }
    const n = apply(viewLength, array, []);
    if (n > 65536) {
      throw new DOMException(`getRandomValues takes at most 65536 bytes, not ${n}`, 'QuotaExceededError');
    }
    fill(new U8(apply(viewBuffer, array, []), apply(viewOffset, array, []), n), n);
    return array;
  }

  const hex = (b: number) => (b < 16 ? '0' : '') + b.toString(16);
  function randomUUID(): string {
    const b = new U8(16);
    fill(b, 16);
    b[6] = (b[6]! & 0x0f) | 0x40; // version 4
    b[8] = (b[8]! & 0x3f) | 0x80; // variant 10
    let s = '';
    for (let i = 0; i < 16; i++) s += (i === 4 || i === 6 || i === 8 || i === 10 ? '-' : '') + hex(b[i]!);
    return s;
  }

  type Hash = (bytes: Uint8Array) => Uint8Array;
  const names: Record<string, 'sha1' | 'sha256' | 'sha384' | 'sha512'> = freeze({
    __proto__: null, 'sha-1': 'sha1', 'sha-256': 'sha256', 'sha-384': 'sha384', 'sha-512': 'sha512',
  }) as never;
  // The bundle runs on the first digest, against the built-ins of bootstrap time.
  const intrinsics = freeze({
    __proto__: null, globalThis: freeze({ __proto__: null }),
    Object, Array, Number, Math, BigInt, ArrayBuffer, DataView, Uint8Array, Uint32Array, Error, TypeError, RangeError,
  });
  let hashes: Record<string, Hash> | undefined;
  const hashFor = (name: string): Hash | undefined => {
    const key = names[name];
    if (key === undefined) return undefined;
    hashes ??= internal.runCryptoBundle(intrinsics);
    return hashes[key];
  };

  // A copy of a BufferSource's bytes (the caller may change them meanwhile), or undefined.
  const bytesOf = (data: unknown): Uint8Array | undefined => {
    if (internal.isArrayBuffer(data)) return new U8(new U8(data));
    const typed = apply(tagOf, data, []) !== undefined;
    if (!typed && !isDataView(data)) return undefined;
    const buffer = apply(typed ? viewBuffer : dataViewBuffer, data, []);
    if (!internal.isArrayBuffer(buffer)) return undefined;
    return new U8(new U8(buffer, apply(typed ? viewOffset : dataViewOffset, data, []), apply(typed ? viewLength : dataViewLength, data, [])));
  };

  // Neither class is constructible by the guest: only the instances below exist.
  const token = {};
  class SubtleCrypto {
    #brand = true;
    constructor(key?: unknown) {
      if (key !== token) throw new TypeError('Illegal constructor');
    }
    async digest(algorithm: unknown, data: unknown): Promise<ArrayBuffer> {
      if (!(this !== null && typeof this === 'object' && #brand in this)) throw new TypeError('Illegal invocation');
      if (arguments.length < 2) {
        throw new TypeError(`Failed to execute 'digest' on 'SubtleCrypto': 2 arguments required, but only ${arguments.length} present.`);
      }
      let name: unknown = algorithm;
      if (algorithm !== null && typeof algorithm === 'object') {
        name = (algorithm as { name?: unknown }).name;
        if (name === undefined) throw new TypeError("Failed to execute 'digest' on 'SubtleCrypto': the algorithm has no name.");
      } else if (typeof algorithm !== 'string') {
        throw new TypeError("Failed to execute 'digest' on 'SubtleCrypto': the algorithm must be a string or an object with a name.");
      }
      // ASCII case-insensitive, as WebCrypto's algorithm normalisation is.
      const hash = hashFor(`${name as string}`.replace(/[A-Z]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 32)));
      if (hash === undefined) {
        throw new DOMException(`digest: unrecognised algorithm '${name as string}' (SHA-1, SHA-256, SHA-384, SHA-512)`, 'NotSupportedError');
      }
      const bytes = bytesOf(data);
      if (bytes === undefined) {
        throw new TypeError("Failed to execute 'digest' on 'SubtleCrypto': data is not an ArrayBuffer or ArrayBufferView.");
      }
      return new U8(hash(bytes)).buffer;
    }
  }
  internal.webidl(SubtleCrypto, 'SubtleCrypto');
  const subtle = new SubtleCrypto(token);

  class Crypto {
    constructor(key?: unknown) {
      if (key !== token) throw new TypeError('Illegal constructor');
    }
    get subtle(): SubtleCrypto {
      return subtle;
    }
  }
  internal.webidl(Crypto, 'Crypto');
  const crypto = new Crypto(token);
  for (const [name, fn] of [['getRandomValues', getRandomValues], ['randomUUID', randomUUID]] as const) {
    defineProperty(crypto, name, { value: fn, writable: true, enumerable: true, configurable: true });
  }

  internal.define('Crypto', Crypto);
  internal.define('SubtleCrypto', SubtleCrypto);
  internal.define('crypto', crypto);
}
