// A session on PostgreSQL when the database goes away in the middle of a cell, against a real
// server this file stops and starts: the tool's answer cannot be written, so the cell stops there
// (JournalStoreError, the session interrupted) and the stored journal stays as it was written;
// once the server is back, continue() finishes the cell on the same store object without running
// the call that had ended again, and a fresh connection (another process's) resumes the session.
import test from 'ava';
import { AgentSandbox, SessionStateError } from '@strata/agent';
import { PostgresJournalStore } from '../src/index.js';
import { postgresFileServer } from './helpers/postgres-server.js';

const files = await postgresFileServer(test);
const withServer = files.withServer;

withServer('the database goes away mid-cell: the cell is interrupted, nothing is lost, and once it is back continue() finishes it', async (t) => {
  const store = await PostgresJournalStore.connect({
    connectionString: files.server.connectionString(),
    schema: 'failover',
    statementTimeoutMs: 2_000,
    connectTimeoutMs: 1_000,
  });
  t.teardown(() => store.close());
  const count = { reserve: 0, confirm: 0 };
  const tools = {
    reserve: async (seats: number) => {
      count.reserve++;
      // The server stops while this tool runs: its answer cannot be written.
      if (count.reserve === 1) await files.server.stop();
      return { seats, ref: 'R-1' };
    },
    confirm: async (ref: string) => {
      count.confirm++;
      return `${ref} confirmed`;
    },
  };
  const session = await AgentSandbox.start({ tools, store, sessionId: 'failover', timeout: 30_000 });
  t.teardown(() => session.close());
  await session.run('globalThis.party = 2');
  const cell = 'const booking = await reserve(party); const done = await confirm(booking.ref); done';
  const failed = await session.run(cell);
  t.is(failed.errorType, 'JournalStoreError');
  t.deepEqual(session.interrupted, { cell: 2, code: cell });
  t.deepEqual(count, { reserve: 1, confirm: 0 }, 'the guest never heard reserve answer');
  await t.throwsAsync(session.run('1'), { instanceOf: SessionStateError });

  await files.server.start();
  const stored = await store.load('failover');
  t.deepEqual(
    stored!.cells.map((c) => JSON.parse(c.record).status),
    ['ok', 'running'],
    'the stored journal is as it was written: cell 2 running, reserve started',
  );
  t.deepEqual(
    stored!.calls.map((c) => JSON.parse(c.record).status),
    ['started'],
  );
  const continued = await session.continue();
  t.is(continued.result, 'R-1 confirmed');
  t.deepEqual(count, { reserve: 1, confirm: 1 }, 'reserve had ended here: answered from the journal, not run again');
  await session.close();

  // A full reconnect: another connection (as another process after a restart) resumes the session.
  const other = await PostgresJournalStore.connect({ connectionString: files.server.connectionString(), schema: 'failover' });
  t.teardown(() => other.close());
  await using resumed = await AgentSandbox.resume('failover', { tools, store: other, timeout: 30_000 });
  t.deepEqual((await resumed.run('[party, booking.ref, done]')).result, [2, 'R-1', 'R-1 confirmed']);
  t.deepEqual(count, { reserve: 1, confirm: 1 });
});
