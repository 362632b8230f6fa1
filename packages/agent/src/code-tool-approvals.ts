/**
 * Approvals inside `codeTool`: a bridged tool with `needsApproval` pauses the model's code, and
 * the AI SDK's own approval flow (`tool-approval-request`, then a `tool-approval-response` in the
 * next call's messages) decides it.
 *
 * The SDK decides on approval before a tool runs, from its input; whether code calls a tool that
 * needs approval is known only by running it. So the code runs in the SDK's approval check, in
 * an `AgentSandbox` session, up to its end or to the calls that need approval:
 *
 * - it ended: its answer is kept for `execute`, which the SDK calls next (no approval asked);
 * - it paused: the check answers `'user-approval'`, the waiting calls (tool and input) as the
 *   request's reason, and the session's journal (plain JSON) is kept here, in memory, by the
 *   tool call id, bounded in number, bytes and time (the worker is closed: nothing runs while
 *   the user decides). Approved, the SDK calls `execute`: the journal is restored (a replay: no
 *   call runs twice) and the waiting calls approved. Denied, the SDK answers the model itself
 *   (`execution-denied`) and never calls the tool: the journal is dropped.
 *
 * One decision per code call: a call that needs approval after the approved ones (its input
 * depended on them) is denied in the guest, which can catch it.
 *
 * @module
 */
import type { ModelMessage } from 'ai';
import { InvalidOption } from '@strata/runtime';
import type { JsonValue } from '@strata/wire';
import { AgentSandbox, type AgentSandboxOptions, type CellResult, type PendingCall } from './agent-sandbox.js';
import { callOf, failure, jsonOf, messageOf, nameOf, type CodeToolOutput } from './code-tool-output.js';
import { normalizeCode } from './normalize-code.js';

/** Options of `codeTool`'s approvals: how paused code calls wait for a decision. */
export interface CodeToolApprovalOptions {
  /** Paused code calls that may wait at once; past it the oldest is dropped (its approval then answers `ApprovalExpired`). Default 100. */
  maxWaiting?: number;
  /** How long a paused code call waits for its decision, ms. Default 900 000 (15 minutes). */
  waitMs?: number;
  /** The waiting journals' bytes (as JSON), all together; past it the oldest are dropped. Default 64 MiB. */
  maxWaitingBytes?: number;
}

/** A bridged call a paused code call waits on: what the user approves. */
export interface WaitingCall {
  /** `namespace.name`. */
  readonly tool: string;
  /** Its input, as tagged JSON. */
  readonly input: JsonValue;
}

/** The statuses the AI SDK's approval check takes, as far as the code tool answers them. */
export type CodeApprovalStatus = { readonly type: 'not-applicable' } | { readonly type: 'user-approval'; readonly reason: string };

interface Waiting {
  readonly code: string;
  /** The paused session's journal, as JSON. */
  readonly journal: string;
  readonly calls: readonly PendingCall[];
  readonly until: number;
}

interface Finished {
  readonly code: string;
  readonly output: CodeToolOutput;
  readonly until: number;
}

const DEFAULTS: Required<CodeToolApprovalOptions> = { maxWaiting: 100, waitMs: 900_000, maxWaitingBytes: 64 * 1024 * 1024 };
// How much of an input the request's reason shows (the UI's text, not the decision's data: see waitingCalls).
const PREVIEW_CHARS = 1_000;
const NOT_APPLICABLE = { type: 'not-applicable' } as const;

/** The options checked, defaults filled in. */
export function approvalLimits(options: unknown): Required<CodeToolApprovalOptions> {
  if (options === undefined) return DEFAULTS;
  if (options === null || typeof options !== 'object') throw new InvalidOption('approvals must be an object ({ maxWaiting?, waitMs?, maxWaitingBytes? })');
  const given = options as CodeToolApprovalOptions;
  const limits = { ...DEFAULTS };
  for (const key of ['maxWaiting', 'waitMs', 'maxWaitingBytes'] as const) {
    const value = given[key];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0)
      throw new InvalidOption(`approvals.${key} must be a positive integer (got ${String(value)})`);
    limits[key] = value;
  }
  return limits;
}

/**
 * The code calls of one code tool that run in sessions, because a bridged tool may need
 * approval: the approval check runs them, `execute` answers them or resumes them.
 */
export class ApprovalCells {
  readonly #session: () => AgentSandboxOptions;
  readonly #limits: Required<CodeToolApprovalOptions>;
  /** Paused calls by tool call id, oldest first. */
  readonly #waiting = new Map<string, Waiting>();
  #waitingBytes = 0;
  /** Calls the check ran to their end, until `execute` takes their answer. */
  readonly #finished = new Map<string, Finished>();

  constructor(session: () => AgentSandboxOptions, limits: Required<CodeToolApprovalOptions>) {
    this.#session = session;
    this.#limits = limits;
  }

  /**
   * The SDK's approval check of one code call: it runs the code, up to its end or its calls
   * that need approval. Asked again for a call that waits (the SDK re-checks an approved call
   * before it runs it), it answers the same without running anything.
   */
  async check(code: string, toolCallId: string, messages: readonly ModelMessage[]): Promise<CodeApprovalStatus> {
    this.#prune(messages);
    const waiting = this.#waiting.get(toolCallId);
    if (waiting?.code === code) return { type: 'user-approval', reason: reasonOf(waiting.calls) };
    // Asked already, and its journal is gone: never run again; execute says it expired.
    if (decisionsOf(messages).requested.has(toolCallId)) return { type: 'user-approval', reason: 'this code call waited for approval too long' };
    this.#forget(toolCallId);
    const until = Date.now() + this.#limits.waitMs;
    const ran = await this.#inSession(undefined, async (session) => {
      const result = await session.run(await normalizeCode(code));
      if (result.status !== 'awaiting-approval') return outputOf(result);
      const kept = this.#keep(toolCallId, { code, journal: JSON.stringify(session.journal), calls: result.pendingCalls ?? [], until });
      return kept
        ? undefined
        : failure(
            'ApprovalUnavailable',
            `the code paused for approval, and its journal is larger than approvals.maxWaitingBytes (${this.#limits.maxWaitingBytes}): make the calls before the one that needs approval return less`,
            [],
          );
    });
    if (ran === undefined) return { type: 'user-approval', reason: reasonOf(this.#waiting.get(toolCallId)!.calls) };
    this.#finished.set(toolCallId, { code, output: ran, until });
    return NOT_APPLICABLE;
  }

  /** The SDK's `execute` of one code call: the checked call's answer, or the approved call resumed. */
  async execute(code: string, toolCallId: string, messages: readonly ModelMessage[], signal: AbortSignal | undefined): Promise<CodeToolOutput> {
    this.#prune(messages);
    const finished = this.#finished.get(toolCallId);
    if (finished?.code === code) {
      this.#finished.delete(toolCallId);
      return finished.output;
    }
    const decisions = decisionsOf(messages);
    const waiting = this.#waiting.get(toolCallId);
    if (waiting?.code === code) {
      if (!decisions.approved.has(toolCallId)) {
        return failure(
          'ApprovalRequired',
          `this code call waits for approval (${reasonOf(waiting.calls)}): answer its tool-approval-request with a tool-approval-response`,
          [],
        );
      }
      this.#forget(toolCallId);
      return this.#resume(waiting, signal);
    }
    if (decisions.requested.has(toolCallId)) {
      return failure(
        'ApprovalExpired',
        `this code call waited for approval past approvals.waitMs, or was dropped for newer ones (approvals.maxWaiting, maxWaitingBytes): nothing of it ran after its pause; run the code again`,
        [],
      );
    }
    // No check ran for this call (the app's own toolApproval answered for the code tool): it runs
    // now, and a call that needs approval is denied, since nobody is asked.
    return this.#inSession(signal, async (session) => outputOf(await denyTheRest(session, await session.run(await normalizeCode(code)), UNCHECKED)));
  }

  /** The calls a paused code call waits on, by its tool call id (undefined when none waits). */
  waitingCalls(toolCallId: string): readonly WaitingCall[] | undefined {
    this.#prune([]);
    return this.#waiting.get(toolCallId)?.calls.map((call) => ({ tool: call.tool, input: jsonOf(call.args[0]) }));
  }

  /** The approved calls run: the journal restored (its calls answered from it), each waiting call approved. */
  async #resume(waiting: Waiting, signal: AbortSignal | undefined): Promise<CodeToolOutput> {
    return this.#inSession(
      signal,
      async (session) => {
        let result: CellResult | undefined;
        for (const call of waiting.calls) result = await session.approve(call.seq);
        return outputOf(await denyTheRest(session, result!, AFTER_APPROVAL));
      },
      JSON.parse(waiting.journal) as unknown,
    );
  }

  /** Runs `work` in a session (a fresh one, or `journal` restored), closed after; a failure of the session is the run's answer. */
  async #inSession<T>(signal: AbortSignal | undefined, work: (session: AgentSandbox) => Promise<T>, journal?: unknown): Promise<T | CodeToolOutput> {
    const aborted = () => signal?.aborted === true;
    if (aborted()) return failure('AbortError', 'the generation was aborted before the code ran', []);
    let session: AgentSandbox;
    try {
      session = journal === undefined ? await AgentSandbox.start(this.#session()) : await AgentSandbox.restore(journal, this.#session());
    } catch (error) {
      if (error instanceof InvalidOption) throw error;
      return failure(nameOf(error), `the sandbox could not start: ${messageOf(error)}`, []);
    }
    // The generation was aborted: the session closes under the cell, which ends as it can.
    const abort = () => void session.close();
    signal?.addEventListener('abort', abort, { once: true });
    try {
      const done = await work(session);
      return aborted() ? failure('AbortError', 'the generation was aborted: the run was stopped', []) : done;
    } catch (error) {
      if (error instanceof InvalidOption) throw error;
      if (aborted()) return failure('AbortError', 'the generation was aborted: the run was stopped', []);
      return failure(nameOf(error), messageOf(error), []);
    } finally {
      signal?.removeEventListener('abort', abort);
      await session.close();
    }
  }

  /** Keeps a paused call's journal, dropping the oldest past the limits; false when it alone is past maxWaitingBytes. */
  #keep(toolCallId: string, waiting: Waiting): boolean {
    if (waiting.journal.length > this.#limits.maxWaitingBytes) return false;
    while (this.#waiting.size >= this.#limits.maxWaiting || this.#waitingBytes + waiting.journal.length > this.#limits.maxWaitingBytes) {
      this.#forget(this.#waiting.keys().next().value!);
    }
    this.#waiting.set(toolCallId, waiting);
    this.#waitingBytes += waiting.journal.length;
    return true;
  }

  #forget(toolCallId: string): void {
    const waiting = this.#waiting.get(toolCallId);
    if (waiting !== undefined) this.#waitingBytes -= waiting.journal.length;
    this.#waiting.delete(toolCallId);
    this.#finished.delete(toolCallId);
  }

  /** Drops what expired, and the paused calls the messages deny (the SDK answers those itself). */
  #prune(messages: readonly ModelMessage[]): void {
    const now = Date.now();
    const denied = decisionsOf(messages).denied;
    for (const [id, waiting] of this.#waiting) if (waiting.until <= now || denied.has(id)) this.#forget(id);
    for (const [id, finished] of this.#finished) if (finished.until <= now) this.#finished.delete(id);
    // An answer nobody took (the generation stopped between check and execute) is bounded too.
    while (this.#finished.size > this.#limits.maxWaiting) this.#finished.delete(this.#finished.keys().next().value!);
  }
}

const AFTER_APPROVAL = 'it needs approval too, after the calls approved for this code call (one decision per code call): make it in a new code call';
const UNCHECKED =
  "it needs approval, and this code call did not go through the code tool's approval check (toolApproval for the code tool must call the tool's own toolApproval)";

/** Denies, with `why`, every call the cell waits on until it ends: no one is asked about them. */
async function denyTheRest(session: AgentSandbox, first: CellResult, why: string): Promise<CellResult> {
  let result = first;
  while (result.status === 'awaiting-approval') {
    for (const call of result.pendingCalls ?? []) result = await session.deny(call.seq, why);
  }
  return result;
}

/** A session's cell result as the model reads it. */
function outputOf(result: CellResult): CodeToolOutput {
  return {
    status: result.status === 'ok' ? 'ok' : 'error',
    ...(result.status === 'ok' ? { result: jsonOf(result.result) } : { error: result.error ?? '', errorType: result.errorType ?? 'Error' }),
    stdout: result.stdout,
    stderr: result.stderr,
    ...(result.truncated ? { truncated: true as const } : {}),
    calls: result.calls.map(callOf),
  };
}

/** What the approval request says: the calls the code waits on, each with its input. */
function reasonOf(calls: readonly PendingCall[]): string {
  const list = calls.map((call) => `${call.tool}(${preview(call.args[0])})`);
  const named = list.length === 1 ? list[0] : `${list.slice(0, -1).join(', ')} and ${list.at(-1)}`;
  return `The code waits to call ${named}: approve to run ${list.length === 1 ? 'it' : 'them'} and go on; deny and the code call is refused.`;
}

function preview(value: unknown): string {
  const text = value === undefined ? '' : JSON.stringify(jsonOf(value));
  return text.length > PREVIEW_CHARS ? `${text.slice(0, PREVIEW_CHARS)}…` : text;
}

/** The approval requests and responses in the messages, by the tool call id they are for. */
function decisionsOf(messages: readonly ModelMessage[]): { requested: Set<string>; approved: Set<string>; denied: Set<string> } {
  const requested = new Set<string>();
  const approved = new Set<string>();
  const denied = new Set<string>();
  const callOfApproval = new Map<string, string>();
  for (const message of Array.isArray(messages) ? messages : []) {
    if (!Array.isArray(message?.content)) continue;
    for (const part of message.content as readonly { type?: unknown; approvalId?: unknown; toolCallId?: unknown; approved?: unknown }[]) {
      if (part?.type === 'tool-approval-request' && typeof part.approvalId === 'string' && typeof part.toolCallId === 'string') {
        callOfApproval.set(part.approvalId, part.toolCallId);
        requested.add(part.toolCallId);
      }
    }
  }
  for (const message of Array.isArray(messages) ? messages : []) {
    if (message?.role !== 'tool' || !Array.isArray(message.content)) continue;
    for (const part of message.content as readonly { type?: unknown; approvalId?: unknown; approved?: unknown }[]) {
      if (part?.type !== 'tool-approval-response' || typeof part.approvalId !== 'string') continue;
      const id = callOfApproval.get(part.approvalId);
      // The first response for a call decides it, as the SDK takes it.
      if (id === undefined || approved.has(id) || denied.has(id)) continue;
      (part.approved === true ? approved : denied).add(id);
    }
  }
  return { requested, approved, denied };
}
