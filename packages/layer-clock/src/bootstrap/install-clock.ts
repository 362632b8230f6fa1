/**
 * The guest-side half of the clock layer: replaces every route to the current time and to
 * unseeded randomness that a bare V8 context offers.
 *
 * Self-contained: its compiled source text (`Function.prototype.toString`) becomes the
 * bootstrap script, so it imports nothing at run time and closes over nothing of the host. It
 * runs once, before any guest code. Everything it later calls at the guest's request is
 * captured first, so a guest that patches `Reflect`, `WeakMap.prototype` or
 * `Function.prototype` cannot change what the replacements do. Neither `eval` nor `Function`
 * is used: it loads where code generation from strings is disabled.
 *
 * @internal
 * @module
 */

/* eslint-disable */

import type { SeededCrypto } from './random.js';

/** What the bootstrap is configured with; plain data, written into the script as JSON. */
export interface ClockConfig {
  /** The frozen time, in milliseconds since the epoch. */
  readonly at: number;
  /** The seed of `Math.random`, an unsigned 32-bit integer. */
  readonly seed: number;
}

/** The generators of `random.ts`, passed in as source text (the bootstrap imports nothing). */
export interface ClockRandom {
  readonly createSfc32: (seed: number) => () => number;
  readonly doublesFrom: (next32: () => number) => () => number;
  readonly cryptoFrom: (next32: () => number) => SeededCrypto;
  readonly cryptoSeedMask: number;
}

// The parameter types are loose: this function runs in another realm and is checked by tests.
export function installClock(g: any, config: ClockConfig, random: ClockRandom): void {
  'use strict';
  const at = config.at;

  // --- primordials -------------------------------------------------------------------------
  const ReflectApply = Reflect.apply;
  const ReflectConstruct = Reflect.construct;
  const ReflectOwnKeys = Reflect.ownKeys;
  const ObjectDefineProperty = Object.defineProperty;
  const ObjectGetOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
  const ObjectGetPrototypeOf = Object.getPrototypeOf;
  // Not `Function.prototype`: a host that disabled code generation first may have replaced `Function`.
  const FunctionPrototypeBind = ObjectGetPrototypeOf(function () {}).bind;
  const WeakMapCtor = WeakMap;
  const WeakMapGet = WeakMap.prototype.get;
  const WeakMapSet = WeakMap.prototype.set;
  const TypeErrorCtor = TypeError;

  /** Redefines an existing property with its own attributes (only the value or getter changes), so it keeps its place in key order too. */
  const replaceValue = (object: any, key: PropertyKey, value: unknown): void => {
    const desc: any = ObjectGetOwnPropertyDescriptor(object, key);
    ObjectDefineProperty(object, key, { value, writable: desc.writable, enumerable: desc.enumerable, configurable: desc.configurable });
  };
  const replaceGetter = (object: any, key: PropertyKey, get: () => unknown): void => {
    const desc: any = ObjectGetOwnPropertyDescriptor(object, key);
    ObjectDefineProperty(object, key, { get, set: desc.set, enumerable: desc.enumerable, configurable: desc.configurable });
  };

  /**
   * Gives a replacement that ignores `this` the look of a built-in: a bound function prints as
   * `function () { [native code] }` and has neither source text nor `prototype`. It stays a
   * constructor only if `fn` is one (arrow functions give non-constructors, as `Date.now` is).
   */
  const native = (fn: Function, name: string, length: number): any => {
    const bound = ReflectApply(FunctionPrototypeBind, fn, [undefined]);
    ObjectDefineProperty(bound, 'length', { value: length, writable: false, enumerable: false, configurable: true });
    ObjectDefineProperty(bound, 'name', { value: name, writable: false, enumerable: false, configurable: true });
    return bound;
  };

  // --- Date --------------------------------------------------------------------------------
  const OriginalDate = g.Date;
  const DatePrototype = OriginalDate.prototype;
  const DatePrototypeToString = DatePrototype.toString;

  // With no argument, `at`; with arguments, the original. Called without `new`, the spec's
  // `Date(...)` ignores its arguments and returns the current time as a string: `at`'s string.
  // `new.target` is the subclass under `class D extends Date` and `Reflect.construct(Date, [], X)`,
  // so instances get the right prototype; the original constructor never sees guest code.
  // Named so that stack traces read `new Date`, as they do with the original.
  const FrozenDateTarget = function Date(...args: unknown[]): any {
    if (new.target === undefined) return ReflectApply(DatePrototypeToString, ReflectConstruct(OriginalDate, [at], OriginalDate), []);
    return ReflectConstruct(OriginalDate, args.length === 0 ? [at] : args, new.target);
  };
  // `new Date()` reaches the target with itself as `new.target`, and `instanceof Date` asks the
  // target's `prototype`: both must be the original prototype object.
  ObjectDefineProperty(FrozenDateTarget, 'prototype', { value: DatePrototype, writable: false, enumerable: false, configurable: false });
  const FrozenDate = native(FrozenDateTarget, 'Date', 0);
  const frozenNow = native(() => at, 'now', 0);

  // Statics in the original's key order and attributes. Only the ones known to be harmless are
  // copied: a static a future V8 adds could read the clock, so it is left out (fail closed).
  const dateStatics = ReflectOwnKeys(OriginalDate);
  for (let i = 0; i < dateStatics.length; i++) {
    const key = dateStatics[i]!;
    const desc: any = ObjectGetOwnPropertyDescriptor(OriginalDate, key);
    if (key === 'now') desc.value = frozenNow;
    else if (key !== 'length' && key !== 'name' && key !== 'prototype' && key !== 'parse' && key !== 'UTC') continue;
    ObjectDefineProperty(FrozenDate, key, desc);
  }
  replaceValue(DatePrototype, 'constructor', FrozenDate);
  replaceValue(g, 'Date', FrozenDate);

  // --- Intl.DateTimeFormat: format() and formatToParts() without a date mean "now" ------------
  const Intl = g.Intl;
  const DateTimeFormat = Intl !== undefined && Intl !== null ? Intl.DateTimeFormat : undefined;
  if (typeof DateTimeFormat === 'function') {
    const proto = DateTimeFormat.prototype;
    const formatDesc: any = ObjectGetOwnPropertyDescriptor(proto, 'format');
    if (formatDesc !== undefined && typeof formatDesc.get === 'function') {
      const originalGetFormat = formatDesc.get;
      // The original getter returns the same bound function on every read; so does this one.
      const wrappers = new WeakMapCtor<object, Function>();
      const getFormat = (
        ObjectGetOwnPropertyDescriptor(
          {
            get format() {
              // Throws the original TypeError for a receiver that is no DateTimeFormat.
              const bound: any = ReflectApply(originalGetFormat, this, []);
              let wrapper = ReflectApply(WeakMapGet, wrappers, [bound]);
              if (wrapper === undefined) {
                wrapper = native((date?: unknown) => bound(date === undefined ? at : date), bound.name, bound.length);
                ReflectApply(WeakMapSet, wrappers, [bound, wrapper]);
              }
              return wrapper;
            },
          },
          'format',
        ) as any
      ).get;
      replaceGetter(proto, 'format', getFormat);
    }
    const originalFormatToParts = proto.formatToParts;
    if (typeof originalFormatToParts === 'function') {
      const { formatToParts } = {
        formatToParts(this: unknown, date?: unknown) {
          return ReflectApply(originalFormatToParts, this, [date === undefined ? at : date]);
        },
      };
      replaceValue(proto, 'formatToParts', formatToParts);
    }
  }

  // --- Math.random -------------------------------------------------------------------------
  const nextDouble = random.doublesFrom(random.createSfc32(config.seed));
  replaceValue(
    g.Math,
    'random',
    native(() => nextDouble(), 'random', 0),
  );

  // --- crypto.getRandomValues and crypto.randomUUID (where a bootstrap such as WEB_POLYFILLS made them) ---
  // A second sfc32 stream: Math.random's sequence does not depend on whether crypto exists.
  // The layer creates no crypto; each function is replaced where it is found (an own property
  // or on the prototype chain), keeping its attributes.
  const cryptoDesc: any = ObjectGetOwnPropertyDescriptor(g, 'crypto');
  const crypto = cryptoDesc !== undefined ? cryptoDesc.value : undefined;
  if (crypto !== null && typeof crypto === 'object') {
    const seeded = random.cryptoFrom(random.createSfc32((config.seed ^ random.cryptoSeedMask) >>> 0));
    const U8 = Uint8Array;
    const TypedArrayPrototype = ObjectGetPrototypeOf(U8.prototype);
    const typedArrayGetter = (key: PropertyKey): Function => (ObjectGetOwnPropertyDescriptor(TypedArrayPrototype, key) as any).get;
    // Brand-checking getters: undefined (the tag) or a throw for anything that is no typed array.
    const tagOf = typedArrayGetter(Symbol.toStringTag);
    const bufferOf = typedArrayGetter('buffer');
    const offsetOf = typedArrayGetter('byteOffset');
    const lengthOf = typedArrayGetter('byteLength');
    const dataViewLength = (ObjectGetOwnPropertyDescriptor(DataView.prototype, 'byteLength') as any).get;
    const DOMExceptionDesc: any = ObjectGetOwnPropertyDescriptor(g, 'DOMException');
    const DOMExceptionCtor = DOMExceptionDesc !== undefined && typeof DOMExceptionDesc.value === 'function' ? DOMExceptionDesc.value : undefined;
    const RangeErrorCtor = RangeError;
    const integerArrays: Record<string, true> = {
      __proto__: null,
      Int8Array: true,
      Uint8Array: true,
      Uint8ClampedArray: true,
      Int16Array: true,
      Uint16Array: true,
      Int32Array: true,
      Uint32Array: true,
      BigInt64Array: true,
      BigUint64Array: true,
    } as any;
    const isDataView = (value: unknown): boolean => {
      try {
        ReflectApply(dataViewLength, value, []);
        return true;
      } catch {
        return false;
      }
    };
    const domError = (message: string, name: string, Fallback: any): any =>
      DOMExceptionCtor !== undefined ? ReflectConstruct(DOMExceptionCtor, [message, name], DOMExceptionCtor) : new Fallback(message);
    const getRandomValues = (array: any): any => {
      const tag = ReflectApply(tagOf, array, []);
      if (tag === undefined || integerArrays[tag] !== true) {
        if (tag === undefined && !isDataView(array)) {
          throw new TypeErrorCtor("Failed to execute 'getRandomValues' on 'Crypto': parameter 1 is not of type 'ArrayBufferView'.");
        }
        throw domError(`getRandomValues takes an integer typed array, not a ${tag === undefined ? 'DataView' : tag}`, 'TypeMismatchError', TypeErrorCtor);
      }
      const n = ReflectApply(lengthOf, array, []);
      if (n > 65536) throw domError(`getRandomValues takes at most 65536 bytes, not ${n}`, 'QuotaExceededError', RangeErrorCtor);
      seeded.fill(new U8(ReflectApply(bufferOf, array, []), ReflectApply(offsetOf, array, []), n), n);
      return array;
    };
    const replacements: Record<string, [Function, number]> = {
      __proto__: null,
      getRandomValues: [getRandomValues, 1],
      randomUUID: [() => seeded.uuid(), 0],
    } as any;
    const keys = ['getRandomValues', 'randomUUID'];
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      for (let holder = crypto; holder !== null; holder = ObjectGetPrototypeOf(holder)) {
        const desc: any = ObjectGetOwnPropertyDescriptor(holder, key);
        if (desc === undefined) continue;
        if (typeof desc.value === 'function') {
          const [fn, length] = replacements[key]!;
          replaceValue(holder, key, native(fn, key, length));
        }
        break;
      }
    }
  }

  // --- Temporal.Now (behind --harmony-temporal in Node 24's V8) -------------------------------
  const Temporal = g.Temporal;
  const Now = Temporal !== undefined && Temporal !== null ? Temporal.Now : undefined;
  if (Now !== undefined && Now !== null) {
    const Instant = Temporal.Instant;
    const InstantPrototype = Instant && Instant.prototype;
    const ZonedPrototype = Temporal.ZonedDateTime && Temporal.ZonedDateTime.prototype;
    const fromEpochMilliseconds = Instant && Instant.fromEpochMilliseconds;
    const toZonedDateTimeISO = InstantPrototype && InstantPrototype.toZonedDateTimeISO;
    const toZonedDateTime = InstantPrototype && InstantPrototype.toZonedDateTime;
    const toPlainDateTime = ZonedPrototype && ZonedPrototype.toPlainDateTime;
    const toPlainDate = ZonedPrototype && ZonedPrototype.toPlainDate;
    const toPlainTime = ZonedPrototype && ZonedPrototype.toPlainTime;
    // The default time zone is not a clock: the original stays (timeZoneId, or timeZone in older drafts).
    const timeZoneOf = Now.timeZoneId !== undefined ? Now.timeZoneId : Now.timeZone;
    const call = (fn: unknown, self: unknown, args: unknown[]): any => {
      if (typeof fn !== 'function') throw new TypeErrorCtor('Temporal.Now is frozen by @strata/layer-clock and this engine lacks what it needs');
      return ReflectApply(fn, self, args);
    };
    const zone = (timeZone: unknown): unknown => (timeZone === undefined ? call(timeZoneOf, Now, []) : timeZone);
    const instant = (): any => call(fromEpochMilliseconds, Instant, [at]);
    const zonedISO = (timeZone?: unknown): any => call(toZonedDateTimeISO, instant(), [zone(timeZone)]);
    const zoned = (calendar: unknown, timeZone?: unknown): any => call(toZonedDateTime, instant(), [{ calendar, timeZone: zone(timeZone) }]);
    const frozen: Record<string, Function> = {
      instant,
      zonedDateTimeISO: zonedISO,
      zonedDateTime: zoned,
      plainDateTimeISO: (timeZone?: unknown) => call(toPlainDateTime, zonedISO(timeZone), []),
      plainDateTime: (calendar: unknown, timeZone?: unknown) => call(toPlainDateTime, zoned(calendar, timeZone), []),
      plainDateISO: (timeZone?: unknown) => call(toPlainDate, zonedISO(timeZone), []),
      plainDate: (calendar: unknown, timeZone?: unknown) => call(toPlainDate, zoned(calendar, timeZone), []),
      plainTimeISO: (timeZone?: unknown) => call(toPlainTime, zonedISO(timeZone), []),
    };
    const keys = ReflectOwnKeys(Now);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      const desc: any = ObjectGetOwnPropertyDescriptor(Now, key);
      if (typeof key !== 'string' || typeof desc.value !== 'function' || key === 'timeZoneId' || key === 'timeZone') continue;
      // A Temporal.Now function this file does not know could read the clock: it throws instead.
      const replacement =
        ObjectGetOwnPropertyDescriptor(frozen, key) !== undefined
          ? frozen[key]!
          : () => {
              throw new TypeErrorCtor(`Temporal.Now.${key} is disabled by @strata/layer-clock`);
            };
      replaceValue(Now, key, native(replacement, key, desc.value.length));
    }
  }

  // --- ShadowRealm: a new realm would come with its own, real Date ---------------------------
  if (ObjectGetOwnPropertyDescriptor(g, 'ShadowRealm') !== undefined) delete g.ShadowRealm;

  // --- performance: the same origin as Date --------------------------------------------------
  // performance.now() keeps counting (WEB_POLYFILLS runs it on virtual time, so busy-waits and
  // timers work); its origin moves to `at`, so timeOrigin + now() starts where Date stands.
  const performanceDesc: any = ObjectGetOwnPropertyDescriptor(g, 'performance');
  const performance = performanceDesc !== undefined ? performanceDesc.value : undefined;
  if (performance !== null && typeof performance === 'object') {
    for (let holder = performance; holder !== null; holder = ObjectGetPrototypeOf(holder)) {
      const desc: any = ObjectGetOwnPropertyDescriptor(holder, 'timeOrigin');
      if (desc === undefined) continue;
      if (typeof desc.get === 'function') {
        const originalGet = desc.get;
        const getTimeOrigin = (
          ObjectGetOwnPropertyDescriptor(
            {
              get timeOrigin() {
                ReflectApply(originalGet, this, []); // keeps the original's receiver check
                return at;
              },
            },
            'timeOrigin',
          ) as any
        ).get;
        replaceGetter(holder, 'timeOrigin', getTimeOrigin);
      } else {
        replaceValue(holder, 'timeOrigin', at);
      }
      break;
    }
    for (let holder = performance; holder !== null; holder = ObjectGetPrototypeOf(holder)) {
      const desc: any = ObjectGetOwnPropertyDescriptor(holder, 'toJSON');
      if (desc === undefined) continue;
      const originalToJSON = desc.value;
      if (typeof originalToJSON === 'function') {
        const { toJSON } = {
          toJSON(this: unknown) {
            const json = ReflectApply(originalToJSON, this, []);
            if (json !== null && typeof json === 'object' && ObjectGetOwnPropertyDescriptor(json, 'timeOrigin') !== undefined) {
              ObjectDefineProperty(json, 'timeOrigin', { value: at });
            }
            return json;
          },
        };
        replaceValue(holder, 'toJSON', toJSON);
      }
      break;
    }
  }
}
