import { types } from 'node:util';
import { ValueNotTransferable } from './errors.js';

/**
 * The values that cross between host and guest: `null`, `undefined`, boolean, number, bigint,
 * string, `Uint8Array`, arrays, plain objects (string keys, data properties), `Set`, `Map` and
 * `Date`. Anything else is refused with {@link ValueNotTransferable}.
 */
export type Transferable =
  | null
  | undefined
  | boolean
  | number
  | bigint
  | string
  | Uint8Array
  | Date
  | readonly Transferable[]
  | ReadonlySet<Transferable>
  | ReadonlyMap<Transferable, Transferable>
  | { readonly [key: string]: Transferable };

/**
 * Throws {@link ValueNotTransferable}, naming the path, unless `value` is {@link Transferable}.
 * Host values are checked before they are copied into the guest, so that a class instance is
 * refused instead of arriving as a stripped plain object. Reads descriptors only: no getter or
 * Proxy trap runs.
 */
export function assertTransferable(value: unknown, path: string, maxDepth: number): void {
  const ancestors = new Set<object>();
  const walk = (v: unknown, p: string, depth: number): void => {
    switch (typeof v) {
      case 'undefined':
      case 'boolean':
      case 'number':
      case 'bigint':
      case 'string':
        return;
      case 'function':
        throw new ValueNotTransferable(`${p} is a function; only data can cross (bind functions with bindFunction)`);
      case 'symbol':
        throw new ValueNotTransferable(`${p} is a symbol`);
    }
    if (v === null) return;
    const object = v as object;
    if (types.isProxy(object)) throw new ValueNotTransferable(`${p} is a Proxy`);
    if (depth > maxDepth) throw new ValueNotTransferable(`${p} is nested deeper than ${maxDepth} levels`);
    if (ancestors.has(object)) throw new ValueNotTransferable(`${p} refers back to an enclosing value (a cycle)`);
    const proto: unknown = Object.getPrototypeOf(object);
    // Buffer is a Uint8Array subclass whose bytes copy faithfully; other views are refused.
    if (proto === Uint8Array.prototype || Buffer.isBuffer(object)) return;
    if (proto === Date.prototype) return;
    ancestors.add(object);
    if (Array.isArray(object)) {
      if (proto !== Array.prototype) throw new ValueNotTransferable(`${p} is an Array subclass`);
      const keys = Reflect.ownKeys(object);
      for (let i = 0; i < object.length; i++) {
        const desc = Object.getOwnPropertyDescriptor(object, i);
        if (desc === undefined) throw new ValueNotTransferable(`${p}[${i}] is a hole (sparse arrays cannot cross)`);
        if (!('value' in desc)) throw new ValueNotTransferable(`${p}[${i}] is an accessor (getter/setter)`);
        walk(desc.value, `${p}[${i}]`, depth + 1);
      }
      if (keys.length !== object.length + 1) throw new ValueNotTransferable(`${p} is an array with extra (non-index) properties`);
    } else if (proto === Map.prototype) {
      let i = 0;
      for (const [k, val] of Map.prototype.entries.call(object as Map<unknown, unknown>)) {
        walk(k, `${p}.<key ${i}>`, depth + 1);
        walk(val, `${p}.<value ${i}>`, depth + 1);
        i++;
      }
    } else if (proto === Set.prototype) {
      let i = 0;
      for (const element of Set.prototype.values.call(object as Set<unknown>)) walk(element, `${p}.<element ${i++}>`, depth + 1);
    } else if (proto === Object.prototype || proto === null) {
      for (const key of Reflect.ownKeys(object)) {
        if (typeof key === 'symbol') throw new ValueNotTransferable(`${p} has a symbol-keyed property`);
        const desc = Object.getOwnPropertyDescriptor(object, key)!;
        if (!('value' in desc)) throw new ValueNotTransferable(`${p}.${key} is an accessor (getter/setter)`);
        if (!desc.enumerable) throw new ValueNotTransferable(`${p}.${key} is not enumerable`);
        walk(desc.value, `${p}.${key}`, depth + 1);
      }
    } else {
      const name = (proto as { constructor?: { name?: unknown } } | null)?.constructor?.name;
      throw new ValueNotTransferable(`${p} is an instance of ${typeof name === 'string' && name !== '' ? name : 'a class'}, not a plain object`);
    }
    ancestors.delete(object);
  };
  walk(value, path, 0);
}
