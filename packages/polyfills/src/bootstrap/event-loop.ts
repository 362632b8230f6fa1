import type { GlobalObject, Internal, QueuedTask } from './internal.js';

/**
 * Installs the virtual-time event loop: setTimeout / setInterval and their
 * clear functions, queueMicrotask, and the host hook `__strataEventLoop`.
 *
 * Nothing in an isolate can sleep and a bare isolate has no task queue, so
 * timers wait in a heap ordered by (virtual due time, sequence number) until
 * the host calls `__strataEventLoop.runNext()`, which jumps the virtual clock
 * to the earliest timer and fires it. See the package README for the
 * contract.
 *
 * Self-contained: its source text is embedded in `WEB_POLYFILLS`.
 *
 * @internal
 */
export function installEventLoop(g: GlobalObject, internal: Internal): void {
  // Keep in step with MAX_INTERVAL_RUNS in src/constants.ts (a test checks).
  // 10,000 runs is 160 s of 16 ms animation frames: no finite animation
  // needs that, yet it stops a forgotten interval from making the host spin
  // until its deadline.
  const MAX_INTERVAL_RUNS = 10_000;
  // Keep in step with MAX_PENDING_TIMERS in src/constants.ts (a test checks).
  // Timers waiting to fire, guest and internal ones together: a flood stops
  // here with a RangeError, long before the timer table fills the heap
  // (each pending timer is a few hundred bytes with its callback).
  const MAX_PENDING_TIMERS = 100_000;
  const RangeErrorCtor = RangeError;
  // Each performance.now() call advances the clock by this much, so a
  // busy-wait on performance.now() ends. A power of two keeps sums exact.
  const TICK_MS = 1 / 128;
  const apply = Reflect.apply;
  // The host calls runNext() after guest code ran: everything on that path uses built-ins taken
  // now, so a guest that patches Array.prototype or Map.prototype cannot run code inside it.
  const ArrayPush = Array.prototype.push;
  const ArrayPop = Array.prototype.pop;
  const MapProto = Map.prototype;
  const MapGet = MapProto.get;
  const MapSet = MapProto.set;
  const MapDelete = MapProto.delete;

  interface Timer extends QueuedTask {
    due: number;
    seq: number;
    queued: boolean;
    run: (() => void) | null;
    // Guest timers only (setTimeout / setInterval):
    id: number;
    callback: ((...args: unknown[]) => unknown) | null;
    args: unknown[];
    timeout: number;
    repeat: boolean;
    nesting: number;
    runs: number;
  }

  let clock = 0;
  let seq = 0;
  let nextId = 1;
  let live = 0;
  let stale = 0;
  // The HTML timer nesting level of the guest timer callback now running.
  let nesting = 0;
  const heap: Timer[] = [];
  const active = new Map<number, Timer>();
  const activeSet = (id: number, t: Timer) => apply(MapSet, active, [id, t]);
  const activeGet = (id: number): Timer | undefined => apply(MapGet, active, [id]);
  const activeDelete = (id: number) => apply(MapDelete, active, [id]);

  const before = (a: Timer, b: Timer): boolean => a.due < b.due || (a.due === b.due && a.seq < b.seq);

  function push(t: Timer, delay: number): void {
    t.due = clock + delay;
    t.seq = ++seq;
    t.queued = true;
    live++;
    insert(t);
  }

  /** Sifts `t` into the heap by (due, seq). */
  function insert(t: Timer): void {
    let i = heap.length;
    apply(ArrayPush, heap, [t]);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = heap[parent]!;
      if (!before(t, p)) break;
      heap[i] = p;
      i = parent;
    }
    heap[i] = t;
  }

  function pop(): Timer | undefined {
    const top = heap[0];
    const last: Timer | undefined = apply(ArrayPop, heap, []);
    if (top === undefined || last === undefined || heap.length === 0) return top;
    const n = heap.length;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && before(heap[r]!, heap[l]!) ? r : l;
      if (!before(heap[c]!, last)) break;
      heap[i] = heap[c]!;
      i = c;
    }
    heap[i] = last;
    return top;
  }

  function cancel(t: QueuedTask): void {
    const timer = t as Timer;
    if (timer.cancelled) return;
    timer.cancelled = true;
    if (timer.queued) {
      live--;
      stale++;
      // Cancelled timers stay in the heap until popped; rebuild it when they
      // dominate, so a guest that sets and clears timers in a loop does not
      // grow it without bound.
      if (stale > 1024 && stale > heap.length / 2) {
        // A sorted array is a valid heap.
        // A manual pass and push(): filter() and sort() would look up a species constructor.
        const keep: Timer[] = [];
        for (let k = 0; k < heap.length; k++) if (!heap[k]!.cancelled) apply(ArrayPush, keep, [heap[k]]);
        heap.length = 0;
        for (let k = 0; k < keep.length; k++) insert(keep[k]!);
        stale = 0;
      }
    }
  }

  function newTimer(): Timer {
    return {
      cancelled: false,
      due: 0,
      seq: 0,
      queued: false,
      run: null,
      id: 0,
      callback: null,
      args: [],
      timeout: 0,
      repeat: false,
      nesting: 0,
      runs: 0,
    };
  }

  // WebIDL `long`: ToNumber, then modulo 2^32 into int32 (NaN and ±Infinity
  // become 0). HTML then treats negative timeouts as 0.
  const toTimeout = (value: unknown): number => {
    const n = +(value as number) | 0;
    return n < 0 ? 0 : n;
  };

  // HTML: past nesting level 5, timeouts under 4 ms are raised to 4 ms.
  const clamp = (timeout: number, level: number): number => (level > 5 && timeout < 4 ? 4 : timeout);

  /** Throws before a timer is made when MAX_PENDING_TIMERS are already waiting. */
  function assertRoom(what: string): void {
    if (live < MAX_PENDING_TIMERS) return;
    throw new RangeErrorCtor(
      `${what}: ${MAX_PENDING_TIMERS} timers are already pending, the most this runtime keeps. ` +
        'Clear timers you no longer need, or schedule the work in batches.',
    );
  }

  function initTimer(handler: unknown, timeoutArg: unknown, args: unknown[], repeat: boolean): number {
    assertRoom(repeat ? 'setInterval' : 'setTimeout');
    const timeout = toTimeout(timeoutArg);
    const id = nextId++;
    // A string handler would be compiled in a browser. We never compile
    // code (the bootstrap also runs where eval is disabled), so strings and
    // other non-callables get an id and never run.
    if (typeof handler !== 'function') return id;
    const t = newTimer();
    t.id = id;
    t.callback = handler as (...a: unknown[]) => unknown;
    t.args = args;
    t.timeout = timeout;
    t.repeat = repeat;
    t.nesting = nesting + 1;
    activeSet(id, t);
    push(t, clamp(timeout, t.nesting));
    return id;
  }

  function clearTimer(id: unknown): void {
    const key = +(id as number) | 0;
    const t = activeGet(key);
    if (t === undefined) return;
    activeDelete(key);
    cancel(t);
  }

  function fire(t: Timer): void {
    if (t.run !== null) {
      try {
        t.run();
      } catch (e) {
        internal.reportError(e);
      }
      return;
    }
    const saved = nesting;
    nesting = t.nesting;
    t.runs++;
    try {
      // HTML calls timer callbacks with the global object as `this`.
      apply(t.callback!, g, t.args);
    } catch (e) {
      internal.reportError(e);
    } finally {
      nesting = saved;
    }
    if (t.cancelled) return; // cleared by its own callback
    if (!t.repeat) {
      activeDelete(t.id);
      return;
    }
    if (t.runs >= MAX_INTERVAL_RUNS) {
      activeDelete(t.id);
      t.cancelled = true;
      internal.warn(
        `setInterval ${t.id} (every ${t.timeout} ms) was cut off after ${t.runs} runs: ` +
          'a runaway interval would keep the host advancing virtual time forever. ' +
          'Clear intervals when their work is done.',
      );
      return;
    }
    // Re-arming from inside the interval's own task raises its nesting level,
    // exactly as HTML's "timer initialization steps" with a previous id do.
    t.nesting++;
    push(t, clamp(t.timeout, t.nesting));
  }

  function runNext(): boolean {
    for (;;) {
      const t = pop();
      if (t === undefined) return false;
      t.queued = false;
      if (t.cancelled) {
        stale--;
        continue;
      }
      live--;
      if (t.due > clock) clock = t.due;
      fire(t);
      return true;
    }
  }

  function setTimeout(handler: unknown, timeout: unknown = 0, ...args: unknown[]): number {
    return initTimer(handler, timeout, args, false);
  }
  function setInterval(handler: unknown, timeout: unknown = 0, ...args: unknown[]): number {
    return initTimer(handler, timeout, args, true);
  }
  function clearTimeout(id: unknown = 0): void {
    clearTimer(id);
  }
  function clearInterval(id: unknown = 0): void {
    clearTimer(id);
  }

  const resolved = Promise.resolve();
  const then = Promise.prototype.then;
  function queueMicrotask(callback: unknown): void {
    if (typeof callback !== 'function') {
      throw new TypeError("Failed to execute 'queueMicrotask': parameter 1 is not of type 'Function'.");
    }
    // HTML reports a microtask's exception instead of rejecting anything.
    apply(then, resolved, [
      () => {
        try {
          apply(callback, undefined, []);
        } catch (e) {
          internal.reportError(e);
        }
      },
    ]);
  }

  internal.now = () => clock;
  internal.tick = () => (clock += TICK_MS);
  internal.queueTask = (fn) => {
    assertRoom('a queued task');
    const t = newTimer();
    t.run = fn;
    push(t, 0);
    return t;
  };
  internal.setInternalTimer = (fn, ms) => {
    assertRoom('a timer');
    const t = newTimer();
    t.run = fn;
    push(t, ms > 0 ? ms : 0);
    return t;
  };
  internal.cancelTask = cancel;

  internal.define('setTimeout', setTimeout);
  internal.define('setInterval', setInterval);
  internal.define('clearTimeout', clearTimeout);
  internal.define('clearInterval', clearInterval);
  internal.define('queueMicrotask', queueMicrotask);

  // The host hook. Frozen and non-configurable so guest code can neither
  // replace it nor its methods; hosts should still capture it before any
  // guest code runs.
  const hook = Object.freeze({
    runNext,
    pending: function pending(): number {
      return live;
    },
    now: function now(): number {
      return clock;
    },
  });
  Object.defineProperty(g, internal.hostGlobals.eventLoop, {
    value: hook,
    writable: false,
    enumerable: false,
    configurable: false,
  });
}
