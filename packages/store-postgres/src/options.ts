/**
 * The options of `PostgresJournalStore.connect`, checked before anything connects: each refusal
 * says what to give instead.
 *
 * @module
 */
import { InvalidOption } from '@strata/runtime';
import type { Pool } from 'pg';
import { SCHEMA_PATTERN, TABLE_PREFIX_PATTERN } from './schema.js';

/** Options of {@link PostgresJournalStore.connect}. Give `connectionString` or `pool`, or neither (then `PG*` environment variables say where). */
export interface PostgresJournalStoreOptions {
  /**
   * Where the database is (`postgresql://user:password@host:5432/database`, with `?sslmode=…`
   * as PostgreSQL's own clients read it). The store makes its own pool of connections from it,
   * and ends that pool at `close()`.
   */
  connectionString?: string;
  /**
   * A `pg.Pool` of yours: the store borrows its connections and gives them back, and `close()`
   * leaves the pool open. Give it an `'error'` listener, as `pg` asks of every pool: a
   * connection the server drops while it is idle is reported there.
   */
  pool?: Pool;
  /** The schema of the store's tables, created if missing. Lower case `a-z 0-9 _`, not `pg_…`. Default `'public'`. */
  schema?: string;
  /**
   * What the store's table names begin with (`<prefix>sessions`, `<prefix>cells`,
   * `<prefix>calls`, `<prefix>meta`): two stores with different prefixes share a schema without
   * seeing each other. Lower case `a-z 0-9 _`, at most 40, or `''`. Default `'strata_'`.
   */
  tablePrefix?: string;
  /**
   * How long one statement may run, waiting for another writer's lock included, in ms: past it
   * the database cancels it and the call fails with `JournalStoreError`, having written nothing.
   * The client waits a second more for a server that has gone silent. A transaction that sits
   * idle between two of the store's statements for this long (at least 5 s) is ended by the
   * database, so a writer cut off mid-write holds no lock for longer. Default 10 000.
   */
  statementTimeoutMs?: number;
  /** With the store's own pool: how long to wait for a new connection, in ms. Default 10 000. */
  connectTimeoutMs?: number;
  /** With the store's own pool: how many connections it may open at once. Default 10. */
  maxConnections?: number;
}

/** The options, checked, with their defaults. */
export interface ConnectPlan {
  /** The caller's pool, or undefined for a pool of the store's own. */
  readonly pool: Pool | undefined;
  readonly connectionString: string | undefined;
  readonly schema: string;
  readonly tablePrefix: string;
  readonly statementTimeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly maxConnections: number;
}

const KEYS: ReadonlySet<string> = new Set(['connectionString', 'pool', 'schema', 'tablePrefix', 'statementTimeoutMs', 'connectTimeoutMs', 'maxConnections']);
const MAX_TIMEOUT_MS = 600_000;

/** @throws `InvalidOption` naming the option that is wrong and what it must be. */
export function planConnect(options: unknown): ConnectPlan {
  if (options === null || typeof options !== 'object' || Array.isArray(options))
    throw new InvalidOption('PostgresJournalStore.connect(options): options must be an object, e.g. { connectionString }');
  for (const key of Object.keys(options))
    if (!KEYS.has(key))
      throw new InvalidOption(`PostgresJournalStore.connect: unknown option ${JSON.stringify(key)} (the options are ${[...KEYS].join(', ')})`);
  const given = options as PostgresJournalStoreOptions;
  const { connectionString, pool, schema = 'public', tablePrefix = 'strata_' } = given;
  if (connectionString !== undefined && (typeof connectionString !== 'string' || connectionString.length === 0))
    throw new InvalidOption('connectionString must be a PostgreSQL connection string, e.g. "postgresql://user:password@host:5432/database"');
  if (pool !== undefined && (pool === null || typeof pool !== 'object' || typeof (pool as Partial<Pool>).connect !== 'function'))
    throw new InvalidOption('pool must be a pg.Pool (new Pool({ ... }) from the pg package)');
  if (connectionString !== undefined && pool !== undefined)
    throw new InvalidOption('give connectionString or pool, not both: a pool of yours already says where the database is');
  if (pool !== undefined) {
    if (given.connectTimeoutMs !== undefined) throw new InvalidOption("connectTimeoutMs is for the store's own pool: set connectionTimeoutMillis on yours");
    if (given.maxConnections !== undefined) throw new InvalidOption("maxConnections is for the store's own pool: set max on yours");
  }
  if (typeof schema !== 'string' || !SCHEMA_PATTERN.test(schema))
    throw new InvalidOption(`schema must be 1 to 63 of a-z 0-9 _, not starting with a digit or pg_ (got ${preview(schema)})`);
  if (typeof tablePrefix !== 'string' || !TABLE_PREFIX_PATTERN.test(tablePrefix))
    throw new InvalidOption(`tablePrefix must be '' or up to 40 of a-z 0-9 _, not starting with a digit (got ${preview(tablePrefix)})`);
  return {
    pool,
    connectionString,
    schema,
    tablePrefix,
    statementTimeoutMs: milliseconds(given.statementTimeoutMs, 'statementTimeoutMs', 10_000, 1),
    connectTimeoutMs: milliseconds(given.connectTimeoutMs, 'connectTimeoutMs', 10_000, 1),
    maxConnections: integer(given.maxConnections, 'maxConnections', 10, 1, 1_000),
  };
}

function milliseconds(value: unknown, name: string, fallback: number, least: number): number {
  return integer(value, name, fallback, least, MAX_TIMEOUT_MS);
}

function integer(value: unknown, name: string, fallback: number, least: number, most: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || (value as number) < least || (value as number) > most)
    throw new InvalidOption(`${name} must be an integer from ${least} to ${most} (got ${preview(value)})`);
  return value as number;
}

function preview(value: unknown): string {
  const text = typeof value === 'string' ? JSON.stringify(value) : String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
