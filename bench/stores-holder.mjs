// The holder of bench/stores.mjs's takeover: starts a session in the store it is given, runs a
// cell, says `holding`, and keeps the session (renewing its lease) until it is killed.
//   node stores-holder.mjs sqlite|postgres <file or connection string> <session id> <lease ttl ms>
import { AgentSandbox, SqliteJournalStore } from '@strata/agent';

const [kind, place, sessionId, ttl] = process.argv.slice(2);
const store =
  kind === 'postgres'
    ? await (await import('@strata/store-postgres')).PostgresJournalStore.connect({ connectionString: place })
    : SqliteJournalStore.open(place);
const session = await AgentSandbox.start({ store, sessionId, lease: { ttlMs: Number(ttl) } });
await session.run('globalThis.kept = 1');
process.stdout.write('holding\n');
setInterval(() => {}, 60_000);
