import { ValueWalk, WalkKind, type ContainerKind, type WalkVisitor } from '@strata/wire';
import { ValueNotTransferable } from './errors.js';
import type { HostFunction } from './runtime-contract.js';
import { MAX_VALUE_NODES, tooManyNodes } from './values.js';

/** Where a host function sits inside a bound value, its label (`tools.math.add`) and the function. */
export interface FunctionSite {
  readonly path: readonly string[];
  readonly label: string;
  readonly fn: HostFunction;
}

/** A plain object of the bound value, read once: its entries with plain-object children replaced by their own `Plain`. */
class Plain {
  constructor(readonly entries: [string, unknown][]) {}
}

/**
 * Splits a value given to `bindFunction`/`bindObject` into data (every function replaced by
 * `null`) and the sites of its functions, at any depth of plain objects.
 *
 * The data is a fresh tree of plain objects, one copy for every place an object appears, as the
 * guest will see it; the other values in it (arrays, Maps…) are the caller's, for
 * {@link assertTransferable} to check. Each distinct plain object is read once (its getters run
 * once), and the copy is made only after the value is known to be within the limits, so the
 * split costs time linear in the distinct objects plus the size of the result, which is at
 * most `maxNodes`.
 *
 * @throws ValueNotTransferable for a plain object that contains itself, one nested deeper than
 *   `maxDepth`, or more than `maxNodes` nodes of plain objects (counted like
 *   {@link MAX_VALUE_NODES}, a shared object at every place it appears).
 */
export function splitFunctions(value: unknown, label: string, maxDepth: number, maxNodes: number = MAX_VALUE_NODES): { data: unknown; sites: FunctionSite[] } {
  // Pass 1: read every distinct plain object once, refusing cycles and what breaks a limit.
  const scanned = new PlainReader(label, maxDepth, maxNodes).read(value);

  // Pass 2: copy, one object per place, and note where each function sits.
  const sites: FunctionSite[] = [];
  const path: string[] = [];
  const build = (node: unknown): unknown => {
    if (typeof node === 'function') {
      sites.push({ path: path.slice(), label: path.length === 0 ? label : `${label}.${path.join('.')}`, fn: node as HostFunction });
      return null;
    }
    if (!(node instanceof Plain)) return node;
    const copy: Record<string, unknown> = {};
    for (const [key, child] of node.entries) {
      path.push(key);
      copy[key] = build(child);
      path.pop();
    }
    return copy;
  };
  const data = build(scanned);
  return { data, sites };
}

/**
 * Pass 1 of {@link splitFunctions}, a visitor of `@strata/wire`'s {@link ValueWalk}: only plain
 * objects are walked into (everything else is a leaf, for the transfer check to judge), each is
 * read with `Object.entries` once, and every one is remembered, so a shared one is counted again
 * from the memo and never read twice.
 */
class PlainReader implements WalkVisitor {
  readonly lookUpEvery = true;
  private walk!: ValueWalk;
  // every plain object read so far, and its entries (their children replaced once it is finished)
  private readonly plains = new Map<object, Plain>();

  constructor(
    private readonly label: string,
    private readonly maxDepth: number,
    private readonly maxNodes: number,
  ) {}

  read(value: unknown): unknown {
    this.walk = new ValueWalk(this);
    this.walk.run(value);
    return (typeof value === 'object' && value !== null && this.plains.get(value)) || value;
  }

  visit(node: unknown, walk: ValueWalk): WalkKind {
    const { depth } = walk;
    if (++walk.nodes > this.maxNodes) this.tooMany(depth);
    if (typeof node === 'function' || node === null || typeof node !== 'object') return WalkKind.Leaf;
    // read before: the walk counts it again from its memo (or finds the cycle)
    if (this.plains.has(node)) return WalkKind.Object;
    const proto: unknown = Object.getPrototypeOf(node);
    if (proto !== Object.prototype && proto !== null) return WalkKind.Leaf;
    if (depth > this.maxDepth) this.refuse(depth, `is nested deeper than ${this.maxDepth} levels`);
    return WalkKind.Object;
  }

  keys(object: object): readonly string[] {
    let plain = this.plains.get(object);
    if (plain === undefined) {
      plain = new Plain(Object.entries(object));
      this.plains.set(object, plain);
    }
    return plain.entries.map((entry) => entry[0]);
  }

  enter(_kind: ContainerKind, _container: object, length: number, walk: ValueWalk): void {
    walk.nodes += length;
    if (walk.nodes > this.maxNodes) this.tooMany(walk.depth);
  }

  element(): unknown {
    throw new Error('unreachable: only plain objects are walked into');
  }

  property(object: object, _key: string | symbol, walk: ValueWalk): unknown {
    return this.plains.get(object)!.entries[walk.childAt(walk.depth - 1)]![1];
  }

  /** Its children are read: each plain one is replaced by its own `Plain`. */
  leave(_kind: ContainerKind, container: object): boolean {
    for (const entry of this.plains.get(container)!.entries) {
      const child = entry[1];
      if (typeof child === 'object' && child !== null) entry[1] = this.plains.get(child) ?? child;
    }
    return true;
  }

  shared(height: number, walk: ValueWalk): void {
    const { depth } = walk;
    // the walk counts the object itself as a level; the limit counts the levels below it
    if (depth + height - 1 > this.maxDepth) this.refuse(depth, `is nested deeper than ${this.maxDepth} levels`);
    if (walk.nodes > this.maxNodes) this.tooMany(depth);
  }

  cycle(walk: ValueWalk): void {
    this.refuse(walk.depth, 'refers back to an enclosing value (a cycle)');
  }

  private pathAt(depth: number): string {
    let path = this.label;
    for (let level = 0; level < depth; level++) path += `.${String(this.walk.keyAt(level))}`;
    return path;
  }

  private refuse(depth: number, what: string): never {
    throw new ValueNotTransferable(`${this.pathAt(depth)} ${what}`);
  }

  private tooMany(depth: number): never {
    throw new ValueNotTransferable(tooManyNodes(this.pathAt(depth), this.walk.nodes, this.maxNodes));
  }
}
