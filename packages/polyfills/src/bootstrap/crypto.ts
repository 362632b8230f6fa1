import type { GlobalObject, Internal } from './internal.js';

/**
 * Installs `crypto` (a `Crypto`) with `getRandomValues`, `randomUUID` and
 * `subtle` (a `SubtleCrypto` with `digest`, and HMAC keys: `importKey`,
 * `exportKey`, `generateKey`, `sign`, `verify`, by the bundled
 * @noble/hashes, loaded on first use), and `CryptoKey`.
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
    'Int8Array',
    'Uint8Array',
    'Uint8ClampedArray',
    'Int16Array',
    'Uint16Array',
    'Int32Array',
    'Uint32Array',
    'BigInt64Array',
    'BigUint64Array',
  ];

  const ENTROPY = internal.hostGlobals.entropy;
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
    __proto__: null,
    'sha-1': 'sha1',
    'sha-256': 'sha256',
    'sha-384': 'sha384',
    'sha-512': 'sha512',
  }) as never;
  // The bundle runs on the first digest, against the built-ins of bootstrap time.
  const intrinsics = freeze({
    __proto__: null,
    globalThis: freeze({ __proto__: null }),
    Object,
    Array,
    Number,
    Math,
    BigInt,
    ArrayBuffer,
    DataView,
    Uint8Array,
    Uint32Array,
    Error,
    TypeError,
    RangeError,
  });
  let hashes: Record<string, (...args: any[]) => Uint8Array> | undefined;
  const hashFor = (name: string): Hash | undefined => {
    const key = names[name];
    if (key === undefined) return undefined;
    hashes ??= internal.runCryptoBundle(intrinsics);
    return hashes[key];
  };

  // None of these classes is constructible by the guest: only the instances made here exist.
  const token = {};
  const lower = (text: string): string => text.replace(/[A-Z]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 32));
  // The hash's name as WebCrypto writes it, from any case of it; undefined when unknown.
  const HASH_NAMES: Record<string, string> = freeze({
    __proto__: null,
    'sha-1': 'SHA-1',
    'sha-256': 'SHA-256',
    'sha-384': 'SHA-384',
    'sha-512': 'SHA-512',
  }) as never;
  const BLOCK_BITS: Record<string, number> = freeze({ __proto__: null, 'SHA-1': 512, 'SHA-256': 512, 'SHA-384': 1024, 'SHA-512': 1024 }) as never;
  const USAGES = ['sign', 'verify'];
  const atob = g.atob as (text: string) => string;
  const nameOf = (algorithm: unknown, what: string): string => {
    const name = algorithm !== null && typeof algorithm === 'object' ? (algorithm as { name?: unknown }).name : algorithm;
    if (typeof name !== 'string')
      throw new TypeError(`Failed to execute '${what}' on 'SubtleCrypto': the algorithm must be a string or an object with a name.`);
    return name;
  };
  // An HMAC algorithm's hash, as WebCrypto names it (`hash: 'SHA-256'` or `{ name: 'SHA-256' }`).
  const hashOf = (algorithm: unknown): string => {
    const given = algorithm !== null && typeof algorithm === 'object' ? (algorithm as { hash?: unknown }).hash : undefined;
    if (given === undefined) throw new TypeError('HMAC: the algorithm needs a hash, e.g. { name: "HMAC", hash: "SHA-256" }');
    const name = HASH_NAMES[lower(nameOf(given, 'importKey'))];
    if (name === undefined) throw new DOMException(`HMAC: unrecognised hash (SHA-1, SHA-256, SHA-384, SHA-512)`, 'NotSupportedError');
    return name;
  };
  const requireHmac = (algorithm: unknown, what: string): void => {
    if (lower(nameOf(algorithm, what)) !== 'hmac') {
      throw new DOMException(`${what}: only HMAC keys are supported here (and digest: SHA-1, SHA-2)`, 'NotSupportedError');
    }
  };
  const checkUsages = (usages: unknown): string[] => {
    if (usages === null || typeof usages !== 'object' || typeof (usages as { [Symbol.iterator]?: unknown })[Symbol.iterator] !== 'function') {
      throw new TypeError('keyUsages must be a sequence of strings');
    }
    const list = [...(usages as Iterable<unknown>)].map((u) => `${u as string}`);
    for (const usage of list) if (!USAGES.includes(usage)) throw new DOMException(`an HMAC key cannot be used to ${usage} (sign, verify)`, 'SyntaxError');
    if (list.length === 0) throw new DOMException('a secret key needs at least one usage (sign, verify)', 'SyntaxError');
    return [...new Set(list)];
  };
  const base64url = (bytes: Uint8Array): string => internal.base64Encode(bytes).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  const fromBase64url = (text: string): Uint8Array => {
    if (!/^[A-Za-z0-9_-]*$/.test(text)) throw new DOMException('the JWK k is not base64url', 'DataError');
    const binary = atob(text.replace(/-/g, '+').replace(/_/g, '/'));
    const bytes = new U8(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  };

  let makeKey: (bytes: Uint8Array, hash: string, extractable: boolean, usages: string[]) => CryptoKey;
  let keyState: (key: unknown) => { bytes: Uint8Array; hash: string; extractable: boolean; usages: readonly string[] } | undefined;
  class CryptoKey {
    #bytes: Uint8Array;
    #hash: string;
    #extractable: boolean;
    #usages: readonly string[];
    #algorithm: object;
    static {
      makeKey = (bytes, hash, extractable, usages) => {
        const key = new CryptoKey(token);
        key.#bytes = bytes;
        key.#hash = hash;
        key.#extractable = extractable;
        key.#usages = freeze([...usages]);
        key.#algorithm = freeze({ name: 'HMAC', hash: freeze({ name: hash }), length: bytes.length * 8 });
        return key;
      };
      keyState = (key) =>
        key !== null && typeof key === 'object' && #bytes in key
          ? { bytes: key.#bytes, hash: key.#hash, extractable: key.#extractable, usages: key.#usages }
          : undefined;
    }
    constructor(key?: unknown) {
      if (key !== token) throw new TypeError('Illegal constructor');
      this.#bytes = new U8(0);
      this.#hash = '';
      this.#extractable = false;
      this.#usages = [];
      this.#algorithm = {};
    }
    get type(): string {
      if (keyState(this) === undefined) throw new TypeError('Illegal invocation');
      return 'secret';
    }
    get extractable(): boolean {
      return this.#extractable;
    }
    get algorithm(): object {
      return this.#algorithm;
    }
    get usages(): readonly string[] {
      return this.#usages;
    }
  }
  internal.webidl(CryptoKey, 'CryptoKey');
  // Browsers can clone a CryptoKey; this one is refused (structuredClone would copy its getters' values as a plain object).
  internal.platformBrands.push((value) => keyState(value) !== undefined);
  const hmacOf = (state: { bytes: Uint8Array; hash: string }, data: Uint8Array): Uint8Array => {
    const hash = hashFor(lower(state.hash))!;
    return hashes!.hmac!(hash, state.bytes, new U8(data));
  };
  const usableKey = (key: unknown, usage: string, what: string) => {
    const state = keyState(key);
    if (state === undefined) throw new TypeError(`Failed to execute '${what}' on 'SubtleCrypto': the key is not a CryptoKey.`);
    if (!state.usages.includes(usage)) throw new DOMException(`${what}: the key's usages do not include ${usage}`, 'InvalidAccessError');
    return state;
  };
  const dataOf = (data: unknown, what: string): Uint8Array => {
    const bytes = internal.bufferSourceBytes(data);
    if (bytes === undefined) throw new TypeError(`Failed to execute '${what}' on 'SubtleCrypto': data is not an ArrayBuffer or ArrayBufferView.`);
    return new U8(bytes);
  };

  class SubtleCrypto {
    #brand = true;
    constructor(key?: unknown) {
      if (key !== token) throw new TypeError('Illegal constructor');
    }
    async importKey(format: unknown, keyData: unknown, algorithm: unknown, extractable: unknown, keyUsages: unknown): Promise<CryptoKey> {
      if (!(this !== null && typeof this === 'object' && #brand in this)) throw new TypeError('Illegal invocation');
      requireHmac(algorithm, 'importKey');
      const hash = hashOf(algorithm);
      const usages = checkUsages(keyUsages);
      let bytes: Uint8Array;
      if (format === 'raw') {
        const given = internal.bufferSourceBytes(keyData);
        if (given === undefined) throw new TypeError("Failed to execute 'importKey' on 'SubtleCrypto': a raw key is an ArrayBuffer or ArrayBufferView.");
        bytes = new U8(given);
      } else if (format === 'jwk') {
        const jwk = keyData as { kty?: unknown; k?: unknown } | null;
        if (jwk === null || typeof jwk !== 'object' || jwk.kty !== 'oct' || typeof jwk.k !== 'string')
          throw new DOMException('an HMAC JWK has kty "oct" and a k', 'DataError');
        bytes = fromBase64url(jwk.k);
      } else {
        throw new DOMException(`importKey: the format ${String(format)} is not supported for HMAC (raw, jwk)`, 'NotSupportedError');
      }
      if (bytes.length === 0) throw new DOMException('an HMAC key cannot be empty', 'DataError');
      return makeKey(bytes, hash, extractable === true, usages);
    }
    async exportKey(format: unknown, key: unknown): Promise<ArrayBuffer | object> {
      if (!(this !== null && typeof this === 'object' && #brand in this)) throw new TypeError('Illegal invocation');
      const state = keyState(key);
      if (state === undefined) throw new TypeError("Failed to execute 'exportKey' on 'SubtleCrypto': the key is not a CryptoKey.");
      if (!state.extractable) throw new DOMException('the key is not extractable', 'InvalidAccessError');
      if (format === 'raw') return new U8(state.bytes).buffer;
      if (format === 'jwk') return { kty: 'oct', k: base64url(state.bytes), alg: `HS${state.hash.slice(4)}`, key_ops: [...state.usages], ext: true };
      throw new DOMException(`exportKey: the format ${String(format)} is not supported for HMAC (raw, jwk)`, 'NotSupportedError');
    }
    async generateKey(algorithm: unknown, extractable: unknown, keyUsages: unknown): Promise<CryptoKey> {
      if (!(this !== null && typeof this === 'object' && #brand in this)) throw new TypeError('Illegal invocation');
      requireHmac(algorithm, 'generateKey');
      const hash = hashOf(algorithm);
      const usages = checkUsages(keyUsages);
      const given = (algorithm as { length?: unknown }).length;
      const bits = given === undefined ? BLOCK_BITS[hash]! : Number(given);
      if (!Number.isInteger(bits) || bits <= 0 || bits % 8 !== 0 || bits > 65536 * 8)
        throw new DOMException('generateKey: length must be a positive multiple of 8 bits', 'OperationError');
      // Through crypto.getRandomValues as it is now: the frozen clock's seeded one under that layer.
      const bytes = new U8(bits / 8);
      apply((crypto as unknown as { getRandomValues: (a: Uint8Array) => Uint8Array }).getRandomValues, crypto, [bytes]);
      return makeKey(bytes, hash, extractable === true, usages);
    }
    async sign(algorithm: unknown, key: unknown, data: unknown): Promise<ArrayBuffer> {
      if (!(this !== null && typeof this === 'object' && #brand in this)) throw new TypeError('Illegal invocation');
      requireHmac(algorithm, 'sign');
      const state = usableKey(key, 'sign', 'sign');
      return hmacOf(state, dataOf(data, 'sign')).buffer as ArrayBuffer;
    }
    async verify(algorithm: unknown, key: unknown, signature: unknown, data: unknown): Promise<boolean> {
      if (!(this !== null && typeof this === 'object' && #brand in this)) throw new TypeError('Illegal invocation');
      requireHmac(algorithm, 'verify');
      const state = usableKey(key, 'verify', 'verify');
      const given = dataOf(signature, 'verify');
      const expected = hmacOf(state, dataOf(data, 'verify'));
      // Every byte compared, whatever differs first.
      let diff = given.length ^ expected.length;
      for (let i = 0; i < expected.length; i++) diff |= expected[i]! ^ (given[i] ?? 0);
      return diff === 0;
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
  for (const [name, fn] of [
    ['getRandomValues', getRandomValues],
    ['randomUUID', randomUUID],
  ] as const) {
    defineProperty(crypto, name, { value: fn, writable: true, enumerable: true, configurable: true });
  }

  internal.define('Crypto', Crypto);
  internal.define('CryptoKey', CryptoKey);
  internal.define('SubtleCrypto', SubtleCrypto);
  internal.define('crypto', crypto);
}
