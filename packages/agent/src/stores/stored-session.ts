/**
 * One session's place in a store, as the `AgentSandbox` running it holds it: its lease (taken,
 * renewed while the session lives, given up at close), the version it last wrote, and its writes,
 * one at a time, each the rows that changed since the last one the store confirmed.
 *
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { InvalidOption } from '@strata/runtime';
import { JournalConflict, JournalStoreError, LeaseHeld, LeaseLost } from '../errors.js';
import type { Journal, JournalLimits } from '../journal.js';
import { assembleJournal, JournalRows } from './journal-rows.js';
import type { JournalStore, Lease } from './journal-store.js';
import { MAX_LEASE_TTL_MS } from './store-checks.js';

/** How a session holds its lease. */
export interface LeaseOptions {
  /**
   * How long the lease lasts unless renewed, in ms (it is renewed every third of it while the
   * session lives). A process that stops renewing (killed, paused, cut off) loses the session to
   * the next `resume` this long after its last renewal. Default 30 000.
   */
  ttlMs?: number;
  /** How long `resume` waits for a lease another holder has, in ms, before it fails with `LeaseHeld`. Default 0. */
  waitMs?: number;
}

const DEFAULT_TTL_MS = 30_000;
// How often a resume waiting for a lease asks again: the takeover comes within this of the expiry.
const LEASE_POLL_MS = 25;

/** The lease options, checked, with their defaults. @throws `InvalidOption`. */
export function leaseOptions(options: unknown): { ttlMs: number; waitMs: number } {
  if (options === undefined) return { ttlMs: DEFAULT_TTL_MS, waitMs: 0 };
  if (options === null || typeof options !== 'object' || Array.isArray(options)) throw new InvalidOption('lease must be an object: { ttlMs?, waitMs? }');
  const { ttlMs = DEFAULT_TTL_MS, waitMs = 0 } = options as LeaseOptions;
  if (!Number.isSafeInteger(ttlMs) || ttlMs < 100 || ttlMs > MAX_LEASE_TTL_MS)
    throw new InvalidOption(`lease.ttlMs must be an integer from 100 to ${MAX_LEASE_TTL_MS} (got ${String(ttlMs)})`);
  if (!Number.isSafeInteger(waitMs) || waitMs < 0 || waitMs > MAX_LEASE_TTL_MS)
    throw new InvalidOption(`lease.waitMs must be an integer from 0 to ${MAX_LEASE_TTL_MS} (got ${String(waitMs)})`);
  return { ttlMs, waitMs };
}

/** @throws `InvalidOption` unless `store` has the methods of a `JournalStore`. */
export function checkStore(store: unknown): asserts store is JournalStore {
  const methods = ['create', 'load', 'append', 'list', 'delete', 'acquireLease', 'renewLease', 'releaseLease', 'close'] as const;
  if (store === null || typeof store !== 'object' || methods.some((name) => typeof (store as Record<string, unknown>)[name] !== 'function'))
    throw new InvalidOption(`store must be a JournalStore (MemoryJournalStore, SqliteJournalStore, or an object with ${methods.join(', ')})`);
}

/** A session's lease and writes in a store. */
export class StoredSession {
  readonly store: JournalStore;
  readonly sessionId: string;
  readonly #ttlMs: number;
  #lease: Lease;
  #version: number;
  readonly #rows: JournalRows;
  #queue: Promise<unknown> = Promise.resolve();
  #renewal: NodeJS.Timeout | undefined;
  #lost: Error | undefined;
  #onLost: ((reason: Error) => void) | undefined;
  #closed = false;

  private constructor(store: JournalStore, sessionId: string, lease: Lease, version: number, rows: JournalRows, ttlMs: number) {
    this.store = store;
    this.sessionId = sessionId;
    this.#lease = lease;
    this.#version = version;
    this.#rows = rows;
    this.#ttlMs = ttlMs;
    this.#renewal = setInterval(() => void this.#renew(), Math.max(10, Math.floor(ttlMs / 3)));
    this.#renewal.unref();
  }

  /** A new session in `store`, holding its lease. @throws `JournalConflict` when the id exists. */
  static async create(store: JournalStore, journal: Journal, sessionId: string, owner: string, ttlMs: number): Promise<StoredSession> {
    const created = await store.create(sessionId, JSON.stringify(journal.settings), { owner, ttlMs });
    if (created.lease === undefined) throw new JournalStoreError(sessionId, `the store ${store.name} created the session without the lease asked for`);
    const stored = new StoredSession(store, sessionId, created.lease, created.version, new JournalRows(undefined), ttlMs);
    try {
      await stored.sync(journal, undefined);
    } catch (error) {
      await stored.close();
      throw error;
    }
    return stored;
  }

  /**
   * A stored session, its lease taken (waiting up to `waitMs` for another holder's to expire),
   * and its journal, checked against `limits`.
   *
   * @throws `LeaseHeld`, `JournalStoreError` (no such session, the store failed), `JournalError` (a corrupted row).
   */
  static async open(
    store: JournalStore,
    sessionId: string,
    owner: string,
    lease: { ttlMs: number; waitMs: number },
    limits: JournalLimits,
  ): Promise<{ stored: StoredSession; journal: Journal; bytes: number }> {
    const until = performance.now() + lease.waitMs;
    let held: Lease;
    for (;;) {
      try {
        held = await store.acquireLease(sessionId, owner, lease.ttlMs);
        break;
      } catch (error) {
        if (!(error instanceof LeaseHeld) || performance.now() >= until) {
          if (error instanceof LeaseHeld)
            throw new LeaseHeld(
              sessionId,
              error.owner,
              error.expiresAt,
              `${error.message}${lease.waitMs > 0 ? ` (waited ${lease.waitMs} ms)` : ''}: it runs elsewhere; wait for it (lease: { waitMs }), or retry after its expiry`,
            );
          throw error;
        }
        await sleep(Math.max(1, Math.min(LEASE_POLL_MS, until - performance.now())));
      }
    }
    try {
      const rows = await store.load(sessionId);
      if (rows === undefined) throw new JournalStoreError(sessionId, `the session ${JSON.stringify(sessionId)} was deleted as its lease was taken`);
      const { journal, bytes } = assembleJournal(rows, limits);
      const stored = new StoredSession(store, sessionId, held, rows.session.version, new JournalRows(journal), lease.ttlMs);
      return { stored, journal, bytes };
    } catch (error) {
      await store.releaseLease(held).catch(() => undefined);
      throw error;
    }
  }

  /** The lease this session holds. */
  get lease(): Lease {
    return this.#lease;
  }

  /** Why the session can no longer write here (its lease was taken over, or someone else wrote it), once it cannot. */
  get lost(): Error | undefined {
    return this.#lost;
  }

  /** Called once, when the lease is found lost between writes (a renewal refused). */
  onLost(listener: (reason: Error) => void): void {
    this.#onLost = listener;
  }

  /**
   * Writes what changed in `journal` since the last write (`open`: the cell running now, stored
   * as `running`). Writes go one at a time; each carries the version it follows and the lease.
   * @throws what the store throws; `LeaseLost` or `JournalConflict` once the session cannot write any more.
   */
  sync(journal: Journal, open: number | undefined): Promise<void> {
    const write = this.#queue.then(() => this.#write(journal, open));
    this.#queue = write.catch(() => undefined);
    return write;
  }

  async #write(journal: Journal, open: number | undefined): Promise<void> {
    if (this.#lost !== undefined) throw this.#lost;
    if (this.#closed) throw new JournalStoreError(this.sessionId, 'the session has closed its place in the store');
    const append = this.#rows.diff(journal, open);
    if (append === undefined) return;
    try {
      this.#version = await this.store.append(this.sessionId, append, { version: this.#version, lease: this.#lease });
    } catch (error) {
      if (error instanceof LeaseLost || error instanceof JournalConflict) this.#lose(error);
      throw error;
    }
    this.#rows.written(journal, append);
  }

  async #renew(): Promise<void> {
    if (this.#closed || this.#lost !== undefined) return;
    try {
      this.#lease = await this.store.renewLease(this.#lease, this.#ttlMs);
    } catch (error) {
      // A store that failed is asked again at the next renewal; a lease taken over is lost.
      if (error instanceof LeaseLost) this.#lose(error);
    }
  }

  #lose(reason: Error): void {
    if (this.#lost !== undefined) return;
    this.#lost = reason;
    clearInterval(this.#renewal);
    const listener = this.#onLost;
    this.#onLost = undefined;
    listener?.(reason);
  }

  /** Writes what is left (`journal`, unless the lease is lost), stops renewing and gives the lease up. Never throws. */
  async close(journal?: Journal): Promise<void> {
    if (this.#closed) return;
    if (journal !== undefined && this.#lost === undefined) await this.sync(journal, undefined).catch(() => undefined);
    await this.#queue;
    this.#closed = true;
    clearInterval(this.#renewal);
    if (this.#lost === undefined) await this.store.releaseLease(this.#lease).catch(() => undefined);
  }
}
