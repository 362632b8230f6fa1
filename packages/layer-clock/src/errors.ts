/**
 * The errors this package raises. Their `code`s are the runtime's: match on `code`.
 *
 * @module
 */

/** A clock option is invalid; the message says which and what is accepted. A misconfiguration, never downgraded. */
export class ClockOptionError extends Error {
  /** The runtime's code for a misconfigured layer. */
  readonly code = 'ERR_STRATA_LAYER_CONFIG';

  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** The self-test reached the real clock, the original `Date` or unseeded randomness from inside a guest. */
export class ClockSelfTestFailed extends Error {
  /** The runtime's code for a layer that failed. */
  readonly code = 'ERR_STRATA_LAYER_FAILED';
  /** Each route that got through, in words, e.g. `'Date.now() returned 1796093808444, not 1767225600000'`. */
  readonly failures: readonly string[];

  constructor(failures: readonly string[]) {
    super(`@strata/layer-clock: the guest still reaches real time or randomness: ${failures.join('; ')}`);
    this.name = new.target.name;
    this.failures = Object.freeze([...failures]);
  }
}
