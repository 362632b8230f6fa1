// The JournalStore contract (the agent package's test helper, the same tests the memory and
// SQLite stores pass) against a real PostgreSQL server started for this file, each test in a
// schema of its own so that no test sees another's sessions.
import test, { type TestFn } from 'ava';
import type { JournalStore } from '@strata/agent';
import pg from 'pg';
import { PostgresJournalStore } from '../src/index.js';
import { postgresFileServer } from './helpers/postgres-server.js';

// The contract is compiled beside the agent package's tests, not published with it.
const { journalStoreContract } = (await import(new URL('../../../agent/dist/test/helpers/store-contract.js', import.meta.url).href)) as {
  journalStoreContract: (test: TestFn, label: string, make: () => Promise<JournalStore>) => void;
};

const files = await postgresFileServer(test);
const withServer = files.withServer;

let schemas = 0;
journalStoreContract(withServer, 'postgres', () =>
  PostgresJournalStore.connect({ connectionString: files.server.connectionString(), schema: `contract_${++schemas}`, maxConnections: 3 }),
);
journalStoreContract(withServer, 'postgres on a pool of the caller', async () => {
  const pool = new pg.Pool({ connectionString: files.server.connectionString(), max: 2 }).on('error', () => {});
  const store = await PostgresJournalStore.connect({ pool, schema: 'contract_pool', tablePrefix: `p${++schemas}_` });
  // The contract closes the store; the pool is the caller's, so it is ended here after the store.
  return {
    name: store.name,
    create: (...args) => store.create(...args),
    load: (...args) => store.load(...args),
    append: (...args) => store.append(...args),
    list: (...args) => store.list(...args),
    delete: (...args) => store.delete(...args),
    acquireLease: (...args) => store.acquireLease(...args),
    renewLease: (...args) => store.renewLease(...args),
    releaseLease: (...args) => store.releaseLease(...args),
    close: async () => {
      await store.close();
      await pool.end();
    },
  } satisfies JournalStore;
});
