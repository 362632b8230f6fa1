/**
 * When the worker spins for input it expects instead of sleeping on it: the next command of a
 * caller that sends them back to back, the reply to a host call. A spinning worker skips the
 * wake-up and finds its caches warm (its JavaScript is interpreted; a cold round trip costs
 * several times a warm one); a sleeping one costs nothing. The policy is adaptive so that an
 * idle worker never spins: it spins for twice its last wait, at most {@link MAX_SPIN_MICROS},
 * and not at all once a wait was longer than {@link GIVE_UP_FACTOR} times that. The margin is for
 * the first commands after an idle moment: each side then sleeps for real, a wake-up costs a few
 * hundred microseconds on a small VM, and a policy that gave up past its longest spin never saw
 * a wait short enough to start again (a pooled worker's first ten commands stayed at 300–500 µs
 * each, against 20–60 warm). `npm run bench` measures what it costs (the CPU of a burst, and of
 * an idle pool).
 *
 * @module
 */

/** The longest spin: a few round trips' worth. Past it, the caller is not answering back to back. */
export const MAX_SPIN_MICROS = 200;
/** Past this many times the longest spin, a wait says the other side is not answering back to back. */
export const GIVE_UP_FACTOR = 5;
/** The shortest spin worth starting (a poll is about a microsecond). */
const MIN_SPIN_MICROS = 20;

/** The spin budget for one kind of wait, from the length of the last one. */
export class SpinPolicy {
  #micros = 0;
  #lastWait = Infinity;
  readonly #max: number;

  /** @param maxMicros - the longest spin; a wait longer than {@link GIVE_UP_FACTOR} times it turns spinning off */
  constructor(maxMicros = MAX_SPIN_MICROS) {
    this.#max = maxMicros;
  }

  /** How long to spin before the next blocking read, in whole microseconds (0: do not spin). */
  get micros(): number {
    return this.#micros;
  }

  /**
   * The spin when the writer had to wake the reader it waits for (its doorbell rang): only while
   * the last wait was within the longest spin. A woken process is often put on its waker's CPU,
   * where a spin holds it off; only answers that come that fast are worth the risk.
   */
  get microsAfterWaking(): number {
    return this.#lastWait > this.#max ? 0 : this.#micros;
  }

  /** The last wait took `micros` microseconds (spun and slept). */
  waited(micros: number): void {
    this.#lastWait = micros;
    this.#micros = micros > GIVE_UP_FACTOR * this.#max ? 0 : Math.min(this.#max, Math.max(MIN_SPIN_MICROS, Math.ceil(2 * micros)));
  }
}
