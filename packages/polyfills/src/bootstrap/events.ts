import type { GlobalObject, Internal } from './internal.js';

/**
 * Installs `Event`, `CustomEvent` and `EventTarget` following the DOM
 * standard's dispatch algorithm for a target with no parent (there is no
 * tree here): capture listeners, then the others, all at AT_TARGET.
 *
 * Also `ErrorEvent`, and HTML's "report an exception" as
 * `internal.reportError`: an `error` event at the global object (which
 * EventTarget's methods accept as a target, as on a WorkerGlobalScope; see
 * global-scope.ts), and `console.error` only when no listener cancelled it.
 *
 * Self-contained: its source text is embedded in `WEB_POLYFILLS`.
 *
 * @internal
 */
export function installEvents(g: GlobalObject, internal: Internal): void {
  const apply = Reflect.apply;
  const RegExpExec = RegExp.prototype.exec;
  const toWellFormed = String.prototype.toWellFormed;
  // Taken now, for the error reporting path: a guest may replace the globals.
  const StringOf = String;
  const ObjectCreate = Object.create;
  const NONE = 0;
  const AT_TARGET = 2;

  interface EventState {
    type: string;
    bubbles: boolean;
    cancelable: boolean;
    composed: boolean;
    canceled: boolean;
    stopPropagation: boolean;
    stopImmediate: boolean;
    dispatching: boolean;
    inPassiveListener: boolean;
    trusted: boolean;
    target: object | null;
    currentTarget: object | null;
    phase: number;
    timeStamp: number;
  }

  interface Listener {
    type: string;
    callback: unknown;
    capture: boolean;
    passive: boolean;
    once: boolean;
    removed: boolean;
  }

  const required = (what: string, count: number, given: number): void => {
    if (given < count) {
      throw new TypeError(`Failed to execute '${what}': ${count} argument${count > 1 ? 's' : ''} required, but only ${given} present.`);
    }
  };

  // WebIDL dictionaries accept undefined, null and objects only.
  const dictionary = (value: unknown, what: string): Record<string, unknown> => {
    if (value === undefined || value === null) return {};
    if (typeof value !== 'object' && typeof value !== 'function') {
      throw new TypeError(`Failed to ${what}: The provided value is not of type 'object'.`);
    }
    return value as Record<string, unknown>;
  };

  // `isTrusted` is [LegacyUnforgeable]: an own, non-configurable accessor on
  // every instance, sharing one getter.
  let isEvent: (value: unknown) => value is object;
  let stateOf: (event: object) => EventState;
  // DOM's "set the canceled flag" (what preventDefault() does; internal
  // callers use this, not the guest-replaceable method).
  const setCanceled = (s: EventState): void => {
    if (s.cancelable && !s.inPassiveListener) s.canceled = true;
  };
  const isTrustedGetter = {
    get isTrusted(): boolean {
      return stateOf(this).trusted;
    },
  };
  const isTrustedDescriptor = {
    get: Object.getOwnPropertyDescriptor(isTrustedGetter, 'isTrusted')!.get,
    enumerable: true,
    configurable: false,
  };

  class Event {
    #s: EventState;

    constructor(type: unknown, eventInitDict: unknown = undefined) {
      required("construct 'Event'", 1, arguments.length);
      const typeString = `${type as string}`;
      const init = dictionary(eventInitDict, "construct 'Event'");
      this.#s = {
        type: typeString,
        bubbles: !!init.bubbles,
        cancelable: !!init.cancelable,
        composed: !!init.composed,
        canceled: false,
        stopPropagation: false,
        stopImmediate: false,
        dispatching: false,
        inPassiveListener: false,
        trusted: false,
        target: null,
        currentTarget: null,
        phase: NONE,
        timeStamp: internal.now(),
      };
      Object.defineProperty(this, 'isTrusted', isTrustedDescriptor);
    }

    static {
      isEvent = (value): value is object => value !== null && typeof value === 'object' && #s in value;
      stateOf = (event) => {
        if (!isEvent(event)) throw new TypeError('Illegal invocation');
        return (event as Event).#s;
      };
    }

    get type(): string {
      return stateOf(this).type;
    }
    get target(): object | null {
      return stateOf(this).target;
    }
    get srcElement(): object | null {
      return stateOf(this).target;
    }
    get currentTarget(): object | null {
      return stateOf(this).currentTarget;
    }
    get eventPhase(): number {
      return stateOf(this).phase;
    }
    get bubbles(): boolean {
      return stateOf(this).bubbles;
    }
    get cancelable(): boolean {
      return stateOf(this).cancelable;
    }
    get composed(): boolean {
      return stateOf(this).composed;
    }
    get defaultPrevented(): boolean {
      return stateOf(this).canceled;
    }
    get timeStamp(): number {
      return stateOf(this).timeStamp;
    }

    composedPath(): object[] {
      const s = stateOf(this);
      return s.dispatching && s.currentTarget ? [s.currentTarget] : [];
    }

    stopPropagation(): void {
      stateOf(this).stopPropagation = true;
    }

    stopImmediatePropagation(): void {
      const s = stateOf(this);
      s.stopPropagation = true;
      s.stopImmediate = true;
    }

    get cancelBubble(): boolean {
      return stateOf(this).stopPropagation;
    }
    set cancelBubble(value: boolean) {
      if (value) stateOf(this).stopPropagation = true;
    }

    preventDefault(): void {
      setCanceled(stateOf(this));
    }

    get returnValue(): boolean {
      return !stateOf(this).canceled;
    }
    set returnValue(value: boolean) {
      if (!value) this.preventDefault();
    }

    initEvent(type: unknown, bubbles: unknown = false, cancelable: unknown = false): void {
      required("execute 'initEvent' on 'Event'", 1, arguments.length);
      const s = stateOf(this);
      if (s.dispatching) return;
      s.type = `${type as string}`;
      s.bubbles = !!bubbles;
      s.cancelable = !!cancelable;
      s.canceled = false;
      s.stopPropagation = false;
      s.stopImmediate = false;
      s.trusted = false;
      s.target = null;
    }
  }

  class CustomEvent extends Event {
    #detail: unknown;

    constructor(type: unknown, eventInitDict: unknown = undefined) {
      required("construct 'CustomEvent'", 1, arguments.length);
      super(type, eventInitDict);
      this.#detail = dictionary(eventInitDict, "construct 'CustomEvent'").detail ?? null;
    }

    get detail(): unknown {
      return this.#detail;
    }

    initCustomEvent(type: unknown, bubbles: unknown = false, cancelable: unknown = false, detail: unknown = null): void {
      required("execute 'initCustomEvent' on 'CustomEvent'", 1, arguments.length);
      if (stateOf(this).dispatching) return;
      this.initEvent(type, bubbles, cancelable);
      this.#detail = detail;
    }
  }

  // WebIDL conversions for ErrorEventInit's members.
  const toDOMString = (value: unknown): string => `${value as string}`; // a Symbol throws TypeError
  const toUSVString = (value: unknown): string => apply(toWellFormed, toDOMString(value), []);
  // ToNumber (a BigInt or Symbol throws TypeError), then ToUint32: NaN and ±Infinity become 0.
  const toUnsignedLong = (value: unknown): number => +(value as number) >>> 0;

  interface ErrorFields {
    message: string;
    filename: string;
    lineno: number;
    colno: number;
    error: unknown;
  }

  let isErrorEvent: (value: unknown) => boolean;
  let errorFieldsOf: (event: object) => ErrorFields;

  // HTML's ErrorEvent: what "report an exception" dispatches at the global.
  class ErrorEvent extends Event {
    #f: ErrorFields;

    constructor(type: unknown, eventInitDict: unknown = undefined) {
      required("construct 'ErrorEvent'", 1, arguments.length);
      super(type, eventInitDict);
      const init = dictionary(eventInitDict, "construct 'ErrorEvent'");
      // WebIDL reads and converts members one by one, in lexicographic order
      // (EventInit's, read by Event, come first).
      const colno = init.colno;
      const c = colno === undefined ? 0 : toUnsignedLong(colno);
      const error = init.error;
      const filename = init.filename;
      const f = filename === undefined ? '' : toUSVString(filename);
      const lineno = init.lineno;
      const l = lineno === undefined ? 0 : toUnsignedLong(lineno);
      const message = init.message;
      const m = message === undefined ? '' : toDOMString(message);
      this.#f = { message: m, filename: f, lineno: l, colno: c, error };
    }

    static {
      isErrorEvent = (value) => value !== null && typeof value === 'object' && #f in value;
      errorFieldsOf = (event) => {
        if (!isErrorEvent(event)) throw new TypeError('Illegal invocation');
        return (event as ErrorEvent).#f;
      };
    }

    get message(): string {
      return errorFieldsOf(this).message;
    }
    get filename(): string {
      return errorFieldsOf(this).filename;
    }
    get lineno(): number {
      return errorFieldsOf(this).lineno;
    }
    get colno(): number {
      return errorFieldsOf(this).colno;
    }
    get error(): unknown {
      return errorFieldsOf(this).error;
    }
  }

  const constants: Array<[string, number]> = [
    ['NONE', 0],
    ['CAPTURING_PHASE', 1],
    ['AT_TARGET', 2],
    ['BUBBLING_PHASE', 3],
  ];
  for (const [key, value] of constants) {
    const desc = { value, writable: false, enumerable: true, configurable: false };
    Object.defineProperty(Event, key, desc);
    Object.defineProperty(Event.prototype, key, desc);
  }

  let isEventTarget: (value: unknown) => value is object;
  let listenersOf: (target: object) => Map<string, Listener[]>;

  function removeListener(target: object, listener: Listener): void {
    listener.removed = true;
    const list = listenersOf(target).get(listener.type);
    if (list === undefined) return;
    const i = list.indexOf(listener);
    if (i !== -1) list.splice(i, 1);
  }

  function addListener(target: object, listener: Listener, signal: object | undefined): void {
    const map = listenersOf(target);
    let list = map.get(listener.type);
    if (list === undefined) map.set(listener.type, (list = []));
    for (const l of list) {
      if (l.callback === listener.callback && l.capture === listener.capture) return;
    }
    list.push(listener);
    if (signal !== undefined) internal.addAbortAlgorithm(signal, () => removeListener(target, listener));
  }

  function invoke(target: object, event: object, s: EventState, capturePhase: boolean): void {
    if (s.stopPropagation) return;
    const list = listenersOf(target).get(s.type);
    if (list === undefined) return;
    s.currentTarget = target;
    // Listeners added during dispatch do not run; removed ones are skipped.
    for (const l of list.slice()) {
      if (l.removed || l.capture !== capturePhase) continue;
      if (l.once) removeListener(target, l);
      if (l.passive) s.inPassiveListener = true;
      try {
        const cb = l.callback;
        if (typeof cb === 'function') {
          apply(cb, target, [event]);
        } else {
          const handleEvent = (cb as { handleEvent?: unknown }).handleEvent;
          if (typeof handleEvent !== 'function') {
            throw new TypeError("The provided callback is not a function and has no 'handleEvent' method.");
          }
          apply(handleEvent, cb, [event]);
        }
      } catch (e) {
        // Like a browser: report, and carry on with the next listener.
        internal.reportError(e);
      }
      s.inPassiveListener = false;
      if (s.stopImmediate) break;
    }
  }

  function dispatch(target: object, event: object, trusted: boolean): boolean {
    const s = stateOf(event);
    s.trusted = trusted;
    s.dispatching = true;
    s.target = target;
    s.phase = AT_TARGET;
    try {
      invoke(target, event, s, true);
      invoke(target, event, s, false);
    } finally {
      s.phase = NONE;
      s.currentTarget = null;
      s.dispatching = false;
      s.stopPropagation = false;
      s.stopImmediate = false;
    }
    return !s.canceled;
  }

  // The global object is an event target too, as a WorkerGlobalScope is
  // (global-scope.ts gives it these methods). WebIDL calls an operation whose
  // `this` is undefined or null on the global, so `addEventListener(...)`
  // called bare works.
  const globalListeners = new Map<string, Listener[]>();
  const targetOf = (self: unknown): object => (self === undefined || self === null ? g : (self as object));

  class EventTarget {
    #listeners = new Map<string, Listener[]>();

    static {
      isEventTarget = (value): value is object => value === g || (value !== null && typeof value === 'object' && #listeners in value);
      listenersOf = (target) => {
        if (target === g) return globalListeners;
        if (!isEventTarget(target)) throw new TypeError('Illegal invocation');
        return (target as EventTarget).#listeners;
      };
    }

    addEventListener(type: unknown, callback: unknown, options: unknown = undefined): void {
      required("execute 'addEventListener' on 'EventTarget'", 2, arguments.length);
      const target = targetOf(this);
      listenersOf(target);
      let capture = false;
      let once = false;
      let passive = false;
      let signal: object | undefined;
      if (options !== null && typeof options === 'object') {
        const o = options as Record<string, unknown>;
        capture = !!o.capture;
        once = !!o.once;
        passive = !!o.passive;
        if (o.signal !== undefined) {
          if (!internal.isAbortSignal(o.signal)) {
            throw new TypeError("Failed to execute 'addEventListener' on 'EventTarget': member signal is not of type 'AbortSignal'.");
          }
          signal = o.signal as object;
        }
      } else {
        capture = !!options;
      }
      if (callback === null || callback === undefined) return;
      if (typeof callback !== 'function' && typeof callback !== 'object') {
        throw new TypeError("Failed to execute 'addEventListener' on 'EventTarget': parameter 2 is not of type 'Object'.");
      }
      if (signal !== undefined && (signal as { aborted: boolean }).aborted) return;
      addListener(target, { type: `${type as string}`, callback, capture, passive, once, removed: false }, signal);
    }

    removeEventListener(type: unknown, callback: unknown, options: unknown = undefined): void {
      required("execute 'removeEventListener' on 'EventTarget'", 2, arguments.length);
      const target = targetOf(this);
      const list = listenersOf(target).get(`${type as string}`);
      const capture = options !== null && typeof options === 'object' ? !!(options as Record<string, unknown>).capture : !!options;
      if (list === undefined) return;
      for (const l of list) {
        if (l.callback === callback && l.capture === capture) {
          removeListener(target, l);
          return;
        }
      }
    }

    dispatchEvent(event: unknown): boolean {
      required("execute 'dispatchEvent' on 'EventTarget'", 1, arguments.length);
      const target = targetOf(this);
      listenersOf(target);
      if (!isEvent(event)) {
        throw new TypeError("Failed to execute 'dispatchEvent' on 'EventTarget': parameter 1 is not of type 'Event'.");
      }
      if (stateOf(event).dispatching) {
        throw new internal.DOMException("Failed to execute 'dispatchEvent' on 'EventTarget': The event is already being dispatched.", 'InvalidStateError');
      }
      return dispatch(target, event, false);
    }
  }

  // Event handler attributes (`onabort`, `onload`...): the handler is one
  // listener, added where it was first set and kept in place when replaced,
  // as HTML specifies.
  const handlers = new WeakMap<object, Map<string, { value: unknown; listener: Listener }>>();
  internal.defineEventHandlers = (proto, types) => {
    for (const type of types) {
      Object.defineProperty(proto, `on${type}`, {
        enumerable: true,
        configurable: true,
        get(this: unknown): unknown {
          const target = targetOf(this);
          listenersOf(target);
          return handlers.get(target)?.get(type)?.value ?? null;
        },
        set(this: unknown, value: unknown) {
          const target = targetOf(this);
          listenersOf(target);
          // [LegacyTreatNonObjectAsNull]: anything but an object means "none".
          const handler = typeof value === 'function' || (typeof value === 'object' && value !== null) ? value : null;
          let map = handlers.get(target);
          const existing = map?.get(type);
          if (handler === null) {
            if (existing !== undefined) {
              removeListener(target, existing.listener);
              map!.delete(type);
            }
            return;
          }
          if (existing !== undefined) {
            existing.value = handler;
            return;
          }
          if (map === undefined) handlers.set(target, (map = new Map()));
          const record = {
            value: handler,
            listener: { type, callback: null as unknown, capture: false, passive: false, once: false, removed: false },
          };
          record.listener.callback = function (this: object, event: Event) {
            const fn = record.value;
            if (typeof fn !== 'function') return;
            // HTML's OnErrorEventHandler: an ErrorEvent named error at a
            // global gets (message, filename, lineno, colno, error), and
            // returning true (not false) cancels it.
            if (type === 'error' && this === g && isErrorEvent(event)) {
              const f = errorFieldsOf(event);
              if (apply(fn, this, [f.message, f.filename, f.lineno, f.colno, f.error]) === true) setCanceled(stateOf(event));
              return;
            }
            if (apply(fn, this, [event]) === false) setCanceled(stateOf(event));
          };
          map.set(type, record);
          addListener(target, record.listener, undefined);
        },
      });
    }
  };

  // HTML's "report an exception": an `error` event (an ErrorEvent, trusted,
  // cancelable) at the global object, then the console report that
  // globals.ts installed, unless a listener cancelled the event. While the
  // event is being dispatched the global is in "error reporting mode": what
  // goes wrong inside error handling (a throwing listener, a reportError()
  // call) goes straight to the console, so it cannot recurse.
  const toConsole = internal.reportError;
  const FRAME = /^ {4}at (?:.*? \()?(.+?):(\d+):(\d+)\)?$/m;
  let reporting = false;

  // Reading an error's name, message and stack may run guest getters: each
  // is guarded, and the report goes ahead whatever they do.
  const describe = (error: unknown): string => {
    try {
      if (error === null || (typeof error !== 'object' && typeof error !== 'function')) return StringOf(error);
      const e = error as { name?: unknown; message?: unknown };
      const name = e.name;
      const message = e.message;
      if (name === undefined && message === undefined) return StringOf(error);
      // Error.prototype.toString, as V8 words its "Uncaught ..." messages.
      const n = name === undefined ? 'Error' : StringOf(name);
      const m = message === undefined ? '' : StringOf(message);
      return n === '' ? m : m === '' ? n : `${n}: ${m}`;
    } catch {
      return '';
    }
  };

  // Where it was thrown: the first frame of a V8 stack trace, if there is one.
  const locate = (error: unknown, init: Record<string, unknown>): void => {
    try {
      if (error === null || typeof error !== 'object') return;
      const stack = (error as { stack?: unknown }).stack;
      if (typeof stack !== 'string') return;
      const m = apply(RegExpExec, FRAME, [stack]) as RegExpExecArray | null;
      if (m === null) return;
      init.filename = m[1];
      init.lineno = +m[2]!;
      init.colno = +m[3]!;
    } catch {
      // no location, then
    }
  };

  internal.reportError = (error) => {
    if (reporting) {
      toConsole(error);
      return;
    }
    let notHandled = true;
    reporting = true;
    try {
      // A null-prototype init: Object.prototype getters cannot reach it.
      const init = ObjectCreate(null) as Record<string, unknown>;
      const text = describe(error);
      init.cancelable = true;
      init.message = text === '' ? 'Uncaught' : `Uncaught ${text}`;
      init.error = error;
      locate(error, init);
      notHandled = dispatch(g, new ErrorEvent('error', init), true);
    } catch {
      // Reporting never throws to its caller (the event loop, a dispatch...).
    } finally {
      reporting = false;
    }
    if (notHandled) toConsole(error);
  };

  internal.fire = (target, event) => dispatch(target, event, true);
  internal.Event = Event;
  internal.EventTarget = EventTarget;
  // Platform objects that are not serializable: structuredClone refuses them
  // (the global object too, being an event target).
  internal.platformBrands.push(isEvent, isEventTarget);

  internal.webidl(Event, 'Event');
  internal.webidl(CustomEvent, 'CustomEvent');
  internal.webidl(ErrorEvent, 'ErrorEvent');
  internal.webidl(EventTarget, 'EventTarget');
  internal.define('Event', Event);
  internal.define('CustomEvent', CustomEvent);
  internal.define('ErrorEvent', ErrorEvent);
  internal.define('EventTarget', EventTarget);
}
