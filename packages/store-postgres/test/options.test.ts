// connect's options, checked before anything connects (no server needed): each refusal is an
// InvalidOption saying what to give instead; the defaults; identifiers quoted.
import test from 'ava';
import { InvalidOption } from '@strata/runtime';
import pg from 'pg';
import { planConnect } from '../src/options.js';
import { PostgresJournalStore } from '../src/index.js';
import { quoteIdentifier, tableNames } from '../src/schema.js';

test("the defaults: tables public.strata_*, 10 s per statement, a pool of the store's own of up to 10 connections", (t) => {
  t.like(planConnect({}), {
    pool: undefined,
    schema: 'public',
    tablePrefix: 'strata_',
    statementTimeoutMs: 10_000,
    connectTimeoutMs: 10_000,
    maxConnections: 10,
  });
  t.like(planConnect({ schema: 'journals', tablePrefix: '', statementTimeoutMs: 1 }), { schema: 'journals', tablePrefix: '', statementTimeoutMs: 1 });
});

const refused: [string, unknown, RegExp][] = [
  ['options not an object', 'postgresql://x', /options must be an object/],
  ['an unknown option', { connectionstring: 'x' }, /unknown option "connectionstring" \(the options are connectionString, pool/],
  ['an empty connection string', { connectionString: '' }, /connectionString must be a PostgreSQL connection string/],
  ['a pool that is not a pool', { pool: {} }, /pool must be a pg\.Pool/],
  ['both a connection string and a pool', { connectionString: 'postgresql://x', pool: new pg.Pool() }, /give connectionString or pool, not both/],
  ["connectTimeoutMs with the caller's pool", { pool: new pg.Pool(), connectTimeoutMs: 5 }, /set connectionTimeoutMillis on yours/],
  ["maxConnections with the caller's pool", { pool: new pg.Pool(), maxConnections: 5 }, /set max on yours/],
  ['an upper-case schema', { schema: 'Journals' }, /schema must be 1 to 63 of a-z 0-9 _/],
  ["PostgreSQL's own schema prefix", { schema: 'pg_journals' }, /not starting with a digit or pg_/],
  ['a schema with a quote', { schema: 'a"; DROP TABLE x; --' }, /schema must be/],
  ['a schema of 64', { schema: 'a'.repeat(64) }, /schema must be/],
  ['a prefix with a dash', { tablePrefix: 'strata-' }, /tablePrefix must be '' or up to 40 of a-z 0-9 _/],
  ['a prefix of 41', { tablePrefix: 'a'.repeat(41) }, /tablePrefix must be/],
  ['a prefix starting with a digit', { tablePrefix: '1_' }, /tablePrefix must be/],
  ['a statement timeout of 0', { statementTimeoutMs: 0 }, /statementTimeoutMs must be an integer from 1 to 600000 \(got 0\)/],
  ['a fractional statement timeout', { statementTimeoutMs: 1.5 }, /statementTimeoutMs must be an integer/],
  ['a statement timeout as text', { statementTimeoutMs: '100' }, /statementTimeoutMs must be an integer .* \(got "100"\)/],
  ['no connections', { maxConnections: 0 }, /maxConnections must be an integer from 1 to 1000/],
];
for (const [what, options, message] of refused)
  test(`refused: ${what}`, async (t) => {
    t.throws(() => planConnect(options), { instanceOf: InvalidOption, message });
    // connect refuses the same, before it connects anywhere.
    await t.throwsAsync(PostgresJournalStore.connect(options as never), { instanceOf: InvalidOption, message });
  });

test('identifiers are quoted, and a quote in one doubled', (t) => {
  t.deepEqual(tableNames('journals', 'x_'), {
    schema: '"journals"',
    meta: '"journals"."x_meta"',
    sessions: '"journals"."x_sessions"',
    cells: '"journals"."x_cells"',
    calls: '"journals"."x_calls"',
  });
  t.is(quoteIdentifier('a"b'), '"a""b"');
});
