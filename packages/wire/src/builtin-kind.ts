/**
 * An object's built-in kind as V8 knows it (its brand), whatever its prototype says. A check of
 * the transferable set asks it twice: to name what it refuses, and before it walks an object whose
 * prototype says "plain" (`Object.prototype` or `null`), because
 * `Object.setPrototypeOf(new ArrayBuffer(8), null)` looks like `{}` to every prototype check, yet a
 * structured copy makes it an ArrayBuffer again and an encoder that reads keys writes `{}`.
 *
 * @module
 */
import { types } from 'node:util';

const {
  isMap,
  isSet,
  isDate,
  isUint8Array,
  isTypedArray,
  isAnyArrayBuffer,
  isDataView,
  isNativeError,
  isBoxedPrimitive,
  isRegExp,
  isPromise,
  isWeakMap,
  isWeakSet,
} = types;

/** The built-in kind of `object` (V8's brand, not its prototype), or undefined for an ordinary object. Runs no getter and no trap. */
export function builtinKind(object: object): string | undefined {
  if (isMap(object)) return 'Map';
  if (isSet(object)) return 'Set';
  if (isDate(object)) return 'Date';
  if (isUint8Array(object)) return 'Uint8Array';
  if (isTypedArray(object)) return 'typed array';
  if (isAnyArrayBuffer(object)) return 'ArrayBuffer';
  if (isDataView(object)) return 'DataView';
  if (isNativeError(object)) return 'Error';
  if (isBoxedPrimitive(object)) return 'boxed primitive';
  if (isRegExp(object)) return 'RegExp';
  if (isPromise(object)) return 'Promise';
  if (isWeakMap(object) || isWeakSet(object)) return 'WeakMap or WeakSet';
  return undefined;
}
