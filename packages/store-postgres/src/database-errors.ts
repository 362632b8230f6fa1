/**
 * What a failure of the database or of the way to it means, in words a user can act on, for the
 * `JournalStoreError` the store throws. Pure: the error is only read. Errors are told apart by
 * their `code` (a SQLSTATE from the server, an errno from Node's socket) and, for the few the
 * `pg` driver makes itself, by their message; not by class, since a caller's pool may come from
 * another copy of `pg`.
 *
 * @module
 */

/** Node's socket errors: the server was never reached, or the way to it broke. */
const SOCKET_ERRORS: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOENT',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
const SQLSTATE = /^[0-9A-DF-Z][0-9A-Z]{4}$/;

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Whether the connection the error came on is gone (or in a state nobody knows): it must not go
 * back to the pool, and a COMMIT that failed so may have been kept by the server or not.
 */
export function connectionLost(error: unknown): boolean {
  const code = codeOf(error);
  if (code !== undefined && SOCKET_ERRORS.has(code)) return true;
  if (code !== undefined && SQLSTATE.test(code)) return code.startsWith('08') || code.startsWith('57P') || code === '25P03';
  return /Connection terminated|Query read timeout|Client was closed|not queryable/i.test(messageOf(error));
}

/** What went wrong, as the end of a sentence ("… failed: <this>"). */
export function describeDatabaseError(error: unknown, statementTimeoutMs: number): string {
  const code = codeOf(error);
  const message = messageOf(error);
  if (code !== undefined && SOCKET_ERRORS.has(code)) return `cannot reach the database (${message})`;
  if (code !== undefined && SQLSTATE.test(code)) {
    if (code === '57014')
      return /statement timeout/i.test(message)
        ? `a statement ran past statementTimeoutMs (${statementTimeoutMs} ms) and the database cancelled it`
        : `the database cancelled the statement (${message})`;
    if (code === '25P03')
      return 'the transaction sat idle between two statements for too long (statementTimeoutMs, at least 5 s) and the database ended the connection';
    if (code.startsWith('57P')) return `the database ended the connection: it is shutting down, restarting, or an administrator ended it (${message})`;
    if (code.startsWith('08')) return `the connection to the database failed (${message})`;
    if (code.startsWith('28')) return `the database refused the login (${message})`;
    if (code === '3D000') return `the database does not exist (${message})`;
    if (code === '42501') return `the database role lacks a privilege the store needs (${message}); the README of @strata/store-postgres lists them`;
    if (code === '42P01' || code === '3F000') return `a table of the store is missing (${message}); it was dropped after the store connected`;
    if (code === '53300') return `the database has no connection left to give (${message})`;
    if (code.startsWith('53')) return `the database ran out of a resource (${message})`;
    if (code === '40001' || code === '40P01') return `the database aborted the transaction in a conflict with another one (${message}); try again`;
    return `the database refused the statement: ${message} (SQLSTATE ${code})`;
  }
  if (/Connection terminated/i.test(message)) return `the connection to the database was lost (${message})`;
  if (/timeout exceeded when trying to connect/i.test(message)) return `no connection to the database could be had within the pool's connect timeout`;
  if (/Query read timeout/i.test(message)) return `the database did not answer within statementTimeoutMs (${statementTimeoutMs} ms) and a second more`;
  if (/after calling end on the pool/i.test(message)) return 'the pool of connections was ended (pool.end()) while the store still used it';
  return message;
}
