/**
 * `@strata/polyfills`: browser basics for a bare V8 isolate, as one
 * pure-JavaScript bootstrap script, with timers on virtual time.
 *
 * @packageDocumentation
 */
export { WEB_POLYFILLS } from './web-polyfills.js';
export type { StrataEventLoop } from './event-loop-contract.js';
export {
  ENTROPY_GLOBAL,
  EVENT_LOOP_GLOBAL,
  FETCH_CANCEL_GLOBAL,
  FETCH_GLOBAL,
  LAZY_GLOBALS,
  MAX_INTERVAL_RUNS,
  MAX_PENDING_TIMERS,
  NEVER_DEFINED_GLOBALS,
  PERFORMANCE_TICK_MS,
  POLYFILLED_GLOBALS,
} from './constants.js';
