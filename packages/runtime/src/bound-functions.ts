import type { HostFunction } from './runtime.js';

/** Where a host function sits inside a bound value, its label (`tools.math.add`) and the function. */
export interface FunctionSite {
  readonly path: readonly string[];
  readonly label: string;
  readonly fn: HostFunction;
}

/**
 * Splits a value given to `bindFunction`/`bindObject` into data (every function replaced by
 * `null`) and the sites of its functions, at any depth of plain objects.
 */
export function splitFunctions(value: unknown, label: string, maxDepth: number): { data: unknown; sites: FunctionSite[] } {
  const sites: FunctionSite[] = [];
  const walk = (node: unknown, path: string[], nodeLabel: string, depth: number): unknown => {
    if (typeof node === 'function') {
      sites.push({ path, label: nodeLabel, fn: node as HostFunction });
      return null;
    }
    if (node === null || typeof node !== 'object' || depth > maxDepth) return node;
    const proto: unknown = Object.getPrototypeOf(node);
    if (proto !== Object.prototype && proto !== null) return node;
    const copy: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(node)) copy[key] = walk(child, [...path, key], `${nodeLabel}.${key}`, depth + 1);
    return copy;
  };
  const data = walk(value, [], label, 0);
  return { data, sites };
}
