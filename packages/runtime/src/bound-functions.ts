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
  constructor(
    readonly entries: [string, unknown][],
    /** Nodes it stands for, itself and every key included, a shared child counted at every place. */
    readonly nodes: number,
    /** Depth of its deepest plain object below it, relative to it (0 when it holds none). */
    readonly height: number,
  ) {}
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
export function splitFunctions(
  value: unknown,
  label: string,
  maxDepth: number,
  maxNodes: number = MAX_VALUE_NODES,
): { data: unknown; sites: FunctionSite[] } {
  const read = new Map<object, Plain | undefined>(); // undefined: being read
  const keys: string[] = [];
  let count = 0;
  const pathAt = (depth: number): string => (depth === 0 ? label : `${label}.${keys.slice(0, depth).join('.')}`);
  const tooMany = (depth: number): never => {
    throw new ValueNotTransferable(tooManyNodes(pathAt(depth), count, maxNodes));
  };

  // Pass 1: read every distinct plain object once, refusing cycles and what breaks a limit.
  const scan = (node: unknown, depth: number): unknown => {
    if (++count > maxNodes) tooMany(depth);
    if (typeof node === 'function' || node === null || typeof node !== 'object') return node;
    if (read.has(node)) {
      const plain = read.get(node);
      if (plain === undefined) throw new ValueNotTransferable(`${pathAt(depth)} refers back to an enclosing value (a cycle)`);
      if (depth + plain.height > maxDepth) throw new ValueNotTransferable(`${pathAt(depth)} is nested deeper than ${maxDepth} levels`);
      count += plain.nodes - 1;
      if (count > maxNodes) tooMany(depth);
      return plain;
    }
    const proto: unknown = Object.getPrototypeOf(node);
    if (proto !== Object.prototype && proto !== null) return node;
    if (depth > maxDepth) throw new ValueNotTransferable(`${pathAt(depth)} is nested deeper than ${maxDepth} levels`);
    const before = count - 1;
    read.set(node, undefined);
    const entries = Object.entries(node);
    count += entries.length;
    if (count > maxNodes) tooMany(depth);
    let height = -1;
    for (const entry of entries) {
      keys[depth] = entry[0];
      const child = scan(entry[1], depth + 1);
      if (child instanceof Plain && child.height > height) height = child.height;
      entry[1] = child;
    }
    const plain = new Plain(entries, count - before, height + 1);
    read.set(node, plain);
    return plain;
  };
  const scanned = scan(value, 0);

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
