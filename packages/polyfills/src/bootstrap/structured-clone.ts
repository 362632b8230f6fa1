import type { GlobalObject, Internal } from './internal.js';

/**
 * Installs `structuredClone`, the HTML structured clone algorithm for what
 * exists in an isolate: primitives (not symbols), Boolean / Number / String /
 * BigInt wrappers, Date, RegExp, ArrayBuffer (resizable ones stay
 * resizable), typed arrays and DataView (sharing a buffer still share the
 * clone of it), Map, Set, Error and its standard subclasses (name, message,
 * stack, cause), DOMException, Blob and File, arrays (holes kept) and plain objects
 * (own enumerable string keys), with cycles and shared references
 * preserved. Functions, symbols, WeakMap / WeakSet / WeakRef / Promise,
 * SharedArrayBuffer and the other polyfill objects throw a `DataCloneError`
 * DOMException.
 *
 * `{ transfer: [arrayBuffer, ...] }` is honoured for ArrayBuffers: the clone
 * gets their contents and the originals are detached, as on the web.
 *
 * Self-contained: its source text is embedded in `WEB_POLYFILLS`.
 *
 * @internal
 */
export function installStructuredClone(_g: GlobalObject, internal: Internal): void {
  const apply = Reflect.apply;
  const { defineProperty, getOwnPropertyDescriptor, keys } = Object;
  const hasOwn = Object.hasOwn;
  const objectToString = Object.prototype.toString;
  const getter = (proto: object, key: PropertyKey): (() => unknown) => getOwnPropertyDescriptor(proto, key)!.get!;
  const mapEntries = Map.prototype.entries;
  const setValues = Set.prototype.values;
  const isError = (Error as { isError?: (v: unknown) => boolean }).isError ?? ((v: unknown) => apply(objectToString, v, []) === '[object Error]');
  const errorConstructors: Record<string, ErrorConstructor> = {
    Error,
    EvalError,
    RangeError,
    ReferenceError,
    SyntaxError,
    TypeError,
    URIError,
  };
  const typedArrays: Record<string, new (buffer: ArrayBuffer, byteOffset: number, length: number) => unknown> = {
    Int8Array,
    Uint8Array,
    Uint8ClampedArray,
    Int16Array,
    Uint16Array,
    Int32Array,
    Uint32Array,
    Float32Array,
    Float64Array,
    BigInt64Array,
    BigUint64Array,
  };
  // Captured now: a host may remove these globals after the bootstrap.
  const weakRefDeref = typeof WeakRef === 'function' ? WeakRef.prototype.deref : undefined;
  const registryUnregister = typeof FinalizationRegistry === 'function' ? FinalizationRegistry.prototype.unregister : undefined;
  const float16 = (globalThis as { Float16Array?: (typeof typedArrays)[string] }).Float16Array;
  if (float16) typedArrays.Float16Array = float16;

  const dataCloneError = (message: string): Error => new internal.DOMException(message, 'DataCloneError');

  const describe = (value: unknown): string => {
    if (typeof value === 'symbol') return value.toString();
    if (typeof value === 'function') return `function ${value.name || ''}`.trim() + '() {}';
    const tag = apply(objectToString, value, []) as string;
    return `#<${tag.slice(8, -1)}>`;
  };

  // Brand checks that throw on the wrong kind of object.
  const is = (fn: Function, value: object, args: unknown[] = []): boolean => {
    try {
      apply(fn, value, args);
      return true;
    } catch {
      return false;
    }
  };

  // CreateDataProperty: never triggers setters, including __proto__.
  const put = (target: object, key: string, value: unknown): void => {
    if (key === '__proto__') {
      defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
    } else {
      (target as Record<string, unknown>)[key] = value;
    }
  };

  const copyBuffer = (buffer: ArrayBuffer): ArrayBuffer => {
    if (buffer.detached) throw dataCloneError('An ArrayBuffer is detached and could not be cloned.');
    const copy = buffer.resizable ? new ArrayBuffer(buffer.byteLength, { maxByteLength: buffer.maxByteLength }) : new ArrayBuffer(buffer.byteLength);
    new Uint8Array(copy).set(new Uint8Array(buffer));
    return copy;
  };

  function cloneValue(value: unknown, memory: Map<object, unknown>): unknown {
    const type = typeof value;
    if (type === 'symbol' || type === 'function') throw dataCloneError(`${describe(value)} could not be cloned.`);
    if (type !== 'object' || value === null) return value;
    const input = value as object;
    if (memory.has(input)) return memory.get(input);

    if (Array.isArray(input)) {
      const out = new Array(input.length);
      memory.set(input, out);
      for (const key of keys(input)) {
        // A getter may have deleted a later key: the standard skips it.
        if (hasOwn(input, key)) put(out, key, cloneValue((input as unknown as Record<string, unknown>)[key], memory));
      }
      return out;
    }

    // The builtin tag (from internal slots, or a builtin's toStringTag)
    // narrows down the candidates; a brand check confirms each one, so an
    // object that merely claims a tag is still cloned as a plain object.
    const tag = (apply(objectToString, input, []) as string).slice(8, -1);
    let out: unknown;
    switch (tag) {
      case 'Boolean':
        if (is(Boolean.prototype.valueOf, input)) out = new Boolean(apply(Boolean.prototype.valueOf, input, []));
        break;
      case 'Number':
        if (is(Number.prototype.valueOf, input)) out = new Number(apply(Number.prototype.valueOf, input, []));
        break;
      case 'String':
        if (is(String.prototype.valueOf, input)) out = new String(apply(String.prototype.valueOf, input, []));
        break;
      case 'BigInt':
        if (is(BigInt.prototype.valueOf, input)) out = Object(apply(BigInt.prototype.valueOf, input, []));
        break;
      case 'Symbol':
        if (is(Symbol.prototype.valueOf, input)) throw dataCloneError(`${describe(input)} could not be cloned.`);
        break;
      case 'Date':
        if (is(Date.prototype.getTime, input)) out = new Date(apply(Date.prototype.getTime, input, []) as number);
        break;
      case 'RegExp': {
        const source = getter(RegExp.prototype, 'source');
        if (input !== RegExp.prototype && is(source, input)) {
          out = new RegExp(apply(source, input, []) as string, apply(getter(RegExp.prototype, 'flags'), input, []) as string);
        }
        break;
      }
      case 'ArrayBuffer':
        if (internal.isArrayBuffer(input)) out = copyBuffer(input);
        break;
      case 'SharedArrayBuffer':
        // Sharing memory with a clone cannot be expressed in plain JavaScript.
        if (internal.isSharedArrayBuffer(input)) throw dataCloneError(`${describe(input)} could not be cloned.`);
        break;
      case 'DataView':
      default: {
        if (ArrayBuffer.isView(input)) {
          const name = tag === 'DataView' ? 'DataView' : internal.typedArrayName(input);
          if (name === undefined) break;
          const view = input as ArrayBufferView;
          const buffer = cloneValue(view.buffer, memory) as ArrayBuffer;
          if (name === 'DataView') out = new DataView(buffer, view.byteOffset, view.byteLength);
          else {
            const Ctor = typedArrays[name];
            if (Ctor === undefined) throw dataCloneError(`${describe(input)} could not be cloned.`);
            out = new Ctor(buffer, view.byteOffset, (view as Uint8Array).length);
          }
        }
        break;
      }
      case 'Map':
        if (is(Map.prototype.has, input, [undefined])) {
          const map = new Map();
          memory.set(input, map);
          // Entries are listed first: the standard snapshots them.
          for (const [k, v] of [...(apply(mapEntries, input, []) as Iterable<[unknown, unknown]>)]) {
            map.set(cloneValue(k, memory), cloneValue(v, memory));
          }
          return map;
        }
        break;
      case 'Set':
        if (is(Set.prototype.has, input, [undefined])) {
          const set = new Set();
          memory.set(input, set);
          for (const v of [...(apply(setValues, input, []) as Iterable<unknown>)]) set.add(cloneValue(v, memory));
          return set;
        }
        break;
      // Objects with internal slots the standard cannot serialise.
      case 'WeakMap':
        if (is(WeakMap.prototype.has, input, [{}])) throw dataCloneError(`${describe(input)} could not be cloned.`);
        break;
      case 'WeakSet':
        if (is(WeakSet.prototype.has, input, [{}])) throw dataCloneError(`${describe(input)} could not be cloned.`);
        break;
      case 'WeakRef':
        if (weakRefDeref && is(weakRefDeref, input)) throw dataCloneError(`${describe(input)} could not be cloned.`);
        break;
      case 'FinalizationRegistry':
        if (registryUnregister && is(registryUnregister, input, [{}])) {
          throw dataCloneError(`${describe(input)} could not be cloned.`);
        }
        break;
      case 'Promise':
        // No side-effect-free brand check exists (then() would mark a
        // rejection handled), so the prototype chain decides.
        if (input instanceof Promise) throw dataCloneError(`${describe(input)} could not be cloned.`);
        break;
    }
    // Generators and iterators (tags "Generator", "Array Iterator"...).
    if (out === undefined && (tag === 'Generator' || tag === 'AsyncGenerator' || tag.endsWith(' Iterator'))) {
      throw dataCloneError(`${describe(input)} could not be cloned.`);
    }
    if (out !== undefined) {
      memory.set(input, out);
      return out;
    }

    if (internal.isBlob(input)) {
      const type = (input as { type: string }).type;
      // A File stays a File, with its name and lastModified (file.ts, which installs later, set these hooks).
      let blob: object;
      if (internal.isFile(input)) {
        const { name, lastModified } = internal.fileState(input);
        blob = new internal.File([input], name, { type, lastModified });
      } else blob = new internal.Blob([input], { type });
      memory.set(input, blob);
      return blob;
    }
    if (internal.isDOMException(input)) {
      const e = input as { message: string; name: string; stack?: unknown };
      const clone = new internal.DOMException(e.message, e.name);
      if (typeof e.stack === 'string') defineProperty(clone, 'stack', { value: e.stack, writable: true, configurable: true });
      memory.set(input, clone);
      return clone;
    }
    if (isError(input)) return cloneError(input as Error, memory);
    for (const brand of internal.platformBrands) {
      if (brand(input)) throw dataCloneError(`${describe(input)} could not be cloned.`);
    }

    // Any other object is cloned as a plain object of its own enumerable
    // string-keyed properties; its prototype is not kept.
    const obj = {};
    memory.set(input, obj);
    for (const key of keys(input)) {
      if (hasOwn(input, key)) put(obj, key, cloneValue((input as Record<string, unknown>)[key], memory));
    }
    return obj;
  }

  function cloneError(input: Error, memory: Map<object, unknown>): Error {
    const name = input.name;
    const Ctor = (typeof name === 'string' && hasOwn(errorConstructors, name) && errorConstructors[name]) || Error;
    const out = new Ctor();
    memory.set(input, out);
    const message = getOwnPropertyDescriptor(input, 'message');
    if (message !== undefined && 'value' in message) {
      defineProperty(out, 'message', { value: `${message.value as string}`, writable: true, configurable: true });
    }
    // V8 keeps the stack and the cause when it clones an error; so do we.
    let stack: unknown;
    try {
      stack = input.stack;
    } catch {
      // a throwing stack getter just means no stack
    }
    defineProperty(out, 'stack', {
      value: typeof stack === 'string' ? stack : undefined,
      writable: true,
      configurable: true,
    });
    const cause = getOwnPropertyDescriptor(input, 'cause');
    if (cause !== undefined && 'value' in cause) {
      defineProperty(out, 'cause', { value: cloneValue(cause.value, memory), writable: true, configurable: true });
    }
    return out;
  }

  function structuredClone(value: unknown, options: unknown = undefined): unknown {
    if (arguments.length === 0) {
      throw new TypeError("Failed to execute 'structuredClone': 1 argument required, but only 0 present.");
    }
    if (options !== undefined && options !== null && typeof options !== 'object') {
      throw new TypeError("Failed to execute 'structuredClone': The provided value is not of type 'StructuredSerializeOptions'.");
    }
    const transferOption = (options as { transfer?: unknown } | null | undefined)?.transfer;
    const transfer: ArrayBuffer[] = [];
    if (transferOption !== undefined) {
      if (transferOption === null || typeof transferOption !== 'object' || typeof (transferOption as Iterable<unknown>)[Symbol.iterator] !== 'function') {
        throw new TypeError(
          "Failed to execute 'structuredClone': Failed to read the 'transfer' property from 'StructuredSerializeOptions': The provided value cannot be converted to a sequence.",
        );
      }
      for (const item of transferOption as Iterable<unknown>) {
        if (item === null || (typeof item !== 'object' && typeof item !== 'function')) {
          throw new TypeError("Failed to execute 'structuredClone': Failed to convert value to 'object'.");
        }
        if (!internal.isArrayBuffer(item)) throw dataCloneError(`Value at index ${transfer.length} does not have a transferable type.`);
        if (transfer.includes(item as ArrayBuffer)) {
          throw dataCloneError(`ArrayBuffer at index ${transfer.length} is a duplicate of an earlier ArrayBuffer.`);
        }
        if ((item as ArrayBuffer).detached) throw dataCloneError(`ArrayBuffer at index ${transfer.length} is already detached.`);
        transfer.push(item as ArrayBuffer);
      }
    }
    const result = cloneValue(value, new Map());
    // Clone first, detach after, so a failed clone leaves the buffers alone;
    // the clone holds a copy, which is observably the same as a move.
    for (const buffer of transfer) buffer.transfer(0);
    return result;
  }

  internal.define('structuredClone', structuredClone);
}
