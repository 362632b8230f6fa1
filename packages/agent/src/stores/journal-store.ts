/**
 * Where a session's journal lives so that the session outlives its process: the `JournalStore`
 * contract, which the in-memory, SQLite and PostgreSQL stores implement and a third party may.
 *
 * A store keeps rows, not a journal: a session's header (its settings, the next call's `seq`,
 * a version and the lease), one row per cell (the cell without its calls) and one row per tool
 * call. A write (`append`) is a cell's new or changed rows, in one transaction, against the
 * version the writer read and under the writer's lease: a write that lost a race, or whose lease
 * was taken over, changes nothing. A store never interprets the rows' JSON: `AgentSandbox`
 * parses and checks what a store gives back (`assembleJournal`), so a store written by someone
 * else (or a row edited by hand) can never hand a session something unchecked.
 *
 * @module
 */
/** A session's lease: who runs it, until when, and the fencing token every write carries. */
export interface Lease {
  readonly sessionId: string;
  /** Who holds it (an `AgentSandbox` makes a random one per session object). */
  readonly owner: string;
  /** Grows by one at every acquisition of the session's lease: a write with an older token is refused. */
  readonly token: number;
  /** Epoch milliseconds on the store's clock (the database's, for a fleet's store). */
  readonly expiresAt: number;
}

/** A session's header row. */
export interface SessionRow {
  readonly sessionId: string;
  /** The journal format's version (`JOURNAL_VERSION`) the rows were written in. */
  readonly format: number;
  /** The session's settings, as JSON text (`JournalSettings`). */
  readonly settings: string;
  readonly nextSeq: number;
  /** Grows by one at every write. */
  readonly version: number;
  /** The current lease (or the last one, expired or released: its token still fences). */
  readonly lease: { readonly owner: string | null; readonly token: number; readonly expiresAt: number | null };
  /** Epoch milliseconds. */
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** One cell's row: the cell without its calls, as JSON text. */
export interface CellRow {
  readonly cell: number;
  readonly record: string;
}

/** One tool call's row, as JSON text. */
export interface CallRow {
  readonly cell: number;
  readonly seq: number;
  readonly record: string;
}

/** What a store holds of one session. */
export interface StoredRows {
  readonly session: SessionRow;
  /** In cell order. */
  readonly cells: readonly CellRow[];
  /** In seq order. */
  readonly calls: readonly CallRow[];
}

/** One write: a cell's new or changed rows. */
export interface JournalAppend {
  /**
   * Cells from this number on are gone from the store before the rows below are written (their
   * calls with them): a cell begun again after a write that failed, or rolled back.
   */
  readonly truncateFrom?: number;
  /** Rows to write, each replacing the row of its cell if there is one. */
  readonly cells: readonly CellRow[];
  /** Rows to write, each replacing the row of its seq if there is one. */
  readonly calls: readonly CallRow[];
  readonly nextSeq: number;
}

/** What a write expects of the stored session: the version it read and, with leases, its lease. */
export interface WriteExpectation {
  readonly version: number;
  /** The writer's lease: refused unless its token is the session's current one. */
  readonly lease?: Lease;
}

/** A session in {@link JournalStore.list}. */
export interface SessionSummary {
  readonly sessionId: string;
  readonly cells: number;
  readonly version: number;
  readonly createdAt: number;
  readonly updatedAt: number;
  /** The lease's holder while it has not expired. */
  readonly leasedBy?: string;
}

/** A store of session journals. Every method may reject with `JournalStoreError` when the store itself fails. */
export interface JournalStore {
  /** A name for messages (`'memory'`, `'sqlite:/var/lib/app/sessions.db'`, `'postgres'`). */
  readonly name: string;
  /**
   * Creates a session with its settings (JSON text) and no cells, holding a lease of `ttlMs` for
   * `owner` (token 1), or none when `lease` is undefined.
   * @throws `JournalConflict` when a session of that id exists.
   */
  create(
    sessionId: string,
    settings: string,
    lease: { readonly owner: string; readonly ttlMs: number } | undefined,
  ): Promise<{ version: number; lease?: Lease }>;
  /** The session's rows, or undefined when there is none. */
  load(sessionId: string): Promise<StoredRows | undefined>;
  /**
   * Writes `append` in one transaction. Resolves to the new version.
   * @throws `JournalConflict` (another version is stored), `LeaseLost` (the lease's token is not the current one, or the session is gone).
   */
  append(sessionId: string, append: JournalAppend, expect: WriteExpectation): Promise<number>;
  /** Sessions in id order, after `after`, at most `limit` (default 100). */
  list(options?: { readonly after?: string; readonly limit?: number }): Promise<SessionSummary[]>;
  /**
   * Deletes a session and its rows; false when there was none. With `lease`, only while it is
   * the current one (`LeaseLost` otherwise); without, whoever holds it.
   */
  delete(sessionId: string, lease?: Lease): Promise<boolean>;
  /**
   * Takes the session's lease for `owner`: when nobody holds it, or its holder's has expired.
   * @throws `LeaseHeld` naming the holder and its expiry; `JournalStoreError` when there is no such session.
   */
  acquireLease(sessionId: string, owner: string, ttlMs: number): Promise<Lease>;
  /** Extends a lease by `ttlMs` from now. @throws `LeaseLost` when it is no longer the session's. */
  renewLease(lease: Lease, ttlMs: number): Promise<Lease>;
  /** Gives the lease up (a no-op when it is no longer the session's). */
  releaseLease(lease: Lease): Promise<void>;
  /** Closes the store's connection (the caller's: a store given to sessions is not closed by them). */
  close(): Promise<void>;
}
