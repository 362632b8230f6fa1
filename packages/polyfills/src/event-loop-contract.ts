/**
 * The host hook `WEB_POLYFILLS` installs as `globalThis.__strataEventLoop`
 * (a frozen object on a non-writable, non-enumerable, non-configurable
 * global property).
 *
 * An isolate has no task queue and nothing in it can sleep, so timers wait
 * in a heap ordered by virtual due time, then by scheduling order. The host
 * advances virtual time, one timer at a time, by calling {@link runNext}:
 *
 * ```ts
 * // Once per context, right after loading WEB_POLYFILLS and before any
 * // guest code, so a guest cannot interpose:
 * const runNext = await context.eval('__strataEventLoop.runNext', { reference: true });
 * // Per evaluation, while its result promise is pending:
 * while (!settled && runNext.applySync(undefined, [])) {
 *   // isolated-vm runs the microtasks the timer queued before applySync
 *   // returns, so `settled` is up to date here.
 * }
 * // Still pending here: no timer can ever settle it.
 * ```
 *
 * Virtual time only moves inside `runNext()` (to the due time of the timer
 * it fires) and in `performance.now()` (1/128 ms per call). It never follows
 * the wall clock, and `Date` is not affected.
 */
export interface StrataEventLoop {
  /**
   * Fires the earliest pending timer, after advancing the virtual clock to
   * its due time (the clock never moves backwards). Ties fire in the order
   * the timers were scheduled. Exactly one timer callback (or one internal
   * task such as a FileReader step or an `AbortSignal.timeout`) runs per
   * call; microtasks it queued run when the host's call returns, before the
   * next one.
   *
   * An exception thrown by the callback is reported (`console.error` with
   * `'Uncaught'`, when the host installed a console) and does not propagate:
   * `runNext()` itself does not throw.
   *
   * @returns `true` if a timer fired, `false` if none was pending (the clock
   * did not move).
   */
  runNext(): boolean;
  /** Number of timers and internal tasks waiting to fire. */
  pending(): number;
  /** The virtual clock, in milliseconds since the context started (0). */
  now(): number;
}
