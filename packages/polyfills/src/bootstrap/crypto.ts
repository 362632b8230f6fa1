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
  // Captured before any guest code can replace it.
  const lengthOf = getOwnPropertyDescriptor(getPrototypeOf(U8.prototype) as object, 'length')!.get! as (this: unknown) => number;
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
    const view = internal.typedArrayName(bytes) === 'Uint8Array' ? internal.bufferSourceBytes(bytes, true)! : undefined;
    if (view === undefined || apply(lengthOf, view, []) < n) {
      throw new DOMException(`the host's entropy source did not return a Uint8Array of ${n} bytes`, 'OperationError');
    }
    for (let i = 0; i < n; i++) target[i] = view[i]!;
  };

  function getRandomValues<T>(array: T): T {
    const tag = internal.typedArrayName(array);
    if (tag === undefined || !integerArrays.includes(tag)) {
      if (tag === undefined && !internal.isDataView(array)) {
        throw new TypeError("Failed to execute 'getRandomValues' on 'Crypto': parameter 1 is not of type 'ArrayBufferView'.");
      }
      throw new DOMException(`getRandomValues takes an integer typed array, not a ${tag ?? 'DataView'}`, 'TypeMismatchError');
    }
    const bytes = internal.bufferSourceBytes(array, true)!;
    const n = apply(lengthOf, bytes, []);
    if (n > 65536) {
      throw new DOMException(`getRandomValues takes at most 65536 bytes, not ${n}`, 'QuotaExceededError');
    }
    fill(bytes, n);
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
      const bytes = internal.bufferSourceBytes(data);
      if (bytes === undefined) {
        throw new TypeError("Failed to execute 'digest' on 'SubtleCrypto': data is not an ArrayBuffer or ArrayBufferView.");
      }
      // A copy: the caller may change the bytes meanwhile.
      return new U8(hash(new U8(bytes))).buffer;
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
