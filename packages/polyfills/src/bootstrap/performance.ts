import type { GlobalObject, Internal } from './internal.js';

/**
 * Installs `performance` with `now()` as a counter on the virtual clock.
 *
 * `now()` returns the virtual time and advances it by a fixed 1/128 ms per
 * call: monotonic, deterministic, never real time (which would leak timing
 * information), and a busy-wait such as
 * `while (performance.now() - t0 < 16) {}` still ends. `timeOrigin` is a
 * constant 0 for the same reason.
 *
 * Self-contained: its source text is embedded in `WEB_POLYFILLS`.
 *
 * @internal
 */
export function installPerformance(_g: GlobalObject, internal: Internal): void {
  // Not exposed as a constructor: only the `performance` instance is needed,
  // and a `Performance` global would be one more thing to feature-detect.
  class Performance {
    get timeOrigin(): number {
      return 0;
    }
    // Not brand-checked: libraries call a detached `performance.now`.
    now(): number {
      return internal.tick();
    }
    toJSON(): { timeOrigin: number } {
      return { timeOrigin: 0 };
    }
  }
  internal.webidl(Performance, 'Performance');
  const performance = new Performance();
  // Not serializable: structuredClone refuses it, as browsers do.
  internal.platformBrands.push((value) => value === performance);
  internal.define('performance', performance);
}
