import type { GlobalObject, Internal } from './internal.js';

/**
 * Installs the helpers every other installer uses, and `reportError`.
 *
 * Self-contained: its source text is embedded in `WEB_POLYFILLS`.
 *
 * @internal
 */
export function installGlobals(g: GlobalObject, internal: Internal): void {
  const { defineProperty, getOwnPropertyNames, getOwnPropertyDescriptor, getPrototypeOf } = Object;
  const apply = Reflect.apply;

  internal.platformBrands = [];

  // Captured now: hosts may delete SharedArrayBuffer (and WeakRef, Atomics...)
  // from the global object after the bootstrap, or before it.
  const byteLengthGetter = (ctor: unknown): (() => number) | undefined =>
    typeof ctor === 'function' ? getOwnPropertyDescriptor(ctor.prototype, 'byteLength')?.get : undefined;
  const brand =
    (getter: ((this: unknown) => unknown) | undefined) =>
    (value: unknown): boolean => {
      if (getter === undefined || value === null || typeof value !== 'object') return false;
      try {
        apply(getter, value, []);
        return true;
      } catch {
        return false;
      }
    };
  internal.brandCheck = brand;
  const isArrayBuffer = brand(byteLengthGetter(g.ArrayBuffer)) as Internal['isArrayBuffer'];
  const isSharedArrayBuffer = brand(byteLengthGetter(g.SharedArrayBuffer)) as Internal['isSharedArrayBuffer'];
  internal.isArrayBuffer = isArrayBuffer;
  internal.isSharedArrayBuffer = isSharedArrayBuffer;

  // The views' getters, captured now: a guest may replace or shadow them later.
  const U8 = Uint8Array;
  const typedArray = getPrototypeOf(U8.prototype) as object;
  const getter = (proto: object, key: PropertyKey) => getOwnPropertyDescriptor(proto, key)!.get!;
  const typedArrayTag = getter(typedArray, Symbol.toStringTag) as (this: unknown) => string | undefined;
  const viewBuffer = getter(typedArray, 'buffer');
  const viewOffset = getter(typedArray, 'byteOffset');
  const viewLength = getter(typedArray, 'byteLength');
  const dataViewBuffer = getter(DataView.prototype, 'buffer');
  const dataViewOffset = getter(DataView.prototype, 'byteOffset');
  const dataViewLength = getter(DataView.prototype, 'byteLength');
  // The buffer getter, unlike the others, does not throw for a view on a detached buffer.
  const isDataView = brand(dataViewBuffer) as Internal['isDataView'];
  internal.isDataView = isDataView;
  const typedArrayName = (value: unknown): string | undefined => apply(typedArrayTag, value, []);
  internal.typedArrayName = typedArrayName;
  internal.bufferSourceBytes = (value, allowShared = false) => {
    if (isArrayBuffer(value) || (allowShared && isSharedArrayBuffer(value))) return new U8(value);
    const typed = typedArrayName(value) !== undefined;
    if (!typed && !isDataView(value)) return undefined;
    const buffer = apply(typed ? viewBuffer : dataViewBuffer, value, []);
    // A view on a SharedArrayBuffer is not a BufferSource.
    if (!allowShared && !isArrayBuffer(buffer)) return undefined;
    return new U8(buffer, apply(typed ? viewOffset : dataViewOffset, value, []), apply(typed ? viewLength : dataViewLength, value, []));
  };

  internal.define = (name, value) => {
    // WebIDL interface objects and operations on the global are writable,
    // configurable and not enumerable, so `for (k in globalThis)` stays quiet.
    defineProperty(g, name, { value, writable: true, enumerable: false, configurable: true });
  };

  internal.defineLazyGroup = (names, load) => {
    let loaded: ReturnType<typeof load> | undefined;
    const getters: Record<string, unknown> = { __proto__: null } as never;
    const run = (): ReturnType<typeof load> => {
      if (loaded === undefined) {
        loaded = load();
        // Globals the guest has not replaced or deleted meanwhile become data properties.
        for (const name of names) {
          const current = getOwnPropertyDescriptor(g, name);
          if (current !== undefined && current.get === getters[name]) internal.define(name, loaded[name]);
        }
      }
      return loaded;
    };
    for (const name of names) {
      const descriptor: PropertyDescriptor = {
        get: () => run()[name],
        // Assigning replaces the global, as assigning a writable data property would.
        set: (value: unknown) => internal.define(name, value),
        enumerable: false,
        configurable: true,
      };
      getters[name] = descriptor.get;
      defineProperty(g, name, descriptor);
    }
    return run;
  };

  internal.webidl = (cls, tag) => {
    // WebIDL members are enumerable on the prototype (class syntax makes them
    // not), and every interface prototype carries its class string.
    const proto = cls.prototype;
    for (const key of getOwnPropertyNames(proto)) {
      if (key === 'constructor') continue;
      const desc = getOwnPropertyDescriptor(proto, key);
      if (desc && desc.configurable) defineProperty(proto, key, { enumerable: true });
    }
    defineProperty(proto, Symbol.toStringTag, { value: tag, configurable: true });
  };

  // The console is looked up on every call, not captured: the host installs
  // its console after this bootstrap, and a guest may replace it.
  const callConsole = (method: string, args: unknown[]): void => {
    try {
      const c = g.console;
      const fn = c == null ? undefined : c[method];
      if (typeof fn === 'function') apply(fn, c, args);
    } catch {
      // A broken console must never break the event loop that reports into it.
    }
  };

  internal.warn = (message) => callConsole('warn', [message]);
  // The console report. events.ts wraps it into HTML's "report an exception"
  // (an `error` event at the global first); everyone calls internal.reportError
  // at the time of the report, so all get that.
  internal.reportError = (error) => callConsole('error', ['Uncaught', error]);

  // HTML's reportError(): report as if uncaught (an `error` event at the
  // global, then the console), without throwing.
  function reportError(e: unknown): void {
    if (arguments.length === 0) {
      throw new TypeError("Failed to execute 'reportError': 1 argument required, but only 0 present.");
    }
    internal.reportError(e);
  }
  internal.define('reportError', reportError);
}
