// One "machine" of `npm run demo:fleet` (scripts/demo-fleet.mjs): a process that runs the
// session kept in PostgreSQL, and a tool with a side effect that it does at most once per call id.
//
//   node demo-fleet-machine.mjs <name> <connection string> <session id> start|resume
//
// start: starts the session, runs the first cell, then a cell whose `charge` writes to the
// ledger and then hangs (the parent kills this process there: the charge is done, its answer
// never journaled). resume: takes the session over (waiting for the dead holder's lease),
// continues the interrupted cell (the charge runs again under its call id and finds itself
// already done), and runs one more cell on the state the first machine built.
import { AgentSandbox, currentToolCall } from '@strata/agent';
import { PostgresJournalStore } from '@strata/store-postgres';
import pg from 'pg';

const [name, connectionString, sessionId, mode] = process.argv.slice(2);
const say = (line) => process.stdout.write(`${name}: ${line}\n`);
const store = await PostgresJournalStore.connect({ connectionString });
const ledger = new pg.Pool({ connectionString, max: 2 });
await ledger.query('CREATE TABLE IF NOT EXISTS fleet_demo_ledger (call_id text PRIMARY KEY, account text NOT NULL, cents integer NOT NULL)');

const tools = {
  lookup: async (sku) => ({ sku, price: 12.5 }),
  charge: {
    description: 'Charges an account, once per call id',
    execute: async ({ account, cents }) => {
      const call = currentToolCall();
      // The call id is the idempotency key: a retry after a crash finds the charge it made.
      const inserted = await ledger.query('INSERT INTO fleet_demo_ledger VALUES ($1, $2, $3) ON CONFLICT (call_id) DO NOTHING RETURNING call_id', [
        call.id,
        account,
        cents,
      ]);
      say(
        inserted.rowCount === 1
          ? `charge ${call.id}: charged ${account} ${cents} cents${call.retry ? ' (a retry)' : ''}`
          : `charge ${call.id}: a retry (retry: ${call.retry}); the ledger has it already, not charged again`,
      );
      if (mode === 'start') {
        process.stdout.write('CHARGED\n');
        await new Promise(() => {}); // killed here: the charge is in the ledger, its answer in no journal
      }
      return { callId: call.id, account, cents };
    },
  },
};

if (mode === 'start') {
  const session = await AgentSandbox.start({ tools, store, sessionId, lease: { ttlMs: 2_000 } });
  say(`started session ${session.id} (lease: 2 s, renewed every 0.67 s)`);
  const first = await session.run('const order = await lookup("A1"); order.price');
  say(`cell 1 -> ${JSON.stringify(first.result)}`);
  say('cell 2 calls charge(...)');
  await session.run('const receipt = await charge({ account: "acme", cents: order.price * 100 }); receipt');
} else {
  const waiting = performance.now();
  const session = await AgentSandbox.resume(sessionId, { tools, store, lease: { ttlMs: 2_000, waitMs: 10_000 } });
  say(`resumed ${sessionId} ${Math.round(performance.now() - waiting)} ms after asking (the dead holder's lease ran out, then its cells were replayed here)`);
  say(`interrupted: cell ${session.interrupted?.cell}; continuing it`);
  const continued = await session.continue();
  say(`cell 2 -> ${JSON.stringify(continued.result)} (${continued.calls.map((c) => `${c.tool} ${c.status}`).join(', ')})`);
  const next = await session.run('[order.sku, receipt.cents]');
  say(`cell 3 -> ${JSON.stringify(next.result)} (the state machine A built)`);
  const { rows } = await ledger.query('SELECT call_id, cents FROM fleet_demo_ledger ORDER BY call_id');
  say(`the ledger: ${JSON.stringify(rows)} (one charge)`);
  await session.close();
  await store.close();
  await ledger.end();
}
