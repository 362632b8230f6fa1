/**
 * Crashes counted per tenant in a sliding window: a pure ledger (the clock is passed in), so the
 * rule is table-tested and the pool only feeds it.
 *
 * @module
 */

/** How many crashes a tenant may cause within `windowMs` before its checkouts are refused. */
export interface CrashBudgetOptions {
  /** Crashes allowed in the window; the next checkout after this many is refused. */
  readonly crashes: number;
  /** The window, in milliseconds. */
  readonly windowMs: number;
}

/** The default: three crashes a minute. One crash is the cost of doing business; a run of them is probing, or broken. */
export const DEFAULT_CRASH_BUDGET: CrashBudgetOptions = Object.freeze({ crashes: 3, windowMs: 60_000 });

/** Whether a tenant may check out now, and if not, when it may again. */
export type BudgetVerdict = { readonly allowed: true } | { readonly allowed: false; readonly crashes: number; readonly retryAfterMs: number };

/** The ledger. Forgets a tenant once its crashes have all left the window, so it does not grow with tenants that stopped crashing. */
export class CrashLedger {
  readonly #budget: CrashBudgetOptions;
  readonly #crashes = new Map<string, number[]>();

  constructor(budget: CrashBudgetOptions) {
    this.#budget = budget;
  }

  /** Counts a crash of `tenant` at `now`. */
  record(tenant: string, now: number): void {
    const times = this.#recent(tenant, now);
    times.push(now);
    this.#crashes.set(tenant, times);
  }

  /** Whether `tenant` is within its budget at `now`. */
  check(tenant: string, now: number): BudgetVerdict {
    const times = this.#recent(tenant, now);
    if (times.length === 0) this.#crashes.delete(tenant);
    if (times.length < this.#budget.crashes) return { allowed: true };
    // Allowed again once enough of the oldest crashes leave the window to fall under the budget.
    const oldestThatMustLeave = times[times.length - this.#budget.crashes]!;
    return { allowed: false, crashes: times.length, retryAfterMs: oldestThatMustLeave + this.#budget.windowMs - now };
  }

  /** Tenants with crashes in the window at `now`, and how many each. */
  counts(now: number): Record<string, number> {
    const out: Record<string, number> = {};
    for (const tenant of [...this.#crashes.keys()]) {
      const times = this.#recent(tenant, now);
      if (times.length === 0) this.#crashes.delete(tenant);
      else out[tenant] = times.length;
    }
    return out;
  }

  #recent(tenant: string, now: number): number[] {
    const times = (this.#crashes.get(tenant) ?? []).filter((t) => now - t < this.#budget.windowMs);
    if (times.length > 0) this.#crashes.set(tenant, times);
    return times;
  }
}
