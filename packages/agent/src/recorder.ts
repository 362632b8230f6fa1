/**
 * The recorder and replayer of a session's cells: the journal and its size, the checkpoint an
 * operation rolls back to, every tool call (recorded live, or answered from the journal and
 * matched against it on replay), approval resumption, the session limits, and how a cell ends.
 * It never touches the worker: it asks its host to publish events and to stop the worker.
 *
 * @module
 */
import type { ExecutionResult } from '@strata/runtime';
import type { JournalError } from './errors.js';
import type { CallStatus, CellRecord, RecordedError, ToolCall } from './journal.js';

/** What happens in a cell, as it happens. */
export type SessionEvent =
  | { readonly type: 'console'; readonly cell: number; readonly level: string; readonly stream: 'stdout' | 'stderr'; readonly text: string }
  | { readonly type: 'tool-call'; readonly cell: number; readonly seq: number; readonly tool: string; readonly args: readonly unknown[] }
  | {
      readonly type: 'tool-result';
      readonly cell: number;
      readonly seq: number;
      readonly tool: string;
      readonly status: CallStatus;
      readonly ms: number;
      readonly result?: unknown;
      readonly error?: RecordedError;
    };

/** What `run`, `approve` and `deny` give: an `ExecutionResult`, plus the cell's tool calls. */
export interface CellResult extends Omit<ExecutionResult, 'status'> {
  /** `'awaiting-approval'`: the cell stopped before a tool that needs approval (see `pending`). */
  readonly status: 'ok' | 'error' | 'awaiting-approval';
  /** The cell's number, from 1. */
  readonly cell: number;
  readonly calls: readonly ToolCall[];
  /** The first call awaiting a decision, when `status` is `'awaiting-approval'` (the first of {@link CellResult.pendingCalls}). */
  readonly pending?: PendingCall;
  /** Every call awaiting a decision, in `seq` order, when `status` is `'awaiting-approval'` (parallel calls may each need one). */
  readonly pendingCalls?: readonly PendingCall[];
}

/** A tool call awaiting approval: `approve(seq)` or `deny(seq, reason)` decides it. */
export interface PendingCall {
  readonly seq: number;
  readonly tool: string;
  readonly args: readonly unknown[];
}

export interface Limits {
  readonly maxCells: number;
  readonly maxCallsPerCell: number;
  readonly maxValueBytes: number;
  readonly maxJournalBytes: number;
}

/** The journal before the operation running now (`run`, `approve`, `deny`): what `journal` shows meanwhile, and what a failed one goes back to. */
export interface Checkpoint {
  readonly cells: number;
  /** The last cell as JSON, when it awaited approval (a decision and a resume change it). */
  readonly last: string | undefined;
  readonly nextSeq: number;
  readonly bytes: number;
}

/** The cell being run. */
export interface Running {
  readonly record: CellRecord;
  /** Calls answered from the journal: those before this index. */
  readonly replayUntil: number;
  /** The decided pending calls a resumed cell reaches (their indexes), each run or refused live. */
  readonly resumeAt: ReadonlySet<number>;
  readonly onEvent: ((event: SessionEvent) => void) | undefined;
  /** Calls seen so far in this run of the cell. */
  index: number;
  /** Events are delivered once the run is past the journal's part. */
  live: boolean;
  /** The cell stopped before a call that needs approval: calls already made settle (and may need approval too), no later one is made. */
  stopped: boolean;
  /** The stop waited maxHostWait for a tool still running, and gave up. */
  stopTimedOut: boolean;
  ended: boolean;
  divergence: JournalError | undefined;
  /** A replay of a recorded cell: a call past the journal's is a divergence, never live. */
  readonly replaying: boolean;
  /** The session limit that cut the cell short, if one did. */
  limit: { readonly name: string; readonly message: string } | undefined;
  /** Every live call until the journal has its outcome (or its `pending`): its approval check, then its tool. */
  readonly inflight: Set<Promise<unknown>>;
}

