/**
 * How deep a tool's answer nests, counted as the guest boundary counts it. A session checks this
 * before it journals an answer: an answer the boundary would refuse must fail as the tool's
 * failure (recorded, so a replay fails the same way), not as an error out of the runtime.
 *
 * On its own so that it can be replaced by the one value walk `@strata/wire` is getting (issue
 * 20, move 4) without touching the session.
 *
 * @module
 */

/** Whether `value` nests deeper than `limit` levels (arrays, objects, Map and Set entries), as the guest boundary counts them. */
export function deeperThan(value: unknown, limit: number): boolean {
  const walk = (v: unknown, depth: number): boolean => {
    if (v === null || typeof v !== 'object') return false;
    if (depth > limit) return true;
    if (v instanceof Map) {
      for (const [k, x] of v) if (walk(k, depth + 1) || walk(x, depth + 1)) return true;
      return false;
    }
    const items = v instanceof Set ? [...v] : ArrayBuffer.isView(v) || v instanceof Date ? [] : Object.values(v);
    return items.some((x) => walk(x, depth + 1));
  };
  return walk(value, 1);
}
