/**
 * SandboxPool: runtimes fully started ahead of time (worker spawned, sandboxed, self-tested,
 * configured), handed out one per session and never reused.
 *
 * @module
 */
import { CrashBudgetExceeded, InvalidOption, RuntimeClosed, RuntimeTimeout, type StrataError } from '../errors.js';
import { CrashLedger, DEFAULT_CRASH_BUDGET, type CrashBudgetOptions } from './crash-budget.js';
import { resolveIsolatedOptions, SESSION_OPTIONS, type IsolatedRuntimeOptions, type ResolvedIsolatedOptions } from './isolated-options.js';
import { internals, IsolatedRuntime } from './isolated-runtime.js';
import { checkSpareIsolates, hostInternals, type HostIsolates, type SandboxHost } from './sandbox-host.js';

/** What a pool keeps ready: runtimes with a worker each, or (isolatesPerWorker above 1) hosts no tenant has claimed yet. */
type Ready = IsolatedRuntime | SandboxHost;

function onClosedOf(item: Ready, listener: (reason: StrataError) => void): void {
  if (item instanceof IsolatedRuntime) internals.onClosed(item, listener);
  else item.onClosed(listener);
}

/** The options a pool fixes for every worker it starts, and its own. */
export interface SandboxPoolOptions extends Omit<IsolatedRuntimeOptions, 'prewarm'> {
  /** Runtimes kept ready. Default 2. Each is a live process (tens of MiB): size it for your burst. */
  size?: number;
  /** Runtimes started at once in the background. Default 2. */
  maxConcurrentStarts?: number;
  /** Crashes allowed per tenant in a window before its checkouts are refused; `null` turns the budget off. Default 3 a minute. */
  crashBudget?: CrashBudgetOptions | null;
  /**
   * Isolates per worker process. Default 1: every checkout has a worker to itself. Above 1,
   * checkouts of one tenant share workers ({@link SandboxHost}), a few MiB per session instead of
   * tens; a worker only ever holds one tenant's isolates, and checkouts that name no tenant are
   * one tenant between them. `size` then counts workers kept ready for new tenants.
   */
  isolatesPerWorker?: number;
  /** With isolatesPerWorker above 1: isolates each worker keeps made ahead ({@link SandboxHostOptions.spareIsolates}). Default 2. */
  spareIsolates?: number;
}

/** What may change per checkout: what only the parent enforces (limits, the egress policy), and who the run is for. */
export type CheckoutOptions = Pick<
  IsolatedRuntimeOptions,
  'requestTimeout' | 'timeoutGrace' | 'maxHostCalls' | 'maxHostWait' | 'maxInflightHostCalls' | 'writeStallTimeout' | 'redactHostErrors' | 'egress'
> & {
  /** Whose run this is: crashes are counted per tenant against the pool's crash budget. */
  tenant?: string;
};

// The checkout keys above and the session options the pool accepts are one list.
const sameKeys: [keyof CheckoutOptions] extends [(typeof SESSION_OPTIONS)[number] | 'tenant']
  ? (typeof SESSION_OPTIONS)[number] extends keyof CheckoutOptions
    ? true
    : never
  : never = true;
void sameKeys;

/** A pool's counters. */
export interface PoolStats {
  readonly size: number;
  /** Runtimes ready to hand out. */
  readonly ready: number;
  /** Runtimes being started in the background. */
  readonly starting: number;
  /** Runtimes handed out. */
  readonly checkouts: number;
  /** Checkouts that found no ready runtime and started one on the spot. */
  readonly coldStarts: number;
  /** Ready runtimes whose worker died while waiting: discarded, never handed out. */
  readonly discarded: number;
  /** Background starts that failed (each retried with a backoff). */
  readonly failedStarts: number;
  /** The last background start failure, as `Name: message`; cleared by the next success. */
  readonly lastError: string | undefined;
  /** Checkouts refused by the crash budget. */
  readonly refused: number;
  /** Tenants with crashes in the budget's window, and how many. */
  readonly tenantCrashes: Readonly<Record<string, number>>;
}

const POOL_KEYS = new Set(['size', 'maxConcurrentStarts', 'crashBudget', 'isolatesPerWorker', 'spareIsolates']);
/** The tenant of checkouts that name none, in a pool of shared workers. */
const NO_TENANT = '(no tenant)';
const FIRST_BACKOFF_MS = 100;
/**
 * A replacement starts this long after a hand-over: a start is ~150 ms of CPU, and on a small
 * machine it would otherwise compete with the session's first commands, which are the latency
 * a pool exists for.
 */
const REFILL_DELAY_MS = 25;
const MAX_BACKOFF_MS = 30_000;

/** A runtime that ended for anything but its owner's `close()`: a crash, a hard kill, the heap limit. */
const isCrash = (reason: StrataError) => !(reason instanceof RuntimeClosed);

function count(name: string, value: unknown, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min)
    throw new InvalidOption(`${name} must be an integer ≥ ${min} (got ${String(value)})`);
  return value;
}

function checkBudget(value: unknown): CrashBudgetOptions | undefined {
  if (value === undefined) return DEFAULT_CRASH_BUDGET;
  if (value === null) return undefined;
  const budget = value as Partial<CrashBudgetOptions>;
  if (typeof value !== 'object' || Object.keys(value).some((k) => k !== 'crashes' && k !== 'windowMs')) {
    throw new InvalidOption('crashBudget must be { crashes, windowMs }, or null to turn it off');
  }
  return Object.freeze({
    crashes: count('crashBudget.crashes', budget.crashes, DEFAULT_CRASH_BUDGET.crashes, 1),
    windowMs: count('crashBudget.windowMs', budget.windowMs, DEFAULT_CRASH_BUDGET.windowMs, 1),
  });
}

// Proves that a construction comes from this module (the factory): `new SandboxPool()` from JavaScript
// gets a clear error instead of a half-made pool (one that never fills).
const FACTORY = Symbol('SandboxPool.start');

/**
 * Keeps `size` runtimes fully started, so that a sandbox per request costs a hand-over, not a
 * process start. The rules that keep a pool as safe as a fresh runtime:
 *
 * - **Single use.** A checked-out runtime is never returned; closing it kills its worker. No
 *   worker serves two sessions. A ready worker that dies while it waits is discarded.
 * - **Same construction.** Each runtime is an ordinary `IsolatedRuntime.start` with the pool's
 *   options, only earlier. {@link SandboxPool.start} starts the first itself, so bad options or
 *   a platform that cannot satisfy `sandbox: 'require'` fail there, not in the background.
 * - **Exhaustion is a cold start**, never an error; replacements start in the background
 *   (`maxConcurrentStarts` at a time), a failed one retried with a backoff and shown in
 *   `stats().lastError`.
 * - **Options split in two**: what the worker receives is fixed per pool; what only the parent
 *   enforces (the keys of {@link CheckoutOptions} but `tenant`) may be set per checkout.
 * - **A crash budget per tenant**: past it, that tenant's checkouts are refused
 *   ({@link CrashBudgetExceeded}); other tenants are unaffected.
 *
 * ```ts
 * await using pool = await SandboxPool.start({ size: 4, sandbox: 'require', timeout: 5_000 });
 * await using rt = await pool.checkout({ maxHostCalls: 50, tenant: 'customer-17' });
 * await rt.eval('1 + 1');
 * ```
 */
export class SandboxPool implements AsyncDisposable {
  readonly #workerOptions: IsolatedRuntimeOptions;
  readonly #resolved: ResolvedIsolatedOptions;
  readonly #size: number;
  readonly #maxConcurrentStarts: number;
  readonly #ledger: CrashLedger | undefined;
  readonly #ready: Ready[] = [];
  /** Each worker's isolates (isolatesPerWorker above 1: its maxIsolates, and the spares it keeps). */
  readonly #hostIsolates: HostIsolates;
  /** The hosts tenants have claimed, by tenant (isolatesPerWorker above 1). */
  readonly #hosts = new Map<string, SandboxHost[]>();
  readonly #starting = new Set<Promise<void>>();
  readonly #waiters = new Set<{ resolve: () => void; reject: (error: Error) => void }>();
  #closed = false;
  #backoffMs = 0;
  #retryTimer: NodeJS.Timeout | undefined;
  #refillTimer: NodeJS.Timeout | undefined;
  #checkouts = 0;
  #coldStarts = 0;
  #discarded = 0;
  #failedStarts = 0;
  #refused = 0;
  #lastError: string | undefined;

  private constructor(
    token: symbol,
    workerOptions: IsolatedRuntimeOptions,
    resolved: ResolvedIsolatedOptions,
    size: number,
    maxConcurrentStarts: number,
    budget: CrashBudgetOptions | undefined,
    hostIsolates: HostIsolates,
  ) {
    if (token !== FACTORY) throw new InvalidOption('SandboxPool has no public constructor: use `await SandboxPool.start(options)`');
    this.#hostIsolates = hostIsolates;
    this.#workerOptions = workerOptions;
    this.#resolved = resolved;
    this.#size = size;
    this.#maxConcurrentStarts = maxConcurrentStarts;
    this.#ledger = budget === undefined ? undefined : new CrashLedger(budget);
  }

  /**
   * Checks the options, starts the first runtime (its errors are this call's: `InvalidOption`,
   * `SandboxUnavailable`, `LayerFailed`...), then fills the rest in the background.
   */
  static async start(options: SandboxPoolOptions = {}): Promise<SandboxPool> {
    if (options === null || typeof options !== 'object' || Array.isArray(options)) throw new InvalidOption('options must be an object');
    if ('prewarm' in options) throw new InvalidOption('prewarm is not a pool option: the pool keeps its own ready workers');
    const size = count('size', options.size, 2, 1);
    const maxConcurrentStarts = count('maxConcurrentStarts', options.maxConcurrentStarts, 2, 1);
    const budget = checkBudget(options.crashBudget);
    const isolatesPerWorker = count('isolatesPerWorker', options.isolatesPerWorker, 1, 1);
    const spareIsolates = checkSpareIsolates(options.spareIsolates, 'SandboxPool.start');
    if (options.spareIsolates !== undefined && isolatesPerWorker === 1) {
      throw new InvalidOption('SandboxPool.start: spareIsolates is for workers of many isolates: set isolatesPerWorker above 1 too');
    }
    const workerOptions: Record<string, unknown> = { ...options, prewarm: false };
    for (const key of POOL_KEYS) delete workerOptions[key];
    const resolved = resolveIsolatedOptions(workerOptions as IsolatedRuntimeOptions);
    const pool = new SandboxPool(FACTORY, workerOptions as IsolatedRuntimeOptions, resolved, size, maxConcurrentStarts, budget, {
      maxIsolates: isolatesPerWorker,
      spareIsolates,
    });
    const first = await pool.#startWarm();
    pool.#addReady(first);
    pool.#fill();
    return pool;
  }

  /**
   * Hands over a runtime that is yours alone: closing it kills its worker. Starts one on the
   * spot when none is ready. `options` sets this session's parent-enforced limits and tenant.
   * Of the ready workers it takes the one readied last: its memory is likeliest still in the
   * CPU's caches (a checkout right after a refill answered its first ten commands in about a
   * third of the time the oldest took).
   *
   * @throws {@link InvalidOption} for an option that is not a session option (set it on the
   *   pool), {@link CrashBudgetExceeded} for a tenant past its budget, {@link RuntimeClosed}
   *   after `close()`, and a cold start's own errors.
   */
  async checkout(options: CheckoutOptions = {}): Promise<IsolatedRuntime> {
    if (this.#closed) throw new RuntimeClosed('the pool is closed');
    const { tenant, session } = this.#checkCheckoutOptions(options);
    if (tenant !== undefined && this.#ledger !== undefined) {
      const verdict = this.#ledger.check(tenant, Date.now());
      if (!verdict.allowed) {
        this.#refused++;
        throw new CrashBudgetExceeded(
          tenant,
          `tenant ${JSON.stringify(tenant)} is refused: its runtimes crashed ${verdict.crashes} times within the pool's crash budget window; ` +
            `it is accepted again in ${Math.ceil(verdict.retryAfterMs / 1000)} s`,
          verdict.retryAfterMs,
        );
      }
    }
    if (this.#hostIsolates.maxIsolates > 1) return this.#checkoutShared(tenant, options);
    let rt = this.#ready.pop() as IsolatedRuntime | undefined;
    while (rt?.closed) rt = this.#ready.pop() as IsolatedRuntime | undefined; // died just now: already counted
    if (rt === undefined) {
      this.#coldStarts++;
      this.#fill();
      rt = await IsolatedRuntime.start(this.#workerOptions);
      if (this.#closed) {
        await rt.close();
        throw new RuntimeClosed('the pool was closed while this checkout started a runtime');
      }
    } else {
      this.#fillSoon();
    }
    this.#checkouts++;
    if (session !== undefined) internals.setSessionOptions(rt, session);
    if (tenant !== undefined && this.#ledger !== undefined) {
      const ledger = this.#ledger;
      internals.onClosed(rt, (reason) => {
        if (isCrash(reason)) ledger.record(tenant, Date.now());
      });
    }
    return rt;
  }

  /**
   * A checkout in a pool of shared workers: an isolate in a worker of the tenant's with room, or
   * in a ready worker the tenant claims (a cold start when none is ready). A worker's crash is
   * one crash of its tenant, however many isolates it held; a worker with no isolate left is closed.
   */
  async #checkoutShared(tenant: string | undefined, options: CheckoutOptions): Promise<IsolatedRuntime> {
    const key = tenant ?? NO_TENANT;
    const { tenant: _, ...isolateOptions } = options;
    let host = this.#hosts.get(key)?.find((h) => h.hasRoom);
    if (host === undefined) {
      let ready = this.#ready.pop() as SandboxHost | undefined;
      while (ready?.closed) ready = this.#ready.pop() as SandboxHost | undefined;
      if (ready === undefined) {
        this.#coldStarts++;
        this.#fill();
        ready = await this.#startHost();
        if (this.#closed) {
          await ready.close();
          throw new RuntimeClosed('the pool was closed while this checkout started a worker');
        }
      } else {
        this.#fillSoon();
      }
      host = ready;
      hostInternals.claim(host, key);
      this.#claim(key, host, tenant);
    }
    const claimed = host;
    const rt = await claimed.open(isolateOptions);
    this.#checkouts++;
    internals.onClosed(rt, (reason) => {
      // An isolate's own end (its heap, its limits) is a crash of its own; the worker's death is counted once, by the worker.
      if (tenant !== undefined && this.#ledger !== undefined && isCrash(reason) && !claimed.closed) this.#ledger.record(tenant, Date.now());
      if (!claimed.closed && claimed.isolates === 0) void claimed.close();
    });
    return rt;
  }

  #claim(key: string, host: SandboxHost, tenant: string | undefined): void {
    const hosts = this.#hosts.get(key) ?? [];
    hosts.push(host);
    this.#hosts.set(key, hosts);
    host.onClosed((reason) => {
      const left = (this.#hosts.get(key) ?? []).filter((h) => h !== host);
      if (left.length === 0) this.#hosts.delete(key);
      else this.#hosts.set(key, left);
      if (tenant !== undefined && this.#ledger !== undefined && isCrash(reason)) this.#ledger.record(tenant, Date.now());
    });
  }

  /** The pool's counters, now. */
  stats(): PoolStats {
    return Object.freeze({
      size: this.#size,
      ready: this.#ready.length,
      starting: this.#starting.size,
      checkouts: this.#checkouts,
      coldStarts: this.#coldStarts,
      discarded: this.#discarded,
      failedStarts: this.#failedStarts,
      lastError: this.#lastError,
      refused: this.#refused,
      tenantCrashes: Object.freeze(this.#ledger?.counts(Date.now()) ?? {}),
    });
  }

  /**
   * Resolves once `size` runtimes are ready. Rejects with a background start's error if one fails
   * meanwhile (the pool keeps retrying), with `RuntimeTimeout` after `timeoutMs` (default 60 s),
   * or with `RuntimeClosed` when the pool is closed.
   */
  waitReady(timeoutMs = 60_000): Promise<void> {
    if (this.#closed) return Promise.reject(new RuntimeClosed('the pool is closed'));
    if (this.#ready.length >= this.#size) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const waiter = {
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
        reject: (error: Error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(waiter);
        reject(
          new RuntimeTimeout(
            `the pool was not full within ${timeoutMs} ms (ready ${this.#ready.length} of ${this.#size}; last error: ${this.#lastError ?? 'none'})`,
            'startTimeout',
          ),
        );
      }, timeoutMs);
      this.#waiters.add(waiter);
    });
  }

  /** Closes the ready runtimes and those starting; checked-out runtimes stay their owners'. Idempotent. */
  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      clearTimeout(this.#retryTimer);
      clearTimeout(this.#refillTimer);
      for (const waiter of this.#waiters) waiter.reject(new RuntimeClosed('the pool is closed'));
      this.#waiters.clear();
    }
    const ready = this.#ready.splice(0);
    // Shared workers with isolates checked out stay their owners' (each closes when its last isolate does).
    const empty = [...this.#hosts.values()].flat().filter((host) => host.isolates === 0);
    await Promise.all([...ready.map((rt) => rt.close()), ...empty.map((host) => host.close()), ...this.#starting]);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  #checkCheckoutOptions(options: CheckoutOptions): { tenant: string | undefined; session: ResolvedIsolatedOptions | undefined } {
    if (options === null || typeof options !== 'object' || Array.isArray(options)) throw new InvalidOption('checkout options must be an object');
    const sessionKeys: readonly string[] = SESSION_OPTIONS;
    const { tenant, ...rest } = options;
    if (tenant !== undefined && (typeof tenant !== 'string' || tenant === '')) throw new InvalidOption('tenant must be a non-empty string');
    for (const key of Object.keys(rest)) {
      if (!sessionKeys.includes(key)) {
        throw new InvalidOption(
          `${key} cannot be set per checkout: the worker receives it when it starts. Set it on the pool (one pool per such configuration); per checkout: ${SESSION_OPTIONS.join(', ')}, tenant`,
        );
      }
    }
    if (Object.keys(rest).length === 0) return { tenant, session: undefined };
    const merged = resolveIsolatedOptions({ ...this.#workerOptions, ...rest });
    // The worker's CPU limits were set from the pool's requestTimeout when it started.
    const poolLimit = this.#resolved.requestTimeout;
    if (poolLimit !== undefined && (merged.requestTimeout === undefined || merged.requestTimeout > poolLimit)) {
      throw new InvalidOption(
        `requestTimeout per checkout may only be lowered (the pool's is ${poolLimit} ms: the worker's CPU limit was set from it); set a larger one on the pool`,
      );
    }
    // Only the parent-enforced fields change; everything the worker was started with stays.
    const session: ResolvedIsolatedOptions = {
      ...this.#resolved,
      requestTimeout: merged.requestTimeout,
      maxHostCalls: merged.maxHostCalls,
      maxHostWait: merged.maxHostWait,
      maxInflightHostCalls: merged.maxInflightHostCalls,
      writeStallTimeout: merged.writeStallTimeout,
      runtime: { ...this.#resolved.runtime, redactHostErrors: merged.runtime.redactHostErrors, egress: merged.runtime.egress },
    };
    return { tenant, session: Object.freeze(session) };
  }

  #addReady(rt: Ready): void {
    this.#ready.push(rt);
    onClosedOf(rt, () => {
      const at = this.#ready.indexOf(rt);
      if (at < 0) return; // handed out, or the pool closed it
      this.#ready.splice(at, 1);
      this.#discarded++;
      this.#fill();
    });
    if (this.#ready.length >= this.#size) {
      for (const waiter of this.#waiters) waiter.resolve();
      this.#waiters.clear();
    }
  }

  /** {@link SandboxPool.#fill}, a moment after a hand-over. */
  #fillSoon(): void {
    if (this.#refillTimer !== undefined) return;
    this.#refillTimer = setTimeout(() => {
      this.#refillTimer = undefined;
      this.#fill();
    }, REFILL_DELAY_MS);
  }

  /**
   * A pooled runtime: started, then twenty evals, half of them calling an async host function,
   * so the worker's first-command paths (interpreted under --jitless, with V8's inline caches only
   * from a function's ninth call), its first wake-ups and page faults are paid in the background,
   * not by a session. With isolatesPerWorker above 1, a host for a
   * tenant yet to come (it warms itself up).
   */
  async #startWarm(): Promise<Ready> {
    if (this.#hostIsolates.maxIsolates > 1) return this.#startHost();
    const rt = await IsolatedRuntime.start(this.#workerOptions);
    try {
      await internals.warmUp(rt);
    } catch (error) {
      await rt.close();
      throw error;
    }
    return rt;
  }

  #startHost(): Promise<SandboxHost> {
    return hostInternals.startSpare(this.#workerOptions, this.#hostIsolates);
  }

  /** Starts runtimes in the background until the pool would be full, `maxConcurrentStarts` at a time. */
  #fill(): void {
    while (
      !this.#closed &&
      this.#retryTimer === undefined &&
      this.#ready.length + this.#starting.size < this.#size &&
      this.#starting.size < this.#maxConcurrentStarts
    ) {
      const started: Promise<void> = this.#startWarm().then(
        async (rt) => {
          this.#starting.delete(started);
          if (this.#closed) return rt.close();
          this.#backoffMs = 0;
          this.#lastError = undefined;
          this.#addReady(rt);
          this.#fill();
        },
        (error: unknown) => {
          this.#starting.delete(started);
          this.#failedStarts++;
          this.#lastError = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
          // The start's own error (SandboxUnavailable, WorkerCrashed...): the pool keeps retrying.
          for (const waiter of this.#waiters) waiter.reject(error instanceof Error ? error : new Error(String(error)));
          this.#waiters.clear();
          if (this.#closed) return;
          this.#backoffMs = Math.min(MAX_BACKOFF_MS, this.#backoffMs === 0 ? FIRST_BACKOFF_MS : this.#backoffMs * 2);
          this.#retryTimer = setTimeout(() => {
            this.#retryTimer = undefined;
            this.#fill();
          }, this.#backoffMs);
          this.#retryTimer.unref();
        },
      );
      this.#starting.add(started);
    }
  }
}
