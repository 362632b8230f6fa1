/**
 * The encoder's gate: proves a value is inside the closed set and within the limits
 * before cbor-x sees it, without running any code the value could carry (getters,
 * Proxy traps, `toJSON`, custom iterators).
 *
 * @module
 */

import { Buffer } from 'node:buffer';
import { types } from 'node:util';
import type { Limits } from './limits.js';
import { ProtocolError, quote } from './protocol-error.js';

/** What the check learned that the encoder needs. */
export interface EncodableInfo {
  /** Number of CBOR data items the value encodes to (as {@link scanCbor} counts them). */
  readonly nodes: number;
  /** The value contains `-0` somewhere, so numbers must be written as floats to keep it. */
  readonly negativeZero: boolean;
}

const ARRAY = 0;
const OBJECT = 1;
const MAP = 2;
const SET = 3;

/** One open container on the explicit walk stack. */
interface Frame {
  kind: number;
  container: object;
  /** Array length, number of own keys, Set size, or twice the Map size. */
  length: number;
  /**
   * Children started so far, so the child being checked is `index - 1` (which is what a
   * refusal's path shows); for Maps it counts keys and values, two per entry.
   */
  index: number;
  /** Own property names of an object. */
  keys: string[] | undefined;
  /** Entry or element iterator of a Map or Set. */
  iterator: Iterator<unknown> | undefined;
  /** The value half of the Map entry whose key was just visited. */
  pendingValue: unknown;
}

// Captured once, so a later change to a prototype cannot redirect the walk. The Annex B
// lookups find an accessor without calling it and without allocating a descriptor,
// which keeps the per-element check on large arrays cheap.
const annexB = Object.prototype as unknown as {
  __lookupGetter__(this: object, key: PropertyKey): unknown;
  __lookupSetter__(this: object, key: PropertyKey): unknown;
};
const lookupGetter = annexB.__lookupGetter__;
const lookupSetter = annexB.__lookupSetter__;
const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
const getOwnPropertyNames = Object.getOwnPropertyNames;
const getOwnPropertySymbols = Object.getOwnPropertySymbols;
const getPrototypeOf = Object.getPrototypeOf;
const hasOwn = Object.hasOwn;
const isArray = Array.isArray;
const { isProxy, isMap, isSet, isDate, isUint8Array } = types;
const mapEntries = Map.prototype.entries;
const setValues = Set.prototype.values;
const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;
// 2^64: bigints this far from zero (or further) travel as tag 2/3 bignums
const BIGNUM_FLOOR = 1n << 64n;
const UINT8_FIELDS = ['constructor', 'buffer', 'byteLength', 'byteOffset', 'length'];

/**
 * Check that `value` is a {@link WireValue} the decoder would accept under `limits`.
 *
 * The walk is iterative (no recursion), reads properties only through descriptors after
 * ruling out Proxies, and stops early once the value is certainly larger than
 * `limits.maxFrameBytes`. A cycle is reported as such when it hits `maxDepth`. A value
 * reachable twice without a cycle (a DAG) is fine; it is encoded twice and its items
 * count twice toward `maxNodes`.
 *
 * @param value - the value to check.
 * @param limits - resolved limits.
 * @param root - how the path of a refused part starts, e.g. `'$'`.
 * @throws ProtocolError naming the path of the first refused part, e.g. `$.result.a[3]`.
 */
export function checkEncodable(value: unknown, limits: Limits, root = '$'): EncodableInfo {
  return new Walker(limits, root).run(value);
}

/** State of one check; a class so a call allocates one object, not a set of closures. */
class Walker {
  private readonly stack: Frame[] = [];
  private depth = 0;
  private nodes = 0;
  // a lower bound on the encoded size: one byte per item plus string and byte payloads
  private minBytes = 0;
  private negativeZero = false;
  private readonly maxDepth: number;
  private readonly maxNodes: number;
  private readonly maxStringBytes: number;
  private readonly maxFrameBytes: number;
  private readonly maxBigIntBytes: number;

  constructor(
    limits: Limits,
    private readonly root: string,
  ) {
    this.maxDepth = limits.maxDepth;
    this.maxNodes = limits.maxNodes;
    this.maxStringBytes = limits.maxStringBytes;
    this.maxFrameBytes = limits.maxFrameBytes;
    this.maxBigIntBytes = Math.min(limits.maxBigIntBytes, limits.maxStringBytes);
  }

  run(value: unknown): EncodableInfo {
    const { stack } = this;
    this.visit(value);
    while (this.depth > 0) {
      const frame = stack[this.depth - 1]!;
      if (frame.index >= frame.length) {
        // drop references so a pooled frame does not keep the value alive
        frame.container = frame.keys = frame.iterator = undefined as never;
        this.depth--;
        continue;
      }
      const i = frame.index++;
      switch (frame.kind) {
        case ARRAY: {
          const array = frame.container as unknown[];
          const depth = this.depth;
          // stay on this array while its elements are scalars: most arrays are mostly scalars
          for (let j = i; ; j = frame.index++) {
            // the getter lookup also sees index getters inherited from a prototype
            if (lookupGetter.call(array, j) !== undefined) this.fail('accessor property');
            const element = array[j];
            if (element === undefined) {
              if (!hasOwn(array, j)) this.fail('array hole (sparse array)');
              if (lookupSetter.call(array, j) !== undefined) this.fail('accessor property');
            }
            this.visit(element);
            if (this.depth !== depth || frame.index >= frame.length) break;
          }
          break;
        }
        case OBJECT: {
          const key = frame.keys![i]!;
          const descriptor = getOwnPropertyDescriptor(frame.container, key)!;
          if (descriptor.get !== undefined || descriptor.set !== undefined) this.fail('accessor property');
          if (descriptor.enumerable !== true) this.fail('non-enumerable property');
          this.checkString(key, 'object key');
          this.visit(descriptor.value);
          break;
        }
        case MAP:
          if (i % 2 === 0) {
            const entry = frame.iterator!.next().value as [unknown, unknown];
            frame.pendingValue = entry[1];
            this.visit(entry[0]);
          } else {
            const entryValue = frame.pendingValue;
            frame.pendingValue = undefined;
            this.visit(entryValue);
          }
          break;
        default:
          this.visit(frame.iterator!.next().value);
      }
    }
    return { nodes: this.nodes, negativeZero: this.negativeZero };
  }

  /** Classify one value: scalars are checked on the spot, containers are pushed. */
  private visit(v: unknown): void {
    if (++this.nodes > this.maxNodes) this.fail(`more than maxNodes ${this.maxNodes} items`);
    this.minBytes += 1;
    switch (typeof v) {
      case 'string':
        this.checkString(v, 'string');
        break;
      case 'number':
        if (v === 0 && 1 / v < 0) this.negativeZero = true;
        break;
      case 'boolean':
      case 'undefined':
        break;
      case 'bigint':
        this.checkBigInt(v);
        break;
      case 'symbol':
        this.fail('symbol');
        break;
      case 'function':
        this.fail('function');
        break;
      default:
        if (v !== null) this.visitObject(v as object);
    }
    if (this.minBytes > this.maxFrameBytes) this.fail(`encoded value exceeds maxFrameBytes ${this.maxFrameBytes}`);
  }

  private visitObject(v: object): void {
    // first, before anything can reach a trap
    if (isProxy(v)) return this.fail('Proxy');
    if (isArray(v)) {
      if (getPrototypeOf(v) !== Array.prototype) return this.fail('array subclass or foreign-realm array');
      // cbor-x dispatches on .constructor; an own one would misdirect it
      if (hasOwn(v, 'constructor')) return this.fail('array with an own "constructor" property');
      return this.open(ARRAY, v, v.length, undefined, undefined);
    }
    const proto: unknown = getPrototypeOf(v);
    if (proto === Object.prototype || proto === null) {
      if (getOwnPropertySymbols(v).length > 0) return this.fail('object with a symbol key');
      const keys = getOwnPropertyNames(v);
      this.nodes += keys.length;
      if (this.nodes > this.maxNodes) return this.fail(`more than maxNodes ${this.maxNodes} items`);
      return this.open(OBJECT, v, keys.length, keys, undefined);
    }
    if (proto === Map.prototype && isMap(v)) {
      this.noOwnKeys(v, 'Map');
      const map = v as Map<unknown, unknown>;
      return this.open(MAP, v, map.size * 2, undefined, mapEntries.call(map));
    }
    if (proto === Set.prototype && isSet(v)) {
      this.noOwnKeys(v, 'Set');
      const set = v as Set<unknown>;
      return this.open(SET, v, set.size, undefined, setValues.call(set));
    }
    if (proto === Date.prototype && isDate(v)) return this.noOwnKeys(v, 'Date');
    if ((proto === Uint8Array.prototype || proto === Buffer.prototype) && isUint8Array(v)) {
      for (const key of UINT8_FIELDS) {
        if (hasOwn(v, key)) return this.fail(`Uint8Array with an own ${JSON.stringify(key)} property`);
      }
      const length = (v as Uint8Array).byteLength;
      if (length > this.maxStringBytes) {
        return this.fail(`Uint8Array of ${length} bytes exceeds maxStringBytes ${this.maxStringBytes}`);
      }
      this.minBytes += length;
      return;
    }
    return this.fail(describeRefused(v));
  }

  private open(kind: number, container: object, length: number, keys: string[] | undefined, iterator: Iterator<unknown> | undefined): void {
    const { stack, depth } = this;
    if (depth + 1 > this.maxDepth) {
      // a cycle always ends up here, so it costs nothing to look for one until then
      const cycle = stack.slice(0, depth).some((frame) => frame.container === container);
      this.fail(cycle ? 'cycle (the value contains itself)' : `nesting deeper than maxDepth ${this.maxDepth}`);
    }
    const frame = stack[depth];
    if (frame === undefined) {
      stack.push({ kind, container, length, index: 0, keys, iterator, pendingValue: undefined });
    } else {
      frame.kind = kind;
      frame.container = container;
      frame.length = length;
      frame.index = 0;
      frame.keys = keys;
      frame.iterator = iterator;
    }
    this.depth = depth + 1;
  }

  private checkString(text: string, what: string): void {
    // UTF-8 takes at least one byte per UTF-16 unit and at most three
    let bytes = text.length;
    if (bytes * 3 > this.maxStringBytes) bytes = Buffer.byteLength(text, 'utf8');
    if (bytes > this.maxStringBytes) {
      this.fail(`${what} of ${bytes} UTF-8 bytes exceeds maxStringBytes ${this.maxStringBytes}`);
    }
    if (!text.isWellFormed()) this.fail(`${what} contains a lone surrogate (use String.prototype.toWellFormed)`);
    this.minBytes += bytes;
  }

  private checkBigInt(v: bigint): void {
    // cbor-x's rule: 64-bit heads for -2^64 < v < 2^64, a bignum of v or -1 - v beyond
    if (v < BIGNUM_FLOOR && v > -BIGNUM_FLOOR) return;
    const magnitude = v >= 0n ? v : -1n - v;
    const bytes = Math.ceil(magnitude.toString(16).length / 2);
    if (bytes > this.maxBigIntBytes) this.fail(`bigint of ${bytes} bytes exceeds maxBigIntBytes ${this.maxBigIntBytes}`);
    this.minBytes += bytes;
  }

  private noOwnKeys(v: object, what: string): void {
    // cbor-x reads .size, iterators and Date methods through the object; own ones would run
    if (Reflect.ownKeys(v).length > 0) this.fail(`${what} with own properties`);
  }

  private fail(what: string): never {
    throw new ProtocolError(`cannot encode ${pathOf(this.root, this.stack, this.depth)}: ${what}`);
  }
}

/** Name a refused object kind without calling into the object. */
function describeRefused(v: object): string {
  if (isMap(v) || isSet(v) || isDate(v) || isUint8Array(v)) return 'subclass or foreign-realm instance of a built-in';
  if (types.isTypedArray(v)) return 'typed array other than Uint8Array';
  if (types.isAnyArrayBuffer(v)) return 'ArrayBuffer (send a Uint8Array view of it)';
  if (types.isDataView(v)) return 'DataView';
  if (types.isNativeError(v)) return 'Error object (send an error payload)';
  if (types.isBoxedPrimitive(v)) return 'boxed primitive';
  if (types.isRegExp(v)) return 'RegExp';
  if (types.isPromise(v)) return 'Promise';
  if (types.isWeakMap(v) || types.isWeakSet(v)) return 'WeakMap or WeakSet';
  return 'object with a prototype other than Object.prototype or null (class instance?)';
}

/**
 * Render the path to the child being visited: `.key` or `["odd key"]` for objects,
 * `[i]` for arrays, `{key#i}` / `{value#i}` for the i-th Map entry, `{#i}` for the
 * i-th Set element.
 */
function pathOf(root: string, stack: readonly Frame[], depth: number): string {
  let path = root;
  for (let level = 0; level < depth; level++) {
    const frame = stack[level]!;
    // a container opened by the value being refused has no child in progress
    if (frame.index === 0) break;
    const i = frame.index - 1;
    switch (frame.kind) {
      case ARRAY:
        path += `[${i}]`;
        break;
      case OBJECT: {
        const key = frame.keys![i]!;
        path += IDENTIFIER.test(key) && key.length <= 40 ? `.${key}` : `[${quote(key)}]`;
        break;
      }
      case MAP:
        path += `{${i % 2 === 0 ? 'key' : 'value'}#${i >> 1}}`;
        break;
      default:
        path += `{#${i}}`;
    }
    if (path.length > 300) return `${path.slice(0, 300)}…`;
  }
  return path;
}
