/**
 * The guest-side half of the runtime, evaluated in every new context before any bootstrap or
 * guest script. It runs inside the isolate, so it must be self-contained: `guestPrelude` is
 * turned into source with `Function.prototype.toString` and never closes over host values.
 *
 * It runs in two steps, so that it can be part of a V8 startup snapshot (`Runtime.createSnapshot`),
 * which holds no host callback:
 *
 * 1. `guestPrelude(setup)` defines everything from plain data: the primordials, the value walk,
 *    the console, the buffer accounting, the taming of code generation under `strictEval`, and
 *    the host hooks a bootstrap captures (`__strataEntropy`, `__strataFetch`, `__strataFetchCancel`)
 *    as forwarders to callbacks that are not there yet. It leaves one function on the global
 *    object, the attach step (`setup.attachGlobal`).
 * 2. The host takes the attach step and calls it once with its callbacks and this runtime's
 *    limits; it returns the internals object. In a fresh runtime that happens before the bootstrap
 *    scripts run, in one restored from a snapshot after them (they ran inside the snapshot).
 *    The attach step deletes its global and works once: a second call throws, so a bootstrap
 *    that kept it hands nothing to the guest. The host calls it before any guest code runs.
 *
 * Everything it needs from the guest realm is captured first ("primordials"), so a guest that
 * later patches `Array.prototype`, `Map.prototype.get` or the iterator protocol cannot change
 * what this code does. Only the host holds a reference to the internals object; nothing here is
 * reachable from `globalThis` once the attach step is consumed.
 *
 * The rule for every function the host calls once guest code may have run (`defineGlobal`,
 * `deleteGlobal`, `settleHostCall`, `checkValue`, `exportValue`, `namespaceToObject`, `takeOutcome`): no
 * destructuring, spread, `for…of` or other use of the iterator protocol; no property read that
 * could reach a getter (own data properties of objects this code made, or descriptors); property
 * descriptors and lookup tables with a null prototype (a guest can put `get` or `value` on
 * `Object.prototype`); only the captured built-ins. Two functions run the guest's own code by
 * design, inside its command and its deadline: `watch` (awaiting a returned promise runs its
 * `then`; `exportValue` given an id calls it) and `describeError` (reading a thrown value's
 * `name`, `message` and `stack`).
 */

/* eslint-disable */

/** What the prelude is built from, before any host callback exists (plain data: it may be part of a snapshot). */
export interface PreludeSetup {
  /**
   * Tame code generation at the end of the prelude, before any bootstrap script runs: a library
   * loaded as a bootstrap that keeps `Function` or `eval` keeps the tamed one.
   */
  strictEval: boolean;
  /** The global a bootstrap leaves its event loop hook on (`EVENT_LOOP_GLOBAL` in @strata/polyfills). */
  eventLoopGlobal: string;
  /** The global the attach step waits on until the host takes it. */
  attachGlobal: string;
  /** The global of the entropy forwarder (`ENTROPY_GLOBAL`). */
  entropyGlobal: string;
  /** The globals of the fetch transport forwarders (`FETCH_GLOBAL`, `FETCH_CANCEL_GLOBAL`), or undefined to offer none. */
  fetchGlobals: readonly [transport: string, cancel: string] | undefined;
  /** The cap on live ArrayBuffer bytes until the attach step sets the runtime's own. */
  maxBufferBytesBeforeAttach: number;
}

/** This runtime's limits, handed to the attach step; plain data. */
export interface PreludeConfig {
  maxBufferBytes: number;
  maxDepth: number;
  /** The most nodes a value may have to cross, shared objects counted at every place they appear. */
  maxNodes: number;
  maxConsoleChars: number;
  /** The ids of the host functions behind the fetch forwarders (transport, cancel), when the setup offered them. */
  fetchIds: readonly [transport: number, cancel: number] | undefined;
}

// The parameter types are `any`: this function runs in another realm and is checked by tests.
export function guestPrelude(setup: PreludeSetup): void {
  'use strict';
  const g: any = globalThis;

  // The host's callbacks and limits: set once, by the attach step (see the end of this function).
  // Until then a bootstrap running inside a snapshot may log (dropped: no host is there yet) and
  // allocate buffers (capped by the setup), and nothing else reaches the host.
  let hostDispatch: any;
  let hostConsole: any = function () {};
  let hostSettled: any;
  let hostBufferBytes: any;
  let hostTakeRejections: any;
  let hostEntropy: any;
  let config: any = { __proto__: null, maxDepth: 0, maxNodes: 0, maxConsoleChars: 0 };
  let attached = false;

  // The most characters of an unhandled rejection's description that reach the host's console.
  const MAX_REJECTION_CHARS = 4096;

  // --- primordials -------------------------------------------------------------------------
  const ReflectApply = Reflect.apply;
  const ReflectConstruct = Reflect.construct;
  const ReflectOwnKeys = Reflect.ownKeys;
  const ReflectDeleteProperty = Reflect.deleteProperty;
  const ObjectGetPrototypeOf = Object.getPrototypeOf;
  const ObjectGetOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
  // `any`: descriptors here have a null prototype (`__proto__: null`), which its type does not name.
  const ObjectDefineProperty: any = Object.defineProperty;
  const ObjectFreeze = Object.freeze;
  const ObjectCreate = Object.create;
  const ArrayIsArray = Array.isArray;
  const NumberIsSafeInteger = Number.isSafeInteger;
  const StringCtor = String;
  const JSONStringify = JSON.stringify;
  const MathMin = Math.min;
  const ObjectPrototype = Object.prototype;
  const ArrayPrototype = Array.prototype;
  const MapPrototype = Map.prototype;
  const SetPrototype = Set.prototype;
  const DatePrototype = Date.prototype;
  const Uint8ArrayPrototype = Uint8Array.prototype;
  const PromisePrototypeThen = Promise.prototype.then;
  const SafeMap: any = Map;
  const SafeWeakMap: any = WeakMap;
  const SafePromise: any = Promise;
  const SafeDate: any = Date;
  const EvalErrorCtor: any = EvalError;
  const SafeSet: any = Set;
  const MapGet = MapPrototype.get;
  const MapSet = MapPrototype.set;
  const MapDelete = MapPrototype.delete;
  const MapForEach = MapPrototype.forEach;
  const SetAdd = SetPrototype.add;
  const SetHas = SetPrototype.has;
  const SetDelete = SetPrototype.delete;
  const SetForEach = SetPrototype.forEach;
  const ArrayPush = ArrayPrototype.push;
  const ArrayJoin = ArrayPrototype.join;
  const StringSlice = String.prototype.slice;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const RangeErrorCtor = RangeError;
  // Looked up by a name the host sends: a null prototype, so 'constructor' or 'toString' finds nothing.
  const ErrorConstructors: any = {
    __proto__: null,
    Error,
    TypeError,
    RangeError,
    SyntaxError,
    ReferenceError,
    EvalError,
    URIError,
  };
  const ArrayBufferPrototype = ArrayBuffer.prototype;
  const ArrayBufferByteLength = ObjectGetOwnPropertyDescriptor(ArrayBufferPrototype, 'byteLength')!.get!;
  const TypedArrayPrototype = ObjectGetPrototypeOf(Uint8ArrayPrototype);
  const TypedArrayByteLength = ObjectGetOwnPropertyDescriptor(TypedArrayPrototype, 'byteLength')!.get!;
  // Brand checks that run no guest code: the tag getter answers undefined for anything but a
  // typed array; the others throw for a receiver without the brand.
  const TypedArrayTag = ObjectGetOwnPropertyDescriptor(TypedArrayPrototype, Symbol.toStringTag)!.get!;
  const DateGetTime = DatePrototype.getTime;
  const MapSize = ObjectGetOwnPropertyDescriptor(MapPrototype, 'size')!.get!;
  const SetSize = ObjectGetOwnPropertyDescriptor(SetPrototype, 'size')!.get!;
  const hasBrand = (getter: any, value: any) => {
    try {
      call(getter, value);
      return true;
    } catch {
      return false;
    }
  };
  const SafeFinalizationRegistry: any = g.FinalizationRegistry;
  // V8's gc(), present when the process runs with --expose-gc (every Strata worker does), so
  // that the buffer cap counts live bytes rather than garbage V8 has not collected yet. V8 makes
  // the global undeletable; it is emptied and frozen so the guest never gets the function.
  // Without it the cap counts what V8 has not collected yet too, which V8's own heuristics keep
  // small next to caps of tens of megabytes. Taken by the attach step: a snapshot's creator has
  // no gc(), and a context restored from it gets one.
  let collectGarbage: any;
  function takeGarbageCollector(): void {
    const gcDescriptor = ObjectGetOwnPropertyDescriptor(g, 'gc');
    collectGarbage = gcDescriptor !== undefined && typeof gcDescriptor.value === 'function' ? gcDescriptor.value : undefined;
    if (gcDescriptor !== undefined) {
      if (gcDescriptor.configurable) delete g.gc;
      else ObjectDefineProperty(g, 'gc', { __proto__: null, value: undefined, writable: false });
    }
  }

  const call = (fn: any, self: any, ...args: any[]): any => ReflectApply(fn, self, args);
  const push = (array: any[], value: any) => call(ArrayPush, array, value);

  // --- Proxies the guest makes ---------------------------------------------------------------
  // No built-in tells a Proxy from its target without running a trap, so every Proxy the guest
  // makes (`new Proxy`, `Proxy.revocable`) is noted here: `checkValue` can then name the path of
  // one that stopped a copy, without touching it. The global stays the real constructor behind a
  // construct trap, so its name, length, `revocable` and `toString` are the built-in's.
  const OriginalProxy: any = Proxy;
  const SafeWeakSet: any = WeakSet;
  const WeakSetAdd = SafeWeakSet.prototype.add;
  const WeakSetHas = SafeWeakSet.prototype.has;
  const guestProxies = new SafeWeakSet();
  const originalRevocable = OriginalProxy.revocable;
  const trackedProxy: any = new OriginalProxy(OriginalProxy, {
    __proto__: null,
    construct(target: any, args: any[], newTarget: any): any {
      const proxy = ReflectConstruct(target, args, newTarget === trackedProxy ? target : newTarget);
      call(WeakSetAdd, guestProxies, proxy);
      return proxy;
    },
  });
  ObjectDefineProperty(OriginalProxy, 'revocable', {
    __proto__: null,
    value: {
      revocable(target: any, handler: any): any {
        const pair = call(originalRevocable, OriginalProxy, target, handler);
        call(WeakSetAdd, guestProxies, ObjectGetOwnPropertyDescriptor(pair, 'proxy')!.value);
        return pair;
      },
    }.revocable,
    writable: true,
    enumerable: false,
    configurable: true,
  });
  ObjectDefineProperty(g, 'Proxy', { __proto__: null, value: trackedProxy, writable: true, enumerable: false, configurable: true });
  // A data property descriptor with a null prototype: ToPropertyDescriptor reads inherited
  // fields, so a literal would pick up a `get` the guest put on Object.prototype.
  const dataProperty = (value: any, enumerable: boolean): any => ({ __proto__: null, value, writable: true, enumerable, configurable: true });
  // An own data property's value, or undefined: never a getter, never the prototype chain.
  const ownValue = (object: any, key: any): any => {
    const desc = ObjectGetOwnPropertyDescriptor(object, key);
    return desc !== undefined && 'value' in desc ? desc.value : undefined;
  };

  // --- values that may cross the boundary ----------------------------------------------------
  // The host copies a value natively first (isolated-vm's serializer runs no Proxy trap and no
  // getter, and refuses Proxies, functions and symbols); only then does `checkValue` walk it, so
  // the walk below never invokes guest code: it reads descriptors only. When the copy fails, the
  // host walks the value with `checkValue` too, for the path: it stops at a function, a symbol,
  // an accessor or a Proxy the guest made (`guestProxies`) before reading anything through it.

  function constructorName(proto: any): string {
    const desc = proto === null ? undefined : ObjectGetOwnPropertyDescriptor(proto, 'constructor');
    const ctor = desc && 'value' in desc ? desc.value : undefined;
    const nameDesc = typeof ctor === 'function' ? ObjectGetOwnPropertyDescriptor(ctor, 'name') : undefined;
    return nameDesc && typeof nameDesc.value === 'string' && nameDesc.value !== '' ? nameDesc.value : 'an unknown class';
  }

  /**
   * Why `root` cannot cross, or undefined. Linear in the distinct objects: each is walked once
   * and its node count and height remembered, so a structure shared along 2^40 paths costs what
   * its 41 arrays cost. Shared objects are accepted, counted at every place they appear (as the
   * wire writes them out) toward `maxNodes` and `maxDepth`; an object inside itself is a cycle.
   */
  function checkValue(root: any, rootPath: string): string | undefined {
    // Paths are built only to describe a refusal: a first walk without them, and only when it
    // refuses, the same walk again with them (most values cross; a path per node costs more than
    // the rest of the walk).
    return walkValue(root, rootPath, false) === undefined ? undefined : walkValue(root, rootPath, true);
  }

  // The objects a walk has met. One map for every walk (a walk runs no guest code, so none starts
  // inside another), emptied when it ends; its methods are its own, so each lookup is a direct call.
  const walkSeen = new SafeMap();
  ObjectDefineProperty(walkSeen, 'get', dataProperty(MapGet, false));
  ObjectDefineProperty(walkSeen, 'set', dataProperty(MapSet, false));
  ObjectDefineProperty(walkSeen, 'clear', dataProperty(MapPrototype.clear, false));
  let walkSeenUsed = false;

  function walkValue(root: any, rootPath: string, describe: boolean): string | undefined {
    const maxDepth = config.maxDepth;
    const maxNodes = config.maxNodes;
    // One map for both facts, to keep it to two lookups per object: OPEN while an object is being
    // walked (meeting it again is a cycle), then its node count and height packed in one number.
    const OPEN = -1;
    const HEIGHTS = 128; // > maxDepth + 1
    const seen = walkSeen;
    let problem: string | undefined;
    let height = 0;
    const tooMany = (path: string, count: number) =>
      `${path} is past the limit of ${maxNodes} nodes for one value (at least ${count}, counting a shared object or array once for every place it appears)`;
    // The nodes `value` counts for (1 for a primitive), or -1 with `problem` set (a message only
    // when describing, '' otherwise); `height` is left at the depth of its deepest object below it.
    const walk = (value: any, path: string, depth: number): number => {
      height = 0;
      const type = typeof value;
      if (value === null || type === 'undefined' || type === 'boolean' || type === 'number' || type === 'string' || type === 'bigint') return 1;
      if (type === 'function') return ((problem = `${path} is a function`), -1);
      if (type === 'symbol') return ((problem = `${path} is a symbol`), -1);
      if (call(WeakSetHas, guestProxies, value)) return ((problem = `${path} is a Proxy`), -1);
      if (depth > maxDepth) return ((problem = `${path} is nested deeper than ${maxDepth} levels`), -1);
      const known = seen.get(value);
      if (known === OPEN) return ((problem = `${path} refers back to an enclosing value (a cycle)`), -1);
      if (known !== undefined) {
        height = known % HEIGHTS;
        if (depth + height > maxDepth) return ((problem = `${path} is nested deeper than ${maxDepth} levels`), -1);
        return (known - height) / HEIGHTS;
      }
      const proto = ObjectGetPrototypeOf(value);
      // The prototype names the kind only with the brand: Object.create(Date.prototype) would
      // copy as {} (the host's own check refuses the converse, a brand behind another prototype).
      if (proto === Uint8ArrayPrototype)
        return call(TypedArrayTag, value) === 'Uint8Array' ? 1 : ((problem = `${path} inherits from Uint8Array.prototype but is not a Uint8Array`), -1);
      if (proto === DatePrototype) {
        if (!hasBrand(DateGetTime, value)) return ((problem = `${path} inherits from Date.prototype but is not a Date`), -1);
        // the copy keeps the time only
        return ReflectOwnKeys(value).length === 0 ? 1 : ((problem = `${path} has extra own properties`), -1);
      }
      if (proto === MapPrototype && !hasBrand(MapSize, value)) return ((problem = `${path} inherits from Map.prototype but is not a Map`), -1);
      if (proto === SetPrototype && !hasBrand(SetSize, value)) return ((problem = `${path} inherits from Set.prototype but is not a Set`), -1);
      seen.set(value, OPEN);
      let nodes = 1;
      let deepest = 0;
      if (ArrayIsArray(value)) {
        if (proto !== ArrayPrototype) return ((problem = `${path} is an instance of ${constructorName(proto)} (an Array subclass)`), -1);
        const length = value.length;
        // Holes first: a sparse array's first hole ends the loop early, whatever its length.
        for (let i = 0; i < length; i++) {
          const desc = ObjectGetOwnPropertyDescriptor(value, i);
          if (desc === undefined) return ((problem = describe ? `${path}[${i}] is a hole (sparse arrays cannot cross)` : ''), -1);
          if (!('value' in desc)) return ((problem = describe ? `${path}[${i}] is an accessor (getter/setter)` : ''), -1);
          const v = desc.value;
          const n = walk(v, describe ? `${path}[${i}]` : '', depth + 1);
          if (n < 0) return -1;
          if (height + 1 > deepest && typeof v === 'object' && v !== null) deepest = height + 1;
          nodes += n;
          if (nodes > maxNodes) return ((problem = tooMany(path, nodes)), -1);
        }
        if (ReflectOwnKeys(value).length !== length + 1) return ((problem = `${path} is an array with extra (non-index) properties`), -1);
      } else if (proto === ObjectPrototype || proto === null) {
        const keys = ReflectOwnKeys(value);
        for (let i = 0; i < keys.length; i++) {
          const key: any = keys[i];
          if (typeof key === 'symbol') return ((problem = `${path} has a symbol-keyed property`), -1);
          const desc = ObjectGetOwnPropertyDescriptor(value, key)!;
          const childPath = describe ? `${path}.${key}` : '';
          if (!('value' in desc)) return ((problem = `${childPath} is an accessor (getter/setter)`), -1);
          if (!desc.enumerable) return ((problem = `${childPath} is not enumerable`), -1);
          const v = desc.value;
          const n = walk(v, childPath, depth + 1);
          if (n < 0) return -1;
          if (height + 1 > deepest && typeof v === 'object' && v !== null) deepest = height + 1;
          // The key is a node of its own, as the wire counts it.
          nodes += n + 1;
          if (nodes > maxNodes) return ((problem = tooMany(path, nodes)), -1);
        }
      } else if (proto === MapPrototype || proto === SetPrototype) {
        if (ReflectOwnKeys(value).length !== 0) return ((problem = `${path} has extra own properties`), -1);
        const child = (v: any, childPath: string): boolean => {
          const n = walk(v, childPath, depth + 1);
          if (n < 0) return false;
          if (height + 1 > deepest && typeof v === 'object' && v !== null) deepest = height + 1;
          nodes += n;
          if (nodes > maxNodes) {
            problem = tooMany(path, nodes);
            return false;
          }
          return true;
        };
        let index = 0;
        let ok = true;
        if (proto === MapPrototype) {
          call(MapForEach, value, (v: any, k: any) => {
            if (ok) ok = child(k, describe ? `${path}.<key ${index}>` : '') && child(v, describe ? `${path}.<value ${index}>` : '');
            index++;
          });
        } else {
          call(SetForEach, value, (v: any) => {
            if (ok) ok = child(v, describe ? `${path}.<element ${index}>` : '');
            index++;
          });
        }
        if (!ok) return -1;
      } else {
        return ((problem = `${path} is an instance of ${constructorName(proto)}, not a plain object`), -1);
      }
      seen.set(value, nodes * HEIGHTS + deepest);
      height = deepest;
      return nodes;
    };
    // Emptied first too when a walk was stopped before its `finally` (a termination). Emptying
    // an empty map still allocates, so a map known empty is left as it is.
    if (walkSeenUsed) seen.clear();
    walkSeenUsed = true;
    try {
      walk(root, rootPath, 0);
    } finally {
      seen.clear();
      walkSeenUsed = false;
    }
    return problem;
  }

  // --- errors ------------------------------------------------------------------------------
  function safeString(value: any, max: number): string {
    try {
      const s = typeof value === 'string' ? value : StringCtor(value);
      return s.length > max ? call(StringSlice, s, 0, max) + '…' : s;
    } catch {
      return '<unprintable>';
    }
  }

  /** [name, message, stack] of a thrown value. Reading them may run guest getters: guest code, under the timeout. */
  function describeError(error: any): [string, string, string | undefined] {
    if (error !== null && typeof error === 'object') {
      let name: any, message: any, stack: any;
      try {
        name = error.name;
        message = error.message;
        stack = error.stack;
      } catch {
        return ['Error', 'an error whose properties throw when read', undefined];
      }
      return [
        typeof name === 'string' ? safeString(name, 200) : 'Error',
        typeof message === 'string' ? safeString(message, 8192) : safeString(message ?? '', 8192),
        typeof stack === 'string' ? safeString(stack, 16384) : undefined,
      ];
    }
    return ['Error', `Uncaught ${typeof error === 'string' ? safeString(error, 8192) : safeString(error, 8192)}`, undefined];
  }

  function makeError(name: string, message: string): any {
    const Ctor = ErrorConstructors[name];
    if (Ctor !== undefined) return new Ctor(message);
    const error = new ErrorCtor(message);
    ObjectDefineProperty(error, 'name', dataProperty(name, false));
    return error;
  }

  // --- host functions ----------------------------------------------------------------------
  const pendingHostCalls = new SafeMap();
  const argumentHolder = ObjectCreate(null);
  argumentHolder.args = undefined;

  function needsCheck(args: any[]): boolean {
    for (let i = 0; i < args.length; i++) {
      const a = args[i];
      if (a !== null && (typeof a === 'object' || typeof a === 'function' || typeof a === 'symbol')) return true;
    }
    return false;
  }

  function makeHostFunction(id: number, name: string): any {
    const hostFunction = function (...args: any[]) {
      // Objects go through the holder: the host copies them with isolated-vm's serializer, which
      // runs no getter and no Proxy trap (a callback's own argument copy would run getters).
      let reply: any;
      if (needsCheck(args)) {
        // The walk reads descriptors only: what it can name never reaches the host, and the
        // host's copy refuses the rest (a Proxy of a kind the walk cannot see).
        const problem = checkValue(args, 'arguments');
        if (problem !== undefined) throw makeError('TypeError', `${name}: ${problem}; it cannot cross to the host`);
        argumentHolder.args = args;
        try {
          reply = hostDispatch(id, true);
        } finally {
          argumentHolder.args = undefined;
        }
      } else if (args.length === 0) {
        // Primitives travel as separate arguments: cheaper than an array through the serializer.
        reply = hostDispatch(id, false);
      } else if (args.length === 1) {
        reply = hostDispatch(id, false, args[0]);
      } else if (args.length === 2) {
        reply = hostDispatch(id, false, args[0], args[1]);
      } else {
        const spread = [id, false];
        for (let i = 0; i < args.length; i++) push(spread, args[i]);
        reply = ReflectApply(hostDispatch, undefined, spread);
      }
      if (reply === null || typeof reply !== 'object') return reply;
      const kind = reply[0];
      if (kind === 0) return reply[1];
      if (kind === 1) throw makeError(reply[1], reply[2]);
      // kind 2: the host function returned a promise; the host settles it later by call id.
      let resolve: any, reject: any;
      const promise = new SafePromise((res: any, rej: any) => {
        resolve = res;
        reject = rej;
      });
      call(MapSet, pendingHostCalls, reply[1], { resolve, reject });
      return promise;
    };
    ObjectDefineProperty(hostFunction, 'name', { __proto__: null, value: name });
    return hostFunction;
  }

  function settleHostCall(callId: number, ok: boolean, value: any, errorName: string, errorMessage: string): void {
    const pending = call(MapGet, pendingHostCalls, callId);
    if (pending === undefined) return;
    call(MapDelete, pendingHostCalls, callId);
    if (ok) pending.resolve(value);
    else pending.reject(makeError(errorName, errorMessage));
  }

  // `value` and `functions` are fresh copies from the host: plain data whose properties are all
  // own, so reading them by index runs nothing the guest defined.
  function defineGlobal(name: string, value: any, functions: any[]): string | undefined {
    let root = value;
    for (let i = 0; i < functions.length; i++) {
      const site = ownValue(functions, i);
      const path = ownValue(site, 0);
      const fn = makeHostFunction(ownValue(site, 1), ownValue(site, 2));
      if (path.length === 0) {
        root = fn;
        continue;
      }
      let node = root;
      for (let j = 0; j < path.length - 1; j++) node = ownValue(node, ownValue(path, j));
      ObjectDefineProperty(node, ownValue(path, path.length - 1), dataProperty(fn, true));
    }
    const existing = ObjectGetOwnPropertyDescriptor(g, name);
    if (existing !== undefined && !existing.configurable) return `globalThis.${name} was made non-configurable by guest code`;
    try {
      ObjectDefineProperty(g, name, dataProperty(root, false));
    } catch {
      return `globalThis.${name} cannot be defined (guest code made the global object non-extensible)`;
    }
    return undefined;
  }

  // A property the guest made non-configurable stays; the host has revoked its functions anyway.
  function deleteGlobal(name: string): void {
    ReflectDeleteProperty(g, name);
  }

  // --- promises the host awaits ------------------------------------------------------------
  const outcomes = new SafeMap();

  /**
   * If `value` is a promise, report its settlement to the host under `id` and return true.
   * `Promise.prototype.then` refuses a non-promise before touching it, so a Proxy's traps never
   * run; on a promise it looks up the species constructor, which may be guest code: the guest's
   * own result, inside its command and deadline.
   */
  function watch(value: any, id: number): boolean {
    if (value === null || typeof value !== 'object') return false;
    try {
      call(
        PromisePrototypeThen,
        value,
        (v: any) => {
          call(MapSet, outcomes, id, v);
          hostSettled(id, true);
        },
        (e: any) => {
          call(MapSet, outcomes, id, e);
          hostSettled(id, false);
        },
      );
    } catch {
      return false;
    }
    return true;
  }

  /**
   * Whether asking `watch` is worth it: a plain object or an array is not a promise, and asking
   * costs a thrown TypeError (about 2 µs). A promise whose prototype was replaced by one of theirs
   * is not watched either; `await` would not unwrap it. Reads no Proxy (its trap is guest code).
   */
  function mayBePromise(value: any): boolean {
    if (call(WeakSetHas, guestProxies, value)) return false;
    const proto = ObjectGetPrototypeOf(value);
    return proto !== ObjectPrototype && proto !== ArrayPrototype && proto !== null;
  }

  /**
   * A value the host takes out, checked and copied in one entry: `[0, value]`, which the host
   * asks isolated-vm to copy as it returns (its serializer refuses what no walk sees), or
   * `[1, problem]` when the walk refused it. Given an `id`, a promise is watched instead (`[2]`).
   * The walk reads descriptors only, so no guest code runs between the check and the copy.
   */
  function exportValue(value: any, id: number | undefined): any[] {
    if (id !== undefined && mayBePromise(value) && watch(value, id)) return [2];
    const problem = checkValue(value, '$');
    return problem === undefined ? [0, value] : [1, problem];
  }

  // The id of the last eval whose script completed (see finishEval).
  let finishedEval: any;

  /**
   * Where the host's eval hands the completion, in the entry that ran the script (`runScript` in
   * native/guest-deadline.cc), for the host to copy: a primitive as it is; an object as
   * `exportValue` answers (`[0, value]`, `[1, problem]`, `[2]` for a watched promise); `[3]` for
   * a function, `[4]` for a symbol. Records `id` first, so that the host can tell a copy that
   * failed after the script from the script's own throw (`evalFinished`).
   */
  function finishEval(value: any, id: number): any {
    finishedEval = id;
    const type = typeof value;
    if (type === 'object') return value === null ? null : exportValue(value, id);
    if (type === 'function') return [3];
    if (type === 'symbol') return [4];
    return value;
  }

  function evalFinished(id: number): boolean {
    return finishedEval === id;
  }

  /** A module namespace as a plain object of its string-named exports. */
  function namespaceToObject(namespace: any): any {
    const out = ObjectCreate(ObjectPrototype);
    const keys = ReflectOwnKeys(namespace);
    for (let i = 0; i < keys.length; i++) {
      const key: any = keys[i];
      if (typeof key === 'string') ObjectDefineProperty(out, key, dataProperty(namespace[key], true));
    }
    return out;
  }

  function takeOutcome(id: number): any {
    const value = call(MapGet, outcomes, id);
    call(MapDelete, outcomes, id);
    return value;
  }

  // --- console -----------------------------------------------------------------------------
  function inspect(value: any, depth: number, seen: any): string {
    const type = typeof value;
    if (type === 'string') return depth === 0 ? value : JSONStringify(value);
    if (type === 'bigint') return `${value}n`;
    if (type === 'symbol') return safeString(value, 200);
    if (type === 'function') return `[Function: ${value.name || '(anonymous)'}]`;
    if (value === null || type !== 'object') return StringCtor(value);
    if (call(SetHas, seen, value)) return '[Circular]';
    if (value instanceof ErrorCtor) return safeString(value.stack ?? `${value.name}: ${value.message}`, 16384);
    if (depth > 2) return ArrayIsArray(value) ? '[Array]' : '[Object]';
    call(SetAdd, seen, value);
    const parts: string[] = [];
    let text: string;
    if (ArrayIsArray(value)) {
      const n = MathMin(value.length, 100);
      for (let i = 0; i < n; i++) push(parts, inspect(value[i], depth + 1, seen));
      if (value.length > n) push(parts, `... ${value.length - n} more items`);
      text = `[ ${call(ArrayJoin, parts, ', ')} ]`;
    } else if (value instanceof SafeMap) {
      call(MapForEach, value, (v: any, k: any) => push(parts, `${inspect(k, depth + 1, seen)} => ${inspect(v, depth + 1, seen)}`));
      text = `Map(${parts.length}) { ${call(ArrayJoin, parts, ', ')} }`;
    } else if (value instanceof SafeSet) {
      call(SetForEach, value, (v: any) => push(parts, inspect(v, depth + 1, seen)));
      text = `Set(${parts.length}) { ${call(ArrayJoin, parts, ', ')} }`;
    } else if (value instanceof SafeDate) {
      text = safeString(value, 100);
    } else {
      const keys = ReflectOwnKeys(value);
      for (let i = 0; i < keys.length && i < 100; i++) {
        const key: any = keys[i];
        if (typeof key === 'symbol') continue;
        const desc = ObjectGetOwnPropertyDescriptor(value, key);
        if (desc === undefined || !desc.enumerable) continue;
        push(parts, `${key}: ${'value' in desc ? inspect(desc.value, depth + 1, seen) : '[Getter/Setter]'}`);
      }
      text = parts.length === 0 ? '{}' : `{ ${call(ArrayJoin, parts, ', ')} }`;
    }
    call(SetDelete, seen, value);
    return text;
  }

  function format(args: any[]): string {
    const parts: string[] = [];
    for (let i = 0; i < args.length; i++) push(parts, inspect(args[i], 0, new SafeSet()));
    const text = call(ArrayJoin, parts, ' ');
    return text.length > config.maxConsoleChars ? call(StringSlice, text, 0, config.maxConsoleChars) : text;
  }

  const counts = new SafeMap();
  const consoleObject = ObjectCreate(ObjectPrototype);
  const level = (name: string, stream: string) =>
    ObjectDefineProperty(consoleObject, name, {
      value: function (...args: any[]) {
        hostConsole(name, stream, format(args));
      },
      writable: true,
      enumerable: true,
      configurable: true,
    });
  level('log', 'stdout');
  level('info', 'stdout');
  level('debug', 'stdout');
  level('dir', 'stdout');
  level('table', 'stdout');
  level('warn', 'stderr');
  level('error', 'stderr');
  level('trace', 'stderr');
  ObjectDefineProperty(consoleObject, 'assert', {
    value: function (condition: any, ...args: any[]) {
      if (!condition) hostConsole('assert', 'stderr', `Assertion failed${args.length > 0 ? `: ${format(args)}` : ''}`);
    },
    writable: true,
    enumerable: true,
    configurable: true,
  });
  ObjectDefineProperty(consoleObject, 'count', {
    value: function (label: any = 'default') {
      const key = StringCtor(label);
      const n = (call(MapGet, counts, key) ?? 0) + 1;
      call(MapSet, counts, key, n);
      hostConsole('count', 'stdout', `${key}: ${n}`);
    },
    writable: true,
    enumerable: true,
    configurable: true,
  });
  ObjectDefineProperty(g, 'console', { __proto__: null, value: consoleObject, writable: true, enumerable: false, configurable: true });

  // --- buffer accounting -------------------------------------------------------------------
  // isolated-vm's allocator counts ordinary ArrayBuffers (reported to us as "externally
  // allocated" bytes, which drop when V8 collects them) but not resizable ones, whose pages V8
  // commits itself. We keep a cheap running estimate and ask the host for the real figure only
  // when the estimate says an allocation would cross the cap.
  let cap = setup.maxBufferBytesBeforeAttach;
  let estimate = 0;
  let resizableCommitted = 0;
  const resizableRegistry = SafeFinalizationRegistry ? new SafeFinalizationRegistry((bytes: number) => (resizableCommitted -= bytes)) : undefined;
  const RegistryRegister = SafeFinalizationRegistry ? SafeFinalizationRegistry.prototype.register : undefined;
  const resizableSizes = new SafeWeakMap();
  const WeakMapGet = SafeWeakMap.prototype.get;
  const WeakMapSet = SafeWeakMap.prototype.set;

  function charge(bytes: number): void {
    if (!(bytes > 0)) return;
    if (estimate + bytes > cap) {
      // Before the attach step (inside a snapshot's creator) the estimate is all there is.
      if (hostBufferBytes !== undefined) {
        estimate = hostBufferBytes() + resizableCommitted;
        if (estimate + bytes > cap && collectGarbage !== undefined) {
          // 'last-resort' repeats until nothing more is freed: array buffers are swept lazily.
          collectGarbage({ type: 'major', execution: 'sync', flavor: 'last-resort' });
          estimate = hostBufferBytes() + resizableCommitted;
        }
      }
      if (estimate + bytes > cap) {
        throw new RangeErrorCtor(`Array buffer allocation of ${bytes} bytes would exceed maxBufferBytes (${cap} bytes live)`);
      }
    }
    estimate += bytes;
  }

  function trackResizable(buffer: any, bytes: number): void {
    resizableCommitted += bytes;
    const previous = call(WeakMapGet, resizableSizes, buffer) ?? 0;
    call(WeakMapSet, resizableSizes, buffer, previous + bytes);
    if (resizableRegistry !== undefined && previous === 0) call(RegistryRegister, resizableRegistry, buffer, bytes);
  }

  function wrapConstructor(
    name: string,
    Original: any,
    sizeOf: (args: any[]) => number | undefined,
    after: (result: any, args: any[], precharged: boolean) => void,
  ): void {
    const wrapped: any = new Proxy(Original, {
      construct(target: any, args: any[], newTarget: any): any {
        const bytes = sizeOf(args);
        if (bytes !== undefined) charge(bytes);
        const result: any = ReflectConstruct(target, args, newTarget === wrapped ? target : newTarget);
        after(result, args, bytes !== undefined);
        return result;
      },
    });
    ObjectDefineProperty(Original.prototype, 'constructor', { __proto__: null, value: wrapped, writable: true, enumerable: false, configurable: true });
    ObjectDefineProperty(g, name, { __proto__: null, value: wrapped, writable: true, enumerable: false, configurable: true });
  }

  function wrapMethod(proto: any, name: string, wrap: (original: any) => any): void {
    const desc = ObjectGetOwnPropertyDescriptor(proto, name);
    if (desc === undefined || typeof desc.value !== 'function') return;
    const original = desc.value;
    const replacement = wrap(original);
    ObjectDefineProperty(replacement, 'name', { __proto__: null, value: name });
    ObjectDefineProperty(replacement, 'length', { __proto__: null, value: original.length });
    ObjectDefineProperty(proto, name, { __proto__: null, value: replacement, writable: true, enumerable: false, configurable: true });
  }

  const isResizableOptions = (args: any[]) => {
    const options = args[1];
    return options !== null && typeof options === 'object' && options.maxByteLength !== undefined;
  };

  wrapConstructor(
    'ArrayBuffer',
    ArrayBuffer,
    (args) => (typeof args[0] === 'number' ? args[0] : undefined),
    (buffer, args, precharged) => {
      const bytes = call(ArrayBufferByteLength, buffer);
      if (!precharged) charge(bytes);
      if (isResizableOptions(args)) trackResizable(buffer, bytes);
    },
  );
  wrapMethod(
    ArrayBufferPrototype,
    'resize',
    (original) =>
      function (this: any, newLength: any) {
        const before = call(ArrayBufferByteLength, this);
        if (typeof newLength === 'number' && newLength > before) charge(newLength - before);
        const result = call(original, this, newLength);
        const grown = call(ArrayBufferByteLength, this) - before;
        if (grown > 0) trackResizable(this, grown);
        return result;
      },
  );
  for (const method of ['transfer', 'transferToFixedLength']) {
    wrapMethod(
      ArrayBufferPrototype,
      method,
      (original) =>
        function (this: any, ...args: any[]) {
          // Charged before the copy is made; the old buffer's bytes are freed with it.
          const before = call(ArrayBufferByteLength, this);
          const after = typeof args[0] === 'number' ? args[0] : before;
          if (after > before) charge(after - before);
          return ReflectApply(original, this, args);
        },
    );
  }
  for (const method of ['slice']) {
    wrapMethod(
      ArrayBufferPrototype,
      method,
      (original) =>
        function (this: any, ...args: any[]) {
          const result = ReflectApply(original, this, args);
          charge(call(ArrayBufferByteLength, result));
          return result;
        },
    );
  }
  if (typeof g.SharedArrayBuffer === 'function') {
    const SharedByteLength = ObjectGetOwnPropertyDescriptor(g.SharedArrayBuffer.prototype, 'byteLength')!.get!;
    wrapConstructor(
      'SharedArrayBuffer',
      g.SharedArrayBuffer,
      (args) => (typeof args[0] === 'number' ? args[0] : undefined),
      (buffer, args, precharged) => {
        const bytes = call(SharedByteLength, buffer);
        if (!precharged) charge(bytes);
        if (isResizableOptions(args)) trackResizable(buffer, bytes);
      },
    );
    wrapMethod(
      g.SharedArrayBuffer.prototype,
      'grow',
      (original) =>
        function (this: any, newLength: any) {
          const before = call(SharedByteLength, this);
          if (typeof newLength === 'number' && newLength > before) charge(newLength - before);
          const result = call(original, this, newLength);
          const grown = call(SharedByteLength, this) - before;
          if (grown > 0) trackResizable(this, grown);
          return result;
        },
    );
  }
  // A view on an existing buffer allocates nothing. Brand checks: the byteLength getters throw
  // on anything that is not their kind of buffer, without running guest code.
  const SharedByteLengthGetter: any =
    typeof g.SharedArrayBuffer === 'function' ? ObjectGetOwnPropertyDescriptor(g.SharedArrayBuffer.prototype, 'byteLength')!.get : undefined;
  const isBuffer = (value: any) =>
    value !== null &&
    typeof value === 'object' &&
    (hasBrand(ArrayBufferByteLength, value) || (SharedByteLengthGetter !== undefined && hasBrand(SharedByteLengthGetter, value)));
  const typedArrayNames = [
    'Int8Array',
    'Uint8Array',
    'Uint8ClampedArray',
    'Int16Array',
    'Uint16Array',
    'Int32Array',
    'Uint32Array',
    'Float32Array',
    'Float64Array',
    'BigInt64Array',
    'BigUint64Array',
    'Float16Array',
  ];
  for (const name of typedArrayNames) {
    const Original = g[name];
    if (typeof Original !== 'function') continue;
    const bytesPerElement = Original.BYTES_PER_ELEMENT;
    wrapConstructor(
      name,
      Original,
      // Charged before allocating: a length, or the length an array-like says it has (reading it
      // may run a guest getter — guest code in the guest's own realm).
      (args) => {
        const source = args[0];
        if (typeof source === 'number') return source * bytesPerElement;
        if (source === null || typeof source !== 'object' || isBuffer(source)) return undefined;
        const length = source.length;
        return typeof length === 'number' ? length * bytesPerElement : undefined;
      },
      (array, args, precharged) => {
        // A view on an existing buffer allocates nothing; anything else made a new buffer.
        if (!precharged && !isBuffer(args[0])) charge(call(TypedArrayByteLength, array));
      },
    );
  }

  // --- shared memory ------------------------------------------------------------------------
  // With SharedArrayBuffer removed, no shared buffer may reach the guest by any route: the
  // constructor stays reachable from every instance's prototype, so the instances themselves are
  // refused where they are made. WebAssembly (present on hosts with the JIT) is the only other
  // maker: a shared Memory, and a module that defines or imports a shared memory. The originals
  // are taken now, before any bootstrap script could replace them.
  const SharedPrototype: any = typeof g.SharedArrayBuffer === 'function' ? g.SharedArrayBuffer.prototype : undefined;
  const Wasm: any = ownValue(g, 'WebAssembly');
  const WasmOriginals: any =
    Wasm !== null && typeof Wasm === 'object'
      ? {
          __proto__: null,
          Memory: ownValue(Wasm, 'Memory'),
          Module: ownValue(Wasm, 'Module'),
          compile: ownValue(Wasm, 'compile'),
          instantiate: ownValue(Wasm, 'instantiate'),
          compileStreaming: ownValue(Wasm, 'compileStreaming'),
          instantiateStreaming: ownValue(Wasm, 'instantiateStreaming'),
          CompileError: ownValue(Wasm, 'CompileError'),
        }
      : undefined;
  const ArrayBufferIsView = ArrayBuffer.isView;
  const SafeUint8Array: any = Uint8Array;
  const TypedArrayBuffer = ObjectGetOwnPropertyDescriptor(TypedArrayPrototype, 'buffer')!.get!;
  const TypedArrayByteOffset = ObjectGetOwnPropertyDescriptor(TypedArrayPrototype, 'byteOffset')!.get!;
  const DataViewPrototype = DataView.prototype;
  const DataViewBuffer = ObjectGetOwnPropertyDescriptor(DataViewPrototype, 'buffer')!.get!;
  const DataViewByteOffset = ObjectGetOwnPropertyDescriptor(DataViewPrototype, 'byteOffset')!.get!;
  const DataViewByteLength = ObjectGetOwnPropertyDescriptor(DataViewPrototype, 'byteLength')!.get!;
  const PromiseResolve = Promise.resolve;
  const PromiseReject = Promise.reject;
  const SHARED_REFUSED = "shared memory is disabled: SharedArrayBuffer is removed (allowGlobals: ['SharedArrayBuffer'] keeps it)";

  /**
   * A private copy of a BufferSource's bytes, read through the built-ins' own getters, so that
   * what is checked is what gets compiled; undefined for anything else (the original refuses it).
   */
  function copyOfBytes(source: any): any {
    if (source === null || typeof source !== 'object') return undefined;
    if (hasBrand(ArrayBufferByteLength, source)) return new SafeUint8Array(new SafeUint8Array(source));
    if (!ArrayBufferIsView(source)) return undefined;
    const view = hasBrand(TypedArrayByteLength, source)
      ? new SafeUint8Array(call(TypedArrayBuffer, source), call(TypedArrayByteOffset, source), call(TypedArrayByteLength, source))
      : new SafeUint8Array(call(DataViewBuffer, source), call(DataViewByteOffset, source), call(DataViewByteLength, source));
    return new SafeUint8Array(view);
  }

  /**
   * Whether a WebAssembly binary defines or imports a shared memory (limits flag 0x02), from its
   * import (2) and memory (5) sections. What this reader does not understand in those sections is
   * refused too: a module V8 accepts must never slip past it.
   */
  function declaresSharedMemory(bytes: any): boolean {
    const end = bytes.length;
    let at = 8;
    const unreadable = () =>
      new WasmOriginals.CompileError(`WebAssembly.Module: the module's imports or memories could not be checked for shared memory (${SHARED_REFUSED})`);
    const byte = (): number => {
      if (at >= end) throw unreadable();
      return bytes[at++];
    };
    const leb = (): number => {
      let result = 0;
      let scale = 1;
      for (let i = 0; i < 10; i++) {
        const b = byte();
        result += (b & 0x7f) * scale;
        if ((b & 0x80) === 0) return result;
        scale *= 128;
      }
      throw unreadable();
    };
    const skip = (n: number) => {
      if (n > end - at) throw unreadable();
      at += n;
    };
    // Limits: flags, minimum, maximum if flag 0x01, page size if 0x08. True when shared (0x02).
    const limits = (): boolean => {
      const flags = leb();
      if (flags > 0x0f) throw unreadable();
      leb();
      if (flags & 0x01) leb();
      if (flags & 0x08) leb();
      return (flags & 0x02) !== 0;
    };
    const valueType = () => {
      const type = byte();
      // (ref null? heaptype): the heap type follows as a signed LEB.
      if (type === 0x63 || type === 0x64) leb();
    };
    // Not a WebAssembly binary this reader knows: the original compiler refuses it.
    if (
      end < 8 ||
      bytes[0] !== 0 ||
      bytes[1] !== 0x61 ||
      bytes[2] !== 0x73 ||
      bytes[3] !== 0x6d ||
      bytes[4] !== 1 ||
      bytes[5] !== 0 ||
      bytes[6] !== 0 ||
      bytes[7] !== 0
    )
      return false;
    while (at < end) {
      const id = byte();
      const size = leb();
      if (size > end - at) throw unreadable();
      const sectionEnd = at + size;
      if (id === 2) {
        for (let count = leb(); count > 0; count--) {
          skip(leb());
          skip(leb());
          const kind = byte();
          if (kind === 0x00) leb();
          else if (kind === 0x01) {
            valueType();
            limits();
          } else if (kind === 0x02) {
            if (limits()) return true;
          } else if (kind === 0x03) {
            valueType();
            byte();
          } else if (kind === 0x04) {
            byte();
            leb();
          } else throw unreadable();
        }
        if (at !== sectionEnd) throw unreadable();
      } else if (id === 5) {
        for (let count = leb(); count > 0; count--) if (limits()) return true;
        if (at !== sectionEnd) throw unreadable();
      }
      at = sectionEnd;
    }
    return false;
  }

  /** The bytes to compile in place of `source`: a checked copy, or `source` itself when it is no BufferSource. */
  function checkedModuleBytes(source: any, what: string): any {
    const copy = copyOfBytes(source);
    if (copy === undefined) return source;
    if (declaresSharedMemory(copy)) throw new WasmOriginals.CompileError(`${what}: the module defines or imports a shared memory; ${SHARED_REFUSED}`);
    return copy;
  }

  function replaceConstructor(name: string, Original: any, replacement: any): void {
    ObjectDefineProperty(replacement, 'name', { __proto__: null, value: name });
    ObjectDefineProperty(replacement, 'length', { __proto__: null, value: Original.length });
    ObjectDefineProperty(replacement, 'prototype', { __proto__: null, value: Original.prototype, writable: false, enumerable: false, configurable: false });
    const statics = ReflectOwnKeys(Original);
    for (let i = 0; i < statics.length; i++) {
      const key = statics[i];
      if (key === 'name' || key === 'length' || key === 'prototype') continue;
      ObjectDefineProperty(replacement, key, ObjectGetOwnPropertyDescriptor(Original, key!));
    }
    ObjectDefineProperty(Original.prototype, 'constructor', { __proto__: null, value: replacement, writable: true, enumerable: false, configurable: true });
    ObjectDefineProperty(Wasm, name, { __proto__: null, value: replacement, writable: true, enumerable: false, configurable: true });
  }

  function replaceFunction(name: string, replacement: any, length: number): void {
    ObjectDefineProperty(replacement, 'name', { __proto__: null, value: name });
    ObjectDefineProperty(replacement, 'length', { __proto__: null, value: length });
    ObjectDefineProperty(Wasm, name, { __proto__: null, value: replacement, writable: true, enumerable: false, configurable: true });
  }

  // The keys a WebAssembly.Memory descriptor may have, read once each: a getter that answers
  // `shared: false` to the check and `true` to the constructor gets one question only.
  const MEMORY_DESCRIPTOR_KEYS = ['address', 'index', 'initial', 'minimum', 'maximum', 'pageSize', 'shared'];

  function closeSharedMemory(): void {
    if (SharedPrototype !== undefined) {
      const removed = function SharedArrayBuffer() {
        throw new TypeErrorCtor(`SharedArrayBuffer: ${SHARED_REFUSED}`);
      };
      ObjectDefineProperty(removed, 'prototype', { __proto__: null, value: SharedPrototype, writable: false, enumerable: false, configurable: false });
      ObjectDefineProperty(SharedPrototype, 'constructor', { __proto__: null, value: removed, writable: false, enumerable: false, configurable: false });
    }
    if (WasmOriginals === undefined) return;
    const OriginalMemory = WasmOriginals.Memory;
    const OriginalModule = WasmOriginals.Module;
    if (typeof OriginalMemory === 'function') {
      const Memory = function Memory(this: any, descriptor: any): any {
        if (new.target === undefined || descriptor === null || (typeof descriptor !== 'object' && typeof descriptor !== 'function')) {
          // Not a construction, or no descriptor: the original's own TypeError.
          return new.target === undefined ? ReflectApply(OriginalMemory, this, [descriptor]) : ReflectConstruct(OriginalMemory, [descriptor], OriginalMemory);
        }
        const copy: any = { __proto__: null };
        for (let i = 0; i < MEMORY_DESCRIPTOR_KEYS.length; i++) {
          const key = MEMORY_DESCRIPTOR_KEYS[i]!;
          const value = descriptor[key];
          if (value !== undefined) copy[key] = value;
        }
        if (copy.shared) throw new TypeErrorCtor(`WebAssembly.Memory: ${SHARED_REFUSED}`);
        return ReflectConstruct(OriginalMemory, [copy], new.target === Memory ? OriginalMemory : new.target);
      };
      replaceConstructor('Memory', OriginalMemory, Memory);
    }
    if (typeof OriginalModule !== 'function') return;
    const Module = function Module(this: any, bytes: any, options: any): any {
      if (new.target === undefined) return ReflectApply(OriginalModule, this, [bytes]);
      const checked = checkedModuleBytes(bytes, 'WebAssembly.Module');
      // Compile options (builtins, imported string constants) pass through as given.
      return ReflectConstruct(OriginalModule, arguments.length > 1 ? [checked, options] : [checked], new.target === Module ? OriginalModule : new.target);
    };
    replaceConstructor('Module', OriginalModule, Module);
    // WebAssembly.Module.exports throws for anything but a compiled module: a brand check that runs no guest code.
    const OriginalModuleExports = ownValue(OriginalModule, 'exports');
    const isCompiledModule = (value: any) => {
      try {
        ReflectApply(OriginalModuleExports, undefined, [value]);
        return true;
      } catch {
        return false;
      }
    };
    const compile = WasmOriginals.compile;
    const instantiate = WasmOriginals.instantiate;
    if (typeof compile === 'function') {
      replaceFunction(
        'compile',
        function compile_(this: any, bytes: any, options: any): any {
          let checked: any;
          try {
            checked = checkedModuleBytes(bytes, 'WebAssembly.compile');
          } catch (error) {
            return call(PromiseReject, SafePromise, error);
          }
          return arguments.length > 1 ? call(compile, Wasm, checked, options) : call(compile, Wasm, checked);
        },
        1,
      );
    }
    if (typeof instantiate === 'function') {
      replaceFunction(
        'instantiate',
        function instantiate_(this: any, source: any, imports: any, options: any): any {
          let checked: any = source;
          if (!isCompiledModule(source)) {
            try {
              checked = checkedModuleBytes(source, 'WebAssembly.instantiate');
            } catch (error) {
              return call(PromiseReject, SafePromise, error);
            }
          }
          return arguments.length > 2 ? call(instantiate, Wasm, checked, imports, options) : call(instantiate, Wasm, checked, imports);
        },
        1,
      );
    }
    // Streaming compiles bytes the check never sees: they go through the checked path instead.
    const viaBytes = (compileBytes: any) =>
      function (this: any, source: any, imports: any): any {
        const response = call(PromiseResolve, SafePromise, source);
        return call(
          PromisePrototypeThen,
          call(PromisePrototypeThen, response, (r: any) => r.arrayBuffer()),
          (bytes: any) => call(compileBytes, Wasm, bytes, imports),
        );
      };
    if (typeof WasmOriginals.compileStreaming === 'function') replaceFunction('compileStreaming', viaBytes(ownValue(Wasm, 'compile')), 1);
    if (typeof WasmOriginals.instantiateStreaming === 'function') replaceFunction('instantiateStreaming', viaBytes(ownValue(Wasm, 'instantiate')), 1);
  }

  // --- after the host's bootstrap scripts --------------------------------------------------
  // `removeGlobals` is a fresh copy from the host; the event loop hook is frozen by its bootstrap.
  function finalize(removeGlobals: string[]): any {
    let sharedRemoved = false;
    for (let i = 0; i < removeGlobals.length; i++) {
      const name = ownValue(removeGlobals, i);
      if (name === 'SharedArrayBuffer') sharedRemoved = true;
      ReflectDeleteProperty(g, name);
    }
    if (sharedRemoved) closeSharedMemory();
    const loop = ownValue(g, setup.eventLoopGlobal);
    return loop !== null && typeof loop === 'object' && typeof ownValue(loop, 'runNext') === 'function' ? loop : undefined;
  }

  // Strict eval: V8's own switch does not reach isolated-vm's isolates, so every way to the
  // eval intrinsic and the four function constructors is replaced by a thrower, frozen in place.
  function tameCodeGeneration(): void {
    const refuse = function () {
      throw new EvalErrorCtor('Code generation from strings disallowed for this context');
    };
    const tame = (proto: any, name: string) => {
      const tamed = function (this: any) {
        return refuse();
      };
      ObjectDefineProperty(tamed, 'name', { __proto__: null, value: name });
      ObjectDefineProperty(tamed, 'prototype', { __proto__: null, value: proto, writable: false, enumerable: false, configurable: false });
      ObjectDefineProperty(proto, 'constructor', { __proto__: null, value: tamed, writable: false, enumerable: false, configurable: false });
      return tamed;
    };
    const tamedFunction = tame(Function.prototype, 'Function');
    tame(
      ObjectGetPrototypeOf(async function () {}),
      'AsyncFunction',
    );
    tame(
      ObjectGetPrototypeOf(function* () {}),
      'GeneratorFunction',
    );
    tame(
      ObjectGetPrototypeOf(async function* () {}),
      'AsyncGeneratorFunction',
    );
    const tamedEval = function (this: any) {
      return refuse();
    };
    ObjectDefineProperty(tamedEval, 'name', { __proto__: null, value: 'eval' });
    ObjectDefineProperty(g, 'Function', { __proto__: null, value: tamedFunction, writable: false, enumerable: false, configurable: false });
    ObjectDefineProperty(g, 'eval', { __proto__: null, value: tamedEval, writable: false, enumerable: false, configurable: false });
  }

  /**
   * The promises rejected with no handler since the last call, as the host reports them:
   * `[[name, message, stack, text] of each, how many more]` (the deadline addon keeps them; see
   * src/guest-deadline.ts). Reading an error's properties may run guest getters: guest code,
   * inside the host's entry and under the command's budget.
   */
  function takeRejections(): [any[], number] {
    const taken = hostTakeRejections();
    if (taken === undefined) return [[], 0];
    const reasons = ownValue(taken, 0);
    const described: any[] = [];
    for (let i = 0; i < reasons.length; i++) {
      const reason = ownValue(reasons, i);
      const [name, message, stack] = describeError(reason);
      let text: string;
      if (reason === null || typeof reason !== 'object') text = safeString(reason, MAX_REJECTION_CHARS);
      else if (stack !== undefined && stack !== '') text = safeString(stack, MAX_REJECTION_CHARS);
      else if (message !== '') text = `${name}: ${safeString(message, MAX_REJECTION_CHARS)}`;
      else text = safeString(reason, MAX_REJECTION_CHARS);
      // Defined, not pushed: a setter the guest put on Array.prototype is not asked.
      ObjectDefineProperty(described, i, dataProperty([name, message, stack, text], true));
    }
    return [described, ownValue(taken, 1)];
  }

  // --- host hooks a bootstrap captures ----------------------------------------------------
  // Forwarders, so that a bootstrap that ran inside a snapshot holds a hook whose host callback
  // arrives later, with the attach step. Each is what the host offers a bootstrap under that name
  // (@strata/polyfills' constants); the finalize step deletes those no bootstrap took.
  const offerHook = (name: string, forward: any): void => {
    ObjectDefineProperty(forward, 'name', { __proto__: null, value: name });
    ObjectDefineProperty(g, name, { __proto__: null, value: forward, writable: true, enumerable: false, configurable: true });
  };
  offerHook(setup.entropyGlobal, function (byteLength: any): any {
    if (hostEntropy === undefined) {
      throw new ErrorCtor(
        `${setup.entropyGlobal}: the host's entropy is not attached yet (a bootstrap inside a snapshot draws it on first use, not while it loads)`,
      );
    }
    return hostEntropy(byteLength);
  });
  let fetchTransport: any;
  let fetchCancel: any;
  const fetchGlobals = setup.fetchGlobals;
  if (fetchGlobals !== undefined) {
    const notAttached = () => new TypeErrorCtor("fetch: the host's transport is not attached yet (a bootstrap inside a snapshot cannot fetch while it loads)");
    offerHook(fetchGlobals[0], function (request: any, id: any): any {
      if (fetchTransport === undefined) throw notAttached();
      return fetchTransport(request, id);
    });
    offerHook(fetchGlobals[1], function (id: any): any {
      if (fetchCancel === undefined) throw notAttached();
      return fetchCancel(id);
    });
  }

  // Before any bootstrap script: what a bootstrap captures is already tamed.
  if (setup.strictEval) tameCodeGeneration();

  const internals = ObjectFreeze({
    checkValue,
    exportValue,
    finishEval,
    evalFinished,
    namespaceToObject,
    argumentHolder,
    describeError,
    defineGlobal,
    deleteGlobal,
    settleHostCall,
    watch,
    takeOutcome,
    finalize,
    takeRejections,
    isSafeInteger: NumberIsSafeInteger,
  });

  /**
   * The attach step: the host's callbacks and this runtime's limits, once. `limits` is a fresh
   * copy from the host. Deletes its own global first; any later call throws.
   */
  function attach(dispatch: any, consoleOut: any, settled: any, bufferBytes: any, takeRejectionsNative: any, entropy: any, limits: any): any {
    ReflectDeleteProperty(g, setup.attachGlobal);
    if (attached) throw new ErrorCtor('the runtime is already attached');
    attached = true;
    hostDispatch = dispatch;
    hostConsole = consoleOut;
    hostSettled = settled;
    hostBufferBytes = bufferBytes;
    hostTakeRejections = takeRejectionsNative;
    hostEntropy = entropy;
    config = limits;
    cap = limits.maxBufferBytes;
    takeGarbageCollector();
    const fetchIds = limits.fetchIds;
    if (fetchGlobals !== undefined && fetchIds !== undefined) {
      fetchTransport = makeHostFunction(ownValue(fetchIds, 0), fetchGlobals[0]);
      fetchCancel = makeHostFunction(ownValue(fetchIds, 1), fetchGlobals[1]);
    }
    return internals;
  }
  ObjectDefineProperty(g, setup.attachGlobal, { __proto__: null, value: attach, writable: false, enumerable: false, configurable: true });
}
