/**
 * The recorder and replayer of a session's cells: the journal and its size, the checkpoint an
 * operation rolls back to, every tool call (recorded live, or answered from the journal and
 * matched against it on replay), approval resumption, the session limits, and how a cell ends.
 * It never touches the worker: it asks its host to publish events and to stop the worker. Kept
 * apart from the session (as Temporal's SDK keeps its replay engine apart from the workflow API)
 * so that every divergence is table-tested without a worker (`test/recorder.test.ts`).
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { InvalidOption, type ExecutionResult } from '@strata/runtime';
import { fromTaggedJson, type JsonValue } from '@strata/wire';
import { describeThrown, recordable } from './describe.js';
import { JournalError, SessionLimitExceeded, SessionStateError } from './errors.js';
import {
  JOURNAL_FORMAT,
  JOURNAL_VERSION,
  settingsMismatch,
  type CallRecord,
  type CallStatus,
  type CellRecord,
  type Journal,
  type JournalSettings,
  type RecordedError,
  type ToolCall,
} from './journal.js';
import type { SessionTool, ToolAnswer } from './tools.js';
import { runToolCall, type ToolCallContext } from './tool-call-context.js';
import { traceToolCall, type Trace } from './tracing.js';
import { deeperThan } from './value-depth.js';

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

/** The session limits the recorder holds (see `AgentSandboxOptions`). */
export interface Limits {
  readonly maxCells: number;
  readonly maxCallsPerCell: number;
  readonly maxValueBytes: number;
  readonly maxJournalBytes: number;
}

/** The journal before the operation running now (`run`, `approve`, `deny`): what `journal` shows meanwhile, and what a failed one goes back to. */
export interface Checkpoint {
  readonly cells: number;
  /** The last cell as JSON, when it awaited approval or was interrupted (a decision, a resume or a continuation change it). */
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
  /** Aborted when the cell ends: a tool still running then (its worker died, or it outlived maxHostWait) is told to stop. */
  readonly abort: AbortController;
  /** Why the journal could not be written during the cell (the store failed, or the lease was lost): the cell stopped there. */
  storeFailure: unknown;
  /** The cell's span (set by whoever runs the cell), the parent of its tool calls' spans. */
  trace: Trace | undefined;
}

const MiB = 1024 * 1024;

/** The session limits from a session's options, each a positive integer (or its default). @throws `InvalidOption`. */
export function limitsOf(options: { readonly [name in keyof Limits]?: unknown }): Limits {
  return {
    maxCells: limit('maxCells', options.maxCells, 1_000),
    maxCallsPerCell: limit('maxCallsPerCell', options.maxCallsPerCell, 1_000),
    maxValueBytes: limit('maxValueBytes', options.maxValueBytes, MiB),
    maxJournalBytes: limit('maxJournalBytes', options.maxJournalBytes, 16 * MiB),
  };
}

function limit(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || (value as number) < 1) throw new InvalidOption(`${name} must be a positive integer (got ${String(value)})`);
  return value as number;
}

/**
 * How a cell runs: its first run (`live`), its resumption once its pending calls are decided,
 * its continuation after it was interrupted (`continue`: a `running` cell, whose calls that
 * ended are answered from the journal and whose calls that had only started run again), or its
 * replay into a fresh worker.
 */
export type CellMode =
  | { readonly kind: 'live' | 'resume' | 'continue'; readonly onEvent?: ((event: SessionEvent) => void) | undefined }
  | { readonly kind: 'replay' };

/** Why the recorder stops the worker: a replay diverged (its state cannot be trusted), or the cell stopped for approval (it is mid-cell). */
export type StopReason = 'diverged' | 'awaiting-approval' | 'journal-unwritable';

/** What the recorder asks of its session. It never holds the worker. */
export interface RecorderHost {
  /** A live event of the cell, after the cell's own listener had it (for the session's channel). */
  publish(event: SessionEvent): void;
  /** Stop the cell's worker, once `after` settles (at once without it); the next cell needs a fresh one. */
  stopWorker(reason: StopReason, after?: Promise<unknown>): void;
  /**
   * Make what the journal holds now durable before the guest hears a tool's answer (a session
   * with a store writes the changed rows); rejects when it cannot. Absent: nothing to do.
   */
  persist?(): Promise<void>;
}

/** What a {@link CellRecorder} is made with. */
export interface RecorderOptions {
  /** The tools the guest calls by name. */
  readonly tools: ReadonlyMap<string, SessionTool>;
  readonly limits: Limits;
  /** How long a cell whose code ended (or stopped for approval) waits for its tool calls (maxHostWait). */
  readonly settleWaitMs: number;
  readonly host: RecorderHost;
  /** The session's id: a tool call's id is `<session id>:<seq>`. */
  readonly sessionId: string;
  /** A journal to restore, checked (`checkJournalSized`), with its size as JSON. */
  readonly restored?: { readonly journal: Journal; readonly bytes: number } | undefined;
}

/** A cell's end as {@link CellRecorder.finishCell} sees it. */
export interface CellEnding {
  /** The cell's code ended and a tool call it made was still running after maxHostWait. */
  readonly unsettled: boolean;
  /** The worker is closed (it died, or was stopped). */
  readonly workerClosed: boolean;
}

// How a cell ended that no replay could reproduce: the worker is replaced before the next cell.
const LOST = new Set(['WorkerCrashed', 'RuntimeTimeout', 'HeapLimitExceeded', 'RuntimeClosed']);
// The guest boundary takes values 64 levels deep; the answer travels inside `{ ok, value }`.
const MAX_ANSWER_DEPTH = 62;

/** Whether a cell's outcome means its worker was lost (died, timed out, out of heap, closed): such an ending no replay can reproduce. */
export function workerLost(outcome: ExecutionResult): boolean {
  return LOST.has(outcome.errorType ?? '');
}

/**
 * Whether a replayed cell ended as the journal says: undefined when it did, else what differs
 * (for a `JournalError`). `callsMade` is how many tool calls the replay made.
 */
export function replayDivergence(cell: CellRecord, outcome: ExecutionResult, callsMade: number): string | undefined {
  if (callsMade !== cell.calls.length) return `it made ${callsMade} tool calls, the journal has ${cell.calls.length}`;
  if (outcome.status !== cell.status)
    return `it ended ${outcome.status === 'ok' ? 'with a result' : `with ${outcome.errorType}: ${outcome.error}`}, the journal says ${cell.status}`;
  if (outcome.status === 'ok' && cell.result !== undefined) {
    const now = recordable(outcome.result);
    if (!('json' in now) || JSON.stringify(now.json) !== JSON.stringify(cell.result)) return 'its result differs from the journal';
  }
  if (outcome.status === 'error' && (cell.error?.type !== outcome.errorType || cell.error?.message !== outcome.error)) {
    return `it threw ${outcome.errorType}: ${outcome.error}, the journal has ${cell.error?.type}: ${cell.error?.message}`;
  }
  return undefined;
}

/**
 * The journal of one session and everything that writes it. A cell runs between
 * {@link CellRecorder.begin} and {@link CellRecorder.end}; meanwhile every tool call of the guest
 * comes through {@link CellRecorder.call}: answered from the journal (and matched against it) for
 * the part the journal has, recorded live after it. {@link CellRecorder.finishCell} journals how
 * the cell ended. The session runs the code in its worker; the recorder only asks its host to
 * publish events and to stop the worker.
 */
export class CellRecorder {
  readonly #tools: ReadonlyMap<string, SessionTool>;
  readonly #limits: Limits;
  readonly #settleWaitMs: number;
  readonly #host: RecorderHost;
  readonly #sessionId: string;
  #journal: Journal | undefined;
  #journalBytes = 0;
  #running: Running | undefined;
  #checkpoint: Checkpoint | undefined;

  constructor(options: RecorderOptions) {
    this.#tools = options.tools;
    this.#limits = options.limits;
    this.#settleWaitMs = options.settleWaitMs;
    this.#host = options.host;
    this.#sessionId = options.sessionId;
    this.#journal = options.restored?.journal;
    this.#journalBytes = options.restored?.bytes ?? 0;
  }

  /** The journal itself (not a copy). @throws {@link SessionStateError} before the first worker. */
  get journal(): Journal {
    if (this.#journal === undefined) throw new SessionStateError('the session has not started');
    return this.#journal;
  }

  /** A copy of the journal; during an operation, the journal as it was before it (so it can always be restored). */
  snapshot(): Journal {
    const journal = this.journal;
    const checkpoint = this.#checkpoint;
    if (checkpoint === undefined) return JSON.parse(JSON.stringify(journal)) as Journal;
    const kept = journal.cells.slice(0, checkpoint.last === undefined ? checkpoint.cells : checkpoint.cells - 1);
    const cells = checkpoint.last === undefined ? kept : [...kept, JSON.parse(checkpoint.last) as CellRecord];
    return JSON.parse(JSON.stringify({ ...journal, cells, nextSeq: checkpoint.nextSeq })) as Journal;
  }

  /** Starts the journal with a worker's settings, or checks a restored one's against them: what differs, if anything. */
  open(settings: JournalSettings): string | undefined {
    if (this.#journal !== undefined) return settingsMismatch(this.#journal.settings, settings);
    this.#journal = { format: JOURNAL_FORMAT, version: JOURNAL_VERSION, session: this.#sessionId, settings, cells: [], nextSeq: 1 };
    this.#journalBytes = Buffer.byteLength(JSON.stringify(this.#journal));
    return undefined;
  }

  /** The last cell, when it was interrupted while it ran (status `running`). */
  get interrupted(): CellRecord | undefined {
    const last = this.#journal?.cells.at(-1);
    return last?.status === 'running' ? last : undefined;
  }

  /** Gives up the interrupted cell: it stays in the journal as `crashed` (never replayed), its calls as they are. */
  abandon(): CellRecord {
    const record = this.interrupted;
    if (record === undefined) throw new SessionStateError('no cell was interrupted: there is nothing to abandon');
    record.status = 'crashed';
    record.error = { type: 'SessionInterrupted', message: 'the cell was interrupted while it ran, and abandoned' };
    this.#journalBytes += Buffer.byteLength(JSON.stringify(record.error)) + 16;
    return record;
  }

  /** Every call awaiting a decision, in `seq` order, when the last cell stopped before them. */
  get pendingCalls(): readonly PendingCall[] {
    const last = this.#journal?.cells.at(-1);
    if (last?.status !== 'awaiting-approval') return [];
    return last.calls
      .filter((c) => c.status === 'pending' && c.approval === undefined)
      .map((c) => ({ seq: c.seq, tool: c.tool, args: decoded(c.args) as unknown[] }));
  }

  // --- checkpoint and rollback ------------------------------------------------------------------

  /** Runs one operation (`run`, `approve`, `deny`) against a checkpoint: if it throws, the journal goes back to how it was before. */
  async atomically<T>(work: () => Promise<T>): Promise<T> {
    const journal = this.journal;
    const last = journal.cells.at(-1);
    const checkpoint: Checkpoint = {
      cells: journal.cells.length,
      last: last?.status === 'awaiting-approval' || last?.status === 'running' ? JSON.stringify(last) : undefined,
      nextSeq: journal.nextSeq,
      bytes: this.#journalBytes,
    };
    this.#checkpoint = checkpoint;
    try {
      return await work();
    } catch (error) {
      journal.cells.length = checkpoint.cells;
      if (checkpoint.last !== undefined) journal.cells[checkpoint.cells - 1] = JSON.parse(checkpoint.last) as CellRecord;
      journal.nextSeq = checkpoint.nextSeq;
      this.#journalBytes = checkpoint.bytes;
      throw error;
    } finally {
      this.#checkpoint = undefined;
    }
  }

  // --- the cells --------------------------------------------------------------------------------

  /**
   * Checks that a new cell may run: no call awaits approval, and it fits in `maxCells` and
   * `maxJournalBytes`. @throws {@link SessionStateError}, {@link SessionLimitExceeded}.
   */
  checkNewCell(code: string): void {
    const interrupted = this.interrupted;
    if (interrupted !== undefined)
      throw new SessionStateError(
        `cell ${interrupted.cell} was interrupted while it ran (its process stopped, or its journal could not be written): continue() it, or abandon() it first`,
      );
    const pending = this.pendingCalls;
    if (pending.length > 0) {
      const seqs = pending.map((call) => `${call.seq} (${call.tool})`).join(', ');
      const first = pending[0]!.seq;
      throw new SessionStateError(
        `call${pending.length > 1 ? 's' : ''} ${seqs} await${pending.length > 1 ? '' : 's'} approval: approve(${first}) or deny(${first}, reason) first`,
      );
    }
    const journal = this.journal;
    if (journal.cells.length >= this.#limits.maxCells)
      throw new SessionLimitExceeded(
        'maxCells',
        `the session has run ${journal.cells.length} cells, its maxCells (${this.#limits.maxCells}): start another, or restore its journal with a larger maxCells`,
      );
    if (this.#journalBytes + cellBytes(code) > this.#limits.maxJournalBytes) {
      throw new SessionLimitExceeded('maxJournalBytes', `this cell would take the journal past maxJournalBytes (${this.#limits.maxJournalBytes} bytes)`);
    }
  }

  /** Journals a new cell (checked by {@link CellRecorder.checkNewCell}), to run live. */
  addCell(code: string, language: 'javascript' | 'typescript'): CellRecord {
    const journal = this.journal;
    const record: CellRecord = {
      cell: journal.cells.length + 1,
      code,
      ...(language === 'typescript' ? { language: 'typescript' as const } : {}),
      status: 'ok',
      calls: [],
    };
    journal.cells.push(record);
    this.#journalBytes += cellBytes(code);
    return record;
  }

  /**
   * Decides a call awaiting approval. While others of its cell await a decision, gives the cell
   * still awaiting (`result`); once none does, the cell to resume (`resume`, with mode `'resume'`).
   *
   * @throws {@link SessionStateError} when `seq` does not await a decision,
   * {@link SessionLimitExceeded} for a reason past `maxValueBytes` or `maxJournalBytes`.
   */
  decide(seq: number, approval: { approved: boolean; reason?: string }): { result: CellResult } | { resume: CellRecord } {
    const record = this.#journal?.cells.at(-1);
    const undecided = this.pendingCalls;
    if (record === undefined || undecided.length === 0) throw new SessionStateError('no call awaits approval');
    const call = record.calls.find((c) => c.seq === seq && c.status === 'pending');
    if (call === undefined || call.approval !== undefined) {
      const what = call === undefined ? 'does not await approval' : `was already ${call.approval!.approved ? 'approved' : 'denied'}`;
      const list = undecided.map((c) => `${c.seq} (${c.tool})`).join(', ');
      throw new SessionStateError(`call ${seq} ${what}; ${undecided.length > 1 ? `calls ${list} do` : `call ${list} does`}`);
    }
    if (approval.reason !== undefined) {
      // The reason is journaled and becomes the guest's error message: a value like any other.
      const bytes = Buffer.byteLength(JSON.stringify(approval.reason));
      if (bytes > this.#limits.maxValueBytes)
        throw new SessionLimitExceeded(
          'maxValueBytes',
          `the reason is ${bytes} bytes as JSON, over the session's maxValueBytes (${this.#limits.maxValueBytes}): give a shorter one`,
        );
      if (this.#journalBytes + bytes > this.#limits.maxJournalBytes) {
        throw new SessionLimitExceeded(
          'maxJournalBytes',
          `the reason would take the journal past maxJournalBytes (${this.#limits.maxJournalBytes} bytes): give a shorter one, or none`,
        );
      }
      this.#journalBytes += bytes;
    }
    // Without a reason a decision fits in what the call's record was counted for.
    call.approval = approval;
    const pendingCalls = this.pendingCalls;
    if (pendingCalls.length === 0) return { resume: record };
    // Others of the cell's calls await a decision: it resumes once none does.
    return {
      result: {
        status: 'awaiting-approval',
        cell: record.cell,
        calls: record.calls.map(toolCall),
        pending: pendingCalls[0]!,
        pendingCalls,
        result: undefined,
        error: undefined,
        errorType: undefined,
        stdout: '',
        stderr: '',
        truncated: false,
      },
    };
  }

  /** The cell starts running: from now until {@link CellRecorder.end}, the guest's tool calls are this cell's. */
  begin(record: CellRecord, mode: CellMode): Running {
    const replayUntil = mode.kind === 'live' ? 0 : record.calls.length;
    // A resumed cell reaches its decided calls (all pending ones, once none is undecided): each
    // runs or is refused live. A continued cell also reaches the calls that had only started.
    const resumable = (c: CallRecord) => c.status === 'pending' || (mode.kind === 'continue' && c.status === 'started');
    const resumeAt = new Set(mode.kind === 'resume' || mode.kind === 'continue' ? record.calls.flatMap((c, index) => (resumable(c) ? [index] : [])) : []);
    const running: Running = {
      record,
      replayUntil,
      resumeAt,
      onEvent: mode.kind === 'replay' ? undefined : mode.onEvent,
      index: 0,
      // A replay is never live, even of a cell without calls: its events were delivered when it ran.
      live: mode.kind !== 'replay' && replayUntil === 0,
      stopped: false,
      stopTimedOut: false,
      ended: false,
      divergence: undefined,
      replaying: mode.kind === 'replay',
      limit: undefined,
      inflight: new Set(),
      abort: new AbortController(),
      storeFailure: undefined,
      trace: undefined,
    };
    this.#running = running;
    return running;
  }

  /** Whether every tool call the cell made has its outcome (or awaits approval) within maxHostWait. */
  callsSettled(running: Running): Promise<boolean> {
    return settledWithin(running.inflight, this.#settleWaitMs);
  }

  /** The cell's code has ended (or its worker is gone): later calls are refused. Gives the divergence its replay met, if it met one. */
  end(running: Running): JournalError | undefined {
    running.ended = true;
    running.abort.abort(new Error(`cell ${running.record.cell} ended`));
    if (this.#running === running) this.#running = undefined;
    return running.divergence;
  }

  /**
   * Journals how a live or resumed cell ended (`end` came first) and gives its result.
   * `replayable` is false for a cell no replay could find again (`crashed`, `interrupted`): the
   * next cell needs a worker rebuilt from the cells before it.
   */
  finishCell(running: Running, outcome: ExecutionResult, ending: CellEnding): { result: CellResult; replayable: boolean } {
    const { record } = running;
    if (running.storeFailure !== undefined) {
      // The journal could not be written: the cell stays interrupted (`running`), with every call
      // it made as this process knows it, for continue() to take up once the store is back.
      record.status = 'running';
      delete record.result;
      delete record.resultBytes;
      delete record.error;
      const why = running.storeFailure instanceof Error ? running.storeFailure.message : String(running.storeFailure);
      return {
        result: {
          ...outcome,
          status: 'error',
          result: undefined,
          error: `the cell stopped: its journal could not be written (${why}); continue() it once the store is back (its calls that ended are not run again)`,
          errorType: running.storeFailure instanceof Error ? running.storeFailure.name : 'JournalStoreError',
          cell: record.cell,
          calls: record.calls.map(toolCall),
        },
        replayable: false,
      };
    }
    // A stop for approval keeps the cell only when every call it made has an outcome or awaits a
    // decision: otherwise (a tool still running past maxHostWait, or the worker died first) it is lost.
    const settled = !record.calls.some((c) => c.status === 'started');
    if (running.stopped && settled) {
      record.status = 'awaiting-approval';
      const pendingCalls = this.pendingCalls;
      return {
        result: {
          ...outcome,
          status: 'awaiting-approval',
          result: undefined,
          error: undefined,
          errorType: undefined,
          cell: record.cell,
          calls: record.calls.map(toolCall),
          pending: pendingCalls[0]!,
          pendingCalls,
        },
        replayable: true,
      };
    }
    const calls = record.calls.map(toolCall);
    // How the cell ended, for the journal and for the caller.
    let ended: { status: 'ok' } | { status: 'error' | 'crashed' | 'interrupted'; type: string; message: string };
    if (running.stopTimedOut)
      ended = {
        status: 'interrupted',
        type: 'RuntimeTimeout',
        message: `the cell stopped for approval, and a tool call it made was still running after ${this.#settleWaitMs} ms (maxHostWait)`,
      };
    else if (running.limit !== undefined) ended = { status: 'interrupted', type: 'SessionLimitExceeded', message: running.limit.message };
    else if (ending.unsettled)
      ended = {
        status: 'interrupted',
        type: 'RuntimeTimeout',
        message: `the cell's code ended and a tool call it made was still running after ${this.#settleWaitMs} ms (maxHostWait)`,
      };
    else if (outcome.status === 'ok') ended = { status: 'ok' };
    else
      ended = {
        status: workerLost(outcome) ? (ending.workerClosed ? 'crashed' : 'interrupted') : 'error',
        type: outcome.errorType ?? 'Error',
        message: outcome.error ?? '',
      };
    record.status = ended.status;
    if (ended.status === 'ok') {
      const recorded = recordable(outcome.result);
      const fits = 'json' in recorded && recorded.bytes <= this.#limits.maxValueBytes && this.#journalBytes + recorded.bytes <= this.#limits.maxJournalBytes;
      if (fits) record.result = recorded.json;
      else record.resultBytes = 'bytes' in recorded ? recorded.bytes : 0;
    } else {
      record.error = { type: ended.type, message: ended.message };
    }
    this.#journalBytes += Buffer.byteLength(
      JSON.stringify({ status: record.status, result: record.result, resultBytes: record.resultBytes, error: record.error }),
    );
    const replayable = ended.status !== 'crashed' && ended.status !== 'interrupted';
    if (ended.status === 'ok') return { result: { ...outcome, status: 'ok', cell: record.cell, calls }, replayable };
    const error = ended.type === outcome.errorType ? outcome : { ...outcome, result: undefined, error: ended.message, errorType: ended.type };
    return { result: { ...error, status: 'error', cell: record.cell, calls }, replayable };
  }

  /**
   * A cell that ended, whose end could not be written to the store: kept as interrupted
   * (`running`, its calls as they are), for continue() to run on. Gives what the caller gets.
   */
  interruptAfterEnd(record: CellRecord, { pending: _pending, pendingCalls: _pendingCalls, ...ended }: CellResult, failure: unknown): CellResult {
    record.status = 'running';
    delete record.result;
    delete record.resultBytes;
    delete record.error;
    const why = failure instanceof Error ? failure.message : String(failure);
    return {
      ...ended,
      status: 'error',
      result: undefined,
      error: `the cell ended, and its end could not be written to the journal's store (${why}); continue() it once the store is back (its calls that ended are not run again)`,
      errorType: failure instanceof Error ? failure.name : 'JournalStoreError',
    };
  }

  /** A console line of the running cell, as an event. */
  console(entry: { readonly level: string; readonly stream: 'stdout' | 'stderr'; readonly text: string }): void {
    const running = this.#running;
    if (running !== undefined) this.#emit(running, { type: 'console', cell: running.record.cell, level: entry.level, stream: entry.stream, text: entry.text });
  }

  // --- tool calls ---------------------------------------------------------------------------

  /** The host function behind every tool wrapper in the guest. Never throws: the answer says how the call ended. */
  call(name: unknown, args: unknown): Promise<ToolAnswer> {
    const tool = typeof name === 'string' ? this.#tools.get(name) : undefined;
    if (tool === undefined || !Array.isArray(args)) return Promise.resolve(refusal('TypeError', `${String(name)} is not a tool of this session`));
    return this.callTool(tool, args);
  }

  /** A call of `tool` in the running cell (the guest's fetch comes here as the tool `fetch`). */
  callTool(tool: SessionTool, args: unknown[]): Promise<ToolAnswer> {
    const running = this.#running;
    if (running === undefined || running.ended) return Promise.resolve(refusal('Error', 'a tool can be called only while a cell runs'));
    return this.#call(running, tool, args);
  }

  async #call(running: Running, tool: SessionTool, args: unknown[]): Promise<ToolAnswer> {
    // Past a stop for approval the worker is going: nothing more runs or is recorded.
    if (running.stopped) return new Promise<ToolAnswer>(() => {});
    const { record } = running;
    const index = running.index++;
    const argsRecord = recordable(args);
    const argsJson = 'json' in argsRecord ? JSON.stringify(argsRecord.json) : undefined;
    if (index < running.replayUntil) {
      const recorded = record.calls[index]!;
      const same = recorded.argsDigest !== undefined ? recorded.argsDigest === digestOf(argsJson) : JSON.stringify(recorded.args) === argsJson;
      if (recorded.tool !== tool.name || !same) {
        return this.#diverged(
          running,
          new JournalError(
            `cell ${record.cell} diverged from the journal at call ${recorded.seq}: the journal has ${recorded.tool}(${preview(recorded.args)}), the replay called ${tool.name}(${argsJson === undefined ? '…' : preview(JSON.parse(argsJson))})`,
            { cell: record.cell, seq: recorded.seq },
          ),
        );
      }
      if (!running.resumeAt.has(index)) return answerOf(recorded);
      // A decided pending call, or one that had started: from here the cell is live.
      running.live = true;
      if (recorded.status === 'started') {
        // It started before the interruption and never ended here: it runs again, under the same
        // call id, so that a tool with side effects can tell (and skip what it did already).
        return this.#track(running, this.#execute(running, tool, decoded(recorded.args) as unknown[], recorded, true));
      }
      if (recorded.approval === undefined) {
        // Pending, undecided, when its cell was interrupted: asked again.
        recorded.status = 'started';
        return this.#track(running, this.#approveAndExecute(running, tool, decoded(recorded.args) as unknown[], recorded));
      }
      const decision = recorded.approval;
      delete recorded.approval;
      if (decision?.approved !== true) {
        recorded.status = 'denied';
        recorded.error = { name: 'Error', message: `the call to ${tool.name} was denied${decision?.reason === undefined ? '' : `: ${decision.reason}`}` };
        this.#emit(running, { type: 'tool-result', cell: record.cell, seq: recorded.seq, tool: tool.name, status: 'denied', ms: 0, error: recorded.error });
        return answerOf(recorded);
      }
      recorded.status = 'started';
      return this.#track(running, this.#execute(running, tool, decoded(recorded.args) as unknown[], recorded));
    }
    // Past every call the journal has for a replayed cell: the replay went elsewhere. Never live.
    if (running.replaying) {
      return this.#diverged(
        running,
        new JournalError(
          `cell ${record.cell} diverged from the journal on replay: it calls ${tool.name} after its ${record.calls.length} recorded tool calls`,
          { cell: record.cell },
        ),
      );
    }
    running.live = true;
    // A live call. Past a session limit the cell is cut short: this and every later call of it
    // fails without being journaled, and the cell is not kept (the next runs in a worker rebuilt
    // from the cells before), so the journal stays bounded and a replay never meets the limit.
    if (running.limit !== undefined) return refusal('RangeError', running.limit.message);
    if (record.calls.length >= this.#limits.maxCallsPerCell) {
      return this.#cutShort(
        running,
        'maxCallsPerCell',
        `${tool.name} was not called: the cell reached maxCallsPerCell (${this.#limits.maxCallsPerCell} tool calls)`,
      );
    }
    const journal = this.journal;
    const tooLarge = 'json' in argsRecord && argsRecord.bytes > this.#limits.maxValueBytes;
    // Arguments that are refused are kept as a digest (the replay checks it), not as they came.
    const kept = 'json' in argsRecord && !tooLarge;
    const bytes = (kept ? argsRecord.bytes : 64) + 160;
    if (this.#journalBytes + bytes > this.#limits.maxJournalBytes) {
      return this.#cutShort(
        running,
        'maxJournalBytes',
        `${tool.name} was not called: the journal would pass maxJournalBytes (${this.#limits.maxJournalBytes} bytes)`,
      );
    }
    const seq = journal.nextSeq++;
    const call: CallRecord = { seq, tool: tool.name, args: kept ? argsRecord.json : [], status: 'started', ms: 0 };
    if (!kept) call.argsDigest = digestOf(argsJson);
    record.calls.push(call);
    this.#journalBytes += bytes;
    if (!kept) {
      call.status = 'failed';
      call.error = tooLarge
        ? {
            name: 'RangeError',
            message: `${tool.name} was not called: its arguments are ${(argsRecord as { bytes: number }).bytes} bytes as JSON, over the session's maxValueBytes (${this.#limits.maxValueBytes})`,
          }
        : { name: 'TypeError', message: `${tool.name} was not called: its arguments cannot be journaled (${(argsRecord as { problem: string }).problem})` };
      this.#emit(running, { type: 'tool-result', cell: record.cell, seq, tool: tool.name, status: 'failed', ms: 0, error: call.error });
      return answerOf(call);
    }
    const guestArgs = decoded(call.args) as unknown[];
    this.#emit(running, { type: 'tool-call', cell: record.cell, seq, tool: tool.name, args: guestArgs });
    return this.#track(running, this.#approveAndExecute(running, tool, guestArgs, call));
  }

  /**
   * Keeps a live call in `running.inflight` until the journal has its outcome or its `pending`,
   * and gives the guest its answer (never, for a call that awaits approval: the worker goes).
   */
  #track(running: Running, lifecycle: Promise<ToolAnswer | undefined>): Promise<ToolAnswer> {
    running.inflight.add(lifecycle);
    return lifecycle.then((answer) => answer ?? new Promise<ToolAnswer>(() => {}));
  }

  /** A live call: its approval check, then its tool; undefined when it awaits approval. */
  async #approveAndExecute(running: Running, tool: SessionTool, guestArgs: unknown[], call: CallRecord): Promise<ToolAnswer | undefined> {
    let needsApproval: boolean;
    try {
      needsApproval = await tool.needsApproval(guestArgs);
    } catch (error) {
      const thrown = describeThrown(error);
      return this.#settle(running, call, 0, { ok: false, error: { name: thrown.name, message: `needsApproval of ${tool.name} threw: ${thrown.message}` } });
    }
    if (running.ended) {
      // The worker died while needsApproval decided: the tool is never called now.
      call.afterCrash = { status: 'failed', error: { name: 'Error', message: `${tool.name} was not called: the worker died before needsApproval decided` } };
      this.#journalBytes += Buffer.byteLength(JSON.stringify(call.afterCrash)) + 16;
      return answerOf(call);
    }
    if (!needsApproval) return this.#execute(running, tool, guestArgs, call);
    // The cell stops before the tool runs; the calls it made in parallel settle first (each may
    // need approval too, and is then pending as well), then the worker goes: its state is
    // mid-cell, and approve or deny resumes the cell by replay once every pending call is decided.
    call.status = 'pending';
    this.#emit(running, { type: 'tool-result', cell: running.record.cell, seq: call.seq, tool: tool.name, status: 'pending', ms: 0 });
    if (!running.stopped) {
      running.stopped = true;
      const settled = settledWithin(running.inflight, this.#settleWaitMs).then((all) => {
        running.stopTimedOut = !all;
      });
      this.#host.stopWorker('awaiting-approval', settled);
    }
    return undefined;
  }

  async #execute(running: Running, tool: SessionTool, args: unknown[], call: CallRecord, retry = false): Promise<ToolAnswer> {
    // With a store, the call is durable as `started` before the tool runs: a process that dies
    // while it runs leaves the call for continue() to retry under its id. If that cannot be
    // written, the tool is never called.
    if (this.#host.persist !== undefined) {
      try {
        await this.#host.persist();
      } catch (error) {
        return this.#unwritable(running, error);
      }
    }
    const started = performance.now();
    const context: ToolCallContext = {
      id: `${this.#sessionId}:${call.seq}`,
      sessionId: this.#sessionId,
      seq: call.seq,
      cell: running.record.cell,
      tool: tool.name,
      signal: running.abort.signal,
      retry,
    };
    const trace = traceToolCall(running.trace, { tool: tool.name, id: context.id, retry });
    let answer: ToolAnswer;
    try {
      const value = await trace.within(() => runToolCall(context, () => tool.execute(...args)));
      answer = this.#settle(running, call, performance.now() - started, { ok: true, value });
    } catch (error) {
      answer = this.#settle(running, call, performance.now() - started, { ok: false, error: (tool.describeFailure ?? describeThrown)(error) });
    }
    trace.end(answer.ok ? undefined : { errorType: answer.name });
    return this.#durably(running, answer);
  }

  /**
   * Gives the guest `answer` once the journal holding it is durable (a session with a store). If
   * it cannot be made so, the guest never hears back: the cell stops there, to be continued.
   */
  async #durably(running: Running, answer: ToolAnswer): Promise<ToolAnswer> {
    if (this.#host.persist === undefined) return answer;
    try {
      await this.#host.persist();
    } catch (error) {
      if (running.ended) return answer;
      return this.#unwritable(running, error);
    }
    return answer;
  }

  /** The journal could not be written: the cell stops here, and the guest never hears back. */
  #unwritable(running: Running, error: unknown): Promise<ToolAnswer> {
    running.storeFailure ??= error;
    this.#host.stopWorker('journal-unwritable');
    return new Promise<ToolAnswer>(() => {});
  }

  /** Records how a live call ended and answers the guest with exactly what a replay will give it. */
  #settle(running: Running, call: CallRecord, ms: number, outcome: { ok: true; value: unknown } | { ok: false; error: RecordedError }): ToolAnswer {
    call.ms = Math.round(ms);
    let ended: { status: 'completed'; result: JsonValue } | { status: 'failed'; error: RecordedError };
    if (outcome.ok) {
      const recorded = recordable(outcome.value);
      if (!('json' in recorded))
        ended = { status: 'failed', error: { name: 'TypeError', message: `the answer of ${call.tool} cannot cross to the guest: ${recorded.problem}` } };
      else if (deeperThan(outcome.value, MAX_ANSWER_DEPTH))
        ended = {
          status: 'failed',
          error: { name: 'TypeError', message: `the answer of ${call.tool} cannot cross to the guest: it nests deeper than ${MAX_ANSWER_DEPTH} levels` },
        };
      else if (recorded.bytes > this.#limits.maxValueBytes)
        ended = {
          status: 'failed',
          error: {
            name: 'RangeError',
            message: `the answer of ${call.tool} is ${recorded.bytes} bytes as JSON, over the session's maxValueBytes (${this.#limits.maxValueBytes})`,
          },
        };
      else if (this.#journalBytes + recorded.bytes > this.#limits.maxJournalBytes)
        ended = {
          status: 'failed',
          error: {
            name: 'RangeError',
            message: `the answer of ${call.tool} would take the journal past maxJournalBytes (${this.#limits.maxJournalBytes} bytes)`,
          },
        };
      else ended = { status: 'completed', result: recorded.json };
    } else {
      ended = { status: 'failed', error: outcome.error };
    }
    if (running.ended) {
      // The worker died while the tool ran: the guest never heard back. The call stays 'started'; what the tool did is kept for reconciling.
      call.afterCrash = ended;
      this.#journalBytes += Buffer.byteLength(JSON.stringify(ended)) + 16;
      return answerOf(call);
    }
    call.status = ended.status;
    if (ended.status === 'completed') call.result = ended.result;
    else call.error = ended.error;
    this.#journalBytes += Buffer.byteLength(JSON.stringify({ result: call.result, error: call.error }));
    this.#emit(running, {
      type: 'tool-result',
      cell: running.record.cell,
      seq: call.seq,
      tool: call.tool,
      status: call.status,
      ms: call.ms,
      ...(call.status === 'completed' ? { result: decoded(call.result) } : { error: call.error! }),
    });
    return answerOf(call);
  }

  /** A replay that went elsewhere: the worker is stopped (its state cannot be trusted), the guest never hears back, and `end` gives the error. */
  #diverged(running: Running, error: JournalError): Promise<ToolAnswer> {
    running.divergence ??= error;
    this.#host.stopWorker('diverged');
    return new Promise<ToolAnswer>(() => {});
  }

  /** A session limit reached in a cell: the call fails, later calls of the cell too, and the cell is not kept. */
  #cutShort(running: Running, limitName: string, message: string): ToolAnswer {
    running.limit = { name: limitName, message };
    return refusal('RangeError', message);
  }

  /** Delivers an event of the live part of a cell: to the cell's listener, then to the host. */
  #emit(running: Running, event: SessionEvent): void {
    if (!running.live) return;
    try {
      running.onEvent?.(event);
    } catch {
      // A listener's bug reaches neither the guest nor the session.
    }
    this.#host.publish(event);
  }
}

/** What a new cell adds to the journal before it runs: its code, and its record's fields. */
const cellBytes = (code: string): number => Buffer.byteLength(JSON.stringify(code)) + 64;

/**
 * A recorded value decoded for the guest or the caller. Every journal value was written by
 * toTaggedJson or checked by checkJournal, so this cannot fail; if it ever did, it is a
 * JournalError, not a TypeError out of a getter.
 */
function decoded(json: JsonValue | undefined): unknown {
  try {
    return fromTaggedJson(json);
  } catch (error) {
    throw new JournalError(`a recorded value cannot be decoded: ${describeThrown(error).message}`);
  }
}

const refusal = (name: string, message: string): ToolAnswer => ({ ok: false, name, message });

/** Whether every promise in `promises` (a set that may grow meanwhile) settled within `ms`. */
async function settledWithin(promises: Set<Promise<unknown>>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    for (let seen = 0; seen !== promises.size; ) {
      seen = promises.size;
      if ((await Promise.race([Promise.allSettled([...promises]).then(() => true as const), timedOut])) === false) return false;
    }
    return true;
  } finally {
    clearTimeout(timer);
  }
}

/** The guest's answer for a recorded call. */
function answerOf(call: CallRecord): ToolAnswer {
  if (call.status === 'completed') return { ok: true, value: decoded(call.result) };
  return refusal(call.error?.name ?? 'Error', call.error?.message ?? `the call to ${call.tool} did not complete`);
}

function toolCall(call: CallRecord): ToolCall {
  return {
    seq: call.seq,
    tool: call.tool,
    args: decoded(call.args) as unknown[],
    status: call.status,
    ...(call.result === undefined ? {} : { result: decoded(call.result) }),
    ...(call.error === undefined ? {} : { error: { ...call.error } }),
    ms: call.ms,
  };
}

/** SHA-256 of arguments' JSON text, for arguments the journal does not keep (`'unrecordable'` when there is none). */
function digestOf(json: string | undefined): string {
  return json === undefined ? 'unrecordable' : createHash('sha256').update(json).digest('hex');
}

function preview(json: unknown): string {
  const text = JSON.stringify(json) ?? '';
  const inner = text.startsWith('[') ? text.slice(1, -1) : text;
  return inner.length > 120 ? `${inner.slice(0, 117)}...` : inner;
}
