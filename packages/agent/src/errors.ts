/**
 * The errors of `@strata/agent`, in Strata's one hierarchy (each with a stable `code`).
 *
 * @module
 */
import { StrataError } from '@strata/runtime';

/** Every error code `@strata/agent` raises (beside the runtime's `StrataErrorCode`). Stable across releases. */
export type AgentErrorCode =
  | 'ERR_STRATA_JOURNAL'
  | 'ERR_STRATA_SESSION_LIMIT'
  | 'ERR_STRATA_SESSION_STATE'
  | 'ERR_STRATA_TYPECHECK'
  | 'ERR_STRATA_UPSTREAM_MCP';

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
