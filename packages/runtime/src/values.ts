import { types } from 'node:util';
import { DEFAULT_LIMITS, type WireScalar } from '@strata/wire';
import { ValueNotTransferable } from './errors.js';

/**
 * The values that cross between host and guest: `null`, `undefined`, boolean, number, bigint,
 * string, `Uint8Array`, arrays, plain objects (string keys, data properties), `Set`, `Map` and
 * `Date`. Anything else is refused with {@link ValueNotTransferable}. The read-only view of the
 * wire's `WireValue`: the scalars are the wire's own `WireScalar`, the containers read-only.
 */
export type Transferable =
  | WireScalar
  | readonly Transferable[]
  | ReadonlySet<Transferable>
  | ReadonlyMap<Transferable, Transferable>
  | { readonly [key: string]: Transferable };

/**
 * The most nodes a value may have to cross, host to guest or guest to host, in either runtime:
 * the wire's default `maxNodes` (2,000,000), so the in-process Runtime and the IsolatedRuntime
 * hold values to the same limit. (A frame also carries its message envelope, a few items more
 * than the value; a frame limit of exactly this many items leaves no room for them.)
 *
 * Nodes are counted the way the wire counts CBOR items: every value (primitives, containers,
 * `Date`, `Uint8Array`, Map keys and values, Set elements, array elements) is one, and every
 * plain-object key is one more. The count is of the value as it is written out, so an object
 * or array reachable along several paths counts once for every place it appears: `[a, a]`
 * counts `a` twice, and `let n = [1]; for (let i = 0; i < 40; i++) n = [n, n];` (41 distinct
 * arrays) has 2^41 + 2^40 - 1 nodes and is refused.
 */
export const MAX_VALUE_NODES: number = DEFAULT_LIMITS.maxNodes;

/**
 * The message for a value past `limit` nodes, found at `path` with `count` nodes counted so far.
 * Shared by every walk so that all of them refuse in the same words.
 *
 * @internal
 */
export function tooManyNodes(path: string, count: number, limit: number): string {
  return `${path} is past the limit of ${limit} nodes for one value (at least ${count}, counting a shared object or array once for every place it appears)`;
}

/**
 * Throws {@link ValueNotTransferable}, naming the path, unless `value` is {@link Transferable}.
 * Host values are checked before they are copied into the guest, so that a class instance is
 * refused instead of arriving as a stripped plain object. Reads descriptors only: no getter or
 * Proxy trap runs.
 *
 * Refuses cycles, objects nested deeper than `maxDepth` (the value itself is depth 0) and values
 * of more than `maxNodes` nodes (see {@link MAX_VALUE_NODES} for how they are counted). Sharing
 * without a cycle is accepted, but a shared object counts toward both limits at every place it
 * appears, as it would when encoded. Each distinct object is walked once and its totals are
 * remembered, so the check is linear in the distinct objects and their entries, however many
 * paths a shared structure has.
 */
export function assertTransferable(value: unknown, path: string, maxDepth: number, maxNodes: number = MAX_VALUE_NODES): void {
  new TransferCheck(path, maxDepth, maxNodes).walk(value, 0);
}

// How a walk entered a child, for rendering the path of a refusal only when there is one.
const ARRAY = 0;
const OBJECT = 1;
const MAP_KEY = 2;
const MAP_VALUE = 3;
const SET_ELEMENT = 4;

/** What the walk learned about one object it has entered. */
interface Seen {
  /** Still being walked: meeting it again means it contains itself. */
  open: boolean;
  /** Nodes it counts for, itself included (once walked). */
  nodes: number;
  /** Depth of its deepest object below it, relative to it (0 when it holds no object). */
  height: number;
}

/** An object of fewer nodes that holds no object is not remembered (see {@link TransferCheck.walk}). */
const MEMO_MIN_NODES = 16;

const getPrototypeOf = Object.getPrototypeOf;
const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
const ownKeys = Reflect.ownKeys;
const isArray = Array.isArray;
const { isProxy } = types;
const mapEntries = Map.prototype.entries;
const setValues = Set.prototype.values;

/** One run of {@link assertTransferable}. */
class TransferCheck {
  private count = 0;
  // created at the first container, so a primitive costs nothing
  private seen: Map<object, Seen> | undefined;
  // the path to the value at depth d is kinds/keys [0, d), rendered only for a refusal
  private readonly kinds: number[] = [];
  private readonly keys: (string | number)[] = [];

  constructor(
    private readonly root: string,
    private readonly maxDepth: number,
    private readonly maxNodes: number,
  ) {}

  /** Checks `v` at `depth`; returns its height (-1 for a primitive, 0 for an object holding none). */
  walk(v: unknown, depth: number): number {
    if (++this.count > this.maxNodes) this.refuseSize(depth);
    switch (typeof v) {
      case 'undefined':
      case 'boolean':
      case 'number':
      case 'bigint':
      case 'string':
        return -1;
      case 'function':
        this.refuse(depth, 'is a function; only data can cross (bind functions with bindFunction)');
      case 'symbol':
        this.refuse(depth, 'is a symbol');
    }
    if (v === null) return -1;
    const object = v as object;
    if (isProxy(object)) this.refuse(depth, 'is a Proxy');
    const { maxDepth } = this;
    if (depth > maxDepth) this.refuse(depth, `is nested deeper than ${maxDepth} levels`);
    const seen = this.seen?.get(object);
    if (seen !== undefined) {
      if (seen.open) this.refuse(depth, 'refers back to an enclosing value (a cycle)');
      // walked before: it counts again here, as it would be copied again here
      if (depth + seen.height > maxDepth) {
        this.refuse(depth, `is nested deeper than ${maxDepth} levels (a shared value whose objects reach depth ${depth + seen.height})`);
      }
      this.count += seen.nodes - 1;
      if (this.count > this.maxNodes) this.refuseSize(depth);
      return seen.height;
    }
    const proto: unknown = getPrototypeOf(object);
    // Buffer is a Uint8Array subclass whose bytes copy faithfully; other views are refused.
    if (proto === Uint8Array.prototype || Buffer.isBuffer(object)) return 0;
    if (proto === Date.prototype) return 0;
    const before = this.count - 1;
    // remembered once it has a child object (so that a path back to it is seen as a cycle), or at
    // the end if it is long; a short one holding only primitives is cheaper to walk again
    let entry: Seen | undefined;
    const { kinds, keys } = this;
    const next = depth + 1;
    let height = -1;
    if (isArray(object)) {
      if (proto !== Array.prototype) this.refuse(depth, 'is an Array subclass');
      const length = object.length;
      kinds[depth] = ARRAY;
      for (let i = 0; i < length; i++) {
        keys[depth] = i;
        const desc = getOwnPropertyDescriptor(object, i);
        if (desc === undefined) this.refuse(next, 'is a hole (sparse arrays cannot cross)');
        if (!('value' in desc)) this.refuse(next, 'is an accessor (getter/setter)');
        const child: unknown = desc.value;
        if (entry === undefined && typeof child === 'object' && child !== null) entry = this.remember(object);
        const h = this.walk(child, next);
        if (h > height) height = h;
      }
      if (ownKeys(object).length !== length + 1) this.refuse(depth, 'is an array with extra (non-index) properties');
    } else if (proto === Map.prototype) {
      let i = 0;
      for (const [k, val] of mapEntries.call(object as Map<unknown, unknown>)) {
        keys[depth] = i++;
        kinds[depth] = MAP_KEY;
        entry ??= this.remember(object);
        let h = this.walk(k, next);
        if (h > height) height = h;
        kinds[depth] = MAP_VALUE;
        h = this.walk(val, next);
        if (h > height) height = h;
      }
    } else if (proto === Set.prototype) {
      let i = 0;
      kinds[depth] = SET_ELEMENT;
      for (const element of setValues.call(object as Set<unknown>)) {
        keys[depth] = i++;
        entry ??= this.remember(object);
        const h = this.walk(element, next);
        if (h > height) height = h;
      }
    } else if (proto === Object.prototype || proto === null) {
      const own = ownKeys(object);
      // every key is written out too
      this.count += own.length;
      if (this.count > this.maxNodes) this.refuseSize(depth);
      kinds[depth] = OBJECT;
      for (const key of own) {
        if (typeof key === 'symbol') this.refuse(depth, 'has a symbol-keyed property');
        keys[depth] = key;
        const desc = getOwnPropertyDescriptor(object, key)!;
        if (!('value' in desc)) this.refuse(next, 'is an accessor (getter/setter)');
        if (!desc.enumerable) this.refuse(next, 'is not enumerable');
        const child: unknown = desc.value;
        if (entry === undefined && typeof child === 'object' && child !== null) entry = this.remember(object);
        const h = this.walk(child, next);
        if (h > height) height = h;
      }
    } else {
      const name = (proto as { constructor?: { name?: unknown } } | null)?.constructor?.name;
      this.refuse(depth, `is an instance of ${typeof name === 'string' && name !== '' ? name : 'a class'}, not a plain object`);
    }
    if (entry === undefined && this.count - before >= MEMO_MIN_NODES) entry = this.remember(object);
    if (entry !== undefined) {
      entry.open = false;
      entry.nodes = this.count - before;
      entry.height = height + 1;
    }
    return height + 1;
  }

  /** Puts an object being walked into the memo. */
  private remember(object: object): Seen {
    const entry: Seen = { open: true, nodes: 0, height: 0 };
    (this.seen ??= new Map()).set(object, entry);
    return entry;
  }

  /** The path of the value at `depth`, in the notation the messages have always used. */
  private pathAt(depth: number): string {
    let path = this.root;
    for (let level = 0; level < depth; level++) {
      const key = this.keys[level]!;
      switch (this.kinds[level]) {
        case ARRAY:
          path += `[${key}]`;
          break;
        case OBJECT:
          path += `.${String(key)}`;
          break;
        case MAP_KEY:
          path += `.<key ${key}>`;
          break;
        case MAP_VALUE:
          path += `.<value ${key}>`;
          break;
        default:
          path += `.<element ${key}>`;
      }
    }
    return path;
  }

  private refuse(depth: number, what: string): never {
    throw new ValueNotTransferable(`${this.pathAt(depth)} ${what}`);
  }

  private refuseSize(depth: number): never {
    throw new ValueNotTransferable(tooManyNodes(this.pathAt(depth), this.count, this.maxNodes));
  }
}
