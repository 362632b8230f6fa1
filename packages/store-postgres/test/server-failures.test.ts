// The server failing under the store, against a real server this file starts, stops and starts
// again: a connection ended mid-append (pg_terminate_backend), a backend that stops answering and
// a restart mid-append are a JournalStoreError naming the session, with nothing written; one ended
// during COMMIT says the write may have been kept or not; while the server is down every call
// fails so; once it is back the same store object works again. Serial: each test takes the
// server away from everything else in the file.
import test from 'ava';
import { JournalStoreError } from '@strata/agent';
import pg from 'pg';
import { PostgresJournalStore } from '../src/index.js';
import { postgresFileServer } from './helpers/postgres-server.js';

const files = await postgresFileServer(test, { serial: true });
const serial = files.withServer;

const write = {
  cells: [{ cell: 1, record: '{"n":1}' }],
  calls: [1, 2].map((seq) => ({ cell: 1, seq, record: '{}' })),
  nextSeq: 3,
};

/** Makes the second call row of `schema`'s appends sleep (mid-append: the first rows are in), and resolves with the backend's pid once it does. */
async function stallSecondCall(schema: string): Promise<() => Promise<number>> {
  await files.server.query(`
    CREATE FUNCTION ${schema}.stall() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(60); RETURN NEW; END $$;
    CREATE TRIGGER stall BEFORE INSERT ON ${schema}.strata_calls FOR EACH ROW WHEN (NEW.seq = 2) EXECUTE FUNCTION ${schema}.stall();`);
  return async () => {
    for (let i = 0; i < 500; i++) {
      const { rows } = await files.server.query("SELECT pid FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND query LIKE 'INSERT INTO%'");
      if (rows[0] !== undefined) return Number(rows[0].pid);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error('the append never reached its second call row');
  };
}

serial('a connection ended mid-append is a JournalStoreError naming the session; nothing is written, and the next call works', async (t) => {
  const store = await PostgresJournalStore.connect({ connectionString: files.server.connectionString(), schema: 'ended' });
  t.teardown(() => store.close());
  await store.create('ended', '{}', undefined);
  const stalled = await stallSecondCall('ended');
  const appending = store.append('ended', write, { version: 1 });
  const pid = await stalled();
  await files.server.query('SELECT pg_terminate_backend($1)', [pid]);
  const failed = await t.throwsAsync(appending, { instanceOf: JournalStoreError });
  t.is(failed.sessionId, 'ended');
  t.regex(failed.message, /could not write to session "ended": the database ended the connection: .*administrator command.*; nothing was written$/);
  await files.server.query('DROP TRIGGER stall ON ended.strata_calls');
  const rows = await store.load('ended');
  t.is(rows?.session.version, 1);
  t.deepEqual(rows?.cells, []);
  t.deepEqual(rows?.calls, []);
  t.is(await store.append('ended', write, { version: 1 }), 2);
});

serial('a connection lost during COMMIT is a JournalStoreError that says the write may have been kept or not', async (t) => {
  const store = await PostgresJournalStore.connect({ connectionString: files.server.connectionString(), schema: 'committing' });
  t.teardown(() => store.close());
  await store.create('committing', '{}', undefined);
  // A deferred trigger runs at COMMIT: the connection is ended while the server commits.
  await files.server.query(`
    CREATE FUNCTION committing.stall() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(60); RETURN NULL; END $$;
    CREATE CONSTRAINT TRIGGER stall AFTER UPDATE ON committing.strata_sessions DEFERRABLE INITIALLY DEFERRED
      FOR EACH ROW EXECUTE FUNCTION committing.stall();`);
  const appending = store.append('committing', write, { version: 1 });
  let pid: number | undefined;
  for (let i = 0; i < 500 && pid === undefined; i++) {
    const { rows } = await files.server.query("SELECT pid FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND query = 'COMMIT'");
    pid = rows[0]?.pid;
    if (pid === undefined) await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await files.server.query('SELECT pg_terminate_backend($1)', [pid]);
  const failed = await t.throwsAsync(appending, { instanceOf: JournalStoreError });
  t.regex(failed.message, /the connection was lost during COMMIT, so the write may have been kept or not: load the session to see$/);
  await files.server.query('DROP TRIGGER stall ON committing.strata_sessions');
  // Here the server had not committed it: the session is as it was, and the write goes through again.
  t.is((await store.load('committing'))?.session.version, 1);
  t.is(await store.append('committing', write, { version: 1 }), 2);
});

serial('a server that stops answering (its backend frozen) fails the call after statementTimeoutMs and a second; nothing is written', async (t) => {
  // The tables first, by a store of the default timeout: DDL on a busy machine may take longer.
  await (await PostgresJournalStore.connect({ connectionString: files.server.connectionString(), schema: 'frozen' })).close();
  const store = await PostgresJournalStore.connect({ connectionString: files.server.connectionString(), schema: 'frozen', statementTimeoutMs: 300 });
  t.teardown(() => store.close());
  await store.create('frozen', '{}', undefined);
  const stalled = await stallSecondCall('frozen');
  const appending = store.append('frozen', write, { version: 1 });
  const pid = await stalled();
  // Stopped, the backend cannot even enforce its own statement timeout: only the client's wait ends the call.
  process.kill(pid, 'SIGSTOP');
  const started = performance.now();
  try {
    const failed = await t.throwsAsync(appending, { instanceOf: JournalStoreError });
    t.regex(
      failed.message,
      /could not write to session "frozen": the database did not answer within statementTimeoutMs \(300 ms\) and a second more; nothing was written$/,
    );
    t.true(performance.now() - started < 5_000);
  } finally {
    process.kill(pid, 'SIGCONT');
  }
  await files.server.query('DROP TRIGGER stall ON frozen.strata_calls');
  t.deepEqual((await store.load('frozen'))?.calls, []);
  t.is(await store.append('frozen', write, { version: 1 }), 2);
});

serial("idle connections the server ended are replaced, on the store's pool and on a caller's", async (t) => {
  const pool = new pg.Pool({ connectionString: files.server.connectionString(), max: 3, application_name: 'callers-pool' }).on('error', () => {});
  t.teardown(() => pool.end());
  const own = await PostgresJournalStore.connect({ connectionString: files.server.connectionString(), schema: 'idle' });
  t.teardown(() => own.close());
  const borrowing = await PostgresJournalStore.connect({ pool, schema: 'idle' });
  await own.create('idle', '{}', undefined);
  t.is((await borrowing.load('idle'))?.session.version, 1);
  const ended = await files.server.query(
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name IN ('strata-journal-store', 'callers-pool') AND pid <> pg_backend_pid()",
  );
  t.true(ended.rowCount! >= 2);
  // Each pool hears of it on the idle connection's socket; then the next call opens a new one.
  await new Promise((resolve) => setTimeout(resolve, 200));
  t.is(await own.append('idle', write, { version: 1 }), 2);
  t.is((await borrowing.load('idle'))?.session.version, 2);
});

serial('a server restart mid-append: JournalStoreError, every call fails while it is down, and the same store works once it is back', async (t) => {
  const store = await PostgresJournalStore.connect({ connectionString: files.server.connectionString(), schema: 'restart', connectTimeoutMs: 2_000 });
  t.teardown(() => store.close());
  await store.create('restart', '{}', undefined);
  const stalled = await stallSecondCall('restart');
  const appending = store.append('restart', write, { version: 1 });
  await stalled();
  await files.server.stop();
  const failed = await t.throwsAsync(appending, { instanceOf: JournalStoreError });
  t.regex(failed.message, /could not write to session "restart": the database ended the connection: .*; nothing was written$/);
  const down = await t.throwsAsync(store.load('restart'), { instanceOf: JournalStoreError });
  t.regex(down.message, /could not load session "restart": cannot reach the database \(connect ENOENT .*\)$/);
  await t.throwsAsync(store.list(), { instanceOf: JournalStoreError, message: /could not list sessions: cannot reach the database/ });
  await files.server.start();
  await files.server.query('DROP TRIGGER stall ON restart.strata_calls');
  const rows = await store.load('restart');
  t.is(rows?.session.version, 1, 'the append in flight left nothing');
  t.deepEqual(rows?.calls, []);
  t.is(await store.append('restart', write, { version: 1 }), 2);
});

serial('a store that cannot reach its database at connect says so', async (t) => {
  await files.server.stop();
  t.teardown(() => files.server.start());
  const started = performance.now();
  await t.throwsAsync(PostgresJournalStore.connect({ connectionString: files.server.connectionString(), connectTimeoutMs: 1_000 }), {
    instanceOf: JournalStoreError,
    message: /could not start: cannot reach the database \(connect ENOENT .*\.s\.PGSQL\.5432\)/,
  });
  t.true(performance.now() - started < 5_000);
  await t.throwsAsync(PostgresJournalStore.connect({ connectionString: 'postgresql://postgres@/no_such_database?host=/nonexistent-folder' }), {
    instanceOf: JournalStoreError,
    message: /cannot reach the database/,
  });
});
