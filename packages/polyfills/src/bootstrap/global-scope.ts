import type { GlobalObject, Internal } from './internal.js';

/**
 * Installs the global scope's own members of the WinterTC Minimum Common
 * API: `self` (the global object itself, as in a worker) and `navigator`,
 * whose only member is `userAgent` ("Strata/<version>"). Nothing else that
 * identifies the host: no platform, language, hardware or online state.
 * `window` and `document` stay undefined.
 *
 * And the global as an event target, as a WorkerGlobalScope is:
 * `addEventListener`, `removeEventListener` and `dispatchEvent` (EventTarget's
 * own methods, which take the global when `this` is undefined, so they work
 * unbound), and the `onerror` event handler attribute, where "report an
 * exception" (events.ts) dispatches its ErrorEvents. The global's prototype
 * chain is left alone: `globalThis instanceof EventTarget` stays false.
 *
 * Self-contained: its source text is embedded in `WEB_POLYFILLS`.
 *
 * @internal
 */
export function installGlobalScope(g: GlobalObject, internal: Internal): void {
  const userAgent = internal.userAgent;

  // Not exposed as a constructor, like Performance: only the instance is needed.
  class Navigator {
    get userAgent(): string {
      return userAgent;
    }
  }
  internal.webidl(Navigator, 'Navigator');
  const navigator = new Navigator();
  // Not serializable: structuredClone refuses it, as browsers do.
  internal.platformBrands.push((value) => value === navigator);
  internal.define('navigator', navigator);
  internal.define('self', g);

  const methods = internal.EventTarget.prototype as Record<string, unknown>;
  internal.define('addEventListener', methods.addEventListener);
  internal.define('removeEventListener', methods.removeEventListener);
  internal.define('dispatchEvent', methods.dispatchEvent);
  // An accessor, like every event handler attribute; not enumerable, like
  // the other globals here.
  internal.defineEventHandlers(g, ['error']);
  Object.defineProperty(g, 'onerror', { enumerable: false });
}
