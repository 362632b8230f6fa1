/**
 * Approvals over MCP: a bridged tool with `needsApproval`, called by the code `execute` runs, is
 * put to the MCP client as an elicitation (a form: approve, and an optional reason), the spec's
 * way of asking the user. The code runs in an `AgentSandbox` session, so a call that needs
 * approval stops its cell (nothing runs while the user decides) and the decision resumes it by
 * replay: no call runs twice.
 *
 * How the client is asked depends on the revision the request speaks:
 *
 * - 2025 revisions (over stdio, on either SDK): `elicitation/create`, a request to the client
 *   during the call ({@link ApprovalChannel} `'ask'`);
 * - 2026-07-28 (SDK 2.x; stateless): the call answers `input_required` with one elicitation per
 *   waiting call and a `requestState` signed by this server; the client asks the user and calls
 *   again with the answers (`'rounds'`). Without `--session` the paused journal waits here, in
 *   memory, bounded in number and time;
 * - a client that declared no elicitation capability, or a request that cannot carry one (2025
 *   revisions over stateless HTTP): the call is refused in the guest, saying why (`'none'`).
 *
 * @module
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { toTaggedJson } from '@strata/wire';
import type { AgentSandbox, CellResult, PendingCall } from './agent-sandbox.js';

/** What the client answers an elicitation with (MCP's `ElicitResult`). */
export interface ElicitAnswer {
  readonly action: 'accept' | 'decline' | 'cancel';
  readonly content?: Record<string, unknown>;
}

/** A form-mode elicitation (MCP's `ElicitRequestFormParams`). */
export interface ElicitForm {
  readonly mode: 'form';
  readonly message: string;
  readonly requestedSchema: {
    readonly type: 'object';
    readonly properties: Record<string, Record<string, unknown>>;
    readonly required: readonly string[];
  };
}

/** How the execute tool can ask its client to approve a call, for one request. */
export type ApprovalChannel =
  | { readonly kind: 'ask'; elicit(form: ElicitForm): Promise<ElicitAnswer> }
  | { readonly kind: 'rounds'; readonly responses: Readonly<Record<string, unknown>> | undefined; readonly state: string | undefined }
  | { readonly kind: 'none'; readonly why: string };

/** The `input_required` answer of a 2026-07-28 call: what to ask, and the state to send back. */
export interface InputRequiredAnswer {
  /** By key, the elicitation (its params) each waiting call asks. */
  readonly inputRequired: { readonly inputRequests: Record<string, ElicitForm>; readonly requestState: string };
}

/** How the client is asked when it cannot be: the guest's error says so. */
export const NO_ELICITATION = 'the MCP client cannot be asked for approval (it declared no elicitation capability)';

// An elicitation waits for a person: longer than an SDK request's default minute.
export const ELICIT_TIMEOUT_MS = 10 * 60_000;
// Paused code calls of a server without --session: at most this many, each for this long.
const MAX_WAITING = 100;
const WAIT_MS = 15 * 60_000;
// Decisions one execute call may go through (each pause of its code one round).
const MAX_ROUNDS = 20;
const PREVIEW_CHARS = 1_000;
const MAX_REASON_CHARS = 500;
const KEY_PREFIX = 'approve-';

const SCHEMA: ElicitForm['requestedSchema'] = {
  type: 'object',
  properties: {
    approve: { type: 'boolean', title: 'Approve', description: 'Run this call' },
    reason: { type: 'string', title: 'Reason', description: 'Why not (optional; the code sees it)', maxLength: MAX_REASON_CHARS },
  },
  required: ['approve'],
};

/** The signed part of a request state: which paused cell, and the calls it waits on. */
interface StatePayload {
  readonly v: 1;
  /** A paused journal kept here (no --session), by id; absent for the server's session. */
  readonly waiting?: string;
  readonly cell: number;
  readonly seqs: readonly number[];
  readonly until: number;
}

interface Waiting {
  readonly journal: string;
  readonly until: number;
}

/** One server's approvals: its state-signing key and the journals paused without a session. */
export class McpApprovals {
  readonly #key = randomBytes(32);
  readonly #waiting = new Map<string, Waiting>();

  /**
   * Runs `code` in `session` (the server's, or one made for the call) and settles the calls that
   * need approval by `channel`: the final result, or what to ask when the client is asked in rounds.
   * With a state from the client, the paused cell it names is decided instead (the code not run again).
   */
  async execute(
    channel: ApprovalChannel,
    run: { readonly session: AgentSandbox } | { readonly start: (journal?: unknown) => Promise<AgentSandbox> },
    code: (session: AgentSandbox) => Promise<CellResult>,
  ): Promise<CellResult | InputRequiredAnswer | { readonly refused: string }> {
    const resumed = channel.kind === 'rounds' && channel.state !== undefined ? this.#verify(channel.state) : undefined;
    if (typeof resumed === 'string') return { refused: resumed };
    if ('session' in run) {
      const session = run.session;
      if (resumed !== undefined) {
        if (resumed.waiting !== undefined || !sameCalls(session, resumed)) return { refused: 'this approval is no longer current: call execute again' };
        return this.#settle(session, await decideAll(session, session.pendingCalls, channel), channel, undefined);
      }
      // A pause the client never answered (it called again without the state): refused, then the new code runs.
      if (session.pendingCalls.length > 0) await denyAll(session, session.pendingCalls, 'the approval was not answered');
      return this.#settle(session, await code(session), channel, undefined);
    }
    if (resumed !== undefined) {
      const waiting = resumed.waiting === undefined ? undefined : this.#take(resumed.waiting);
      if (waiting === undefined) return { refused: 'this approval has expired or was already answered: call execute again' };
      const session = await run.start(JSON.parse(waiting.journal));
      try {
        if (!sameCalls(session, resumed)) return { refused: 'this approval does not match the paused code: call execute again' };
        return await this.#settle(session, await decideAll(session, session.pendingCalls, channel), channel, resumed.waiting);
      } finally {
        await session.close();
      }
    }
    const session = await run.start();
    try {
      return await this.#settle(session, await code(session), channel, randomBytes(12).toString('base64url'));
    } finally {
      await session.close();
    }
  }

  /** Decides pauses until the cell ends, or, in rounds, returns what to ask (keeping a fresh session's journal). */
  async #settle(session: AgentSandbox, first: CellResult, channel: ApprovalChannel, waitingId: string | undefined): Promise<CellResult | InputRequiredAnswer> {
    let result = first;
    for (let round = 0; result.status === 'awaiting-approval'; round++) {
      const pending = result.pendingCalls ?? [];
      if (round >= MAX_ROUNDS) {
        result = await denyAll(session, pending, `more than ${MAX_ROUNDS} rounds of approval in one execute call`);
        break;
      }
      if (channel.kind !== 'rounds') {
        result = await decideAll(session, pending, channel);
        continue;
      }
      if (waitingId !== undefined) this.#keep(waitingId, JSON.stringify(session.journal));
      const payload: StatePayload = {
        v: 1,
        ...(waitingId === undefined ? {} : { waiting: waitingId }),
        cell: result.cell,
        seqs: pending.map((call) => call.seq),
        until: Date.now() + WAIT_MS,
      };
      return {
        inputRequired: {
          inputRequests: Object.fromEntries(pending.map((call) => [`${KEY_PREFIX}${call.seq}`, formFor(call)])),
          requestState: this.#sign(payload),
        },
      };
    }
    return result;
  }

  #sign(payload: StatePayload): string {
    const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
    return `${body}.${createHmac('sha256', this.#key).update(body).digest('base64url')}`;
  }

  /** The client's state, checked: it is attacker-controlled until its signature says it is ours. */
  #verify(state: string): StatePayload | string {
    const stale = 'this approval is not one this server asked for, or has expired: call execute again';
    if (typeof state !== 'string' || state.length > 4_096) return stale;
    const [body, mac, extra] = state.split('.');
    if (body === undefined || mac === undefined || extra !== undefined) return stale;
    const expected = createHmac('sha256', this.#key).update(body).digest();
    const given = Buffer.from(mac, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return stale;
    const payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as StatePayload;
    return payload.until < Date.now() ? stale : payload;
  }

  #keep(id: string, journal: string): void {
    this.#prune();
    while (this.#waiting.size >= MAX_WAITING) this.#waiting.delete(this.#waiting.keys().next().value!);
    this.#waiting.set(id, { journal, until: Date.now() + WAIT_MS });
  }

  /** A paused journal, once: a state answered twice finds nothing the second time. */
  #take(id: string): Waiting | undefined {
    this.#prune();
    const waiting = this.#waiting.get(id);
    this.#waiting.delete(id);
    return waiting;
  }

  #prune(): void {
    const now = Date.now();
    for (const [id, waiting] of this.#waiting) if (waiting.until < now) this.#waiting.delete(id);
  }

  /** How many paused journals wait (for tests and the server's own accounting). */
  get waiting(): number {
    return this.#waiting.size;
  }
}

function sameCalls(session: AgentSandbox, payload: StatePayload): boolean {
  const seqs = session.pendingCalls.map((call) => call.seq);
  return session.journal.cells.length === payload.cell && seqs.length === payload.seqs.length && seqs.every((seq, i) => seq === payload.seqs[i]);
}

/** Each waiting call decided by the channel; the result of the last decision (the cell goes on once all are). */
async function decideAll(session: AgentSandbox, pending: readonly PendingCall[], channel: ApprovalChannel): Promise<CellResult> {
  let result: CellResult | undefined;
  for (const call of pending) {
    const decision = await decisionFor(call, channel);
    result = decision.approved ? await session.approve(call.seq) : await session.deny(call.seq, decision.reason);
  }
  return result!;
}

/** Denies, with `why`, every call the cell waits on until it ends: no one is asked about them. */
async function denyAll(session: AgentSandbox, pending: readonly PendingCall[], why: string): Promise<CellResult> {
  let result: CellResult | undefined;
  let calls = pending;
  while (calls.length > 0) {
    for (const call of calls) result = await session.deny(call.seq, why);
    calls = result!.status === 'awaiting-approval' ? (result!.pendingCalls ?? []) : [];
  }
  return result!;
}

async function decisionFor(call: PendingCall, channel: ApprovalChannel): Promise<{ approved: boolean; reason: string }> {
  if (channel.kind === 'none') return { approved: false, reason: channel.why };
  let answer: unknown;
  if (channel.kind === 'ask') {
    try {
      answer = await channel.elicit(formFor(call));
    } catch (error) {
      return { approved: false, reason: `the MCP client did not answer the approval request (${(error as Error).message.slice(0, 200)})` };
    }
  } else {
    answer = channel.responses?.[`${KEY_PREFIX}${call.seq}`];
    if (answer === undefined) return { approved: false, reason: 'the MCP client sent no answer for this approval' };
  }
  return decisionOf(answer);
}

/** The user's answer, read as untrusted input: approved only by an accepted `approve: true`. */
function decisionOf(answer: unknown): { approved: boolean; reason: string } {
  const { action, content } = (answer ?? {}) as { action?: unknown; content?: unknown };
  const fields = content !== null && typeof content === 'object' ? (content as Record<string, unknown>) : {};
  if (action === 'accept' && fields['approve'] === true) return { approved: true, reason: '' };
  const given = typeof fields['reason'] === 'string' && fields['reason'].trim() !== '' ? `: ${fields['reason'].slice(0, MAX_REASON_CHARS)}` : '';
  const how = action === 'accept' ? 'denied by the user' : action === 'decline' ? 'declined by the user' : 'the approval was cancelled';
  return { approved: false, reason: `${how}${given}` };
}

/** The elicitation for one call: the tool and its input, and the form. */
export function formFor(call: PendingCall): ElicitForm {
  let input: string;
  try {
    input = call.args[0] === undefined ? '' : JSON.stringify(toTaggedJson(call.args[0]));
  } catch {
    input = String(call.args[0]);
  }
  if (input.length > PREVIEW_CHARS) input = `${input.slice(0, PREVIEW_CHARS)}…`;
  return { mode: 'form', message: `The code asks to call ${call.tool}(${input}). Approve this call?`, requestedSchema: SCHEMA };
}
