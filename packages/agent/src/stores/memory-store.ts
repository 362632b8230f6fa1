/**
 * `MemoryJournalStore`: the `JournalStore` contract in this process's memory, with the same
 * versions, leases and fencing as the databases' stores. What a session uses with no store at
 * all is its own journal; this store is for sharing sessions between `AgentSandbox` objects of
 * one process, and for tests of code written against the contract.
 *
 * @module
 */
import { JournalConflict, JournalStoreError, LeaseHeld, LeaseLost } from '../errors.js';
import type { CallRow, CellRow, JournalAppend, JournalStore, Lease, SessionRow, SessionSummary, StoredRows, WriteExpectation } from './journal-store.js';
import { checkAppend, checkLeaseRequest, checkListOptions, checkStoreSessionId } from './store-checks.js';

interface Entry {
  session: SessionRow;
  readonly cells: Map<number, CellRow>;
  readonly calls: Map<number, CallRow>;
}

/** Journals in this process's memory (gone with it). */
export class MemoryJournalStore implements JournalStore {
  readonly name = 'memory';
  readonly #sessions = new Map<string, Entry>();
  readonly #now: () => number;
  #closed = false;

  /** `now`: the store's clock (epoch ms), for leases; default `Date.now`. */
  constructor(options: { now?: () => number } = {}) {
    this.#now = options.now ?? Date.now;
  }

  async create(
    sessionId: string,
    settings: string,
    lease: { readonly owner: string; readonly ttlMs: number } | undefined,
  ): Promise<{ version: number; lease?: Lease }> {
    this.#assertOpen();
    checkStoreSessionId(sessionId);
    if (lease !== undefined) checkLeaseRequest(lease.owner, lease.ttlMs);
    if (this.#sessions.has(sessionId))
      throw new JournalConflict(sessionId, `a session ${JSON.stringify(sessionId)} exists in the store already: resume it, or give another id`);
    const now = this.#now();
    const held = lease === undefined ? undefined : { sessionId, owner: lease.owner, token: 1, expiresAt: now + lease.ttlMs };
    this.#sessions.set(sessionId, {
      session: {
        sessionId,
        format: 1,
        settings,
        nextSeq: 1,
        version: 1,
        lease: held === undefined ? { owner: null, token: 0, expiresAt: null } : { owner: held.owner, token: 1, expiresAt: held.expiresAt },
        createdAt: now,
        updatedAt: now,
      },
      cells: new Map(),
      calls: new Map(),
    });
    return held === undefined ? { version: 1 } : { version: 1, lease: held };
  }

  async load(sessionId: string): Promise<StoredRows | undefined> {
    this.#assertOpen();
    checkStoreSessionId(sessionId);
    const entry = this.#sessions.get(sessionId);
    if (entry === undefined) return undefined;
    return {
      session: { ...entry.session, lease: { ...entry.session.lease } },
      cells: [...entry.cells.values()].sort((a, b) => a.cell - b.cell).map((row) => ({ ...row })),
      calls: [...entry.calls.values()].sort((a, b) => a.seq - b.seq).map((row) => ({ ...row })),
    };
  }

  async append(sessionId: string, append: JournalAppend, expect: WriteExpectation): Promise<number> {
    this.#assertOpen();
    checkStoreSessionId(sessionId);
    checkAppend(append, expect);
    const entry = this.#sessions.get(sessionId);
    if (entry === undefined) throw new LeaseLost(sessionId, `the session ${JSON.stringify(sessionId)} is no longer in the store (deleted)`);
    if (expect.lease !== undefined && expect.lease.token !== entry.session.lease.token)
      throw new LeaseLost(
        sessionId,
        `the lease on session ${JSON.stringify(sessionId)} was taken over (token ${entry.session.lease.token}, this writer's ${expect.lease.token}): nothing was written`,
      );
    if (entry.session.version !== expect.version)
      throw new JournalConflict(
        sessionId,
        `session ${JSON.stringify(sessionId)} is at version ${entry.session.version} in the store, this writer read ${expect.version}: nothing was written`,
      );
    if (append.truncateFrom !== undefined) {
      for (const n of [...entry.cells.keys()]) if (n >= append.truncateFrom) entry.cells.delete(n);
      for (const [seq, row] of [...entry.calls]) if (row.cell >= append.truncateFrom) entry.calls.delete(seq);
    }
    for (const row of append.cells) entry.cells.set(row.cell, { ...row });
    for (const row of append.calls) entry.calls.set(row.seq, { ...row });
    const version = entry.session.version + 1;
    entry.session = { ...entry.session, nextSeq: append.nextSeq, version, updatedAt: this.#now() };
    return version;
  }

  async list(options: { readonly after?: string; readonly limit?: number } = {}): Promise<SessionSummary[]> {
    this.#assertOpen();
    const { after, limit } = checkListOptions(options);
    const now = this.#now();
    return [...this.#sessions.values()]
      .filter((entry) => after === undefined || entry.session.sessionId > after)
      .sort((a, b) => (a.session.sessionId < b.session.sessionId ? -1 : 1))
      .slice(0, limit)
      .map(({ session, cells }) => ({
        sessionId: session.sessionId,
        cells: cells.size,
        version: session.version,
        createdAt: session.createdAt,
        updatedAt: session.updatedAt,
        ...(session.lease.owner !== null && (session.lease.expiresAt ?? 0) > now ? { leasedBy: session.lease.owner } : {}),
      }));
  }

  async delete(sessionId: string, lease?: Lease): Promise<boolean> {
    this.#assertOpen();
    checkStoreSessionId(sessionId);
    const entry = this.#sessions.get(sessionId);
    if (entry === undefined) return false;
    if (lease !== undefined && lease.token !== entry.session.lease.token)
      throw new LeaseLost(sessionId, `the lease on session ${JSON.stringify(sessionId)} was taken over: it was not deleted`);
    return this.#sessions.delete(sessionId);
  }

  async acquireLease(sessionId: string, owner: string, ttlMs: number): Promise<Lease> {
    this.#assertOpen();
    checkStoreSessionId(sessionId);
    checkLeaseRequest(owner, ttlMs);
    const entry = this.#sessions.get(sessionId);
    if (entry === undefined) throw new JournalStoreError(sessionId, `there is no session ${JSON.stringify(sessionId)} in the store`);
    const now = this.#now();
    const { lease } = entry.session;
    if (lease.owner !== null && lease.expiresAt !== null && lease.expiresAt > now)
      throw new LeaseHeld(
        sessionId,
        lease.owner,
        lease.expiresAt,
        `session ${JSON.stringify(sessionId)} is leased by ${lease.owner} until ${new Date(lease.expiresAt).toISOString()}`,
      );
    const taken = { owner, token: lease.token + 1, expiresAt: now + ttlMs };
    entry.session = { ...entry.session, lease: taken, updatedAt: now };
    return { sessionId, ...taken };
  }

  async renewLease(lease: Lease, ttlMs: number): Promise<Lease> {
    this.#assertOpen();
    checkLeaseRequest(lease.owner, ttlMs);
    const entry = this.#sessions.get(lease.sessionId);
    if (entry === undefined || entry.session.lease.token !== lease.token || entry.session.lease.owner !== lease.owner)
      throw new LeaseLost(lease.sessionId, `the lease on session ${JSON.stringify(lease.sessionId)} is no longer this holder's`);
    const renewed = { owner: lease.owner, token: lease.token, expiresAt: this.#now() + ttlMs };
    entry.session = { ...entry.session, lease: renewed };
    return { sessionId: lease.sessionId, ...renewed };
  }

  async releaseLease(lease: Lease): Promise<void> {
    this.#assertOpen();
    const entry = this.#sessions.get(lease.sessionId);
    if (entry === undefined || entry.session.lease.token !== lease.token || entry.session.lease.owner !== lease.owner) return;
    entry.session = { ...entry.session, lease: { owner: null, token: lease.token, expiresAt: null } };
  }

  async close(): Promise<void> {
    this.#closed = true;
  }

  #assertOpen(): void {
    if (this.#closed) throw new JournalStoreError(undefined, 'the memory journal store is closed');
  }
}
