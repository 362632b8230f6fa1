/**
 * `AgentSandbox`: a session of cells in one sandboxed worker, with a journal of every tool call.
 *
 * Replay is the one mechanism behind restore, crash recovery and approvals. The guest is
 * deterministic (a frozen clock, a seeded `Math.random`, virtual-time timers, and every tool
 * answer recorded), so running a journal's cells again in a fresh worker, answering each tool
 * call from the journal instead of calling the tool, rebuilds the same state. A call whose tool
 * or arguments differ from the journal is a divergence: `JournalError`, and the session closes.
 *
 * @module
 */
import { createHash, randomInt, randomUUID } from 'node:crypto';
import { channel } from 'node:diagnostics_channel';
import { createRequire } from 'node:module';
import { WEB_POLYFILLS } from '@strata/polyfills';
import {
  InvalidOption,
  IsolatedRuntime,
  SandboxPool,
  SESSION_OPTIONS,
  StrataError,
  type EgressRequest,
  type ExecutionResult,
  type IsolatedRuntimeOptions,
} from '@strata/runtime';
import { fromTaggedJson, type JsonValue } from '@strata/wire';
import { executeCell } from './cell-code.js';
import { describeThrown, recordable } from './describe.js';
import { JournalError, SessionLimitExceeded, SessionStateError, TypeCheckFailed } from './errors.js';
import {
  checkJournalSized,
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
import { egressAnswer, egressTool, FETCH_TOOL } from './egress-tool.js';
import { guestToolFunctions, sessionTools, type SessionTool, type ToolAnswer, type ToolGroup, type ToolSet } from './tools.js';
import { ToolBridge } from './tool-bridge.js';
import type { CellResult, Checkpoint, Limits, PendingCall, Running, SessionEvent } from './recorder.js';
import { deeperThan } from './value-depth.js';
import { checkTypecheckTimeout, formatDiagnostics, typecheck } from './typecheck.js';

export type { CellResult, PendingCall, SessionEvent } from './recorder.js';

/** Options of {@link AgentSandbox.start} and {@link AgentSandbox.restore}: every `IsolatedRuntime` option, plus the session's own. */
export interface AgentSandboxOptions extends IsolatedRuntimeOptions {
  /**
   * The tools the guest can call: global functions named by their keys, or `ToolBridge`s (each
   * its namespace: `tools.weather(input)`; several with different namespaces in an array).
   */
  tools?: ToolSet | ToolBridge | readonly ToolBridge[];
  /**
   * Take workers from this pool (a session then starts in about a millisecond; restore and
   * recovery take from it too). The pool's workers must run a frozen clock (start the pool with
   * `clock: { … }`); the session records the pool's settings. Only the per-checkout options may
   * be given beside it.
   */
  pool?: SandboxPool;
  /** With `pool`: whose session this is, for the pool's crash budget per tenant. */
  tenant?: string;
  /** After the worker dies during a cell: `'replay'` (default) recovers on the next `run` in a fresh worker; `'never'` closes the session. */
  recover?: 'replay' | 'never';
  /** Cells per session (`restore` refuses a journal with more). Default 1 000. */
  maxCells?: number;
  /** Tool calls per cell; past it a call fails in the guest, and the tool does not run (`restore` refuses a journal cell with more). Default 1 000. */
  maxCallsPerCell?: number;
  /** The largest tool arguments, answer or `deny` reason (as JSON) the journal keeps; a call past it fails in the guest, a reason past it is refused, `restore` refuses a journal holding a larger value. Default 1 MiB. */
  maxValueBytes?: number;
  /** The largest journal (as JSON); a cell, call or `deny` reason that would pass it is refused, and `restore` refuses a larger journal. Default 16 MiB. */
  maxJournalBytes?: number;
  /**
   * What the guest's `fetch` may reach, as `IsolatedRuntime`'s `egress` (a policy, or your own
   * handler). Every request is journaled like a tool call, as the tool `fetch`: its request as the
   * guest made it (the policy's credentials are added later, and never recorded) and the response
   * or the refusal. A replay answers from the journal and sends nothing. With a pool, this is per
   * session.
   */
  egress?: IsolatedRuntimeOptions['egress'];
}

/** Options of one {@link AgentSandbox.run} (and of `approve`/`deny`, which finish a cell). */
export interface RunOptions {
  /** Called as things happen in the cell: console lines, tool calls starting and ending. A listener that throws is ignored. */
  onEvent?: (event: SessionEvent) => void;
  /**
   * Type-check the cell against the tools' declarations (and the cells before it) first: a cell
   * that does not check does not run, and its result is `errorType: 'TypeCheckFailed'` with the
   * diagnostics as its error (also when the check cannot finish: past `typecheckTimeout`, or
   * the compiler failing on the code). Needs the `typescript` package (>=5.5 <7). Default `false`.
   */
  typecheck?: boolean;
  /** With `typecheck`: how long the check may take, in ms, in the checker's worker thread. Default 5 000. */
  typecheckTimeout?: number;
  /** `'typescript'`: the cell's types are stripped in the parent (`stripTypes`), lines kept; recorded in the journal, so a replay strips it again. Default `'javascript'`. */
  language?: 'javascript' | 'typescript';
}

/** Events of every session, for tracing tools: `{ session, event }` (`session` is `AgentSandbox.id`). */
export const SESSION_EVENTS_CHANNEL = 'strata:agent:event';
const sessionEvents = channel(SESSION_EVENTS_CHANNEL);

const SESSION_KEYS = ['tools', 'pool', 'recover', 'maxCells', 'maxCallsPerCell', 'maxValueBytes', 'maxJournalBytes'] as const;
// What a pooled session may set per checkout: the pool's own list, and whose session it is.
const CHECKOUT_KEYS: ReadonlySet<string> = new Set([...SESSION_OPTIONS, 'tenant']);
const MiB = 1024 * 1024;
// How a cell ended that no replay could reproduce: the worker is replaced before the next cell.
const LOST = new Set(['WorkerCrashed', 'RuntimeTimeout', 'HeapLimitExceeded', 'RuntimeClosed']);
const STRATA_VERSION = (createRequire(import.meta.url)('@strata/runtime/package.json') as { version: string }).version;
// The host function the guest's tool wrappers call; the wrappers take it and delete the global.
const CALL_GLOBAL = '__strataAgentCall';
// The guest boundary takes values 64 levels deep; the answer travels inside `{ ok, value }`.
const MAX_ANSWER_DEPTH = 62;

/**
 * A session: cells run one after another in one sandboxed worker, so state (globals and
 * top-level declarations) persists across them, and every tool call is journaled.
 *
 * ```ts
 * await using session = await AgentSandbox.start({ tools: { lookup: async (sku: string) => prices[sku] } });
 * await session.run('const total = await lookup("A1"); total');
 * await session.run('total * 2');
 * const saved = JSON.stringify(session.journal);
 * await using again = await AgentSandbox.restore(JSON.parse(saved), { tools }); // calls no tool
 * ```
 */
export class AgentSandbox {
  /** This session's id, as published on {@link SESSION_EVENTS_CHANNEL}. */
  readonly id = randomUUID();
  readonly #tools: ReadonlyMap<string, SessionTool>;
  readonly #bridges: readonly ToolBridge[];
  /** How the guest reaches the tools: globals, or the members of bridges' namespaces. */
  readonly #groups: readonly ToolGroup[];
  /** The guest's fetch as a session tool, when the session has an egress. */
  readonly #fetchTool: SessionTool | undefined;
  readonly #runtimeOptions: IsolatedRuntimeOptions;
  readonly #pool: SandboxPool | undefined;
  readonly #recover: 'replay' | 'never';
  readonly #limits: Limits;
  readonly #layers: JsonValue;
  /** How long a cell whose code ended waits for its tool calls (maxHostWait). */
  readonly #settleWaitMs: number;
  #journal: Journal | undefined;
  #journalBytes = 0;
  #rt: IsolatedRuntime | undefined;
  #stale = false;
  #busy = false;
  #closed = false;
  #running: Running | undefined;
  #checkpoint: Checkpoint | undefined;

  private constructor(options: AgentSandboxOptions, input: unknown) {
    if (options === null || typeof options !== 'object') throw new InvalidOption('options must be an object');
    const bridges = options.tools instanceof ToolBridge ? [options.tools] : Array.isArray(options.tools) ? (options.tools as readonly unknown[]) : undefined;
    if (bridges !== undefined) {
      const namespaces = new Set<string>();
      for (const bridge of bridges) {
        if (!(bridge instanceof ToolBridge)) throw new InvalidOption('tools as an array must be ToolBridges');
        if (namespaces.has(bridge.namespace)) throw new InvalidOption(`two bridges have the namespace ${bridge.namespace}: give each its own`);
        namespaces.add(bridge.namespace);
      }
      const list = bridges as readonly ToolBridge[];
      this.#bridges = list;
      this.#groups = list.map((bridge) => ({ namespace: bridge.namespace, names: bridge.tools.map((tool) => tool.name) }));
      this.#tools = new Map(list.flatMap((bridge) => bridge.sessionTools()).map((tool) => [tool.name, tool]));
    } else {
      this.#bridges = [];
      const tools = sessionTools(options.tools);
      this.#groups = [{ names: tools.map((tool) => tool.name) }];
      this.#tools = new Map(tools.map((tool) => [tool.name, tool]));
    }
    this.#pool = options.pool;
    if (this.#pool !== undefined && !(this.#pool instanceof SandboxPool)) throw new InvalidOption('pool must be a SandboxPool');
    this.#recover = options.recover ?? 'replay';
    if (this.#recover !== 'replay' && this.#recover !== 'never') throw new InvalidOption(`recover must be 'replay' or 'never' (got ${String(options.recover)})`);
    this.#limits = {
      maxCells: limit('maxCells', options.maxCells, 1_000),
      maxCallsPerCell: limit('maxCallsPerCell', options.maxCallsPerCell, 1_000),
      maxValueBytes: limit('maxValueBytes', options.maxValueBytes, MiB),
      maxJournalBytes: limit('maxJournalBytes', options.maxJournalBytes, 16 * MiB),
    };
    // A journal to restore is checked against the limits before anything else reads it.
    const checked = input === undefined ? undefined : checkJournalSized(input, this.#limits);
    const journal = checked?.journal;
    const runtime: Record<string, unknown> = { ...options };
    for (const key of SESSION_KEYS) delete runtime[key];
    this.#fetchTool = egressTool(options.egress, options.redactHostErrors !== false);
    if (this.#fetchTool !== undefined) {
      if (this.#tools.has(FETCH_TOOL)) throw new InvalidOption('egress and a tool named fetch both answer the guest\'s fetch: give one of them');
      // The runtime's egress is the journal: each request is a call of the tool `fetch`.
      runtime['egress'] = async (request: EgressRequest) => egressAnswer(await this.#callTool(this.#fetchTool!, [request]));
    }
    if (this.#pool !== undefined) {
      const fixed = Object.keys(runtime).filter((key) => !CHECKOUT_KEYS.has(key));
      if (fixed.length > 0) throw new InvalidOption(`with a pool, the workers are the pool's: ${fixed.join(', ')} cannot be set per session (set them on the pool; per session: ${[...CHECKOUT_KEYS].join(', ')})`);
    } else {
      if (runtime['tenant'] !== undefined) throw new InvalidOption('tenant names whose session it is for a pool\'s crash budget: give it with pool');
      runtime['bootstrap'] ??= [WEB_POLYFILLS];
      // A frozen clock and a seeded Math.random by default: recorded, so a replay has the same.
      runtime['clock'] ??= journal?.settings.clock ?? { at: Date.now(), seed: randomInt(0, 2 ** 32) };
    }
    this.#runtimeOptions = runtime as IsolatedRuntimeOptions;
    this.#settleWaitMs = typeof runtime['maxHostWait'] === 'number' ? runtime['maxHostWait'] : runtime['maxHostWait'] === null ? 2 ** 31 - 1 : 600_000;
    this.#layers = layersOf(runtime);
    this.#journal = journal;
    if (checked !== undefined) this.#journalBytes = checked.bytes;
  }

  /**
   * Starts a session in a fresh worker (or one from `pool`).
   *
   * @throws `InvalidOption` (from `@strata/runtime`), and whatever `IsolatedRuntime.start` throws.
   */
  static async start(options: AgentSandboxOptions = {}): Promise<AgentSandbox> {
    const session = new AgentSandbox(options, undefined);
    await session.#ready();
    return session;
  }

  /**
   * A session from a journal (`session.journal`, or `JSON.parse` of one kept): a fresh worker
   * runs the journal's cells again, every tool call answered from the journal, no tool called.
   * Then it is live. A call awaiting approval in the journal can be approved or denied here.
   *
   * @throws {@link JournalError} when the journal is malformed (every field and every recorded
   * value is checked), was recorded with other settings, or its replay diverges;
   * {@link SessionLimitExceeded} when it is over one of this session's limits (`maxJournalBytes`,
   * `maxCells`, `maxCallsPerCell`, `maxValueBytes`): restore it with larger ones.
   */
  static async restore(journal: unknown, options: AgentSandboxOptions = {}): Promise<AgentSandbox> {
    if (journal === undefined) throw new JournalError('restore needs a journal (session.journal, or JSON.parse of one kept)');
    const session = new AgentSandbox(options, journal);
    await session.#ready();
    return session;
  }

  /**
   * The journal so far: plain JSON data (a copy), versioned. `JSON.stringify` it to keep it.
   * While a cell runs (`run`, `approve`, `deny`), it is the journal as it was before: what it
   * gives can always be restored.
   */
  get journal(): Journal {
    const journal = this.#assertJournal();
    const checkpoint = this.#checkpoint;
    if (checkpoint === undefined) return JSON.parse(JSON.stringify(journal)) as Journal;
    const kept = journal.cells.slice(0, checkpoint.last === undefined ? checkpoint.cells : checkpoint.cells - 1);
    const cells = checkpoint.last === undefined ? kept : [...kept, JSON.parse(checkpoint.last) as CellRecord];
    return JSON.parse(JSON.stringify({ ...journal, cells, nextSeq: checkpoint.nextSeq })) as Journal;
  }

  /** The first call awaiting a decision (see {@link AgentSandbox.pendingCalls}), if the last cell stopped before one. */
  get pending(): PendingCall | undefined {
    return this.pendingCalls[0];
  }

  /** Every call awaiting a decision, in `seq` order: a cell that made several in parallel stopped before all of them, and resumes once each is decided. */
  get pendingCalls(): readonly PendingCall[] {
    const last = this.#journal?.cells.at(-1);
    if (last?.status !== 'awaiting-approval') return [];
    return last.calls.filter((c) => c.status === 'pending' && c.approval === undefined).map((c) => ({ seq: c.seq, tool: c.tool, args: decoded(c.args) as unknown[] }));
  }

  /** The current worker's process id, when one is running. */
  get pid(): number | undefined {
    return this.#rt !== undefined && !this.#rt.closed ? this.#rt.pid : undefined;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Runs a cell. State persists across cells, top-level declarations included; a top-level
   * `await` is fine. Resolves to the cell's result whatever the code does (a guest exception is
   * `status: 'error'`); a cell stopped before a tool that needs approval resolves with
   * `status: 'awaiting-approval'`. If the worker died during the cell (`errorType`
   * `'WorkerCrashed'` or `'RuntimeTimeout'`), the next `run` recovers by replay.
   *
   * @throws {@link SessionStateError} (closed, busy, or a call awaits approval),
   * {@link SessionLimitExceeded} (`maxCells`, `maxJournalBytes`), {@link JournalError} (a
   * recovery whose replay diverged: the session is closed).
   */
  async run(code: string, options: RunOptions = {}): Promise<CellResult> {
    if (typeof code !== 'string') throw new InvalidOption('code must be a string');
    checkRunOptions(options);
    if (options.language !== undefined && options.language !== 'javascript' && options.language !== 'typescript') {
      throw new InvalidOption(`language must be 'javascript' or 'typescript' (got ${String(options.language)})`);
    }
    if (options.typecheckTimeout !== undefined) checkTypecheckTimeout(options.typecheckTimeout, 'typecheckTimeout');
    const typescript = options.language === 'typescript';
    return this.#exclusive(async () => {
      const pending = this.pendingCalls;
      if (pending.length > 0) {
        const seqs = pending.map((call) => `${call.seq} (${call.tool})`).join(', ');
        const first = pending[0]!.seq;
        throw new SessionStateError(`call${pending.length > 1 ? 's' : ''} ${seqs} await${pending.length > 1 ? '' : 's'} approval: approve(${first}) or deny(${first}, reason) first`);
      }
      const journal = this.#assertJournal();
      if (journal.cells.length >= this.#limits.maxCells) throw new SessionLimitExceeded('maxCells', `the session has run ${journal.cells.length} cells, its maxCells (${this.#limits.maxCells}): start another, or restore its journal with a larger maxCells`);
      const bytes = Buffer.byteLength(JSON.stringify(code)) + 64;
      if (this.#journalBytes + bytes > this.#limits.maxJournalBytes) {
        throw new SessionLimitExceeded('maxJournalBytes', `this cell would take the journal past maxJournalBytes (${this.#limits.maxJournalBytes} bytes)`);
      }
      if (options.typecheck === true) {
        const refused = await this.#typecheck(code, journal, typescript ? 'typescript' : 'javascript', options.typecheckTimeout);
        if (refused !== undefined) return refused;
      }
      await this.#ensureWorker();
      const record: CellRecord = { cell: journal.cells.length + 1, code, ...(typescript ? { language: 'typescript' as const } : {}), status: 'ok', calls: [] };
      journal.cells.push(record);
      this.#journalBytes += bytes;
      return this.#runCell(record, { replayUntil: 0, resumeAt: new Set(), onEvent: options.onEvent });
    });
  }

  /**
   * Lets a call awaiting approval run once. When it was the last undecided call of its cell, the
   * cell resumes (by replay) and this resolves to its result; until then it resolves to the cell
   * still `'awaiting-approval'`, with the calls left to decide.
   *
   * @throws (rejects) {@link SessionStateError} when `seq` does not await a decision;
   * `InvalidOption` for options that are not.
   */
  async approve(seq: number, options: RunOptions = {}): Promise<CellResult> {
    checkRunOptions(options);
    return this.#decide(seq, { approved: true }, options);
  }

  /**
   * Refuses a call awaiting approval: it throws an Error in the guest (with `reason`), which the
   * cell may catch. Resolves as {@link AgentSandbox.approve} does. The reason is journaled and
   * given to the guest, so it counts towards `maxValueBytes` and `maxJournalBytes`.
   *
   * @throws (rejects) `InvalidOption` when `reason` is not a string, {@link SessionLimitExceeded}
   * when it is too large, {@link SessionStateError} when `seq` does not await a decision.
   */
  async deny(seq: number, reason?: string, options: RunOptions = {}): Promise<CellResult> {
    if (reason !== undefined && typeof reason !== 'string') throw new InvalidOption(`reason must be a string (got ${typeof reason})`);
    checkRunOptions(options);
    return this.#decide(seq, reason === undefined ? { approved: false } : { approved: false, reason }, options);
  }

  /** Closes the worker. The journal stays readable. */
  async close(): Promise<void> {
    this.#closed = true;
    const rt = this.#rt;
    this.#rt = undefined;
    await rt?.close();
  }

  /** `await using session = await AgentSandbox.start(…)` closes it at the end of the scope. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  // --- the cell ------------------------------------------------------------------------------

  /**
   * Runs `running`'s cell, live or replayed: its code, then its tool calls. A cell ends when its
   * code has and every tool call it made has (up to maxHostWait: `unsettled` past it), so their
   * outcomes are journaled within it; after a stop that no replay could find again, nobody needs
   * them. A divergence closes the session and is thrown.
   */
  async #performCell(rt: IsolatedRuntime, running: Running): Promise<{ outcome: ExecutionResult; unsettled: boolean }> {
    this.#running = running;
    let outcome: ExecutionResult;
    let unsettled = false;
    try {
      outcome = await executeCell(rt, running.record.code, running.record.language ?? 'javascript', `cell-${running.record.cell}`);
      if (!rt.closed && !LOST.has(outcome.errorType ?? '')) unsettled = !(await settledWithin(running.inflight, this.#settleWaitMs));
    } finally {
      running.ended = true;
      this.#running = undefined;
    }
    if (running.divergence !== undefined) throw await this.#fail(running.divergence);
    return { outcome, unsettled };
  }

  /** The result of a cell that does not type-check (it is not run, nor journaled), or undefined when it checks. */
  async #typecheck(code: string, journal: Journal, language: 'javascript' | 'typescript', timeout: number | undefined): Promise<CellResult | undefined> {
    // The cells before it declare what it may use: checked as one module, only its own lines reported.
    const before = journal.cells.filter((c) => c.status === 'ok').map((c) => c.code).join(';\n');
    const offset = before === '' ? 0 : before.split('\n').length;
    const text = before === '' ? code : `${before};\n${code}`;
    let error: string;
    try {
      const diagnostics = (await typecheck(text, this.#declarations(), language, timeout === undefined ? {} : { timeout }))
        .filter((d) => d.line === 0 || d.line > offset)
        .map((d) => (d.line === 0 ? d : { ...d, line: d.line - offset }));
      if (diagnostics.length === 0) return undefined;
      error = formatDiagnostics(diagnostics);
    } catch (failure) {
      // A check that could not finish refuses the cell too, saying why; a missing compiler throws.
      if (!(failure instanceof TypeCheckFailed)) throw failure;
      error = failure.message;
    }
    return {
      status: 'error',
      cell: journal.cells.length + 1,
      result: undefined,
      error,
      errorType: 'TypeCheckFailed',
      stdout: '',
      stderr: '',
      truncated: false,
      calls: [],
    };
  }

  /** The tools' declarations: the bridges', or each global tool as a function of anything. */
  #declarations(): string {
    return this.#bridges.length > 0
      ? this.#bridges.map((bridge) => bridge.declarations()).join('\n')
      : [...this.#tools.values()].map((tool) => `declare function ${tool.name}(...args: any[]): Promise<any>;`).join('\n');
  }

  async #decide(seq: number, approval: { approved: boolean; reason?: string }, options: RunOptions): Promise<CellResult> {
    if (!Number.isSafeInteger(seq)) throw new InvalidOption(`seq must be the integer seq of a call awaiting approval (got ${typeof seq === 'number' ? seq : typeof seq})`);
    return this.#exclusive(async () => {
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
        if (bytes > this.#limits.maxValueBytes) throw new SessionLimitExceeded('maxValueBytes', `the reason is ${bytes} bytes as JSON, over the session's maxValueBytes (${this.#limits.maxValueBytes}): give a shorter one`);
        if (this.#journalBytes + bytes > this.#limits.maxJournalBytes) {
          throw new SessionLimitExceeded('maxJournalBytes', `the reason would take the journal past maxJournalBytes (${this.#limits.maxJournalBytes} bytes): give a shorter one, or none`);
        }
        this.#journalBytes += bytes;
      }
      // Without a reason a decision fits in what the call's record was counted for.
      call.approval = approval;
      const pendingCalls = this.pendingCalls;
      if (pendingCalls.length > 0) {
        // Others of the cell's calls await a decision: it resumes once none does.
        return { status: 'awaiting-approval', cell: record.cell, calls: record.calls.map(toolCall), pending: pendingCalls[0]!, pendingCalls, result: undefined, error: undefined, errorType: undefined, stdout: '', stderr: '', truncated: false };
      }
      await this.#ensureWorker();
      const decided = new Set(record.calls.flatMap((c, index) => (c.status === 'pending' ? [index] : [])));
      return this.#runCell(record, { replayUntil: record.calls.length, resumeAt: decided, onEvent: options.onEvent });
    });
  }

  async #runCell(record: CellRecord, mode: { replayUntil: number; resumeAt: ReadonlySet<number>; onEvent: RunOptions['onEvent'] }): Promise<CellResult> {
    const running: Running = { record, ...mode, index: 0, live: mode.replayUntil === 0, stopped: false, stopTimedOut: false, ended: false, divergence: undefined, replaying: false, limit: undefined, inflight: new Set(), };
    const rt = this.#rt!;
    const { outcome, unsettled } = await this.#performCell(rt, running);
    // A stop for approval keeps the cell only when every call it made has an outcome or awaits a
    // decision: otherwise (a tool still running past maxHostWait, or the worker died first) it is lost.
    const settled = !record.calls.some((c) => c.status === 'started');
    if (running.stopped && settled) {
      record.status = 'awaiting-approval';
      const pendingCalls = this.pendingCalls;
      return { ...outcome, status: 'awaiting-approval', result: undefined, error: undefined, errorType: undefined, cell: record.cell, calls: record.calls.map(toolCall), pending: pendingCalls[0]!, pendingCalls };
    }
    const calls = record.calls.map(toolCall);
    // How the cell ended, for the journal and for the caller.
    let ended: { status: 'ok' } | { status: 'error' | 'crashed' | 'interrupted'; type: string; message: string };
    if (running.stopTimedOut) ended = { status: 'interrupted', type: 'RuntimeTimeout', message: `the cell stopped for approval, and a tool call it made was still running after ${this.#settleWaitMs} ms (maxHostWait)` };
    else if (running.limit !== undefined) ended = { status: 'interrupted', type: 'SessionLimitExceeded', message: running.limit.message };
    else if (unsettled) ended = { status: 'interrupted', type: 'RuntimeTimeout', message: `the cell's code ended and a tool call it made was still running after ${this.#settleWaitMs} ms (maxHostWait)` };
    else if (outcome.status === 'ok') ended = { status: 'ok' };
    else ended = { status: LOST.has(outcome.errorType ?? '') ? (rt.closed ? 'crashed' : 'interrupted') : 'error', type: outcome.errorType ?? 'Error', message: outcome.error ?? '' };
    record.status = ended.status;
    if (ended.status === 'ok') {
      const recorded = recordable(outcome.result);
      const fits = 'json' in recorded && recorded.bytes <= this.#limits.maxValueBytes && this.#journalBytes + recorded.bytes <= this.#limits.maxJournalBytes;
      if (fits) record.result = recorded.json;
      else record.resultBytes = 'bytes' in recorded ? recorded.bytes : 0;
    } else {
      record.error = { type: ended.type, message: ended.message };
    }
    this.#journalBytes += Buffer.byteLength(JSON.stringify({ status: record.status, result: record.result, resultBytes: record.resultBytes, error: record.error }));
    if (ended.status === 'crashed' || ended.status === 'interrupted') {
      // Not replayable: the next cell runs in a worker rebuilt from the cells before this one.
      this.#stale = true;
      if (this.#recover === 'never') await this.close();
    }
    if (ended.status === 'ok') return { ...outcome, status: 'ok', cell: record.cell, calls };
    const error = ended.type === outcome.errorType ? outcome : { ...outcome, result: undefined, error: ended.message, errorType: ended.type };
    return { ...error, status: 'error', cell: record.cell, calls };
  }

  // --- tool calls ----------------------------------------------------------------------------

  /** The host function behind every tool wrapper in the guest. Never throws: the answer says how the call ended. */
  #onCall(name: unknown, args: unknown): Promise<ToolAnswer> {
    const tool = typeof name === 'string' ? this.#tools.get(name) : undefined;
    if (tool === undefined || !Array.isArray(args)) return Promise.resolve(refusal('TypeError', `${String(name)} is not a tool of this session`));
    return this.#callTool(tool, args);
  }

  #callTool(tool: SessionTool, args: unknown[]): Promise<ToolAnswer> {
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
        return this.#diverged(running, new JournalError(
          `cell ${record.cell} diverged from the journal at call ${recorded.seq}: the journal has ${recorded.tool}(${preview(recorded.args)}), the replay called ${tool.name}(${argsJson === undefined ? '…' : preview(JSON.parse(argsJson))})`,
          { cell: record.cell, seq: recorded.seq },
        ));
      }
      if (!running.resumeAt.has(index)) return answerOf(recorded);
      // A decided pending call: from here the cell is live.
      running.live = true;
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
      return this.#diverged(running, new JournalError(`cell ${record.cell} diverged from the journal on replay: it calls ${tool.name} after its ${record.calls.length} recorded tool calls`, { cell: record.cell }));
    }
    // A live call. Past a session limit the cell is cut short: this and every later call of it
    // fails without being journaled, and the cell is not kept (the next runs in a worker rebuilt
    // from the cells before), so the journal stays bounded and a replay never meets the limit.
    if (running.limit !== undefined) return refusal('RangeError', running.limit.message);
    if (record.calls.length >= this.#limits.maxCallsPerCell) {
      return this.#cutShort(running, 'maxCallsPerCell', `${tool.name} was not called: the cell reached maxCallsPerCell (${this.#limits.maxCallsPerCell} tool calls)`);
    }
    const journal = this.#journal!;
    const tooLarge = 'json' in argsRecord && argsRecord.bytes > this.#limits.maxValueBytes;
    // Arguments that are refused are kept as a digest (the replay checks it), not as they came.
    const kept = 'json' in argsRecord && !tooLarge;
    const bytes = (kept ? argsRecord.bytes : 64) + 160;
    if (this.#journalBytes + bytes > this.#limits.maxJournalBytes) {
      return this.#cutShort(running, 'maxJournalBytes', `${tool.name} was not called: the journal would pass maxJournalBytes (${this.#limits.maxJournalBytes} bytes)`);
    }
    const seq = journal.nextSeq++;
    const call: CallRecord = { seq, tool: tool.name, args: kept ? argsRecord.json : [], status: 'started', ms: 0 };
    if (!kept) call.argsDigest = digestOf(argsJson);
    record.calls.push(call);
    this.#journalBytes += bytes;
    if (!kept) {
      call.status = 'failed';
      call.error = tooLarge
        ? { name: 'RangeError', message: `${tool.name} was not called: its arguments are ${(argsRecord as { bytes: number }).bytes} bytes as JSON, over the session's maxValueBytes (${this.#limits.maxValueBytes})` }
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
      this.#stale = true;
      const rt = this.#rt;
      void settledWithin(running.inflight, this.#settleWaitMs).then((settled) => {
        running.stopTimedOut = !settled;
        return rt?.close();
      });
    }
    return undefined;
  }

  async #execute(running: Running, tool: SessionTool, args: unknown[], call: CallRecord): Promise<ToolAnswer> {
    const started = performance.now();
    try {
      const value = await tool.execute(...args);
      return this.#settle(running, call, performance.now() - started, { ok: true, value });
    } catch (error) {
      return this.#settle(running, call, performance.now() - started, { ok: false, error: (tool.describeFailure ?? describeThrown)(error) });
    }
  }

  /** Records how a live call ended and answers the guest with exactly what a replay will give it. */
  #settle(running: Running, call: CallRecord, ms: number, outcome: { ok: true; value: unknown } | { ok: false; error: RecordedError }): ToolAnswer {
    call.ms = Math.round(ms);
    let ended: { status: 'completed'; result: JsonValue } | { status: 'failed'; error: RecordedError };
    if (outcome.ok) {
      const recorded = recordable(outcome.value);
      if (!('json' in recorded)) ended = { status: 'failed', error: { name: 'TypeError', message: `the answer of ${call.tool} cannot cross to the guest: ${recorded.problem}` } };
      else if (deeperThan(outcome.value, MAX_ANSWER_DEPTH)) ended = { status: 'failed', error: { name: 'TypeError', message: `the answer of ${call.tool} cannot cross to the guest: it nests deeper than ${MAX_ANSWER_DEPTH} levels` } };
      else if (recorded.bytes > this.#limits.maxValueBytes) ended = { status: 'failed', error: { name: 'RangeError', message: `the answer of ${call.tool} is ${recorded.bytes} bytes as JSON, over the session's maxValueBytes (${this.#limits.maxValueBytes})` } };
      else if (this.#journalBytes + recorded.bytes > this.#limits.maxJournalBytes) ended = { status: 'failed', error: { name: 'RangeError', message: `the answer of ${call.tool} would take the journal past maxJournalBytes (${this.#limits.maxJournalBytes} bytes)` } };
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

  #diverged(running: Running, error: JournalError): Promise<ToolAnswer> {
    running.divergence ??= error;
    void this.#rt?.close();
    return new Promise<ToolAnswer>(() => {});
  }

  /** A session limit reached in a cell: the call fails, later calls of the cell too, and the cell is not kept. */
  #cutShort(running: Running, limitName: string, message: string): ToolAnswer {
    running.limit = { name: limitName, message };
    return refusal('RangeError', message);
  }

  #emit(running: Running, event: SessionEvent): void {
    if (!running.live) return;
    try {
      running.onEvent?.(event);
    } catch {
      // A listener's bug reaches neither the guest nor the session.
    }
    if (sessionEvents.hasSubscribers) sessionEvents.publish({ session: this.id, event });
  }

  // --- the worker ----------------------------------------------------------------------------

  async #ready(): Promise<void> {
    try {
      await this.#ensureWorker();
    } catch (error) {
      await this.close();
      throw error;
    }
  }

  /** A live worker with the journal's state: the current one, or a fresh one the journal is replayed into. */
  async #ensureWorker(): Promise<void> {
    if (this.#rt !== undefined && !this.#rt.closed && !this.#stale) return;
    if (this.#rt !== undefined) {
      const old = this.#rt;
      this.#rt = undefined;
      await old.close().catch(() => undefined);
    }
    const rt = this.#pool !== undefined ? await this.#pool.checkout(this.#runtimeOptions) : await IsolatedRuntime.start(this.#runtimeOptions);
    this.#rt = rt;
    this.#stale = false;
    const settings = this.#settingsOf(rt);
    if (this.#journal === undefined) {
      this.#journal = { format: JOURNAL_FORMAT, version: JOURNAL_VERSION, settings, cells: [], nextSeq: 1 };
      this.#journalBytes = Buffer.byteLength(JSON.stringify(this.#journal));
    } else {
      const mismatch = settingsMismatch(this.#journal.settings, settings);
      if (mismatch !== undefined) throw await this.#fail(new JournalError(`the journal cannot be replayed in this session: ${mismatch}`));
    }
    rt.bindFunction(CALL_GLOBAL, async (name: unknown, args: unknown) => this.#onCall(name, args));
    rt.onConsole((entry) => {
      const running = this.#running;
      if (running !== undefined) this.#emit(running, { type: 'console', cell: running.record.cell, level: entry.level, stream: entry.stream, text: entry.text });
    });
    await rt.eval(guestToolFunctions(CALL_GLOBAL, this.#groups), { filename: 'strata:agent-tools' });
    for (const cell of this.#journal.cells) {
      if (cell.status === 'ok' || cell.status === 'error') await this.#replay(cell);
    }
  }

  /** Runs a recorded cell again, every call answered from the journal, and checks it ends as it did. */
  async #replay(cell: CellRecord): Promise<void> {
    const recorded = { status: cell.status, result: cell.result, error: cell.error, calls: cell.calls.length };
    const running: Running = { record: cell, replayUntil: cell.calls.length, resumeAt: new Set(), onEvent: undefined, index: 0, live: false, stopped: false, stopTimedOut: false, ended: false, divergence: undefined, replaying: true, limit: undefined, inflight: new Set() };
    const { outcome } = await this.#performCell(this.#rt!, running);
    if (outcome.status === 'error' && LOST.has(outcome.errorType ?? '')) {
      this.#stale = true;
      throw new SessionStateError(`replaying the journal in a fresh worker failed at cell ${cell.cell}: ${outcome.errorType}: ${outcome.error}`);
    }
    const diverged = (what: string) => this.#fail(new JournalError(`cell ${cell.cell} diverged from the journal on replay: ${what}`, { cell: cell.cell }));
    if (running.index !== recorded.calls) throw await diverged(`it made ${running.index} tool calls, the journal has ${recorded.calls}`);
    if (outcome.status !== recorded.status) throw await diverged(`it ended ${outcome.status === 'ok' ? 'with a result' : `with ${outcome.errorType}: ${outcome.error}`}, the journal says ${recorded.status}`);
    if (outcome.status === 'ok' && recorded.result !== undefined) {
      const now = recordable(outcome.result);
      if (!('json' in now) || JSON.stringify(now.json) !== JSON.stringify(recorded.result)) throw await diverged('its result differs from the journal');
    }
    if (outcome.status === 'error' && (recorded.error?.type !== outcome.errorType || recorded.error?.message !== outcome.error)) {
      throw await diverged(`it threw ${outcome.errorType}: ${outcome.error}, the journal has ${recorded.error?.type}: ${recorded.error?.message}`);
    }
  }

  /** This worker's settings, from what it reports (a pooled worker's are the pool's). */
  #settingsOf(rt: IsolatedRuntime): JournalSettings {
    const clockLayer = rt.report.layers.find((layer) => layer.name === 'clock');
    const detail = (clockLayer?.detail ?? {}) as { at?: unknown; seed?: unknown };
    const at = typeof detail.at === 'string' ? Date.parse(detail.at) : NaN;
    if (clockLayer === undefined || clockLayer.enforcement !== 'full' || !Number.isFinite(at) || typeof detail.seed !== 'number') {
      throw new InvalidOption('an AgentSandbox needs its workers to run a frozen clock: start the pool with clock: { at, seed } (the clock layer was not in force)');
    }
    const options = rt.options;
    return {
      strata: STRATA_VERSION,
      clock: { at, seed: detail.seed },
      bootstrap: options.bootstrap.map((script) => createHash('sha256').update(script).digest('hex')),
      ...(options.strictEval ? { strictEval: true as const } : {}),
      ...(options.allowGlobals.length > 0 ? { allowGlobals: [...options.allowGlobals] } : {}),
      tools: [...this.#tools.keys()].sort(),
      layers: this.#layers,
    };
  }

  /** Closes the session and gives back `error`, for a divergence or a mismatch: the worker's state cannot be trusted. */
  async #fail(error: Error): Promise<Error> {
    await this.close();
    return error;
  }

  /**
   * One operation at a time (`run`, `approve`, `deny`). Meanwhile `journal` shows the journal as
   * it was before; an operation that fails leaves it as it was, so it stays restorable. It
   * rejects only with Strata's errors: anything else is a bug, wrapped with it as the cause.
   */
  async #exclusive<T>(work: () => Promise<T>): Promise<T> {
    if (this.#closed) throw new SessionStateError('the session is closed');
    if (this.#busy) throw new SessionStateError('a cell is running: one at a time (await the last run, approve or deny first)');
    const journal = this.#assertJournal();
    const last = journal.cells.at(-1);
    this.#checkpoint = {
      cells: journal.cells.length,
      last: last?.status === 'awaiting-approval' ? JSON.stringify(last) : undefined,
      nextSeq: journal.nextSeq,
      bytes: this.#journalBytes,
    };
    this.#busy = true;
    try {
      return await work();
    } catch (error) {
      this.#rollBack(journal, this.#checkpoint);
      if (error instanceof StrataError) throw error;
      throw new SessionStateError(`the session failed unexpectedly (${describeThrown(error).name}: ${describeThrown(error).message}); its journal is as it was before this call`, { cause: error });
    } finally {
      this.#checkpoint = undefined;
      this.#busy = false;
    }
  }

  #rollBack(journal: Journal, checkpoint: Checkpoint): void {
    journal.cells.length = checkpoint.cells;
    if (checkpoint.last !== undefined) journal.cells[checkpoint.cells - 1] = JSON.parse(checkpoint.last) as CellRecord;
    journal.nextSeq = checkpoint.nextSeq;
    this.#journalBytes = checkpoint.bytes;
  }

  #assertJournal(): Journal {
    if (this.#journal === undefined) throw new SessionStateError('the session has not started');
    return this.#journal;
  }
}

/** Options of run, approve and deny, checked: a listener that is not a function would be ignored silently. */
function checkRunOptions(options: unknown): asserts options is RunOptions {
  if (options === null || typeof options !== 'object') throw new InvalidOption(`options must be an object (got ${options === null ? 'null' : typeof options})`);
  const { onEvent, typecheck: check } = options as RunOptions;
  if (onEvent !== undefined && typeof onEvent !== 'function') throw new InvalidOption('onEvent must be a function');
  if (check !== undefined && typeof check !== 'boolean') throw new InvalidOption('typecheck must be true or false');
}

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

function limit(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || (value as number) < 1) throw new InvalidOption(`${name} must be a positive integer (got ${String(value)})`);
  return value as number;
}

/** The layer configuration as the journal records it. */
function layersOf(runtime: Record<string, unknown>): JsonValue {
  const picked: Record<string, JsonValue> = {};
  for (const key of ['sandbox', 'layers', 'replaceDefaultLayers', 'omitDefaultLayers'] as const) {
    if (runtime[key] !== undefined) picked[key] = JSON.parse(JSON.stringify(runtime[key])) as JsonValue;
  }
  return picked;
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
