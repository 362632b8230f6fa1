/**
 * Who a tick of the supervisor is charged to: the guest (toward `requestTimeout`) or the host
 * functions it waits on (toward `maxHostWait`). Pure, so the rule is table-tested.
 *
 * @module
 */

/** One tick as the supervisor measured it. */
export interface TickSample {
  /** Wall time since the last tick, less the time spent in synchronous host functions. */
  readonly elapsedMs: number;
  /** The worker's CPU time over the tick (0 when it cannot be read: no /proc, or the first tick). */
  readonly workerCpuMs: number;
  /** Async host calls in flight during the tick. */
  readonly hostCallsInFlight: number;
}

/** The tick's split; the two parts add up to `elapsedMs`. */
export interface TickCharge {
  readonly guestMs: number;
  readonly hostWaitMs: number;
}

/**
 * With no host call in flight the whole tick is the guest's (the hard deadline is wall time).
 * With one in flight the guest is charged what the worker actually ran, its CPU time over the
 * tick (at most the tick), and the rest is waiting on the host. A measured amount, not a guess:
 * a guest that runs while a tool works meets `requestTimeout` on a loaded machine too, where it
 * gets less than half a core and a "did it run for most of the tick?" test would call it idle.
 */
export function chargeTick(tick: TickSample): TickCharge {
  const elapsed = Math.max(0, tick.elapsedMs);
  if (tick.hostCallsInFlight === 0) return { guestMs: elapsed, hostWaitMs: 0 };
  const guestMs = Math.min(Math.max(0, tick.workerCpuMs), elapsed);
  return { guestMs, hostWaitMs: elapsed - guestMs };
}
