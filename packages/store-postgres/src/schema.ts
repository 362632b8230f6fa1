/**
 * The store's tables: their names (a schema and a prefix, checked against a strict pattern and
 * always quoted) and the statements that create them. Pure: nothing here talks to a database.
 *
 * The tables are the SQLite store's, in PostgreSQL's types: `<prefix>meta` (the schema's version,
 * so that a later release can migrate), `<prefix>sessions` (a header row per session),
 * `<prefix>cells` and `<prefix>calls` (their rows, deleted with the session). Rows are `text`, not
 * `jsonb`: the store never interprets them, and `jsonb` would not give them back as written.
 *
 * @module
 */

/** The schema version this release reads and writes (in `<prefix>meta`, key `schema`). */
export const SCHEMA_VERSION = 1;

/** A schema: lower case, so that an operator's unquoted SQL names it too; `pg_` is PostgreSQL's own. */
export const SCHEMA_PATTERN = /^(?!pg_)[a-z_][a-z0-9_]{0,62}$/;
/** A table prefix: empty, or lower case; at most 40 so that `<prefix>sessions` fits PostgreSQL's 63 bytes. */
export const TABLE_PREFIX_PATTERN = /^(?:[a-z_][a-z0-9_]{0,39})?$/;

/** The quoted, schema-qualified names of the store's tables. */
export interface TableNames {
  readonly schema: string;
  readonly meta: string;
  readonly sessions: string;
  readonly cells: string;
  readonly calls: string;
}

/** `"name"`. The patterns above allow no quote; doubling one anyway keeps this safe on its own. */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** The tables of a schema and prefix, both already checked against their patterns. */
export function tableNames(schema: string, prefix: string): TableNames {
  const table = (name: string) => `${quoteIdentifier(schema)}.${quoteIdentifier(prefix + name)}`;
  return { schema: quoteIdentifier(schema), meta: table('meta'), sessions: table('sessions'), cells: table('cells'), calls: table('calls') };
}

/**
 * The statements that create the tables where they are missing (run under an advisory lock: two
 * `CREATE TABLE IF NOT EXISTS` at once can still collide in PostgreSQL's catalog).
 *
 * Session ids sort as `"C"` (code points), as the other stores and `list`'s paging expect, not
 * as the database's locale would. Times are `timestamptz(3)`: a lease's expiry is what the store
 * hands back, to the millisecond.
 */
export function createTablesSql(names: TableNames): string {
  return `
CREATE TABLE IF NOT EXISTS ${names.meta} (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE IF NOT EXISTS ${names.sessions} (
  session_id text COLLATE "C" PRIMARY KEY,
  format integer NOT NULL,
  settings text NOT NULL,
  next_seq bigint NOT NULL,
  version bigint NOT NULL,
  lease_owner text,
  lease_token bigint NOT NULL DEFAULT 0,
  lease_expires_at timestamptz(3),
  created_at timestamptz(3) NOT NULL,
  updated_at timestamptz(3) NOT NULL
);
CREATE TABLE IF NOT EXISTS ${names.cells} (
  session_id text COLLATE "C" NOT NULL REFERENCES ${names.sessions} (session_id) ON DELETE CASCADE,
  cell bigint NOT NULL,
  record text NOT NULL,
  PRIMARY KEY (session_id, cell)
);
CREATE TABLE IF NOT EXISTS ${names.calls} (
  session_id text COLLATE "C" NOT NULL REFERENCES ${names.sessions} (session_id) ON DELETE CASCADE,
  seq bigint NOT NULL,
  cell bigint NOT NULL,
  record text NOT NULL,
  PRIMARY KEY (session_id, seq)
);`;
}
