import type { GlobalObject, Internal } from './internal.js';

/**
 * Installs the global scope's own members of the WinterTC Minimum Common
 * API: `self` (the global object itself, as in a worker) and `navigator`,
 * whose only member is `userAgent` ("Strata/<version>"). Nothing else that
 * identifies the host: no platform, language, hardware or online state.
 * `window` and `document` stay undefined.
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
  internal.define('navigator', new Navigator());
  internal.define('self', g);
}
