/**
 * The closed set of JavaScript values that cross the wire.
 *
 * | JavaScript | CBOR |
 * | --- | --- |
 * | `null`, `undefined`, `true`, `false` | simple values 22, 23, 21, 20 |
 * | `number` | integer (major 0/1, at most 4-byte argument) or float64; `-0`, `NaN`, `±Infinity` kept |
 * | `bigint` | 8-byte integer (major 0/1, argument 27) or tag 2/3 bignum when it does not fit 64 bits |
 * | `string` | text string (well-formed UTF-16 only: lone surrogates are refused) |
 * | `Uint8Array` (and `Buffer`, sent as bytes) | byte string, decoded as a plain `Uint8Array` |
 * | `Date` | tag 1 + epoch seconds (integer or float64); an invalid Date is tag 1 + NaN |
 * | array | array (no holes) |
 * | plain object | map with text keys, decoded with `Object.prototype` |
 * | `Set` | tag 258 + array |
 * | `Map` | tag 259 + map (keys of any kind) |
 *
 * @module
 */

/** The wire values that hold no other value (a `Uint8Array` or `Date` is one item). */
export type WireScalar = null | undefined | boolean | number | bigint | string | Uint8Array | Date;

/** Any value that {@link encodeValue} accepts and {@link decodeValue} can produce. */
export type WireValue = WireScalar | WireValue[] | WireObject | Map<WireValue, WireValue> | Set<WireValue>;

/**
 * A plain object of wire values. On encode its prototype must be `Object.prototype` or
 * `null` and every own property an enumerable data property with a string key. Decoded
 * objects have `Object.prototype`; a `"__proto__"` key becomes an own data property.
 */
export interface WireObject {
  [key: string]: WireValue;
}

/**
 * Whether `value` is a plain object: not an array, prototype `Object.prototype` or
 * `null`. This is the shape the decoder gives CBOR maps with text keys. Only the top
 * level is looked at.
 */
export function isWireObject(value: unknown): value is WireObject {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
