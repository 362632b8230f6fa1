/**
 * Guest values as JSON, losslessly. A guest result may be any value that crosses the boundary
 * (`undefined`, bigint, `Map`, `Set`, `Date`, `Uint8Array`, NaN, -0, …); plain `JSON.stringify`
 * would drop, throw on, or silently change most of them. Each such value becomes a one-key object
 * whose key starts with `$`:
 *
 * | value | JSON |
 * | --- | --- |
 * | `undefined` | `{"$undefined": true}` |
 * | `12n` | `{"$bigint": "12"}` |
 * | `NaN`, `Infinity`, `-Infinity`, `-0` | `{"$number": "NaN"}` … `{"$number": "-0"}` |
 * | `new Date(0)` | `{"$date": "1970-01-01T00:00:00.000Z"}` (`null` for an invalid date) |
 * | `Uint8Array` | `{"$bytes": "<base64>"}` |
 * | `Map` | `{"$map": [[key, value], …]}` |
 * | `Set` | `{"$set": [value, …]}` |
 * | an object whose only key starts with `$` | `{"$object": {…}}` (escaped, never read as a tag) |
 *
 * Everything else (null, booleans, finite numbers, strings, arrays, plain objects) is itself.
 * {@link fromTaggedJson} reverses it exactly.
 *
 * @module
 */

/** A value `JSON.stringify` writes as it is. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * `value` as plain JSON data, with the values JSON cannot express tagged (see the module
 * comment). Objects come back with a null prototype, so a guest key `"__proto__"` stays a key.
 *
 * @throws TypeError for a value outside the set that crosses the guest boundary (a function,
 * symbol, class instance): such a value never comes out of a runtime.
 */
export function toTaggedJson(value: unknown): JsonValue {
  switch (typeof value) {
    case 'undefined':
      return tag('$undefined', true);
    case 'boolean':
    case 'string':
      return value;
    case 'number':
      if (Number.isNaN(value) || !Number.isFinite(value)) return tag('$number', String(value));
      return Object.is(value, -0) ? tag('$number', '-0') : value;
    case 'bigint':
      return tag('$bigint', value.toString());
    case 'object':
      break;
    default:
      throw new TypeError(`a ${typeof value} cannot be written as JSON`);
  }
  if (value === null) return null;
  if (Array.isArray(value)) return value.map(toTaggedJson);
  if (value instanceof Uint8Array) return tag('$bytes', Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64'));
  if (value instanceof Date) return tag('$date', Number.isNaN(value.getTime()) ? null : value.toISOString());
  if (value instanceof Map)
    return tag(
      '$map',
      [...value].map(([k, v]) => [toTaggedJson(k), toTaggedJson(v)]),
    );
  if (value instanceof Set) return tag('$set', [...value].map(toTaggedJson));
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) throw new TypeError('only plain objects can be written as JSON');
  const out: Record<string, JsonValue> = Object.create(null);
  for (const [key, child] of Object.entries(value)) out[key] = toTaggedJson(child);
  return looksLikeTag(out) ? tag('$object', out) : out;
}

/** The inverse of {@link toTaggedJson}: tagged objects become the values they stand for; plain objects come back as ordinary objects. */
export function fromTaggedJson(json: unknown): unknown {
  if (json === null || typeof json !== 'object') return json;
  if (Array.isArray(json)) return json.map(fromTaggedJson);
  const object = json as Record<string, unknown>;
  if (!looksLikeTag(object)) return decodeEntries(object);
  const [key, payload] = Object.entries(object)[0]!;
  switch (key) {
    case '$undefined':
      return undefined;
    case '$bigint':
      return BigInt(payload as string);
    case '$number':
      return Number(payload);
    case '$date':
      return new Date(payload === null ? NaN : (payload as string));
    case '$bytes':
      return new Uint8Array(Buffer.from(payload as string, 'base64'));
    case '$map':
      return new Map((payload as [unknown, unknown][]).map(([k, v]) => [fromTaggedJson(k), fromTaggedJson(v)]));
    case '$set':
      return new Set((payload as unknown[]).map(fromTaggedJson));
    case '$object':
      return decodeEntries(payload as Record<string, unknown>);
    default:
      throw new TypeError(`unknown tag ${JSON.stringify(key)}`);
  }
}

/** An ordinary object again, each key defined as an own property (a `"__proto__"` key stays a key, never a prototype). */
function decodeEntries(object: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(object))
    Object.defineProperty(out, key, { value: fromTaggedJson(child), enumerable: true, writable: true, configurable: true });
  return out;
}

/** One key, starting with `$`: the shape of a tag, which a guest object must not be mistaken for. */
function looksLikeTag(object: object): boolean {
  const keys = Object.keys(object);
  return keys.length === 1 && keys[0]!.startsWith('$');
}

function tag(key: string, payload: JsonValue): JsonValue {
  const out: Record<string, JsonValue> = Object.create(null);
  out[key] = payload;
  return out;
}
