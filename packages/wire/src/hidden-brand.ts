/**
 * A kind the prototype does not tell: an object whose prototype says "plain" (`Object.prototype`
 * or `null`) but which V8 knows as a built-in. `Object.setPrototypeOf(new ArrayBuffer(8), null)`
 * looks like `{}` to every prototype check, yet a structured copy makes it an ArrayBuffer again
 * and an encoder that reads keys writes `{}`. Every check of the transferable set asks this
 * before it walks a plain object's keys.
 *
 * @module
 */
import { types } from 'node:util';

const { isAnyArrayBuffer, isArrayBufferView, isBoxedPrimitive, isDate, isMap, isSet, isRegExp, isNativeError, isPromise, isWeakMap, isWeakSet } = types;

/** The built-in kind of `object` when it has one (V8's brand, not its prototype), else undefined. Runs no getter and no trap. */
export function hiddenBrand(object: object): string | undefined {
  if (isBoxedPrimitive(object)) return 'boxed primitive';
  if (isAnyArrayBuffer(object)) return 'ArrayBuffer';
  if (isArrayBufferView(object)) return 'typed array or DataView';
  if (isDate(object)) return 'Date';
  if (isMap(object)) return 'Map';
  if (isSet(object)) return 'Set';
  if (isRegExp(object)) return 'RegExp';
  if (isNativeError(object)) return 'Error';
  if (isPromise(object)) return 'Promise';
  if (isWeakMap(object) || isWeakSet(object)) return 'WeakMap or WeakSet';
  return undefined;
}
