/**
 * The errors this package raises: Strata's errors (`StrataError`), with the runtime's codes for a
 * misconfigured and a failed layer. Match on `code`.
 *
 * @module
 */
import { StrataError } from '@strata/runtime/layers';

/** A clock option is invalid; the message says which and what is accepted. A misconfiguration, never downgraded. */
export class ClockOptionError extends StrataError {
  constructor(message: string) {
    super(message, { code: 'ERR_STRATA_LAYER_CONFIG' });
  }
}

/** The self-test reached the real clock, the original `Date` or unseeded randomness from inside a guest. */
export class ClockSelfTestFailed extends StrataError {
  /** Each route that got through, in words, e.g. `'Date.now() returned 1796093808444, not 1767225600000'`. */
  readonly failures: readonly string[];

  constructor(failures: readonly string[]) {
    super(`@strata/layer-clock: the guest still reaches real time or randomness: ${failures.join('; ')}`, { code: 'ERR_STRATA_LAYER_FAILED' });
    this.failures = Object.freeze([...failures]);
  }
}
