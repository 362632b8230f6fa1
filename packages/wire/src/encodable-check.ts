/**
 * The encoder's gate: proves a value is inside the closed set and within the limits
 * before cbor-x sees it, without running any code the value could carry (getters,
 * Proxy traps, `toJSON`, custom iterators).
 *
 * @module
 */

import { Buffer } from 'node:buffer';
import { types } from 'node:util';
import { isAsciiIdentifier } from './identifier.js';
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

/**
 * What the walk learned about one container, so that a container reachable along several
 * paths (a DAG) is walked once and only its totals are added at every later place.
 */
interface Seen {
  /** Still on the walk stack: meeting it again means the value contains itself. */
  open: boolean;
  /** Items it encodes to, itself included (once closed). */
  nodes: number;
  /** Its share of the lower bound on the encoded size (once closed). */
  minBytes: number;
  /** Levels of containers, itself included: an array of scalars is 1 (once closed). */
  height: number;
}

/**
 * Containers with fewer children than this are looked up in the memo only once they turn out
 * to hold a container, and are not remembered if they hold none: walking such a one again
 * costs no more than looking it up would have, and it cannot be part of a cycle.
 */
const MEMO_MIN_LENGTH = 16;

/** One open container on the explicit walk stack. */
interface Frame {
  kind: number;
  container: object;
  /**
   * The container's entry in the walk's memo, made when its first child container is met
   * (so that a path back to it is seen as a cycle), or at the end for a long container.
   */
  seen: Seen | undefined;
  /** `nodes` before the container. */
  nodesBefore: number;
  /** `minBytes` before the container. */
  bytesBefore: number;
  /** Tallest child container finished so far (0 when none). */
  childHeight: number;
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
  return new Walker(limits, root).run(value);
}

/** State of one check; a class so a call allocates one object, not a set of closures. */
class Walker {
  private readonly stack: Frame[] = [];
  // the containers that hold a container, and the long ones; created when first needed
  private seen: Map<object, Seen> | undefined;
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
        const height = frame.childHeight + 1;
        const seen = frame.seen ?? (frame.length >= MEMO_MIN_LENGTH ? this.remember(frame) : undefined);
        if (seen !== undefined) {
          seen.open = false;
          seen.nodes = this.nodes - frame.nodesBefore;
          seen.minBytes = this.minBytes - frame.bytesBefore;
          seen.height = height;
        }
        // drop references so a pooled frame does not keep the value alive
        frame.container = frame.keys = frame.iterator = frame.seen = undefined as never;
        this.depth--;
        if (this.depth > 0) {
          const parent = stack[this.depth - 1]!;
          if (parent.childHeight < height) parent.childHeight = height;
        }
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
    if (++this.nodes > this.maxNodes) this.failNodes();
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
      return this.enter(ARRAY, v, v.length, undefined);
    }
    const proto: unknown = getPrototypeOf(v);
    if (proto === Object.prototype || proto === null) {
      if (getOwnPropertySymbols(v).length > 0) return this.fail('object with a symbol key');
      return this.enter(OBJECT, v, 0, getOwnPropertyNames(v));
    }
    if (proto === Map.prototype && isMap(v)) {
      this.noOwnKeys(v, 'Map');
      return this.enter(MAP, v, (v as Map<unknown, unknown>).size * 2, undefined);
    }
    if (proto === Set.prototype && isSet(v)) {
      this.noOwnKeys(v, 'Set');
      return this.enter(SET, v, (v as Set<unknown>).size, undefined);
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

  /**
   * Start on a container that passed the kind checks (visit() has counted one item and one
   * byte for it). The memo is consulted here for a long container, and for a short one only
   * once it turns out to hold a container ({@link settle}): most containers are short and
   * hold only scalars, and those never touch the memo.
   */
  private enter(kind: number, container: object, length: number, keys: string[] | undefined): void {
    // the enclosing container first: it holds a container, so it must be in the memo
    if (this.depth > 0 && !this.settle()) return;
    if (keys !== undefined) length = keys.length;
    if (length >= MEMO_MIN_LENGTH) {
      const seen = this.seen?.get(container);
      if (seen !== undefined) {
        if (seen.open) return this.fail('cycle (the value contains itself)');
        this.nodes += seen.nodes - 1;
        this.minBytes += seen.minBytes - 1;
        return this.countedAgain(seen);
      }
    }
    const before = this.nodes - 1;
    if (keys !== undefined) {
      this.nodes += length;
      if (this.nodes > this.maxNodes) return this.failNodes();
    }
    const iterator =
      kind === MAP ? mapEntries.call(container as Map<unknown, unknown>) : kind === SET ? setValues.call(container as Set<unknown>) : undefined;
    this.open(kind, container, length, keys, iterator, before);
  }

  /**
   * Make sure the innermost open container is in the memo, now that it has turned out to
   * hold a container. If it was there already, it was opened again without a look-up
   * (it looked short): still open means the value contains itself; finished means it was
   * checked in full before, so the partial walk is dropped and its totals count instead.
   *
   * @returns false when the innermost container was dropped that way (skip its children).
   */
  private settle(): boolean {
    const frame = this.stack[this.depth - 1]!;
    if (frame.seen !== undefined) return true;
    const seen = this.seen?.get(frame.container);
    if (seen === undefined) {
      this.remember(frame);
      return true;
    }
    frame.container = frame.keys = frame.iterator = frame.pendingValue = undefined as never;
    this.depth--;
    if (seen.open) this.fail('cycle (the value contains itself)');
    this.nodes = frame.nodesBefore + seen.nodes;
    this.minBytes = frame.bytesBefore + seen.minBytes;
    this.countedAgain(seen);
    return false;
  }

  /**
   * A container checked in full before counts again here, as the encoder writes it out
   * again at this place: its items toward `maxNodes` and its bytes toward `maxFrameBytes`
   * (both added by the caller), and its height from this depth toward `maxDepth`.
   */
  private countedAgain(seen: Seen): void {
    const { depth } = this;
    if (depth + seen.height > this.maxDepth) {
      this.fail(`nesting deeper than maxDepth ${this.maxDepth} (a shared value nested ${seen.height} levels deep, placed at depth ${depth + 1})`);
    }
    if (this.nodes > this.maxNodes) this.failNodes();
    if (depth > 0) {
      const parent = this.stack[depth - 1]!;
      if (parent.childHeight < seen.height) parent.childHeight = seen.height;
    }
  }

  /** Put an open container into the memo. */
  private remember(frame: Frame): Seen {
    const seen: Seen = { open: true, nodes: 0, minBytes: 0, height: 0 };
    (this.seen ??= new Map()).set(frame.container, seen);
    frame.seen = seen;
    return seen;
  }

  private open(
    kind: number,
    container: object,
    length: number,
    keys: string[] | undefined,
    iterator: Iterator<unknown> | undefined,
    nodesBefore: number,
  ): void {
    const { stack, depth } = this;
    if (depth + 1 > this.maxDepth) this.fail(`nesting deeper than maxDepth ${this.maxDepth}`);
    const bytesBefore = this.minBytes - 1;
    const frame = stack[depth];
    if (frame === undefined) {
      stack.push({
        kind,
        container,
        seen: undefined,
        nodesBefore,
        bytesBefore,
        childHeight: 0,
        length,
        index: 0,
        keys,
        iterator,
        pendingValue: undefined,
      });
    } else {
      frame.kind = kind;
      frame.container = container;
      frame.seen = undefined;
      frame.nodesBefore = nodesBefore;
      frame.bytesBefore = bytesBefore;
      frame.childHeight = 0;
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

  private failNodes(): never {
    this.fail(
      `more than maxNodes ${this.maxNodes} items (at least ${this.nodes}; ` +
        'a shared object or array counts once for every place it appears)',
    );
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
        path += isAsciiIdentifier(key) && key.length <= 40 ? `.${key}` : `[${quote(key)}]`;
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
