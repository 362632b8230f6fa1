/**
 * The encoder's gate: proves a value is inside the closed set and within the limits
 * before cbor-x sees it, without running any code the value could carry (getters,
 * Proxy traps, `toJSON`, custom iterators).
 *
 * @module
 */

import { Buffer } from 'node:buffer';
import { types } from 'node:util';
import { builtinKind } from './builtin-kind.js';
import { isAsciiIdentifier } from './identifier.js';
import type { Limits } from './limits.js';
import { ProtocolError, quote } from './protocol-error.js';
import { ValueWalk, WalkKind, type ContainerKind, type WalkVisitor } from './value-walk.js';

/** What the check learned that the encoder needs. */
export interface EncodableInfo {
  /** Number of CBOR data items the value encodes to (as {@link scanCbor} counts them). */
  readonly nodes: number;
  /** The value contains `-0` somewhere, so numbers must be written as floats to keep it. */
  readonly negativeZero: boolean;
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
// 2^64: bigints this far from zero (or further) travel as tag 2/3 bignums
const BIGNUM_FLOOR = 1n << 64n;
const UINT8_FIELDS = ['constructor', 'buffer', 'byteLength', 'byteOffset', 'length'];

/**
 * Check that `value` is a {@link WireValue} the decoder would accept under `limits`.
 *
 * The walk is iterative (no recursion), reads properties only through descriptors after
 * ruling out Proxies, and stops early once the value is certainly larger than
 * `limits.maxFrameBytes`. A cycle (a container that is its own ancestor) is refused as
 * soon as it is met. A value reachable twice without a cycle (a DAG) is fine; it is
 * encoded twice and its items count twice toward `maxNodes` (and its depth counts at
 * every place it appears), so the check passes exactly the values the decoder would
 * take back. Each distinct container is walked once and its totals are remembered, so
 * the check costs time linear in the distinct containers and items, however many paths
 * a DAG has: `let n = [1]; for (let i = 0; i < 40; i++) n = [n, n];` (2^40 paths) is
 * refused for `maxNodes` after a few dozen steps.
 *
 * @param value - the value to check.
 * @param limits - resolved limits.
 * @param root - how the path of a refused part starts, e.g. `'$'`.
 * @throws ProtocolError naming the path of the first refused part, e.g. `$.result.a[3]`.
 */
export function checkEncodable(value: unknown, limits: Limits, root = '$'): EncodableInfo {
  return new EncodableVisitor(limits, root).run(value);
}

/**
 * The visitor of one check. The walk's `nodes` are CBOR items; its `bytes` a lower bound on the
 * encoded size: one byte per item plus string and byte payloads.
 */
class EncodableVisitor implements WalkVisitor {
  readonly lookUpEvery = false;
  private negativeZero = false;
  private walk!: ValueWalk;
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
    this.walk = new ValueWalk(this);
    this.walk.run(value);
    return { nodes: this.walk.nodes, negativeZero: this.negativeZero };
  }

  /** Classify one value: scalars are checked on the spot, containers are walked into. */
  visit(v: unknown, walk: ValueWalk): WalkKind {
    if (++walk.nodes > this.maxNodes) this.failNodes();
    walk.bytes += 1;
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
        // a container's size is checked once it is entered (enter) or counted again (shared)
        if (v !== null) return this.visitObject(v as object);
    }
    this.checkFrameBytes();
    return WalkKind.Leaf;
  }

  private visitObject(v: object): WalkKind {
    // first, before anything can reach a trap
    if (isProxy(v)) return this.fail('Proxy');
    if (isArray(v)) {
      if (getPrototypeOf(v) !== Array.prototype) return this.fail('array subclass or foreign-realm array');
      // cbor-x dispatches on .constructor; an own one would misdirect it
      if (hasOwn(v, 'constructor')) return this.fail('array with an own "constructor" property');
      return WalkKind.Array;
    }
    const proto: unknown = getPrototypeOf(v);
    if (proto === Object.prototype || proto === null) {
      const kind = builtinKind(v);
      if (kind !== undefined) return this.fail(`${kind} behind a replaced prototype`);
      if (getOwnPropertySymbols(v).length > 0) return this.fail('object with a symbol key');
      return WalkKind.Object;
    }
    if (proto === Map.prototype && isMap(v)) {
      this.noOwnKeys(v, 'Map');
      return WalkKind.Map;
    }
    if (proto === Set.prototype && isSet(v)) {
      this.noOwnKeys(v, 'Set');
      return WalkKind.Set;
    }
    if (proto === Date.prototype && isDate(v)) {
      this.noOwnKeys(v, 'Date');
    } else if ((proto === Uint8Array.prototype || proto === Buffer.prototype) && isUint8Array(v)) {
      for (const key of UINT8_FIELDS) {
        if (hasOwn(v, key)) return this.fail(`Uint8Array with an own ${JSON.stringify(key)} property`);
      }
      const length = (v as Uint8Array).byteLength;
      if (length > this.maxStringBytes) {
        return this.fail(`Uint8Array of ${length} bytes exceeds maxStringBytes ${this.maxStringBytes}`);
      }
      this.walk.bytes += length;
    } else {
      return this.fail(describeRefused(v));
    }
    this.checkFrameBytes();
    return WalkKind.Leaf;
  }

  keys(object: object): readonly string[] {
    return getOwnPropertyNames(object);
  }

  /** A container not met before (or short, so not looked up): every object key is an item too. */
  enter(kind: ContainerKind, _container: object, length: number, walk: ValueWalk): void {
    if (kind === WalkKind.Object) {
      walk.nodes += length;
      if (walk.nodes > this.maxNodes) this.failNodes();
    }
    if (walk.depth + 1 > this.maxDepth) this.fail(`nesting deeper than maxDepth ${this.maxDepth}`);
    this.checkFrameBytes();
  }

  element(array: readonly unknown[], index: number): unknown {
    // the getter lookup also sees index getters inherited from a prototype
    if (lookupGetter.call(array, index) !== undefined) this.fail('accessor property');
    const element = array[index];
    if (element === undefined) {
      if (!hasOwn(array, index)) this.fail('array hole (sparse array)');
      if (lookupSetter.call(array, index) !== undefined) this.fail('accessor property');
    }
    return element;
  }

  property(object: object, key: string | symbol): unknown {
    const descriptor = getOwnPropertyDescriptor(object, key)!;
    if (descriptor.get !== undefined || descriptor.set !== undefined) this.fail('accessor property');
    if (descriptor.enumerable !== true) this.fail('non-enumerable property');
    this.checkString(key as string, 'object key');
    return descriptor.value;
  }

  leave(): boolean {
    return false;
  }

  /**
   * A container checked in full before counts again here, as the encoder writes it out
   * again at this place: its items toward `maxNodes` and its bytes toward `maxFrameBytes`
   * (both added by the walk), and its height from this depth toward `maxDepth`.
   */
  shared(height: number, walk: ValueWalk): void {
    const { depth } = walk;
    if (depth + height > this.maxDepth) {
      this.fail(`nesting deeper than maxDepth ${this.maxDepth} (a shared value nested ${height} levels deep, placed at depth ${depth + 1})`);
    }
    if (walk.nodes > this.maxNodes) this.failNodes();
    this.checkFrameBytes();
  }

  cycle(): void {
    this.fail('cycle (the value contains itself)');
  }

  private checkFrameBytes(): void {
    if (this.walk.bytes > this.maxFrameBytes) this.fail(`encoded value exceeds maxFrameBytes ${this.maxFrameBytes}`);
  }

  private checkString(text: string, what: string): void {
    // UTF-8 takes at least one byte per UTF-16 unit and at most three
    let bytes = text.length;
    if (bytes * 3 > this.maxStringBytes) bytes = Buffer.byteLength(text, 'utf8');
    if (bytes > this.maxStringBytes) {
      this.fail(`${what} of ${bytes} UTF-8 bytes exceeds maxStringBytes ${this.maxStringBytes}`);
    }
    if (!text.isWellFormed()) this.fail(`${what} contains a lone surrogate (use String.prototype.toWellFormed)`);
    this.walk.bytes += bytes;
  }

  private checkBigInt(v: bigint): void {
    // cbor-x's rule: 64-bit heads for -2^64 < v < 2^64, a bignum of v or -1 - v beyond
    if (v < BIGNUM_FLOOR && v > -BIGNUM_FLOOR) return;
    const magnitude = v >= 0n ? v : -1n - v;
    const bytes = Math.ceil(magnitude.toString(16).length / 2);
    if (bytes > this.maxBigIntBytes) this.fail(`bigint of ${bytes} bytes exceeds maxBigIntBytes ${this.maxBigIntBytes}`);
    this.walk.bytes += bytes;
  }

  private noOwnKeys(v: object, what: string): void {
    // cbor-x reads .size, iterators and Date methods through the object; own ones would run
    if (Reflect.ownKeys(v).length > 0) this.fail(`${what} with own properties`);
  }

  private failNodes(): never {
    this.fail(`more than maxNodes ${this.maxNodes} items (at least ${this.walk.nodes}; ` + 'a shared object or array counts once for every place it appears)');
  }

  private fail(what: string): never {
    throw new ProtocolError(`cannot encode ${pathOf(this.root, this.walk)}: ${what}`);
  }
}

/** Name a refused object kind without calling into the object. */
function describeRefused(v: object): string {
  const kind = builtinKind(v);
  switch (kind) {
    case 'Map':
    case 'Set':
    case 'Date':
    case 'Uint8Array':
      return 'subclass or foreign-realm instance of a built-in';
    case 'typed array':
      return 'typed array other than Uint8Array';
    case 'ArrayBuffer':
      return 'ArrayBuffer (send a Uint8Array view of it)';
    case 'Error':
      return 'Error object (send an error payload)';
    case undefined:
      return 'object with a prototype other than Object.prototype or null (class instance?)';
    default:
      return kind;
  }
}

/**
 * Render the path to the child being visited: `.key` or `["odd key"]` for objects,
 * `[i]` for arrays, `{key#i}` / `{value#i}` for the i-th Map entry, `{#i}` for the
 * i-th Set element.
 */
function pathOf(root: string, walk: ValueWalk): string {
  let path = root;
  for (let level = 0; level < walk.depth; level++) {
    const i = walk.childAt(level);
    // a container opened by the value being refused has no child in progress
    if (i < 0) break;
    switch (walk.kindAt(level)) {
      case WalkKind.Array:
        path += `[${i}]`;
        break;
      case WalkKind.Object: {
        const key = walk.keyAt(level) as string;
        path += isAsciiIdentifier(key) && key.length <= 40 ? `.${key}` : `[${quote(key)}]`;
        break;
      }
      case WalkKind.Map:
        path += `{${i % 2 === 0 ? 'key' : 'value'}#${i >> 1}}`;
        break;
      default:
        path += `{#${i}}`;
    }
    if (path.length > 300) return `${path.slice(0, 300)}…`;
  }
  return path;
}
