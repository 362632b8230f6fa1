import { types } from 'node:util';
import { builtinKind, DEFAULT_LIMITS, ValueWalk, WalkKind, type ContainerKind, type WalkVisitor, type WireScalar } from '@strata/wire';
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
 * appears, as it would when encoded. The walk is `@strata/wire`'s {@link ValueWalk}: iterative,
 * and each distinct object is walked once and its totals are remembered (a short one that holds
 * no object may be walked again), so the check is linear in the distinct objects and their
 * entries, however many paths a shared structure has.
 */
export function assertTransferable(value: unknown, path: string, maxDepth: number, maxNodes: number = MAX_VALUE_NODES): void {
  new TransferCheck(path, maxDepth, maxNodes).run(value);
}

/** A shorter object that holds no object is not remembered, but walked again at each place. */
const MEMO_MIN_NODES = 16;

const getPrototypeOf = Object.getPrototypeOf;
const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
const ownKeys = Reflect.ownKeys;
const isArray = Array.isArray;
const { isProxy, isUint8Array, isDate, isMap, isSet } = types;

/**
 * The visitor of one {@link assertTransferable}. The walk's `nodes` are the value's nodes; the
 * depth of a value is the number of objects around it. A `Date` or `Uint8Array` is an object
 * without children that still takes a level (so an array of them is one level taller).
 */
class TransferCheck implements WalkVisitor {
  // a shared part counts again from the memo wherever it is met, never partly walked again
  readonly lookUpEvery = true;
  private walk!: ValueWalk;

  constructor(
    private readonly root: string,
    private readonly maxDepth: number,
    private readonly maxNodes: number,
  ) {}

  run(value: unknown): void {
    this.walk = new ValueWalk(this);
    this.walk.run(value);
  }

  visit(v: unknown, walk: ValueWalk): WalkKind {
    const { depth } = walk;
    if (++walk.nodes > this.maxNodes) this.refuseSize(depth);
    switch (typeof v) {
      case 'undefined':
      case 'boolean':
      case 'number':
      case 'bigint':
      case 'string':
        return WalkKind.Leaf;
      case 'function':
        this.refuse(depth, 'is a function; only data can cross (bind functions with bindFunction)');
      case 'symbol':
        this.refuse(depth, 'is a symbol');
    }
    if (v === null) return WalkKind.Leaf;
    const object = v as object;
    if (isProxy(object)) this.refuse(depth, 'is a Proxy');
    // the depth of an object that may cross is checked once the walk has it (enter, shared, cycle)
    const proto: unknown = getPrototypeOf(object);
    // A kind is the prototype with the brand: Object.create(Date.prototype) would copy as {}.
    // Buffer is a Uint8Array subclass whose bytes copy faithfully; other views are refused.
    if (proto === Uint8Array.prototype || proto === Buffer.prototype)
      return this.branded(object, isUint8Array(object), 'Uint8Array', depth, WalkKind.Opaque, false);
    if (proto === Date.prototype) return this.branded(object, isDate(object), 'Date', depth, WalkKind.Opaque);
    if (isArray(object)) {
      if (proto !== Array.prototype) this.refuseDeep(depth, 'is an Array subclass');
      return WalkKind.Array;
    }
    if (proto === Map.prototype) return this.branded(object, isMap(object), 'Map', depth, WalkKind.Map);
    if (proto === Set.prototype) return this.branded(object, isSet(object), 'Set', depth, WalkKind.Set);
    if (proto === Object.prototype || proto === null) {
      // and the converse: an ArrayBuffer behind Object.prototype would copy as an ArrayBuffer
      const kind = builtinKind(object);
      if (kind !== undefined) this.refuseDeep(depth, `is a built-in ${kind} behind a replaced prototype, not a plain object`);
      return WalkKind.Object;
    }
    const name = (proto as { constructor?: { name?: unknown } } | null)?.constructor?.name;
    this.refuseDeep(depth, `is an instance of ${typeof name === 'string' && name !== '' ? name : 'a class'}, not a plain object`);
  }

  /**
   * `kind` when the object has the brand its prototype promises and (`keyless`) no own property:
   * a copy keeps a Date's time and a Map's or Set's entries only. (A Uint8Array's own keys are
   * its elements, one per byte: not listed.)
   */
  private branded(object: object, hasBrand: boolean, name: string, depth: number, kind: WalkKind, keyless = true): WalkKind {
    if (!hasBrand) this.refuseDeep(depth, `inherits from ${name}.prototype but is not a ${name}`);
    if (keyless && ownKeys(object).length !== 0) this.refuseDeep(depth, 'has extra own properties');
    return kind;
  }

  keys(object: object): readonly (string | symbol)[] {
    return ownKeys(object);
  }

  enter(kind: ContainerKind, _container: object, length: number, walk: ValueWalk): void {
    this.checkDepth(walk.depth);
    if (kind !== WalkKind.Object) return;
    // every key is written out too
    walk.nodes += length;
    if (walk.nodes > this.maxNodes) this.refuseSize(walk.depth);
  }

  element(array: readonly unknown[], index: number, walk: ValueWalk): unknown {
    const desc = getOwnPropertyDescriptor(array, index);
    if (desc === undefined) this.refuse(walk.depth, 'is a hole (sparse arrays cannot cross)');
    if (!('value' in desc)) this.refuse(walk.depth, 'is an accessor (getter/setter)');
    return desc.value;
  }

  property(object: object, key: string | symbol, walk: ValueWalk): unknown {
    if (typeof key === 'symbol') this.refuse(walk.depth - 1, 'has a symbol-keyed property');
    const desc = getOwnPropertyDescriptor(object, key)!;
    if (!('value' in desc)) this.refuse(walk.depth, 'is an accessor (getter/setter)');
    if (!desc.enumerable) this.refuse(walk.depth, 'is not enumerable');
    return desc.value;
  }

  leave(kind: ContainerKind, container: object, nodes: number, walk: ValueWalk): boolean {
    if (kind === WalkKind.Array && ownKeys(container).length !== (container as unknown[]).length + 1) {
      this.refuse(walk.depth - 1, 'is an array with extra (non-index) properties');
    }
    // remembered when it is a non-empty Map or Set, or long; holding an object remembers it anyway
    return kind === WalkKind.Map || kind === WalkKind.Set ? nodes > 1 : nodes >= MEMO_MIN_NODES;
  }

  /** Walked before: it counts again here, as it would be copied again here. */
  shared(height: number, walk: ValueWalk): void {
    const { depth } = walk;
    const { maxDepth } = this;
    this.checkDepth(depth);
    // the walk counts the container itself as a level; the message counts the levels below it
    const reach = depth + height - 1;
    if (reach > maxDepth) this.refuse(depth, `is nested deeper than ${maxDepth} levels (a shared value whose objects reach depth ${reach})`);
    if (walk.nodes > this.maxNodes) this.refuseSize(depth);
  }

  cycle(walk: ValueWalk): void {
    this.checkDepth(walk.depth);
    this.refuse(walk.depth, 'refers back to an enclosing value (a cycle)');
  }

  /** An object `depth` objects deep is refused for its depth before anything else about it. */
  private checkDepth(depth: number): void {
    if (depth > this.maxDepth) this.refuse(depth, `is nested deeper than ${this.maxDepth} levels`);
  }

  private refuseDeep(depth: number, what: string): never {
    this.checkDepth(depth);
    this.refuse(depth, what);
  }

  /** The path of the value `depth` objects deep, in the notation the messages have always used. */
  private pathAt(depth: number): string {
    const { walk } = this;
    let path = this.root;
    for (let level = 0; level < depth; level++) {
      const child = walk.childAt(level);
      switch (walk.kindAt(level)) {
        case WalkKind.Array:
          path += `[${child}]`;
          break;
        case WalkKind.Object:
          path += `.${String(walk.keyAt(level))}`;
          break;
        case WalkKind.Map:
          path += child % 2 === 0 ? `.<key ${child >> 1}>` : `.<value ${child >> 1}>`;
          break;
        default:
          path += `.<element ${child}>`;
      }
    }
    return path;
  }

  private refuse(depth: number, what: string): never {
    throw new ValueNotTransferable(`${this.pathAt(depth)} ${what}`);
  }

  private refuseSize(depth: number): never {
    throw new ValueNotTransferable(tooManyNodes(this.pathAt(depth), this.walk.nodes, this.maxNodes));
  }
}
