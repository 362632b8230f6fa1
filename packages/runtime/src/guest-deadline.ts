/**
 * The soft timeout of every runtime: a deadline per entry into the guest isolate, enforced by
 * one native watcher thread (`native/guest-deadline.cc`) with V8's TerminateExecution.
 *
 * Strata never passes isolated-vm's own `timeout` option: each entry with a `timeout` arms a
 * timer on isolated-vm's timer thread that stays queued until its due time even after the entry
 * returned, and an event loop entering the isolate once per guest task under one shrinking
 * command deadline queues tens of thousands of timers due in the same millisecond, which
 * isolated-vm 7.0.1's timer thread walks recursively until its stack overflows (SIGSEGV; the
 * README's known issues have the reproduction). Arming a deadline here only writes a slot.
 *
 * @module
 */
import { loadEngine, type IsolatedVm } from './engine.js';
import { StrataError } from './errors.js';
import { deadlineAddonPath, loadDeadlineAddon } from './native/native-paths.js';

interface DeadlineAddon {
  arm(slot: number, ms: number): void;
  disarm(slot: number): number;
  cancel(slot: number): void;
  resume(slot: number, ms: number): void;
  release(slot: number): void;
  limitHeap(slot: number, bytes: number): void;
  heapExceeded(slot: number): boolean;
}

let loaded: { readonly addon: DeadlineAddon; readonly module: IsolatedVm.NativeModule } | undefined;

/**
 * Loads the addon's two halves once per process: the Node-API half, and isolated-vm's handle for
 * putting it into guest isolates. The worker calls this at start, before any layer may take file
 * access away.
 */
export function loadGuestDeadline(): void {
  if (loaded !== undefined) return;
  const addon = loadDeadlineAddon() as DeadlineAddon;
  // An addon built from an older checkout has no heap limit: the runtime would run without one.
  if (typeof addon.limitHeap !== 'function' || typeof addon.heapExceeded !== 'function') {
    throw new StrataError(
      `${deadlineAddonPath()} was built from an older @strata/runtime and cannot enforce maxHeapSize; rebuild it (npm rebuild @strata/runtime)`,
    );
  }
  loaded = { addon, module: new (loadEngine().NativeModule)(deadlineAddonPath()) };
}

/** {@link GuestDeadline.disarm}'s flag: the deadline fired since it was armed. */
export const DEADLINE_FIRED = 1;
/** {@link GuestDeadline.disarm}'s flag: a promise was rejected with no handler since the guest last called `takeRejections`. */
export const REJECTIONS_LEFT = 2;

/**
 * One isolate's deadline. Arm it around every entry into the isolate; release it before disposing the isolate.
 *
 * The addon also keeps the promises the guest rejects with no handler, in place of isolated-vm,
 * which throws the first of them at the end of each entry instead of the entry's result. Once
 * {@link disarm} reports {@link REJECTIONS_LEFT}, guest code calls {@link takeRejections}:
 * `[reasons of those still without a handler, how many more there were]`.
 */
export class GuestDeadline {
  readonly #addon: DeadlineAddon;
  readonly #slot: number;
  /** A function of the guest's context (call it from the guest); see the class's description. */
  readonly takeRejections: IsolatedVm.Reference;
  /**
   * A function of the guest's context: given the prelude's `finishEval`, returns the host's eval
   * in one entry, `runScript(source, filename, id)`: the script compiled and run as isolated-vm's
   * `evalSync` does, and its completion handed to `finishEval(completion, id)`, whose answer the
   * call returns (`native/guest-deadline.cc` says why).
   */
  readonly bindScriptRunner: IsolatedVm.Reference;
  #released = false;

  private constructor(addon: DeadlineAddon, slot: number, takeRejections: IsolatedVm.Reference, bindScriptRunner: IsolatedVm.Reference) {
    this.#addon = addon;
    this.#slot = slot;
    this.takeRejections = takeRejections;
    this.bindScriptRunner = bindScriptRunner;
  }

  /** Registers the isolate of `context` with the watcher. */
  static attach(context: IsolatedVm.Context): GuestDeadline {
    loadGuestDeadline();
    const exports = loaded!.module.createSync(context);
    try {
      const slot = exports.getSync('slot') as number;
      const takeRejections = exports.getSync('takeRejections', { reference: true }) as IsolatedVm.Reference;
      const bindScriptRunner = exports.getSync('bindScriptRunner', { reference: true }) as IsolatedVm.Reference;
      if (takeRejections.typeof !== 'function' || bindScriptRunner.typeof !== 'function') {
        loaded!.addon.release(slot);
        throw new StrataError(
          `${deadlineAddonPath()} was built from an older @strata/runtime (it lacks ${takeRejections.typeof === 'function' ? 'the one-entry eval' : "the guest's unhandled rejections"}); rebuild it (npm rebuild @strata/runtime)`,
        );
      }
      return new GuestDeadline(loaded!.addon, slot, takeRejections, bindScriptRunner);
    } finally {
      exports.release();
    }
  }

  /** Stops the isolate's JavaScript `ms` milliseconds from now, unless disarmed first. */
  arm(ms: number): void {
    this.#addon.arm(this.#slot, Math.min(Math.max(ms, 0), 1e12));
  }

  /**
   * Stops watching; {@link DEADLINE_FIRED} and {@link REJECTIONS_LEFT} as flags. After a deadline
   * that fired, call {@link cancel} once the entry has returned.
   */
  disarm(): number {
    return this.#addon.disarm(this.#slot);
  }

  /** Clears a termination that fired, so the next entry runs. */
  cancel(): void {
    this.#addon.cancel(this.#slot);
  }

  /**
   * After a host function returned inside an entry: clears a termination that fired while it ran
   * (its time is not the guest's) and arms the deadline `ms` from now.
   */
  resume(ms: number): void {
    this.#addon.resume(this.#slot, Math.min(Math.max(ms, 0), 1e12));
  }

  /**
   * Stops the isolate's JavaScript once its heap is still larger than `bytes` after a garbage
   * collection (checked inside V8, after every collection, also in the middle of a long entry).
   */
  limitHeap(bytes: number): void {
    this.#addon.limitHeap(this.#slot, Math.min(Math.max(bytes, 0), 1e12));
  }

  /** Whether the heap limit stopped the isolate; from then on the isolate is not to be trusted. */
  heapExceeded(): boolean {
    return !this.#released && this.#addon.heapExceeded(this.#slot);
  }

  /** Forgets the isolate. Idempotent. */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    this.takeRejections.release();
    this.#addon.release(this.#slot);
  }
}
