/**
 * When the worker spins for input it expects instead of sleeping on it: the next command of a
 * caller that sends them back to back, the reply to a host call. A spinning worker skips the
 * wake-up and finds its caches warm (its JavaScript is interpreted; a cold round trip costs
 * several times a warm one); a sleeping one costs nothing. The policy is adaptive so that an
 * idle worker never spins: it spins for twice its last wait, and not at all once a wait was
 * longer than {@link MAX_SPIN_MICROS}. `npm run bench` measures what it costs (the CPU of a
 * burst, and of an idle pool).
 *
 * @module
 */

/** The longest spin: a few round trips' worth. Past it, the caller is not answering back to back. */
export const MAX_SPIN_MICROS = 200;
/** The shortest spin worth starting (a poll is about a microsecond). */
const MIN_SPIN_MICROS = 20;

/** The spin budget for one kind of wait, from the length of the last one. */
export class SpinPolicy {
  #micros = 0;
  readonly #max: number;

  /** @param maxMicros - the longest spin, and the longest wait after which it spins at all */
  constructor(maxMicros = MAX_SPIN_MICROS) {
    this.#max = maxMicros;
  }

  /** How long to spin before the next blocking read, in whole microseconds (0: do not spin). */
  get micros(): number {
    return this.#micros;
  }

  /** The last wait took `micros` microseconds (spun and slept). */
  waited(micros: number): void {
    this.#micros = micros > this.#max ? 0 : Math.min(this.#max, Math.max(MIN_SPIN_MICROS, Math.ceil(2 * micros)));
  }
}
