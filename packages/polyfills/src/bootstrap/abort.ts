import type { GlobalObject, Internal } from './internal.js';

/**
 * Installs `AbortController` and `AbortSignal` (with `abort()`, `timeout()`
 * on virtual time, `any()`, `throwIfAborted()` and `onabort`), following the
 * DOM standard.
 *
 * Self-contained: its source text is embedded in `WEB_POLYFILLS`.
 *
 * @internal
 */
export function installAbort(_g: GlobalObject, internal: Internal): void {
  const EventTarget = internal.EventTarget;
  const Event = internal.Event;
  let constructing = false;
  // Filled in by AbortSignal's static block, for AbortController.
  let abortSignal: (signal: object, reason: unknown) => void;
  let createSignal: () => object;

  class AbortSignal extends EventTarget {
    #aborted = false;
    #reason: unknown = undefined;
    #algorithms: Array<() => void> = [];
    // AbortSignal.any(): a dependent signal follows its source signals.
    #dependent = false;
    #sources: AbortSignal[] = [];
    #dependents: AbortSignal[] = [];

    constructor() {
      // `new AbortSignal()` is an illegal constructor on the web.
      if (!constructing) throw new TypeError('Illegal constructor');
      constructing = false;
      super();
    }

    static #create(): AbortSignal {
      constructing = true;
      try {
        return new AbortSignal();
      } finally {
        constructing = false;
      }
    }

    static #check(signal: unknown): AbortSignal {
      if (signal === null || typeof signal !== 'object' || !(#aborted in signal)) {
        throw new TypeError('Illegal invocation');
      }
      return signal as AbortSignal;
    }

    static #defaultReason(): unknown {
      return new internal.DOMException('signal is aborted without reason', 'AbortError');
    }

    // DOM "signal abort".
    static #signalAbort(signal: AbortSignal, reason: unknown): void {
      if (signal.#aborted) return;
      signal.#aborted = true;
      signal.#reason = reason === undefined ? AbortSignal.#defaultReason() : reason;
      const dependents: AbortSignal[] = [];
      for (const d of signal.#dependents) {
        if (d.#aborted) continue;
        d.#aborted = true;
        d.#reason = signal.#reason;
        dependents.push(d);
      }
      AbortSignal.#runAbortSteps(signal);
      for (const d of dependents) AbortSignal.#runAbortSteps(d);
    }

    static #runAbortSteps(signal: AbortSignal): void {
      const algorithms = signal.#algorithms;
      signal.#algorithms = [];
      for (const fn of algorithms) {
        try {
          fn();
        } catch (e) {
          internal.reportError(e);
        }
      }
      internal.fire(signal, new Event('abort'));
    }

    static {
      internal.isAbortSignal = (value) => value !== null && typeof value === 'object' && #aborted in value;
      internal.addAbortAlgorithm = (signal, fn) => {
        const s = AbortSignal.#check(signal);
        if (!s.#aborted) s.#algorithms.push(fn);
      };
      abortSignal = (signal, reason) => AbortSignal.#signalAbort(signal as AbortSignal, reason);
      createSignal = () => AbortSignal.#create();
    }

    get aborted(): boolean {
      return AbortSignal.#check(this).#aborted;
    }

    get reason(): unknown {
      return AbortSignal.#check(this).#reason;
    }

    throwIfAborted(): void {
      const s = AbortSignal.#check(this);
      if (s.#aborted) throw s.#reason;
    }

    static abort(reason: unknown = undefined): AbortSignal {
      const signal = AbortSignal.#create();
      signal.#aborted = true;
      signal.#reason = reason === undefined ? AbortSignal.#defaultReason() : reason;
      return signal;
    }

    static timeout(milliseconds: unknown): AbortSignal {
      if (arguments.length === 0) {
        throw new TypeError("Failed to execute 'timeout' on 'AbortSignal': 1 argument required, but only 0 present.");
      }
      // WebIDL [EnforceRange] unsigned long long.
      const ms = Math.trunc(+(milliseconds as number));
      if (!Number.isFinite(ms) || ms < 0 || ms > Number.MAX_SAFE_INTEGER) {
        throw new TypeError("Failed to execute 'timeout' on 'AbortSignal': Value is outside the 'unsigned long long' value range.");
      }
      const signal = AbortSignal.#create();
      internal.setInternalTimer(() => {
        AbortSignal.#signalAbort(signal, new internal.DOMException('signal timed out', 'TimeoutError'));
      }, ms);
      return signal;
    }

    static any(signals: Iterable<unknown>): AbortSignal {
      if (arguments.length === 0) {
        throw new TypeError("Failed to execute 'any' on 'AbortSignal': 1 argument required, but only 0 present.");
      }
      const list = Array.from(signals, (s) => AbortSignal.#check(s));
      const result = AbortSignal.#create();
      for (const s of list) {
        if (s.#aborted) {
          result.#aborted = true;
          result.#reason = s.#reason;
          return result;
        }
      }
      result.#dependent = true;
      for (const s of list) {
        // Follow the sources of a dependent signal rather than the signal
        // itself, so chains of any() stay one level deep.
        for (const source of s.#dependent ? s.#sources : [s]) {
          if (result.#sources.includes(source)) continue;
          result.#sources.push(source);
          source.#dependents.push(result);
        }
      }
      return result;
    }
  }

  class AbortController {
    #signal = createSignal();

    static {
      internal.platformBrands.push((v) => #signal in v);
    }

    get signal(): object {
      if (!(#signal in this)) throw new TypeError('Illegal invocation');
      return this.#signal;
    }

    abort(reason: unknown = undefined): void {
      if (!(#signal in this)) throw new TypeError('Illegal invocation');
      abortSignal(this.#signal, reason);
    }
  }

  internal.defineEventHandlers(AbortSignal.prototype, ['abort']);
  internal.webidl(AbortSignal, 'AbortSignal');
  internal.webidl(AbortController, 'AbortController');
  internal.define('AbortSignal', AbortSignal);
  internal.define('AbortController', AbortController);
}
