/**
 * The errors of `@strata/agent`, in Strata's one hierarchy (each with a stable `code`).
 *
 * @module
 */
import { StrataError } from '@strata/runtime';

/** Every error code `@strata/agent` raises (beside the runtime's `StrataErrorCode`). Stable across releases. */
export type AgentErrorCode =
  | 'ERR_STRATA_JOURNAL'
  | 'ERR_STRATA_JOURNAL_CONFLICT'
  | 'ERR_STRATA_JOURNAL_STORE'
  | 'ERR_STRATA_LEASE_HELD'
  | 'ERR_STRATA_LEASE_LOST'
  | 'ERR_STRATA_SESSION_LIMIT'
  | 'ERR_STRATA_SESSION_STATE'
  | 'ERR_STRATA_TYPECHECK'
  | 'ERR_STRATA_UPSTREAM_MCP'
  | 'ERR_STRATA_UPSTREAM_HTTP';

/**
 * A journal cannot be loaded or replayed: it is malformed, it was recorded with other settings
 * (clock, seed, bootstrap scripts, strictEval, allowed globals, tools, a release of Strata with
 * another journal format), or a replayed cell diverged from it (called another tool, with other
 * arguments, or ended differently). `cell` and `seq` say where, when they apply. A session that
 * diverged is closed.
 */
export class JournalError extends StrataError<AgentErrorCode> {
  /** The cell (1-based) the problem is in, when it is in one. */
  readonly cell: number | undefined;
  /** The tool call's `seq`, when the problem is a call. */
  readonly seq: number | undefined;

  constructor(message: string, where: { cell?: number; seq?: number } = {}) {
    super(message, { code: 'ERR_STRATA_JOURNAL' });
    this.cell = where.cell;
    this.seq = where.seq;
  }
}

/**
 * A write to a journal store lost a race: the session's stored journal is at another version
 * than the writer read (someone else wrote it), or a session of that id already exists. Nothing
 * was written. `resume` the session to carry on from what the store holds.
 */
export class JournalConflict extends StrataError<AgentErrorCode> {
  readonly sessionId: string;

  constructor(sessionId: string, message: string) {
    super(message, { code: 'ERR_STRATA_JOURNAL_CONFLICT' });
    this.sessionId = sessionId;
  }
}

/**
 * A journal store could not do what was asked: the database is unreachable, busy past the
 * store's wait, or refused the statement. Nothing of that write was kept (each write is one
 * transaction); the session keeps what it had and writes it once the store is back.
 */
export class JournalStoreError extends StrataError<AgentErrorCode> {
  readonly sessionId: string | undefined;

  constructor(sessionId: string | undefined, message: string, options?: { cause?: unknown }) {
    super(message, { code: 'ERR_STRATA_JOURNAL_STORE', ...(options?.cause === undefined ? {} : { cause: options.cause }) });
    this.sessionId = sessionId;
  }
}

/**
 * Another holder has the session's lease, and it has not expired: the session runs elsewhere.
 * `owner` and `expiresAt` say whose it is and until when (unless it is renewed); wait for it
 * (`lease: { waitMs }`), or retry after `expiresAt`.
 */
export class LeaseHeld extends StrataError<AgentErrorCode> {
  readonly sessionId: string;
  readonly owner: string;
  /** Epoch milliseconds, on the store's clock. */
  readonly expiresAt: number;

  constructor(sessionId: string, owner: string, expiresAt: number, message: string) {
    super(message, { code: 'ERR_STRATA_LEASE_HELD' });
    this.sessionId = sessionId;
    this.owner = owner;
    this.expiresAt = expiresAt;
  }
}

/**
 * This session's lease is gone: it expired and another holder took the session over (its
 * fencing token is newer), or the session was deleted. Nothing more of this holder's is written;
 * the session is closed here. `resume` it where it runs now.
 */
export class LeaseLost extends StrataError<AgentErrorCode> {
  readonly sessionId: string;

  constructor(sessionId: string, message: string) {
    super(message, { code: 'ERR_STRATA_LEASE_LOST' });
    this.sessionId = sessionId;
  }
}

/** A session limit was reached: cells per session, tool calls per cell, the size of a value or of the journal. */
export class SessionLimitExceeded extends StrataError<AgentErrorCode> {
  /** The option that sets the limit (`maxCells`, `maxCallsPerCell`, `maxValueBytes`, `maxJournalBytes`). */
  readonly limit: string;

  constructor(limit: string, message: string) {
    super(message, { code: 'ERR_STRATA_SESSION_LIMIT' });
    this.limit = limit;
  }
}

/**
 * The session cannot do that now: it is closed, a cell is running, or a call awaits approval (or
 * none does). Also what a session's method rejects with for a failure that is none of Strata's
 * own errors (a bug), with the original as `cause`.
 */
export class SessionStateError extends StrataError<AgentErrorCode> {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, { code: 'ERR_STRATA_SESSION_STATE', ...(options?.cause === undefined ? {} : { cause: options.cause }) });
  }
}

/**
 * The type check (`typecheck: true`) could not be completed: it ran past its time budget
 * (`typecheckTimeout`), or the compiler failed on the code (nested past its stack, out of its
 * heap). The code did not run. Diagnostics are not this error: they are the check's result.
 */
export class TypeCheckFailed extends StrataError<AgentErrorCode> {
  constructor(message: string) {
    super(message, { code: 'ERR_STRATA_TYPECHECK' });
  }
}

/**
 * An upstream MCP server (bridged by `mcpTools`) gave what cannot be bridged: a tool name that
 * cannot be one (`__proto__`, empty, too long, characters outside MCP's `A-Z a-z 0-9 _ - .`, the
 * same name twice), more tools than `maxTools`, or more pages than `maxPages`. The connection is
 * closed; nothing of the server's is bridged.
 */
export class UpstreamMcpError extends StrataError<AgentErrorCode> {
  constructor(message: string) {
    super(message, { code: 'ERR_STRATA_UPSTREAM_MCP' });
  }
}

/**
 * An HTTP API bridged by `openApiTools` answered a call with a status outside 2xx. The message
 * names the operation, the status and the start of the body (what the model needs to correct its
 * call); the guest sees it as the call's rejection.
 */
export class UpstreamHttpError extends StrataError<AgentErrorCode> {
  /** The response's status (after redirects). */
  readonly status: number;
  constructor(message: string, status: number) {
    super(message, { code: 'ERR_STRATA_UPSTREAM_HTTP' });
    this.status = status;
  }
}
