/**
 * The arguments every journal store checks before it touches its database, so that each store
 * refuses the same bad input with the same words (a store is also called by applications
 * directly, not only by `AgentSandbox`).
 *
 * @module
 */
import { InvalidOption } from '@strata/runtime';
import { JournalConflict, LeaseLost } from '../errors.js';
import { SESSION_ID_PATTERN } from '../journal.js';
import type { JournalAppend, WriteExpectation } from './journal-store.js';

/** The longest lease a store grants: a day. A holder renews long before. */
export const MAX_LEASE_TTL_MS = 86_400_000;
/** The most sessions one `list` gives. */
export const MAX_LIST_LIMIT = 10_000;

/** @throws `InvalidOption` unless `sessionId` is 1 to 128 of `A-Z a-z 0-9 . _ : -`. */
export function checkStoreSessionId(sessionId: unknown): asserts sessionId is string {
  if (typeof sessionId !== 'string' || !SESSION_ID_PATTERN.test(sessionId))
    throw new InvalidOption(`a session id is 1 to 128 of A-Z a-z 0-9 . _ : - (got ${preview(sessionId)})`);
}

/** @throws `InvalidOption` for an owner that is not a short string, or a TTL out of 1 ms to a day. */
export function checkLeaseRequest(owner: unknown, ttlMs: unknown): void {
  if (typeof owner !== 'string' || owner.length === 0 || owner.length > 200)
    throw new InvalidOption(`a lease's owner is a string of 1 to 200 characters (got ${preview(owner)})`);
  if (!Number.isSafeInteger(ttlMs) || (ttlMs as number) < 1 || (ttlMs as number) > MAX_LEASE_TTL_MS)
    throw new InvalidOption(`a lease's ttlMs is an integer from 1 to ${MAX_LEASE_TTL_MS} (got ${preview(ttlMs)})`);
}

/** @throws `InvalidOption` for a write whose rows are not rows. */
export function checkAppend(append: JournalAppend, expect: WriteExpectation): void {
  if (append === null || typeof append !== 'object') throw new InvalidOption('append must be an object of cells, calls and nextSeq');
  if (!Array.isArray(append.cells) || !Array.isArray(append.calls)) throw new InvalidOption('append.cells and append.calls must be arrays of rows');
  positive(append.nextSeq, 'append.nextSeq');
  if (append.truncateFrom !== undefined) positive(append.truncateFrom, 'append.truncateFrom');
  for (const row of append.cells) {
    positive(row?.cell, "a cell row's cell");
    if (typeof row.record !== 'string') throw new InvalidOption(`the row of cell ${row.cell} must hold its record as JSON text`);
  }
  for (const row of append.calls) {
    positive(row?.cell, "a call row's cell");
    positive(row.seq, "a call row's seq");
    if (typeof row.record !== 'string') throw new InvalidOption(`the row of call ${row.seq} must hold its record as JSON text`);
  }
  if (expect === null || typeof expect !== 'object') throw new InvalidOption('expect must be { version, lease? }');
  positive(expect.version, 'expect.version');
  if (expect.lease !== undefined) positive(expect.lease?.token, 'expect.lease.token');
}

/** The options of `list`, with the default limit. */
export function checkListOptions(options: { readonly after?: unknown; readonly limit?: unknown }): { after: string | undefined; limit: number } {
  if (options === null || typeof options !== 'object') throw new InvalidOption('list(options): options must be an object');
  const { after, limit = 100 } = options;
  if (after !== undefined && typeof after !== 'string') throw new InvalidOption('list(options): after must be a session id');
  if (!Number.isSafeInteger(limit) || (limit as number) < 1 || (limit as number) > MAX_LIST_LIMIT)
    throw new InvalidOption(`list(options): limit must be an integer from 1 to ${MAX_LIST_LIMIT}`);
  return { after: after as string | undefined, limit: limit as number };
}

function positive(value: unknown, what: string): void {
  if (!Number.isSafeInteger(value) || (value as number) < 1) throw new InvalidOption(`${what} must be a positive integer (got ${preview(value)})`);
}

function preview(value: unknown): string {
  const text = typeof value === 'string' ? JSON.stringify(value) : String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/**
 * A write's expectation against the session's header as the store holds it, read in the write's
 * own transaction (locked): the lease it was made under still held, the version it read still
 * current. Throws before anything is written.
 *
 * @throws `LeaseLost` when the lease was taken over (its token changed); `JournalConflict` when
 *   another write came first (the version moved).
 */
export function checkExpectation(sessionId: string, stored: { readonly version: number; readonly leaseToken: number }, expect: WriteExpectation): void {
  if (expect.lease !== undefined && stored.leaseToken !== expect.lease.token)
    throw new LeaseLost(
      sessionId,
      `the lease on session ${JSON.stringify(sessionId)} was taken over (token ${stored.leaseToken}, this writer's ${expect.lease.token}): nothing was written`,
    );
  if (stored.version !== expect.version)
    throw new JournalConflict(
      sessionId,
      `session ${JSON.stringify(sessionId)} is at version ${stored.version} in the store, this writer read ${expect.version}: nothing was written`,
    );
}
