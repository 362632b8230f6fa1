/**
 * `PostgresJournalStore`: session journals in PostgreSQL, through the `pg` driver. The store of a
 * fleet: any machine that reaches the database can resume any session, and the leases (on the
 * database's clock, never a machine's) keep one of them running it at a time.
 *
 * Every call is one transaction on one pooled connection, so a write that fails (a refused
 * statement, a timeout, a server gone mid-write) leaves the rows as they were. Writes run at
 * READ COMMITTED whatever the database's default, and lock the session's header row first
 * (`SELECT … FOR UPDATE`): two writers of one session queue on that lock, and the second then
 * sees the first's version and is refused with `JournalConflict`, as in the other stores.
 * `statementTimeoutMs` bounds each statement and each pause inside a transaction, so a writer
 * cut off mid-transaction cannot hold a session's lock for longer.
 *
 * @module
 */
import {
  checkAppend,
  checkExpectation,
  checkLeaseRequest,
  checkListOptions,
  checkStoreSessionId,
  JOURNAL_VERSION,
  JournalConflict,
  JournalStoreError,
  type JournalAppend,
  type JournalStore,
  type Lease,
  LeaseHeld,
  LeaseLost,
  type SessionSummary,
  type StoredRows,
  storedRowsOf,
  type WriteExpectation,
} from '@strata/agent';
import { InvalidOption } from '@strata/runtime';
import { Pool, type PoolClient, type QueryConfig } from 'pg';
import { connectionLost, describeDatabaseError } from './database-errors.js';
import { planConnect, type PostgresJournalStoreOptions } from './options.js';
import { createTablesSql, SCHEMA_VERSION, type TableNames, tableNames } from './schema.js';

type Row = Record<string, unknown>;
type Query = (text: string, values?: readonly unknown[]) => Promise<Row[]>;

/** Epoch milliseconds of a `timestamptz(3)`, exact (the column keeps milliseconds only). */
const ms = (column: string) => `(extract(epoch FROM ${column}) * 1000)::bigint`;
/** `now + n ms` on the database's clock. */
const later = (parameter: string) => `clock_timestamp() + ${parameter}::double precision * interval '1 millisecond'`;
// The two keys of the advisory lock around creating tables: Strata's, and the schema's (stores of
// every prefix in a schema queue on it, since they may all be creating the schema itself).
const LOCK_CLASS = 0x5354_5241; // 'STRA'
// A client-side wait past the server's own statement timeout: for a server that went silent.
const ANSWER_MARGIN_MS = 1_000;
// The least pause allowed inside a transaction: this process's own event loop may be busy for a
// moment between two statements; a client cut off is ended past it, and its locks released.
const IDLE_FLOOR_MS = 5_000;

/** How long a transaction may sit idle before the database ends its connection. */
function idleTimeoutMs(statementTimeoutMs: number): number {
  return Math.max(statementTimeoutMs, IDLE_FLOOR_MS);
}

/** Session journals in PostgreSQL tables, shared by every process that connects to them. */
export class PostgresJournalStore implements JournalStore {
  /** `postgres:<schema>.<tablePrefix>`, for messages. */
  readonly name: string;
  readonly #pool: Pool;
  readonly #ownPool: boolean;
  readonly #tables: TableNames;
  readonly #statementTimeoutMs: number;
  #closed = false;

  private constructor(pool: Pool, ownPool: boolean, schema: string, tablePrefix: string, statementTimeoutMs: number) {
    this.name = `postgres:${schema}.${tablePrefix}`;
    this.#pool = pool;
    this.#ownPool = ownPool;
    this.#tables = tableNames(schema, tablePrefix);
    this.#statementTimeoutMs = statementTimeoutMs;
  }

  /**
   * Connects, and creates the store's tables where they are missing (safe when several processes
   * start at once). With `pool`, the connections are the caller's; otherwise the store makes a
   * pool of its own (from `connectionString`, or from the `PG*` environment variables), which
   * {@link PostgresJournalStore.close} ends.
   *
   * @throws `InvalidOption` (from `@strata/runtime`) for bad options; `JournalStoreError` when the
   * database cannot be reached, refuses the login or the tables' creation, or holds the store's
   * tables in a schema version this release does not read.
   */
  static async connect(options: PostgresJournalStoreOptions = {}): Promise<PostgresJournalStore> {
    const plan = planConnect(options);
    let pool = plan.pool;
    if (pool === undefined) {
      pool = new Pool({
        ...(plan.connectionString === undefined ? {} : { connectionString: plan.connectionString }),
        max: plan.maxConnections,
        connectionTimeoutMillis: plan.connectTimeoutMs,
        keepAlive: true,
        application_name: 'strata-journal-store',
      });
      // An idle connection the server dropped: the pool discards it and opens another when asked.
      pool.on('error', () => {});
    }
    const store = new PostgresJournalStore(pool, plan.pool === undefined, plan.schema, plan.tablePrefix, plan.statementTimeoutMs);
    try {
      await store.#prepareTables(plan.schema);
    } catch (error) {
      await store.close();
      throw error;
    }
    return store;
  }

  /**
   * Reads the schema's version; only where the tables are missing does it take the advisory lock
   * and create them, so that a role with no right to create tables can use ones made for it.
   */
  async #prepareTables(schema: string): Promise<void> {
    const t = this.#tables;
    await this.#transaction(undefined, 'start', 'setup', async (query) => {
      const version = async () => {
        const [found] = await query('SELECT to_regclass($1) IS NOT NULL AS present', [t.meta]);
        if (found?.['present'] !== true) return undefined;
        return (await query(`SELECT value FROM ${t.meta} WHERE key = 'schema'`))[0]?.['value'];
      };
      let stored = await version();
      if (stored === undefined) {
        await query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [LOCK_CLASS, schema]);
        // Even IF NOT EXISTS needs the right to create a schema: ask only for a missing one.
        if ((await query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema])).length === 0) await query(`CREATE SCHEMA IF NOT EXISTS ${t.schema}`);
        await query(createTablesSql(t));
        await query(`INSERT INTO ${t.meta} (key, value) VALUES ('schema', $1) ON CONFLICT (key) DO NOTHING`, [String(SCHEMA_VERSION)]);
        stored = await version();
      }
      if (stored !== String(SCHEMA_VERSION))
        throw new JournalStoreError(
          undefined,
          `the journal store ${this.name}: its tables are of schema version ${String(stored)}; this release reads version ${SCHEMA_VERSION}`,
        );
    });
  }

  async create(
    sessionId: string,
    settings: string,
    lease: { readonly owner: string; readonly ttlMs: number } | undefined,
  ): Promise<{ version: number; lease?: Lease }> {
    checkStoreSessionId(sessionId);
    if (lease !== undefined) {
      checkLeaseRequest(lease.owner, lease.ttlMs);
      checkText(lease.owner, "the lease's owner");
    }
    if (typeof settings !== 'string') throw new InvalidOption('create(sessionId, settings): settings must be JSON text');
    checkText(settings, 'the settings');
    const t = this.#tables;
    return this.#transaction(sessionId, `create session ${JSON.stringify(sessionId)}`, 'write', async (query) => {
      const [created] = await query(
        `INSERT INTO ${t.sessions} (session_id, format, settings, next_seq, version, lease_owner, lease_token, lease_expires_at, created_at, updated_at)
         SELECT $1::text, $2::integer, $3::text, 1, 1, $4::text, $5::bigint,
           CASE WHEN $4::text IS NULL THEN NULL ELSE clock.t + $6::double precision * interval '1 millisecond' END, clock.t, clock.t
         FROM (SELECT clock_timestamp() AS t) AS clock
         ON CONFLICT (session_id) DO NOTHING
         RETURNING ${ms('lease_expires_at')} AS expires_at`,
        [sessionId, JOURNAL_VERSION, settings, lease?.owner ?? null, lease === undefined ? 0 : 1, lease?.ttlMs ?? 0],
      );
      if (created === undefined)
        throw new JournalConflict(sessionId, `a session ${JSON.stringify(sessionId)} exists in the store already: resume it, or give another id`);
      return lease === undefined
        ? { version: 1 }
        : { version: 1, lease: { sessionId, owner: lease.owner, token: 1, expiresAt: Number(created['expires_at']) } };
    });
  }

  async load(sessionId: string): Promise<StoredRows | undefined> {
    checkStoreSessionId(sessionId);
    const t = this.#tables;
    // One REPEATABLE READ transaction: the header and the rows are of the same version.
    return this.#transaction(sessionId, `load session ${JSON.stringify(sessionId)}`, 'read', async (query) => {
      const [session] = await query(
        `SELECT format, settings, next_seq, version, lease_owner, lease_token, ${ms('lease_expires_at')} AS lease_expires_at,
           ${ms('created_at')} AS created_at, ${ms('updated_at')} AS updated_at
         FROM ${t.sessions} WHERE session_id = $1`,
        [sessionId],
      );
      if (session === undefined) return undefined;
      const cells = await query(`SELECT cell, record FROM ${t.cells} WHERE session_id = $1 ORDER BY cell`, [sessionId]);
      const calls = await query(`SELECT seq, cell, record FROM ${t.calls} WHERE session_id = $1 ORDER BY seq`, [sessionId]);
      return storedRowsOf(sessionId, session, cells, calls);
    });
  }

  async append(sessionId: string, append: JournalAppend, expect: WriteExpectation): Promise<number> {
    checkStoreSessionId(sessionId);
    checkAppend(append, expect);
    for (const row of append.cells) checkText(row.record, `the row of cell ${row.cell}`);
    for (const row of append.calls) checkText(row.record, `the row of call ${row.seq}`);
    // A row given twice is written once, the last one winning, as a replacing insert would.
    const cells = [...new Map(append.cells.map((row) => [row.cell, row])).values()];
    const calls = [...new Map(append.calls.map((row) => [row.seq, row])).values()];
    const t = this.#tables;
    return this.#transaction(sessionId, `write to session ${JSON.stringify(sessionId)}`, 'write', async (query) => {
      const [session] = await query(`SELECT version, lease_token FROM ${t.sessions} WHERE session_id = $1 FOR UPDATE`, [sessionId]);
      if (session === undefined) throw new LeaseLost(sessionId, `the session ${JSON.stringify(sessionId)} is no longer in the store (deleted)`);
      const stored = Number(session['version']);
      checkExpectation(sessionId, { version: stored, leaseToken: Number(session['lease_token']) }, expect);
      if (append.truncateFrom !== undefined) {
        await query(`DELETE FROM ${t.calls} WHERE session_id = $1 AND cell >= $2`, [sessionId, append.truncateFrom]);
        await query(`DELETE FROM ${t.cells} WHERE session_id = $1 AND cell >= $2`, [sessionId, append.truncateFrom]);
      }
      if (cells.length > 0)
        await query(
          `INSERT INTO ${t.cells} (session_id, cell, record)
           SELECT $1::text, given.cell, given.record FROM unnest($2::bigint[], $3::text[]) AS given (cell, record)
           ON CONFLICT (session_id, cell) DO UPDATE SET record = EXCLUDED.record`,
          [sessionId, cells.map((row) => row.cell), cells.map((row) => row.record)],
        );
      if (calls.length > 0)
        await query(
          `INSERT INTO ${t.calls} (session_id, seq, cell, record)
           SELECT $1::text, given.seq, given.cell, given.record FROM unnest($2::bigint[], $3::bigint[], $4::text[]) AS given (seq, cell, record)
           ON CONFLICT (session_id, seq) DO UPDATE SET cell = EXCLUDED.cell, record = EXCLUDED.record`,
          [sessionId, calls.map((row) => row.seq), calls.map((row) => row.cell), calls.map((row) => row.record)],
        );
      await query(`UPDATE ${t.sessions} SET version = $2, next_seq = $3, updated_at = clock_timestamp() WHERE session_id = $1`, [
        sessionId,
        stored + 1,
        append.nextSeq,
      ]);
      return stored + 1;
    });
  }

  async list(options: { readonly after?: string; readonly limit?: number } = {}): Promise<SessionSummary[]> {
    const { after, limit } = checkListOptions(options);
    const t = this.#tables;
    return this.#transaction(undefined, 'list sessions', 'read', async (query) => {
      const rows = await query(
        `SELECT s.session_id, s.version, ${ms('s.created_at')} AS created_at, ${ms('s.updated_at')} AS updated_at,
           CASE WHEN s.lease_expires_at > clock_timestamp() THEN s.lease_owner END AS leased_by,
           (SELECT count(*) FROM ${t.cells} c WHERE c.session_id = s.session_id) AS cells
         FROM ${t.sessions} s WHERE s.session_id > $1 ORDER BY s.session_id LIMIT $2`,
        [after ?? '', limit],
      );
      return rows.map((row) => ({
        sessionId: String(row['session_id']),
        cells: Number(row['cells']),
        version: Number(row['version']),
        createdAt: Number(row['created_at']),
        updatedAt: Number(row['updated_at']),
        ...(row['leased_by'] === null ? {} : { leasedBy: String(row['leased_by']) }),
      }));
    });
  }

  async delete(sessionId: string, lease?: Lease): Promise<boolean> {
    checkStoreSessionId(sessionId);
    if (lease !== undefined) checkToken(lease);
    const t = this.#tables;
    return this.#transaction(sessionId, `delete session ${JSON.stringify(sessionId)}`, 'write', async (query) => {
      const [session] = await query(`SELECT lease_token FROM ${t.sessions} WHERE session_id = $1 FOR UPDATE`, [sessionId]);
      if (session === undefined) return false;
      if (lease !== undefined && Number(session['lease_token']) !== lease.token)
        throw new LeaseLost(sessionId, `the lease on session ${JSON.stringify(sessionId)} was taken over: it was not deleted`);
      await query(`DELETE FROM ${t.sessions} WHERE session_id = $1`, [sessionId]);
      return true;
    });
  }

  async acquireLease(sessionId: string, owner: string, ttlMs: number): Promise<Lease> {
    checkStoreSessionId(sessionId);
    checkLeaseRequest(owner, ttlMs);
    checkText(owner, "the lease's owner");
    const t = this.#tables;
    return this.#transaction(sessionId, `take the lease on session ${JSON.stringify(sessionId)}`, 'write', async (query) => {
      const [session] = await query(
        `SELECT lease_owner, ${ms('lease_expires_at')} AS expires_at, lease_owner IS NOT NULL AND lease_expires_at > clock_timestamp() AS held
         FROM ${t.sessions} WHERE session_id = $1 FOR UPDATE`,
        [sessionId],
      );
      if (session === undefined) throw new JournalStoreError(sessionId, `there is no session ${JSON.stringify(sessionId)} in the store`);
      if (session['held'] === true) {
        const expiresAt = Number(session['expires_at']);
        throw new LeaseHeld(
          sessionId,
          String(session['lease_owner']),
          expiresAt,
          `session ${JSON.stringify(sessionId)} is leased by ${String(session['lease_owner'])} until ${new Date(expiresAt).toISOString()}`,
        );
      }
      const [taken] = await query(
        `UPDATE ${t.sessions} SET lease_owner = $2, lease_token = lease_token + 1, lease_expires_at = ${later('$3')}, updated_at = clock_timestamp()
         WHERE session_id = $1 RETURNING lease_token, ${ms('lease_expires_at')} AS expires_at`,
        [sessionId, owner, ttlMs],
      );
      return { sessionId, owner, token: Number(taken!['lease_token']), expiresAt: Number(taken!['expires_at']) };
    });
  }

  async renewLease(lease: Lease, ttlMs: number): Promise<Lease> {
    checkStoreSessionId(lease?.sessionId);
    checkLeaseRequest(lease.owner, ttlMs);
    checkToken(lease);
    const t = this.#tables;
    return this.#transaction(lease.sessionId, `renew the lease on session ${JSON.stringify(lease.sessionId)}`, 'write', async (query) => {
      const [renewed] = await query(
        `UPDATE ${t.sessions} SET lease_expires_at = ${later('$4')} WHERE session_id = $1 AND lease_token = $2 AND lease_owner = $3
         RETURNING ${ms('lease_expires_at')} AS expires_at`,
        [lease.sessionId, lease.token, lease.owner, ttlMs],
      );
      if (renewed === undefined) throw new LeaseLost(lease.sessionId, `the lease on session ${JSON.stringify(lease.sessionId)} is no longer this holder's`);
      return { ...lease, expiresAt: Number(renewed['expires_at']) };
    });
  }

  async releaseLease(lease: Lease): Promise<void> {
    checkStoreSessionId(lease?.sessionId);
    checkToken(lease);
    const t = this.#tables;
    await this.#transaction(lease.sessionId, `give up the lease on session ${JSON.stringify(lease.sessionId)}`, 'write', async (query) => {
      await query(`UPDATE ${t.sessions} SET lease_owner = NULL, lease_expires_at = NULL WHERE session_id = $1 AND lease_token = $2 AND lease_owner = $3`, [
        lease.sessionId,
        lease.token,
        String(lease.owner),
      ]);
    });
  }

  /** Ends the store's own pool (waiting for its calls under way); a pool given to `connect` stays open. Later calls fail with `JournalStoreError`. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#ownPool) await this.#pool.end();
  }

  /** `await using store = await PostgresJournalStore.connect(…)` closes it at the end of the block. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /**
   * Runs `work` in one transaction on one connection of the pool, rolled back if it throws. A
   * failure of the database is a `JournalStoreError` saying what `doing` could not be done, why,
   * and, for a `write`, that nothing was written (or that nobody knows, for a COMMIT cut off); a
   * connection that failed is dropped from the pool (the next call opens a new one). `setup` is
   * a write of the store's own (its tables).
   */
  async #transaction<T>(sessionId: string | undefined, doing: string, mode: 'read' | 'write' | 'setup', work: (query: Query) => Promise<T>): Promise<T> {
    if (this.#closed) throw new JournalStoreError(sessionId, `the journal store ${this.name} is closed`);
    const failed = (error: unknown, outcome: string) =>
      new JournalStoreError(
        sessionId,
        `the journal store ${this.name} could not ${doing}: ${describeDatabaseError(error, this.#statementTimeoutMs)}${outcome}`,
        {
          cause: error,
        },
      );
    const unchanged = mode === 'write' ? '; nothing was written' : '';
    let client: PoolClient;
    try {
      client = await this.#pool.connect();
    } catch (error) {
      throw failed(error, unchanged);
    }
    // A connection that breaks between two statements is reported as an event: kept here, so it
    // cannot go unhandled, so that it is what the error says (the next statement only fails with
    // "not queryable"), and so that the connection is not given back to the pool.
    let broken: unknown;
    let brokenBetween: unknown;
    const onError = (error: unknown) => {
      brokenBetween ??= error;
      broken ??= error;
    };
    client.on('error', onError);
    const query: Query = async (text, values) =>
      (await client.query({ text, values, query_timeout: this.#statementTimeoutMs + ANSWER_MARGIN_MS } as QueryConfig)).rows as Row[];
    let committing = false;
    try {
      // READ COMMITTED for writes whatever the database's default: a writer waits for the
      // session's row lock and then reads the winner's version (SERIALIZABLE would abort it).
      await query(
        `${mode === 'read' ? 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY' : 'BEGIN ISOLATION LEVEL READ COMMITTED'};
         SET LOCAL statement_timeout = ${this.#statementTimeoutMs}; SET LOCAL idle_in_transaction_session_timeout = ${idleTimeoutMs(this.#statementTimeoutMs)}`,
      );
      const result = await work(query);
      committing = true;
      await query('COMMIT');
      return result;
    } catch (error) {
      if (connectionLost(error)) broken ??= error;
      if (!committing && broken === undefined) {
        try {
          await query('ROLLBACK');
        } catch (rollback) {
          broken ??= rollback;
        }
      }
      if (
        error instanceof JournalConflict ||
        error instanceof LeaseLost ||
        error instanceof LeaseHeld ||
        error instanceof JournalStoreError ||
        error instanceof InvalidOption
      )
        throw error;
      const reason = brokenBetween ?? error;
      const unknown =
        mode === 'write' && committing && connectionLost(reason)
          ? '; the connection was lost during COMMIT, so the write may have been kept or not: load the session to see'
          : unchanged;
      throw failed(reason, unknown);
    } finally {
      client.off('error', onError);
      client.release(broken === undefined ? undefined : true);
    }
  }
}

/** PostgreSQL's text holds every character but U+0000: refused here, before the database would. */
function checkText(value: string, what: string): void {
  if (value.includes('\u0000'))
    throw new InvalidOption(`${what} holds the character U+0000, which PostgreSQL's text cannot store (in JSON text it is written \\u0000)`);
}

function checkToken(lease: Lease): void {
  if (!Number.isSafeInteger(lease.token) || lease.token < 0) throw new InvalidOption(`a lease's token is a non-negative integer (got ${String(lease.token)})`);
}
