/**
 * Strict structural equality of wire values, for round-trip checks: same kinds, same
 * prototypes, same key and entry order, `Object.is` for numbers (so -0 and NaN count),
 * invalid Dates equal to each other.
 *
 * @module
 */

/** Whether `a` and `b` are the same wire value, order of keys and entries included. */
export function wireEqual(a: unknown, b: unknown): boolean {
  if (typeof a !== typeof b) return false;
  if (typeof a !== 'object' || a === null || b === null) return Object.is(a, b);
  const pa: unknown = Object.getPrototypeOf(a);
  if (pa !== Object.getPrototypeOf(b)) return false;
  if (a instanceof Date) return Object.is(a.getTime(), (b as Date).getTime());
  if (a instanceof Uint8Array) {
    const other = b as Uint8Array;
    return a.length === other.length && a.every((byte, i) => byte === other[i]);
  }
  if (Array.isArray(a)) {
    const other = b as unknown[];
    return a.length === other.length && a.every((item, i) => wireEqual(item, other[i]));
  }
  if (a instanceof Set) return wireEqual([...a], [...(b as Set<unknown>)]);
  if (a instanceof Map) return wireEqual([...a], [...(b as Map<unknown, unknown>)]);
  const ka = Object.keys(a);
  const kb = Object.keys(b as object);
  if (!wireEqual(ka, kb)) return false;
  return ka.every((key) => wireEqual((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]));
}
