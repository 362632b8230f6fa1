// What is PostgreSQL's own, against a real server started for this file: two stores (two pools,
// as two machines) on one database, racing and fencing each other; leases on the database's
// clock; a statement that fails half-way, or runs past statementTimeoutMs, writing nothing; the
// tables created once by stores that start together, another schema version refused, and the
// privileges a role needs; rows corrupted by SQL, loaded back as a JournalError; and a session
// run by AgentSandbox on one machine's store and resumed on another's.
import test, { type ExecutionContext } from 'ava';
import { AgentSandbox, assembleJournal, JournalConflict, JournalError, JournalStoreError, LeaseHeld, LeaseLost } from '@strata/agent';
import { InvalidOption } from '@strata/runtime';
import pg from 'pg';
import { PostgresJournalStore, type PostgresJournalStoreOptions } from '../src/index.js';
import { postgresFileServer } from './helpers/postgres-server.js';

const files = await postgresFileServer(test);
const withServer = files.withServer;

let schemas = 0;
/** A store on a pool of its own, in a schema no other test uses (or `options.schema`), closed after the test. */
async function connect(t: ExecutionContext, options: PostgresJournalStoreOptions = {}): Promise<PostgresJournalStore> {
  const store = await PostgresJournalStore.connect({ connectionString: files.server.connectionString(), schema: `own_${++schemas}`, ...options });
  t.teardown(() => store.close());
  return store;
}

/** Two stores on one schema, each with its own pool: two machines of a fleet. */
async function twoMachines(t: ExecutionContext): Promise<[PostgresJournalStore, PostgresJournalStore]> {
  const schema = `fleet_${++schemas}`;
  return [await connect(t, { schema }), await connect(t, { schema })];
}

const cellRow = (cell: number, record = '{}') => ({ cell, record });

withServer('two stores on one database see each other and fence each other: the old holder cannot write, renew or delete', async (t) => {
  const [a, b] = await twoMachines(t);
  const { lease } = await a.create('shared', '{}', { owner: 'machine-a', ttlMs: 60_000 });
  await t.throwsAsync(b.acquireLease('shared', 'machine-b', 1000), { instanceOf: LeaseHeld, message: /leased by machine-a/ });
  await a.append('shared', { cells: [cellRow(1, '{"x":1}')], calls: [], nextSeq: 1 }, { version: 1, lease: lease! });
  t.deepEqual((await b.load('shared'))?.cells, [cellRow(1, '{"x":1}')]);
  t.like((await b.list())[0], { sessionId: 'shared', cells: 1, leasedBy: 'machine-a' });
  await a.releaseLease(lease!);
  const taken = await b.acquireLease('shared', 'machine-b', 60_000);
  t.is(taken.token, 2);
  await t.throwsAsync(a.append('shared', { cells: [cellRow(2)], calls: [], nextSeq: 1 }, { version: 2, lease: lease! }), {
    instanceOf: LeaseLost,
    message: /taken over \(token 2, this writer's 1\)/,
  });
  await t.throwsAsync(a.renewLease(lease!, 1000), { instanceOf: LeaseLost });
  await t.throwsAsync(a.delete('shared', lease!), { instanceOf: LeaseLost });
  t.is(await b.append('shared', { cells: [cellRow(2)], calls: [], nextSeq: 1 }, { version: 2, lease: taken }), 3);
  t.is((await a.load('shared'))?.cells.length, 2);
});

withServer('concurrent appends from two stores at the same version: exactly one wins, the other gets JournalConflict', async (t) => {
  const [a, b] = await twoMachines(t);
  for (let round = 1; round <= 20; round++) {
    const id = `race-${round}`;
    await a.create(id, '{}', undefined);
    const outcomes = await Promise.allSettled([
      a.append(id, { cells: [cellRow(1, '{"by":"a"}')], calls: [{ cell: 1, seq: 1, record: '{"by":"a"}' }], nextSeq: 2 }, { version: 1 }),
      b.append(id, { cells: [cellRow(1, '{"by":"b"}')], calls: [], nextSeq: 1 }, { version: 1 }),
    ]);
    const won = outcomes.flatMap((outcome, i) => (outcome.status === 'fulfilled' ? [i === 0 ? 'a' : 'b'] : []));
    t.is(won.length, 1, `round ${round}: one winner`);
    const lost = outcomes.find((outcome) => outcome.status === 'rejected') as PromiseRejectedResult;
    t.true(lost.reason instanceof JournalConflict, `round ${round}: ${String(lost.reason)}`);
    t.regex((lost.reason as Error).message, /at version 2 in the store, this writer read 1: nothing was written/);
    const rows = await a.load(id);
    t.is(rows?.session.version, 2);
    t.deepEqual(rows?.cells, [cellRow(1, `{"by":"${won[0]}"}`)], "the winner's rows, and only them");
    t.is(rows?.calls.length, won[0] === 'a' ? 1 : 0);
  }
});

withServer("leases are on the database's clock: a machine whose clock is an hour ahead neither expires nor extends them", async (t) => {
  const store = await connect(t);
  const realNow = Date.now;
  Date.now = () => realNow() + 3_600_000;
  try {
    const { lease } = await store.create('clock', '{}', { owner: 'a', ttlMs: 60_000 });
    const [{ now }] = (await files.server.query('SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now')).rows as [{ now: number }];
    t.true(Math.abs(lease!.expiresAt - (now + 60_000)) < 5_000, `expires ${lease!.expiresAt - now} ms after the database's now`);
    await t.throwsAsync(store.acquireLease('clock', 'b', 1000), { instanceOf: LeaseHeld }, 'still held by the database');
    const renewed = await store.renewLease(lease!, 200);
    t.true(renewed.expiresAt < lease!.expiresAt);
    await new Promise((resolve) => setTimeout(resolve, 300));
    t.is((await store.acquireLease('clock', 'b', 1000)).token, 2, 'expired by the database');
  } finally {
    Date.now = realNow;
  }
});

withServer('a statement that fails half-way through an append leaves nothing written; the same write then goes through', async (t) => {
  const store = await connect(t, { schema: 'half' });
  await store.create('half', '{}', undefined);
  await store.append('half', { cells: [cellRow(1, '{"before":true}')], calls: [], nextSeq: 1 }, { version: 1 });
  // The second call row fails, after the cell rows, the first call row and the truncation went in.
  await files.server.query(`
    CREATE FUNCTION half.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'disk says no'; END $$;
    CREATE TRIGGER refuse BEFORE INSERT ON half.strata_calls FOR EACH ROW WHEN (NEW.seq = 2) EXECUTE FUNCTION half.refuse();`);
  const write = {
    truncateFrom: 1,
    cells: [cellRow(1, '{"before":false}'), cellRow(2)],
    calls: [
      { cell: 2, seq: 1, record: '{}' },
      { cell: 2, seq: 2, record: '{}' },
    ],
    nextSeq: 3,
  };
  const failed = await t.throwsAsync(store.append('half', write, { version: 2 }), { instanceOf: JournalStoreError });
  t.is(failed.sessionId, 'half');
  t.regex(failed.message, /could not write to session "half": the database refused the statement: disk says no \(SQLSTATE P0001\); nothing was written$/);
  const rows = await store.load('half');
  t.deepEqual(rows?.cells, [cellRow(1, '{"before":true}')]);
  t.deepEqual(rows?.calls, []);
  t.is(rows?.session.version, 2);
  t.is(rows?.session.nextSeq, 1);
  await files.server.query('DROP TRIGGER refuse ON half.strata_calls');
  t.is(await store.append('half', write, { version: 2 }), 3);
  t.is((await store.load('half'))?.calls.length, 2);
});

withServer('a statement past statementTimeoutMs is cancelled by the database, writing nothing; so is a wait for another writer past it', async (t) => {
  // The tables first, by a store of the default timeout: DDL on a busy machine may take longer.
  const patient = await connect(t, { schema: 'slow' });
  const store = await connect(t, { schema: 'slow', statementTimeoutMs: 300 });
  await store.create('slow', '{}', undefined);
  await files.server.query(`
    CREATE FUNCTION slow.dawdle() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(5); RETURN NEW; END $$;
    CREATE TRIGGER dawdle BEFORE INSERT ON slow.strata_calls FOR EACH ROW WHEN (NEW.seq = 2) EXECUTE FUNCTION slow.dawdle();`);
  const write = { cells: [cellRow(1)], calls: [1, 2].map((seq) => ({ cell: 1, seq, record: '{}' })), nextSeq: 3 };
  const started = performance.now();
  const failed = await t.throwsAsync(store.append('slow', write, { version: 1 }), { instanceOf: JournalStoreError });
  t.regex(failed.message, /session "slow": a statement ran past statementTimeoutMs \(300 ms\) and the database cancelled it; nothing was written/);
  t.true(performance.now() - started < 3_000);
  await files.server.query('DROP TRIGGER dawdle ON slow.strata_calls');
  t.deepEqual((await store.load('slow'))?.cells, []);

  // Another writer (another machine, mid-transaction) holds the session's row: this one waits for it...
  const other = await new pg.Pool({ connectionString: files.server.connectionString(), max: 1 }).on('error', () => {}).connect();
  t.teardown(() => other.release(true));
  await other.query("BEGIN; SELECT 1 FROM slow.strata_sessions WHERE session_id = 'slow' FOR UPDATE");
  const waiting = patient.append('slow', write, { version: 1 });
  await new Promise((resolve) => setTimeout(resolve, 100));
  await other.query('COMMIT');
  t.is(await waiting, 2, 'a wait shorter than its statementTimeoutMs ends with the write');
  // ...but not past statementTimeoutMs.
  await other.query("BEGIN; SELECT 1 FROM slow.strata_sessions WHERE session_id = 'slow' FOR UPDATE");
  await t.throwsAsync(store.append('slow', { cells: [], calls: [], nextSeq: 3 }, { version: 2 }), { message: /ran past statementTimeoutMs/ });
  await other.query('ROLLBACK');
  t.is((await store.load('slow'))?.session.version, 2);
});

withServer('stores that start at once on an empty schema create its tables once', async (t) => {
  const stores = await Promise.all([1, 2, 3, 4].map(() => connect(t, { schema: 'together' })));
  await stores[0]!.create('one', '{}', undefined);
  t.is((await stores[3]!.list()).length, 1);
  const { rows } = await files.server.query('SELECT key, value FROM together.strata_meta');
  t.deepEqual(rows, [{ key: 'schema', value: '1' }]);
  // Two prefixes in one new schema: each its own tables.
  const [x, y] = await Promise.all([connect(t, { schema: 'prefixed', tablePrefix: 'x_' }), connect(t, { schema: 'prefixed', tablePrefix: '' })]);
  await x.create('only-x', '{}', undefined);
  t.deepEqual(await y.list(), []);
  const tables = await files.server.query("SELECT tablename FROM pg_tables WHERE schemaname = 'prefixed' ORDER BY tablename");
  t.deepEqual(
    tables.rows.map((row) => row.tablename),
    ['calls', 'cells', 'meta', 'sessions', 'x_calls', 'x_cells', 'x_meta', 'x_sessions'],
  );
});

withServer('tables of another schema version are refused, naming both versions', async (t) => {
  await files.server.query(
    "CREATE SCHEMA future; CREATE TABLE future.strata_meta (key text PRIMARY KEY, value text NOT NULL); INSERT INTO future.strata_meta VALUES ('schema', '99')",
  );
  await t.throwsAsync(PostgresJournalStore.connect({ connectionString: files.server.connectionString(), schema: 'future' }), {
    instanceOf: JournalStoreError,
    message: /its tables are of schema version 99; this release reads version 1/,
  });
});

withServer('a role with only SELECT, INSERT, UPDATE and DELETE uses tables made for it; one that cannot create them is told why', async (t) => {
  await connect(t, { schema: 'granted' });
  await files.server.query(`
    CREATE ROLE app LOGIN;
    GRANT USAGE ON SCHEMA granted TO app;
    GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA granted TO app;`);
  const asApp = files.server.connectionString().replace('postgres@', 'app@');
  const store = await PostgresJournalStore.connect({ connectionString: asApp, schema: 'granted' });
  t.teardown(() => store.close());
  const { lease } = await store.create('app-1', '{}', { owner: 'app', ttlMs: 1000 });
  t.is(await store.append('app-1', { cells: [cellRow(1)], calls: [], nextSeq: 1 }, { version: 1, lease: lease! }), 2);
  t.true(await store.delete('app-1', lease!));
  // No right to create a schema in the database, nor tables in public (PostgreSQL 15 on).
  for (const schema of ['not_granted', 'public'])
    await t.throwsAsync(PostgresJournalStore.connect({ connectionString: asApp, schema }), {
      instanceOf: JournalStoreError,
      message: /could not start: the database role lacks a privilege the store needs \(permission denied for (database|schema) .*\)/,
    });
});

withServer('session ids sort by code point even where the database sorts by a locale', async (t) => {
  await files.server.query("CREATE DATABASE localized LOCALE_PROVIDER icu ICU_LOCALE 'en' LOCALE 'C' TEMPLATE template0");
  const store = await PostgresJournalStore.connect({ connectionString: files.server.connectionString('localized') });
  t.teardown(() => store.close());
  const ids = ['b', 'B', 'a-2', 'a.1', 'A', '_x', '0', 'a:3', 'a_4'];
  for (const id of ids) await store.create(id, '{}', undefined);
  const sorted = [...ids].sort();
  t.deepEqual(
    (await store.list()).map((s) => s.sessionId),
    sorted,
  );
  t.deepEqual(
    (await store.list({ after: 'B', limit: 3 })).map((s) => s.sessionId),
    sorted.slice(sorted.indexOf('B') + 1, sorted.indexOf('B') + 4),
  );
});

withServer('rows corrupted by SQL load back as a JournalError naming the session, the cell and the seq', async (t) => {
  const store = await connect(t, { schema: 'edited' });
  const tools = { lookup: async (sku: string) => ({ sku, price: 3 }) };
  const session = await AgentSandbox.start({ tools, store, sessionId: 'edited' });
  await session.run('const item = await lookup("A1"); item.price');
  await session.run('item.sku');
  await session.close();
  const rows = (await store.load('edited'))!;
  t.is(assembleJournal(rows).journal.cells.length, 2, 'as written, the rows make a journal');

  await files.server.query("UPDATE edited.strata_cells SET record = left(record, 10) WHERE session_id = 'edited' AND cell = 2");
  const truncated = await t.throwsAsync(AgentSandbox.resume('edited', { tools, store }), { instanceOf: JournalError });
  t.regex(truncated.message, /^session "edited": the row of cell 2 is not JSON/);
  t.is(truncated.cell, 2);

  await files.server.query("UPDATE edited.strata_cells SET record = $1 WHERE session_id = 'edited' AND cell = 2", [rows.cells[1]!.record]);
  await files.server.query(`UPDATE edited.strata_calls SET record = replace(record, '"completed"', '"done"') WHERE session_id = 'edited' AND seq = 1`);
  const status = await t.throwsAsync(AgentSandbox.resume('edited', { tools, store }), { instanceOf: JournalError });
  t.regex(status.message, /^session "edited": cells\[0\]\.calls\[0\]\.status must be one of/);
  t.is(status.cell, 1);
  t.is(status.seq, 1);
  t.is((await store.list())[0]?.leasedBy, undefined, 'a resume that failed gives the lease up');
});

withServer("a session started on one machine's store is resumed on another's: no tool runs twice, and one runs it at a time", async (t) => {
  const [a, b] = await twoMachines(t);
  let lookups = 0;
  const tools = { lookup: async (sku: string) => (lookups++, { sku, price: sku.length * 100 }) };
  const first = await AgentSandbox.start({ tools, store: a, sessionId: 'order-7' });
  t.is((await first.run('const item = await lookup("A12"); item.price')).result, 300);
  await t.throwsAsync(AgentSandbox.resume('order-7', { tools, store: b }), { instanceOf: LeaseHeld }, 'it runs on machine a');
  const journal = first.journal;
  await first.close();
  const resumed = await AgentSandbox.resume('order-7', { tools, store: b });
  t.teardown(() => resumed.close());
  t.deepEqual(resumed.journal, journal);
  t.is(lookups, 1, 'the replay called no tool');
  t.deepEqual((await resumed.run('[item.sku, (await lookup("B")).price]')).result, ['A12', 100]);
  t.is(lookups, 2);
  t.like((await a.list())[0], { sessionId: 'order-7', cells: 2 });
});

withServer('U+0000, which PostgreSQL text cannot hold, is refused before the database sees it', async (t) => {
  const store = await connect(t);
  await t.throwsAsync(store.create('nul', '{"a":"\u0000"}', undefined), { instanceOf: InvalidOption, message: /the settings holds the character U\+0000/ });
  await store.create('nul', '{}', undefined);
  await t.throwsAsync(store.append('nul', { cells: [cellRow(1, '"\u0000"')], calls: [], nextSeq: 1 }, { version: 1 }), {
    instanceOf: InvalidOption,
    message: /the row of cell 1 holds the character U\+0000/,
  });
  await t.throwsAsync(store.acquireLease('nul', 'a\u0000b', 1000), { instanceOf: InvalidOption });
  t.is((await store.load('nul'))?.session.version, 1);
});

withServer("close() ends the store's own pool, and leaves a caller's pool open", async (t) => {
  await files.server.query('CREATE DATABASE closing');
  const own = await PostgresJournalStore.connect({ connectionString: files.server.connectionString('closing') });
  await own.list();
  const count = async () =>
    Number(
      (await files.server.query("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = 'closing' AND application_name = 'strata-journal-store'")).rows[0]!
        .n,
    );
  t.true((await count()) >= 1);
  await own.close();
  let left = await count();
  for (let i = 0; i < 50 && left > 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    left = await count();
  }
  t.is(left, 0, "the store's connections are closed");
  await t.throwsAsync(own.list(), { instanceOf: JournalStoreError, message: /is closed/ });

  const pool = new pg.Pool({ connectionString: files.server.connectionString('closing'), max: 2 }).on('error', () => {});
  t.teardown(() => pool.end());
  {
    await using borrowed = await PostgresJournalStore.connect({ pool, schema: 'borrowing' });
    await borrowed.create('b', '{}', undefined);
  }
  t.is((await pool.query('SELECT count(*)::int AS n FROM borrowing.strata_sessions')).rows[0].n, 1, 'the pool still works');
});
