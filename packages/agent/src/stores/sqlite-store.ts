/**
 * `SqliteJournalStore`: session journals in one SQLite file, through `node:sqlite` (built into
 * Node; no dependency). The store of one machine: several processes may share the file, and its
 * leases keep one of them running a session at a time.
 *
 * Every write is one `BEGIN IMMEDIATE` transaction, so a write that fails leaves the file as it
 * was. `node:sqlite` is synchronous: SQLite's own busy wait is off (it would hold this event loop
 * while another process writes), and a write that finds the file locked is retried from a timer
 * instead, up to `busyTimeoutMs`. Each statement is short (a cell's rows); loading a journal reads
 * at most the session's `maxJournalBytes`.
 *
 * @module
 */
import { closeSync, existsSync, openSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { InvalidOption } from '@strata/runtime';
import { JournalConflict, JournalStoreError, LeaseHeld, LeaseLost } from '../errors.js';
import type { JournalAppend, JournalStore, Lease, SessionSummary, StoredRows, WriteExpectation } from './journal-store.js';
import { storedRowsOf } from './journal-rows.js';
import { checkAppend, checkExpectation, checkLeaseRequest, checkListOptions, checkStoreSessionId } from './store-checks.js';

/** Options of {@link SqliteJournalStore.open}. */
export interface SqliteJournalStoreOptions {
  /**
   * `'full'` (default): every write is on disk before it resolves (SQLite's `synchronous = FULL`
   * in WAL mode), so a power loss loses nothing a session was told was written. `'normal'`: a
   * power loss (not a crash of the process) may lose the last writes; faster on slow disks.
   */
  durability?: 'full' | 'normal';
  /** How long a write waits for another process's write to the same file, in ms. Default 5 000. */
  busyTimeoutMs?: number;
}

// The schema; `strata_meta` holds its version, so a later release can migrate the file.
const SCHEMA_VERSION = 1;
const SCHEMA = `
CREATE TABLE IF NOT EXISTS strata_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS strata_sessions (
  session_id TEXT PRIMARY KEY,
  format INTEGER NOT NULL,
  settings TEXT NOT NULL,
  next_seq INTEGER NOT NULL,
  version INTEGER NOT NULL,
  lease_owner TEXT,
  lease_token INTEGER NOT NULL DEFAULT 0,
  lease_expires_at INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS strata_cells (
  session_id TEXT NOT NULL REFERENCES strata_sessions (session_id) ON DELETE CASCADE,
  cell INTEGER NOT NULL,
  record TEXT NOT NULL,
  PRIMARY KEY (session_id, cell)
) STRICT;
CREATE TABLE IF NOT EXISTS strata_calls (
  session_id TEXT NOT NULL REFERENCES strata_sessions (session_id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  cell INTEGER NOT NULL,
  record TEXT NOT NULL,
  PRIMARY KEY (session_id, seq)
) STRICT;
`;

type Database = import('node:sqlite').DatabaseSync;
type Row = Record<string, number | string | null>;

/** SQLite's result codes that mean "another connection holds the lock: try again". */
const SQLITE_BUSY = 5;
const SQLITE_LOCKED = 6;

/** Session journals in a SQLite file. */
export class SqliteJournalStore implements JournalStore {
  readonly name: string;
  readonly #db: Database;
  readonly #busyTimeoutMs: number;
  #closed = false;

  private constructor(path: string, db: Database, busyTimeoutMs: number) {
    this.name = `sqlite:${path}`;
    this.#db = db;
    this.#busyTimeoutMs = busyTimeoutMs;
  }

  /**
   * Opens (or creates, readable by its owner only) the file at `path`, or `':memory:'`.
   *
   * @throws `InvalidOption` for bad options; {@link JournalStoreError} when `node:sqlite` is
   * missing (Node before 22.13) or the file cannot be opened or is not a Strata store.
   */
  static open(path: string, options: SqliteJournalStoreOptions = {}): SqliteJournalStore {
    if (typeof path !== 'string' || path.length === 0) throw new InvalidOption('SqliteJournalStore.open(path): path must be a file path or ":memory:"');
    if (options === null || typeof options !== 'object') throw new InvalidOption('SqliteJournalStore.open(path, options): options must be an object');
    const { durability = 'full', busyTimeoutMs = 5_000 } = options;
    if (durability !== 'full' && durability !== 'normal') throw new InvalidOption(`durability must be 'full' or 'normal' (got ${String(durability)})`);
    if (!Number.isSafeInteger(busyTimeoutMs) || busyTimeoutMs < 0 || busyTimeoutMs > 600_000)
      throw new InvalidOption(`busyTimeoutMs must be an integer from 0 to 600000 (got ${String(busyTimeoutMs)})`);
    const sqlite = process.getBuiltinModule('node:sqlite') as typeof import('node:sqlite') | undefined;
    if (sqlite === undefined)
      throw new JournalStoreError(undefined, `node:sqlite is not in this Node (${process.version}): use Node 22.13 or later, or another store`);
    // Journals hold tool answers: a new file is its owner's only (SQLite gives its -wal and -shm the same mode).
    if (path !== ':memory:' && !existsSync(path)) {
      try {
        closeSync(openSync(path, 'a', 0o600));
      } catch (error) {
        throw new JournalStoreError(undefined, `cannot create the journal store ${path}: ${(error as Error).message}`, { cause: error });
      }
    }
    let db: Database;
    try {
      db = new sqlite.DatabaseSync(path, { enableForeignKeyConstraints: true });
    } catch (error) {
      throw new JournalStoreError(undefined, `cannot open the journal store ${path}: ${(error as Error).message}`, { cause: error });
    }
    try {
      db.exec('PRAGMA busy_timeout = 0');
      if (path !== ':memory:') db.exec('PRAGMA journal_mode = WAL');
      db.exec(`PRAGMA synchronous = ${durability === 'full' ? 'FULL' : 'NORMAL'}`);
      const store = new SqliteJournalStore(path, db, busyTimeoutMs);
      store.#migrate();
      return store;
    } catch (error) {
      db.close();
      if (error instanceof JournalStoreError) throw error;
      throw new JournalStoreError(undefined, `cannot use ${path} as a journal store: ${(error as Error).message}`, { cause: error });
    }
  }

  #migrate(): void {
    this.#db.exec('BEGIN IMMEDIATE');
    try {
      this.#db.exec(SCHEMA);
      const row = this.#db.prepare("SELECT value FROM strata_meta WHERE key = 'schema'").get() as Row | undefined;
      if (row === undefined) this.#db.prepare("INSERT INTO strata_meta (key, value) VALUES ('schema', ?)").run(String(SCHEMA_VERSION));
      else if (row['value'] !== String(SCHEMA_VERSION))
        throw new JournalStoreError(undefined, `the store's schema is version ${String(row['value'])}; this release reads version ${SCHEMA_VERSION}`);
      this.#db.exec('COMMIT');
    } catch (error) {
      this.#db.exec('ROLLBACK');
      throw error;
    }
  }

  async create(
    sessionId: string,
    settings: string,
    lease: { readonly owner: string; readonly ttlMs: number } | undefined,
  ): Promise<{ version: number; lease?: Lease }> {
    checkStoreSessionId(sessionId);
    if (lease !== undefined) checkLeaseRequest(lease.owner, lease.ttlMs);
    if (typeof settings !== 'string') throw new InvalidOption('create(sessionId, settings): settings must be JSON text');
    return this.#transaction(sessionId, () => {
      if (this.#db.prepare('SELECT 1 FROM strata_sessions WHERE session_id = ?').get(sessionId) !== undefined)
        throw new JournalConflict(sessionId, `a session ${JSON.stringify(sessionId)} exists in the store already: resume it, or give another id`);
      const now = Date.now();
      const expiresAt = lease === undefined ? null : now + lease.ttlMs;
      this.#db
        .prepare(
          'INSERT INTO strata_sessions (session_id, format, settings, next_seq, version, lease_owner, lease_token, lease_expires_at, created_at, updated_at) VALUES (?, 1, ?, 1, 1, ?, ?, ?, ?, ?)',
        )
        .run(sessionId, settings, lease?.owner ?? null, lease === undefined ? 0 : 1, expiresAt, now, now);
      return lease === undefined ? { version: 1 } : { version: 1, lease: { sessionId, owner: lease.owner, token: 1, expiresAt: expiresAt! } };
    });
  }

  async load(sessionId: string): Promise<StoredRows | undefined> {
    checkStoreSessionId(sessionId);
    // One read transaction: the header and the rows are of the same version.
    return this.#transaction(
      sessionId,
      () => {
        const session = this.#db.prepare('SELECT * FROM strata_sessions WHERE session_id = ?').get(sessionId) as Row | undefined;
        if (session === undefined) return undefined;
        const cells = this.#db.prepare('SELECT cell, record FROM strata_cells WHERE session_id = ? ORDER BY cell').all(sessionId) as Row[];
        const calls = this.#db.prepare('SELECT seq, cell, record FROM strata_calls WHERE session_id = ? ORDER BY seq').all(sessionId) as Row[];
        return storedRowsOf(sessionId, session, cells, calls);
      },
      'BEGIN',
    );
  }

  async append(sessionId: string, append: JournalAppend, expect: WriteExpectation): Promise<number> {
    checkStoreSessionId(sessionId);
    checkAppend(append, expect);
    return this.#transaction(sessionId, () => {
      const session = this.#db.prepare('SELECT version, lease_token FROM strata_sessions WHERE session_id = ?').get(sessionId) as Row | undefined;
      if (session === undefined) throw new LeaseLost(sessionId, `the session ${JSON.stringify(sessionId)} is no longer in the store (deleted)`);
      checkExpectation(sessionId, { version: Number(session['version']), leaseToken: Number(session['lease_token']) }, expect);
      if (append.truncateFrom !== undefined) {
        this.#db.prepare('DELETE FROM strata_calls WHERE session_id = ? AND cell >= ?').run(sessionId, append.truncateFrom);
        this.#db.prepare('DELETE FROM strata_cells WHERE session_id = ? AND cell >= ?').run(sessionId, append.truncateFrom);
      }
      const cell = this.#db.prepare('INSERT OR REPLACE INTO strata_cells (session_id, cell, record) VALUES (?, ?, ?)');
      for (const row of append.cells) cell.run(sessionId, row.cell, row.record);
      const call = this.#db.prepare('INSERT OR REPLACE INTO strata_calls (session_id, seq, cell, record) VALUES (?, ?, ?, ?)');
      for (const row of append.calls) call.run(sessionId, row.seq, row.cell, row.record);
      const version = Number(session['version']) + 1;
      this.#db
        .prepare('UPDATE strata_sessions SET version = ?, next_seq = ?, updated_at = ? WHERE session_id = ?')
        .run(version, append.nextSeq, Date.now(), sessionId);
      return version;
    });
  }

  async list(options: { readonly after?: string; readonly limit?: number } = {}): Promise<SessionSummary[]> {
    const { after, limit } = checkListOptions(options);
    const now = Date.now();
    return this.#transaction(
      undefined,
      () =>
        (
          this.#db
            .prepare(
              `SELECT s.session_id, s.version, s.created_at, s.updated_at, s.lease_owner, s.lease_expires_at,
                 (SELECT count(*) FROM strata_cells c WHERE c.session_id = s.session_id) AS cells
               FROM strata_sessions s WHERE s.session_id > ? ORDER BY s.session_id LIMIT ?`,
            )
            .all(after ?? '', limit) as Row[]
        ).map((row) => ({
          sessionId: String(row['session_id']),
          cells: Number(row['cells']),
          version: Number(row['version']),
          createdAt: Number(row['created_at']),
          updatedAt: Number(row['updated_at']),
          ...(row['lease_owner'] !== null && Number(row['lease_expires_at']) > now ? { leasedBy: String(row['lease_owner']) } : {}),
        })),
      'BEGIN',
    );
  }

  async delete(sessionId: string, lease?: Lease): Promise<boolean> {
    checkStoreSessionId(sessionId);
    return this.#transaction(sessionId, () => {
      const session = this.#db.prepare('SELECT lease_token FROM strata_sessions WHERE session_id = ?').get(sessionId) as Row | undefined;
      if (session === undefined) return false;
      if (lease !== undefined && Number(session['lease_token']) !== lease.token)
        throw new LeaseLost(sessionId, `the lease on session ${JSON.stringify(sessionId)} was taken over: it was not deleted`);
      this.#db.prepare('DELETE FROM strata_sessions WHERE session_id = ?').run(sessionId);
      return true;
    });
  }

  async acquireLease(sessionId: string, owner: string, ttlMs: number): Promise<Lease> {
    checkStoreSessionId(sessionId);
    checkLeaseRequest(owner, ttlMs);
    return this.#transaction(sessionId, () => {
      const session = this.#db.prepare('SELECT lease_owner, lease_token, lease_expires_at FROM strata_sessions WHERE session_id = ?').get(sessionId) as
        | Row
        | undefined;
      if (session === undefined) throw new JournalStoreError(sessionId, `there is no session ${JSON.stringify(sessionId)} in the store`);
      const now = Date.now();
      const holder = session['lease_owner'];
      const expiresAt = session['lease_expires_at'];
      if (holder !== null && expiresAt !== null && Number(expiresAt) > now)
        throw new LeaseHeld(
          sessionId,
          String(holder),
          Number(expiresAt),
          `session ${JSON.stringify(sessionId)} is leased by ${String(holder)} until ${new Date(Number(expiresAt)).toISOString()}`,
        );
      const token = Number(session['lease_token']) + 1;
      this.#db
        .prepare('UPDATE strata_sessions SET lease_owner = ?, lease_token = ?, lease_expires_at = ?, updated_at = ? WHERE session_id = ?')
        .run(owner, token, now + ttlMs, now, sessionId);
      return { sessionId, owner, token, expiresAt: now + ttlMs };
    });
  }

  async renewLease(lease: Lease, ttlMs: number): Promise<Lease> {
    checkStoreSessionId(lease?.sessionId);
    checkLeaseRequest(lease.owner, ttlMs);
    return this.#transaction(lease.sessionId, () => {
      const expiresAt = Date.now() + ttlMs;
      const changed = this.#db
        .prepare('UPDATE strata_sessions SET lease_expires_at = ? WHERE session_id = ? AND lease_token = ? AND lease_owner = ?')
        .run(expiresAt, lease.sessionId, lease.token, lease.owner);
      if (Number(changed.changes) !== 1)
        throw new LeaseLost(lease.sessionId, `the lease on session ${JSON.stringify(lease.sessionId)} is no longer this holder's`);
      return { ...lease, expiresAt };
    });
  }

  async releaseLease(lease: Lease): Promise<void> {
    checkStoreSessionId(lease?.sessionId);
    await this.#transaction(lease.sessionId, () => {
      this.#db
        .prepare('UPDATE strata_sessions SET lease_owner = NULL, lease_expires_at = NULL WHERE session_id = ? AND lease_token = ? AND lease_owner = ?')
        .run(lease.sessionId, lease.token, lease.owner);
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#db.close();
  }

  /**
   * Runs `work` in one transaction (`BEGIN IMMEDIATE` for writes: the write lock is taken first,
   * so two writers never deadlock), rolled back if it throws. A file locked by another process is
   * retried from a timer, with backoff, up to busyTimeoutMs.
   */
  async #transaction<T>(sessionId: string | undefined, work: () => T, begin: 'BEGIN IMMEDIATE' | 'BEGIN' = 'BEGIN IMMEDIATE'): Promise<T> {
    const started = performance.now();
    for (let attempt = 0; ; attempt++) {
      if (this.#closed) throw new JournalStoreError(sessionId, `the journal store ${this.name} is closed`);
      try {
        this.#db.exec(begin);
      } catch (error) {
        if (isBusy(error) && performance.now() - started < this.#busyTimeoutMs) {
          await sleep(Math.min(2 ** attempt, 50));
          continue;
        }
        throw new JournalStoreError(
          sessionId,
          `the journal store ${this.name} ${isBusy(error) ? `stayed locked by another writer for ${this.#busyTimeoutMs} ms (busyTimeoutMs)` : `failed: ${(error as Error).message}`}`,
          { cause: error },
        );
      }
      let result: T;
      try {
        result = work();
        this.#db.exec('COMMIT');
      } catch (error) {
        try {
          this.#db.exec('ROLLBACK');
        } catch {
          // The transaction is already gone (SQLite rolled it back itself on an I/O error).
        }
        if (
          error instanceof JournalConflict ||
          error instanceof LeaseLost ||
          error instanceof LeaseHeld ||
          error instanceof JournalStoreError ||
          error instanceof InvalidOption
        )
          throw error;
        throw new JournalStoreError(sessionId, `the journal store ${this.name} failed: ${(error as Error).message}`, { cause: error });
      }
      return result;
    }
  }
}

function isBusy(error: unknown): boolean {
  const code = (error as { errcode?: unknown } | null)?.errcode;
  return typeof code === 'number' && ((code & 0xff) === SQLITE_BUSY || (code & 0xff) === SQLITE_LOCKED);
}
