/**
 * `@strata/store-postgres`: a `JournalStore` for `@strata/agent` in PostgreSQL, for a fleet of
 * machines that resume each other's sessions. Give it to `AgentSandbox.start({ store, sessionId })`
 * and `AgentSandbox.resume(sessionId, { store })`.
 *
 * @packageDocumentation
 */
export { PostgresJournalStore } from './postgres-store.js';
export type { PostgresJournalStoreOptions } from './options.js';
