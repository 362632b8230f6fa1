/**
 * `AgentSandbox`: a session of cells in one sandboxed worker, with a journal of every tool call.
 *
 * Replay is the one mechanism behind restore, crash recovery and approvals. The guest is
 * deterministic (a frozen clock, a seeded `Math.random`, virtual-time timers, and every tool
 * answer recorded), so running a journal's cells again in a fresh worker, answering each tool
 * call from the journal instead of calling the tool, rebuilds the same state. A call whose tool
 * or arguments differ from the journal is a divergence: `JournalError`, and the session closes.
 *
 * This module holds the session's API (start, restore, run, approve, deny, close: one operation
 * at a time) and the worker's life: started or taken from a pool, its tools bound, the journal
 * replayed into it, replaced once it is stale. Everything that writes the journal (each tool call
 * recorded or answered from it, approvals, limits, how a cell ends) is `CellRecorder`'s
 * (`recorder.ts`), which reaches the session only through a small host: publish, stop the worker.
 *
 * @module
 */
import { randomInt, randomUUID } from 'node:crypto';
import { channel } from 'node:diagnostics_channel';
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
import type { JsonValue } from '@strata/wire';
import { executeCell } from './cell-code.js';
import { describeThrown } from './describe.js';
import { JournalConflict, JournalError, LeaseLost, SessionStateError, TypeCheckFailed, type SessionLimitExceeded } from './errors.js';
import { checkJournalSized, layersOf, SESSION_ID_PATTERN, workerSettings, type CellRecord, type Journal } from './journal.js';
import type { JournalStore } from './stores/journal-store.js';
import { checkStore, leaseOptions, StoredSession, type LeaseOptions } from './stores/stored-session.js';
import { egressAnswer, egressTool, FETCH_TOOL } from './egress-tool.js';
import { traceCell, type Trace } from './tracing.js';
import {
  CellRecorder,
  limitsOf,
  replayDivergence,
  workerLost,
  type CellMode,
  type CellResult,
  type PendingCall,
  type RecorderHost,
  type Running,
  type SessionEvent,
} from './recorder.js';
import { guestToolFunctions, sessionTools, type SessionTool, type ToolGroup, type ToolSet } from './tools.js';
import { ToolBridge } from './tool-bridge.js';
import { checkTypecheckTimeout, formatDiagnostics, typecheck } from './typecheck.js';

// The cell's types live with the recorder; the session's API gives them.
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
  /**
   * Keep the journal in this store as the session runs, so that it outlives this process:
   * `start` creates the session there (under `sessionId`), `AgentSandbox.resume(sessionId, …)`
   * takes it up anywhere the store is reachable. Every cell's rows are written as they change: a
   * tool's answer reaches the guest once the store has it. The session holds the store's lease
   * on it while it lives (`lease`), so that one process runs it at a time.
   */
  store?: JournalStore;
  /**
   * The session's id (1 to 128 of `A-Z a-z 0-9 . _ : -`): its id in the store, and the first part
   * of its tool calls' ids. Default: the restored journal's, or a random UUID.
   */
  sessionId?: string;
  /** With `store`: how the session holds its lease (`ttlMs`, default 30 000; `waitMs` for `resume`, default 0). */
  lease?: LeaseOptions;
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

const SESSION_KEYS = ['tools', 'pool', 'recover', 'maxCells', 'maxCallsPerCell', 'maxValueBytes', 'maxJournalBytes', 'store', 'sessionId', 'lease'] as const;
// What a pooled session may set per checkout: the pool's own list, and whose session it is.
const CHECKOUT_KEYS: ReadonlySet<string> = new Set([...SESSION_OPTIONS, 'tenant']);
// The host function the guest's tool wrappers call; the wrappers take it and delete the global.
const CALL_GLOBAL = '__strataAgentCall';

// Proves that a construction comes from this module (the factory): `new AgentSandbox()` from JavaScript
// gets a clear error instead of a half-made session.
const FACTORY = Symbol('AgentSandbox.start');

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
  /**
   * This session's id: its id in the store, the one its journal keeps, or a random one. Published
   * on {@link SESSION_EVENTS_CHANNEL}, and the first part of each tool call's id (`<id>:<seq>`).
   */
  readonly id: string;
  /** The store the journal is kept in, with the session's lease there. */
  #stored: StoredSession | undefined;
  readonly #storeOptions: { store: JournalStore; ttlMs: number; waitMs: number } | undefined;
  /** The cell running now, which the store is told is `running`. */
  #openCell: number | undefined;
  #closing: Promise<void> | undefined;
  /** Why the session closed, when it was not by close() (its lease was lost). */
  #closeReason: Error | undefined;
  readonly #tools: ReadonlyMap<string, SessionTool>;
  readonly #bridges: readonly ToolBridge[];
  /** How the guest reaches the tools: globals, or the members of bridges' namespaces. */
  readonly #groups: readonly ToolGroup[];
  readonly #runtimeOptions: IsolatedRuntimeOptions;
  readonly #pool: SandboxPool | undefined;
  readonly #recover: 'replay' | 'never';
  readonly #layers: JsonValue;
  /** The journal, and every tool call and cell end that writes it. */
  readonly #recorder: CellRecorder;
  #rt: IsolatedRuntime | undefined;
  #stale = false;
  #busy = false;
  #closed = false;

  private constructor(token: symbol, options: AgentSandboxOptions, input: unknown) {
    if (token !== FACTORY) throw new InvalidOption('AgentSandbox has no public constructor: use `await AgentSandbox.start(options)`');
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
    if (this.#recover !== 'replay' && this.#recover !== 'never')
      throw new InvalidOption(`recover must be 'replay' or 'never' (got ${String(options.recover)})`);
    const limits = limitsOf(options);
    // A journal to restore is checked against the limits before anything else reads it.
    const checked = input === undefined ? undefined : checkJournalSized(input, limits);
    if (options.store !== undefined) {
      checkStore(options.store);
      this.#storeOptions = { store: options.store, ...leaseOptions(options.lease) };
    } else if (options.lease !== undefined) {
      throw new InvalidOption('lease is for a session kept in a store: give store too');
    }
    if (options.sessionId !== undefined && (typeof options.sessionId !== 'string' || !SESSION_ID_PATTERN.test(options.sessionId)))
      throw new InvalidOption(`sessionId must be 1 to 128 of A-Z a-z 0-9 . _ : - (got ${JSON.stringify(String(options.sessionId)).slice(0, 60)})`);
    this.id = options.sessionId ?? checked?.journal.session ?? randomUUID();
    const runtime: Record<string, unknown> = { ...options };
    for (const key of SESSION_KEYS) delete runtime[key];
    const fetchTool = egressTool(options.egress, options.redactHostErrors !== false);
    if (fetchTool !== undefined) {
      if (this.#tools.has(FETCH_TOOL)) throw new InvalidOption("egress and a tool named fetch both answer the guest's fetch: give one of them");
      // The runtime's egress is the journal: each request is a call of the tool `fetch`.
      runtime['egress'] = async (request: EgressRequest) => egressAnswer(await this.#recorder.callTool(fetchTool, [request]));
    }
    if (this.#pool !== undefined) {
      const fixed = Object.keys(runtime).filter((key) => !CHECKOUT_KEYS.has(key));
      if (fixed.length > 0)
        throw new InvalidOption(
          `with a pool, the workers are the pool's: ${fixed.join(', ')} cannot be set per session (set them on the pool; per session: ${[...CHECKOUT_KEYS].join(', ')})`,
        );
    } else {
      if (runtime['tenant'] !== undefined) throw new InvalidOption("tenant names whose session it is for a pool's crash budget: give it with pool");
      runtime['bootstrap'] ??= [WEB_POLYFILLS];
      // A frozen clock and a seeded Math.random by default: recorded, so a replay has the same.
      runtime['clock'] ??= checked?.journal.settings.clock ?? { at: Date.now(), seed: randomInt(0, 2 ** 32) };
    }
    this.#runtimeOptions = runtime as IsolatedRuntimeOptions;
    const settleWaitMs = typeof runtime['maxHostWait'] === 'number' ? runtime['maxHostWait'] : runtime['maxHostWait'] === null ? 2 ** 31 - 1 : 600_000;
    this.#layers = layersOf(runtime);
    this.#recorder = new CellRecorder({ tools: this.#tools, limits, settleWaitMs, restored: checked, host: this.#recorderHost(), sessionId: this.id });
  }

  /**
   * Starts a session in a fresh worker (or one from `pool`).
   *
   * @throws `InvalidOption` (from `@strata/runtime`), and whatever `IsolatedRuntime.start` throws.
   */
  static async start(options: AgentSandboxOptions = {}): Promise<AgentSandbox> {
    const session = new AgentSandbox(FACTORY, options, undefined);
    await session.#ready();
    await session.#createInStore();
    return session;
  }

  /** With `store`: the session is created there (as it is now: a restored journal's cells too), holding its lease. */
  async #createInStore(): Promise<void> {
    const kept = this.#storeOptions;
    if (kept === undefined) return;
    try {
      this.#attach(await StoredSession.create(kept.store, this.#recorder.journal, this.id, randomUUID(), kept.ttlMs));
    } catch (error) {
      await this.close();
      throw error;
    }
  }

  /**
   * Takes up a session kept in `options.store` (by `start({ store })`, here or on another
   * machine): takes its lease, loads its journal and replays it into a fresh worker, as
   * `restore` does. A cell that was running when its process stopped is `interrupted`:
   * `continue()` runs it on, `abandon()` gives it up.
   *
   * @throws `LeaseHeld` while another holder's lease lasts (see `lease.waitMs`);
   * `JournalStoreError` when there is no such session or the store fails; {@link JournalError}
   * for a stored journal that is corrupted or cannot be replayed here.
   */
  static async resume(sessionId: string, options: AgentSandboxOptions): Promise<AgentSandbox> {
    if (options === null || typeof options !== 'object' || options.store === undefined)
      throw new InvalidOption('resume(sessionId, options) needs options.store: the store the session is kept in');
    if (typeof sessionId !== 'string' || !SESSION_ID_PATTERN.test(sessionId))
      throw new InvalidOption('resume(sessionId): sessionId must be 1 to 128 of A-Z a-z 0-9 . _ : -');
    if (options.sessionId !== undefined && options.sessionId !== sessionId)
      throw new InvalidOption('resume(sessionId, options): options.sessionId names another session');
    checkStore(options.store);
    const lease = leaseOptions(options.lease);
    const { stored, journal } = await StoredSession.open(options.store, sessionId, randomUUID(), lease, limitsOf(options));
    let session: AgentSandbox;
    try {
      session = new AgentSandbox(FACTORY, { ...options, sessionId }, journal);
    } catch (error) {
      await stored.close();
      throw error;
    }
    session.#attach(stored);
    await session.#ready();
    return session;
  }

  /** The session's place in its store: lost, it closes the session. */
  #attach(stored: StoredSession): void {
    this.#stored = stored;
    stored.onLost((reason) => {
      this.#closeReason = reason;
      void this.close();
    });
  }

  /** The last cell, when it was interrupted while it ran (its process stopped, or its journal could not be written): `continue()` or `abandon()` it. */
  get interrupted(): { readonly cell: number; readonly code: string } | undefined {
    const record = this.#recorder.interrupted;
    return record === undefined ? undefined : { cell: record.cell, code: record.code };
  }

  /**
   * Runs the interrupted cell on: in a fresh worker, its code runs again, every call that ended
   * answered from the journal, every call that had started run again under the same call id
   * (`currentToolCall().retry` is true), and from there on it is live. Resolves as `run` does.
   *
   * @throws {@link SessionStateError} when no cell was interrupted.
   */
  async continue(options: RunOptions = {}): Promise<CellResult> {
    checkRunOptions(options);
    return this.#exclusive(async () => {
      const record = this.#recorder.interrupted;
      if (record === undefined) throw new SessionStateError('no cell was interrupted: there is nothing to continue');
      await this.#ensureWorker();
      return this.#runCell(record, { kind: 'continue', onEvent: options.onEvent });
    });
  }

  /**
   * Gives up the interrupted cell: the journal keeps it as `crashed` (never replayed; its calls
   * as they were, a `started` one for you to reconcile), and the session goes on from the cells before it.
   *
   * @throws {@link SessionStateError} when no cell was interrupted.
   */
  async abandon(): Promise<void> {
    await this.#exclusive(async () => {
      this.#recorder.abandon();
      this.#stale = true;
      await this.#persist();
    });
  }

  /**
   * A session from a journal (`session.journal`, or `JSON.parse` of one kept): a fresh worker
   * runs the journal's cells again, every tool call answered from the journal, no tool called.
   * Then it is live. A call awaiting approval in the journal can be approved or denied here.
   *
   * @throws {@link JournalError} when the journal is malformed (every field and every recorded
   * value is checked), was recorded with other settings, or its replay diverges;
   * {@link SessionLimitExceeded} when it is over one of this session's limits (`maxJournalBytes`,
   * `maxCells`, `maxCallsPerCell`, `maxValueBytes`): restore it with larger ones. With `store`,
   * the restored session is created there (under `sessionId`, the journal's, or a new id) with
   * every cell it has: `JournalConflict` when the store has that id already (resume it instead).
   */
  static async restore(journal: unknown, options: AgentSandboxOptions = {}): Promise<AgentSandbox> {
    if (journal === undefined) throw new JournalError('restore needs a journal (session.journal, or JSON.parse of one kept)');
    const session = new AgentSandbox(FACTORY, options, journal);
    await session.#ready();
    await session.#createInStore();
    return session;
  }

  /**
   * The journal so far: plain JSON data (a copy), versioned. `JSON.stringify` it to keep it.
   * While a cell runs (`run`, `approve`, `deny`), it is the journal as it was before: what it
   * gives can always be restored.
   */
  get journal(): Journal {
    return this.#recorder.snapshot();
  }

  /** The first call awaiting a decision (see {@link AgentSandbox.pendingCalls}), if the last cell stopped before one. */
  get pending(): PendingCall | undefined {
    return this.pendingCalls[0];
  }

  /** Every call awaiting a decision, in `seq` order: a cell that made several in parallel stopped before all of them, and resumes once each is decided. */
  get pendingCalls(): readonly PendingCall[] {
    return this.#recorder.pendingCalls;
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
      this.#recorder.checkNewCell(code);
      if (options.typecheck === true) {
        const refused = await this.#typecheck(code, this.#recorder.journal, typescript ? 'typescript' : 'javascript', options.typecheckTimeout);
        if (refused !== undefined) return refused;
      }
      await this.#ensureWorker();
      const record = this.#recorder.addCell(code, typescript ? 'typescript' : 'javascript');
      return this.#runCell(record, { kind: 'live', onEvent: options.onEvent });
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

  /**
   * Closes the worker (and, for a session in a store, writes what is left and gives its lease
   * up). The journal stays readable. Closed while a cell runs, a session in a store leaves that
   * cell there as it was when its process stops (`running`: a `resume` finds it `interrupted`,
   * to `continue()`), so that draining a machine hands its cells over.
   */
  close(): Promise<void> {
    // A second close (while the first still runs) waits for the first.
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#closed = true;
    // Detached first: the cell the closing worker ends is not written as crashed.
    const midCell = this.#busy;
    const stored = this.#stored;
    this.#stored = undefined;
    const rt = this.#rt;
    this.#rt = undefined;
    await rt?.close();
    await stored?.close(midCell ? undefined : this.#recorder.journal);
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
    let outcome: ExecutionResult;
    let unsettled = false;
    let divergence: Error | undefined;
    try {
      outcome = await executeCell(rt, running.record.code, running.record.language ?? 'javascript', `cell-${running.record.cell}`);
      if (!rt.closed && !workerLost(outcome)) unsettled = !(await this.#recorder.callsSettled(running));
    } finally {
      divergence = this.#recorder.end(running);
    }
    if (divergence !== undefined) throw await this.#fail(divergence);
    return { outcome, unsettled };
  }

  /** The result of a cell that does not type-check (it is not run, nor journaled), or undefined when it checks. */
  async #typecheck(code: string, journal: Journal, language: 'javascript' | 'typescript', timeout: number | undefined): Promise<CellResult | undefined> {
    // The cells before it declare what it may use: checked as one module, only its own lines reported.
    const before = journal.cells
      .filter((c) => c.status === 'ok')
      .map((c) => c.code)
      .join(';\n');
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
    if (!Number.isSafeInteger(seq))
      throw new InvalidOption(`seq must be the integer seq of a call awaiting approval (got ${typeof seq === 'number' ? seq : typeof seq})`);
    return this.#exclusive(async () => {
      const decided = this.#recorder.decide(seq, approval);
      if ('result' in decided) {
        await this.#persist();
        return decided.result;
      }
      await this.#ensureWorker();
      return this.#runCell(decided.resume, { kind: 'resume', onEvent: options.onEvent });
    });
  }

  /** Runs a cell live (or resumes it), and journals how it ended. */
  async #runCell(record: CellRecord, mode: CellMode): Promise<CellResult> {
    const trace = traceCell(this.id, record.cell, mode.kind);
    try {
      const result = await this.#runCellTraced(record, mode, trace);
      trace.set({ 'strata.cell.status': result.status, 'strata.cell.calls': result.calls.length });
      trace.end(result.status === 'error' ? { errorType: result.errorType ?? 'Error' } : undefined);
      return result;
    } catch (error) {
      trace.end({ errorType: error instanceof Error ? error.name : 'Error' });
      throw error;
    }
  }

  async #runCellTraced(record: CellRecord, mode: CellMode, trace: Trace): Promise<CellResult> {
    const rt = this.#rt!;
    const running = this.#recorder.begin(record, mode);
    running.trace = trace;
    // The store has the cell (as running) before any of it runs; if it cannot, the cell does not
    // run, and the operation fails with the journal as it was.
    this.#openCell = record.cell;
    try {
      await this.#persist();
    } catch (error) {
      this.#openCell = undefined;
      this.#recorder.end(running);
      this.#endIfLost(error);
      throw error;
    }
    let ended: { outcome: ExecutionResult; unsettled: boolean };
    try {
      ended = await this.#performCell(rt, running);
    } finally {
      this.#openCell = undefined;
    }
    const { result, replayable } = this.#recorder.finishCell(running, ended.outcome, { unsettled: ended.unsettled, workerClosed: rt.closed });
    // The lease was lost while the cell ran (a renewal refused): the session closed under it.
    if (this.#closeReason !== undefined) throw this.#closeReason;
    if (running.storeFailure !== undefined) {
      // A tool's answer could not be written: the cell stopped there, and is kept as interrupted.
      this.#endIfLost(running.storeFailure);
      this.#stale = true;
      return result;
    }
    // Not replayable: the next cell runs in a worker rebuilt from the cells before this one.
    if (!replayable) this.#stale = true;
    try {
      await this.#persist();
    } catch (error) {
      // The cell ran, and its end could not be written: it is kept as interrupted, for continue().
      this.#endIfLost(error);
      this.#stale = true;
      return this.#recorder.interruptAfterEnd(record, result, error);
    }
    if (!replayable && this.#recover === 'never') await this.close();
    return result;
  }

  /** Writes the journal's changed rows to the store, if the session is kept in one. */
  async #persist(): Promise<void> {
    await this.#stored?.sync(this.#recorder.journal, this.#openCell);
  }

  /** A write refused for a lost lease or a conflict ends the session here: that error is thrown. Any other failure of the store is not. */
  #endIfLost(error: unknown): void {
    if (error instanceof LeaseLost || error instanceof JournalConflict) {
      this.#closeReason = error;
      void this.close();
      throw error;
    }
  }

  /** How the recorder reaches this session: the events channel, the worker it stops, the store it writes. */
  #recorderHost(): RecorderHost {
    const host: RecorderHost = {
      publish: (event) => {
        if (sessionEvents.hasSubscribers) sessionEvents.publish({ session: this.id, event });
      },
      stopWorker: (_reason, after) => {
        // The worker's state is a divergence's or mid-cell: the next cell needs a fresh one.
        this.#stale = true;
        const rt = this.#rt;
        if (after === undefined) void rt?.close();
        else void after.then(() => rt?.close());
      },
    };
    // Kept in a store: each tool call's start and end are written before the cell goes on.
    if (this.#storeOptions !== undefined) host.persist = () => this.#persist();
    return host;
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
    const mismatch = this.#recorder.open(workerSettings(rt, [...this.#tools.keys()], this.#layers));
    if (mismatch !== undefined) throw await this.#fail(new JournalError(`the journal cannot be replayed in this session: ${mismatch}`));
    rt.bindFunction(CALL_GLOBAL, async (name: unknown, args: unknown) => this.#recorder.call(name, args));
    rt.onConsole((entry) => this.#recorder.console(entry));
    await rt.eval(guestToolFunctions(CALL_GLOBAL, this.#groups), { filename: 'strata:agent-tools' });
    for (const cell of this.#recorder.journal.cells) {
      if (cell.status === 'ok' || cell.status === 'error') await this.#replay(cell);
    }
  }

  /** Runs a recorded cell again, every call answered from the journal, and checks it ends as it did. */
  async #replay(cell: CellRecord): Promise<void> {
    const trace = traceCell(this.id, cell.cell, 'replay');
    const running = this.#recorder.begin(cell, { kind: 'replay' });
    running.trace = trace;
    const { outcome } = await this.#performCell(this.#rt!, running);
    if (workerLost(outcome)) {
      this.#stale = true;
      trace.end({ errorType: outcome.errorType ?? 'WorkerCrashed' });
      throw new SessionStateError(`replaying the journal in a fresh worker failed at cell ${cell.cell}: ${outcome.errorType}: ${outcome.error}`);
    }
    const divergence = replayDivergence(cell, outcome, running.index);
    trace.end(divergence === undefined ? undefined : { errorType: 'JournalError' });
    if (divergence !== undefined)
      throw await this.#fail(new JournalError(`cell ${cell.cell} diverged from the journal on replay: ${divergence}`, { cell: cell.cell }));
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
    if (this.#closed)
      throw new SessionStateError(this.#closeReason === undefined ? 'the session is closed' : `the session is closed: ${this.#closeReason.message}`);
    if (this.#busy) throw new SessionStateError('a cell is running: one at a time (await the last run, approve or deny first)');
    this.#busy = true;
    try {
      return await this.#recorder.atomically(work);
    } catch (error) {
      if (error instanceof StrataError) throw error;
      throw new SessionStateError(
        `the session failed unexpectedly (${describeThrown(error).name}: ${describeThrown(error).message}); its journal is as it was before this call`,
        { cause: error },
      );
    } finally {
      this.#busy = false;
    }
  }
}

/** Options of run, approve and deny, checked: a listener that is not a function would be ignored silently. */
function checkRunOptions(options: unknown): asserts options is RunOptions {
  if (options === null || typeof options !== 'object') throw new InvalidOption(`options must be an object (got ${options === null ? 'null' : typeof options})`);
  const { onEvent, typecheck: check } = options as RunOptions;
  if (onEvent !== undefined && typeof onEvent !== 'function') throw new InvalidOption('onEvent must be a function');
  if (check !== undefined && typeof check !== 'boolean') throw new InvalidOption('typecheck must be true or false');
}
