/**
 * The journal of a session: plain JSON, versioned. It holds what shaped the guest (the settings)
 * and, per cell, its code, how it ended and every tool call it made, with arguments and outcome
 * as tagged JSON (`@strata/wire`'s `toTaggedJson`: lossless for every value that crosses the
 * guest boundary). Everything here is pure: checking a journal read from outside, comparing
 * settings, sizing what is appended.
 *
 * @module
 */
import type { JsonValue } from '@strata/wire';
import { JournalError } from './errors.js';

/** What a journal says it is. */
export const JOURNAL_FORMAT = 'strata.agent.journal';
/** The journal format this release writes and reads. */
export const JOURNAL_VERSION = 1;

/** Everything that shapes the guest, recorded so a replay runs under the same. */
export interface JournalSettings {
  /** The release of `@strata/runtime` that recorded it. */
  readonly strata: string;
  /** The frozen clock (epoch milliseconds) and the seed of `Math.random`. */
  readonly clock: { readonly at: number; readonly seed: number };
  /** SHA-256 (hex) of each bootstrap script, in order. */
  readonly bootstrap: readonly string[];
  /** Present, and true, only when strictEval was on (a default journal does not mention it). */
  readonly strictEval?: true;
  /** Present only when optional globals were allowed. */
  readonly allowGlobals?: readonly string[];
  /** The tools' names, sorted: the globals the guest can call. */
  readonly tools: readonly string[];
  /** The layer configuration the session was started with (informational: it does not shape guest state). */
  readonly layers: JsonValue;
}

/** How a tool call ended; `'started'`: it began and the guest never heard back (the worker died first); `'pending'`: it awaits approval. */
export type CallStatus = 'completed' | 'failed' | 'denied' | 'started' | 'pending';

/** An error as the journal keeps it. */
export interface RecordedError {
  readonly name: string;
  readonly message: string;
}

/** One tool call. */
export interface CallRecord {
  readonly seq: number;
  readonly tool: string;
  /** The guest's arguments, tagged JSON (`[]` when they were refused: see `argsDigest`). */
  readonly args: JsonValue;
  /** For arguments refused (too large, or not data): the SHA-256 of their JSON, which a replay checks, instead of the arguments. */
  argsDigest?: string;
  status: CallStatus;
  /** The answer (tagged JSON), when `completed`. */
  result?: JsonValue;
  /** The error, when `failed` or `denied`. */
  error?: RecordedError;
  /** Milliseconds the tool ran (0 for answers from the journal). */
  ms: number;
  /** For a `pending` call the host decided on: what it decided. */
  approval?: { readonly approved: boolean; readonly reason?: string };
  /** For a `started` call whose tool went on after the worker died: how it ended, for reconciling (never given to a guest). */
  afterCrash?: { readonly status: 'completed' | 'failed'; readonly result?: JsonValue; readonly error?: RecordedError };
}

/**
 * How a cell ended. `'ok'` and `'error'` (an exception of the guest's own, or a result that could
 * not cross) are replayed; `'crashed'` (the worker died: a V8 abort, a hard timeout, the memory
 * ceiling, a kill) and `'interrupted'` (the soft timeout or the heap limit stopped it at a point
 * no replay could find again) are not, and the session goes on from the cells before them;
 * `'awaiting-approval'` is the last cell, stopped before a `pending` call.
 */
export type CellStatus = 'ok' | 'error' | 'crashed' | 'interrupted' | 'awaiting-approval';

/** One cell. */
export interface CellRecord {
  readonly cell: number;
  readonly code: string;
  /** Present, `'typescript'`, when the cell's types are stripped before it runs. */
  readonly language?: 'typescript';
  status: CellStatus;
  /** The result (tagged JSON) when `ok`, unless it was larger than `maxValueBytes` (`resultBytes` then says how large). */
  result?: JsonValue;
  resultBytes?: number;
  /** The error when `error`, `crashed` or `interrupted`. */
  error?: { readonly type: string; readonly message: string };
  readonly calls: CallRecord[];
}

/** A session's journal. `JSON.stringify` it to keep it; `AgentSandbox.restore` takes it back. */
export interface Journal {
  readonly format: typeof JOURNAL_FORMAT;
  readonly version: typeof JOURNAL_VERSION;
  readonly settings: JournalSettings;
  readonly cells: CellRecord[];
  /** The `seq` the next tool call gets. */
  nextSeq: number;
}

const CELL_STATUSES: readonly string[] = ['ok', 'error', 'crashed', 'interrupted', 'awaiting-approval'];
const CALL_STATUSES: readonly string[] = ['completed', 'failed', 'denied', 'started', 'pending'];

/**
 * A journal read from outside (`JSON.parse` of a saved one), checked field by field: it may have
 * been edited, truncated or written by someone else. Returns a fresh copy that shares nothing
 * with the input.
 *
 * @throws {@link JournalError} naming the first field that is wrong.
 */
export function checkJournal(input: unknown): Journal {
  const copy = (() => {
    try {
      return JSON.parse(JSON.stringify(input)) as unknown;
    } catch (error) {
      throw new JournalError(`the journal is not JSON data: ${(error as Error).message}`);
    }
  })();
  const j = object(copy, 'the journal');
  if (j['format'] !== JOURNAL_FORMAT) throw new JournalError(`this is not a Strata session journal (format ${JSON.stringify(j['format'])}, expected ${JSON.stringify(JOURNAL_FORMAT)})`);
  if (j['version'] !== JOURNAL_VERSION) throw new JournalError(`journal format version ${JSON.stringify(j['version'])}; this release reads version ${JOURNAL_VERSION}`);
  const s = object(j['settings'], 'settings');
  string(s['strata'], 'settings.strata');
  const clock = object(s['clock'], 'settings.clock');
  integer(clock['at'], 'settings.clock.at', -8.64e15, 8.64e15);
  integer(clock['seed'], 'settings.clock.seed', 0, 0xffff_ffff);
  array(s['bootstrap'], 'settings.bootstrap').forEach((h, i) => {
    if (typeof h !== 'string' || !/^[0-9a-f]{64}$/.test(h)) throw new JournalError(`settings.bootstrap[${i}] must be a SHA-256 in hex`);
  });
  if (s['strictEval'] !== undefined && s['strictEval'] !== true) throw new JournalError('settings.strictEval is true or absent');
  if (s['allowGlobals'] !== undefined) array(s['allowGlobals'], 'settings.allowGlobals').forEach((g, i) => string(g, `settings.allowGlobals[${i}]`));
  array(s['tools'], 'settings.tools').forEach((g, i) => string(g, `settings.tools[${i}]`));
  const cells = array(j['cells'], 'cells');
  let seq = 0;
  cells.forEach((c, i) => {
    const where = `cells[${i}]`;
    const cell = object(c, where);
    if (cell['cell'] !== i + 1) throw new JournalError(`${where}.cell must be ${i + 1}`, { cell: i + 1 });
    string(cell['code'], `${where}.code`);
    if (cell['language'] !== undefined && cell['language'] !== 'typescript') throw new JournalError(`${where}.language is 'typescript' or absent`, { cell: i + 1 });
    if (!CELL_STATUSES.includes(cell['status'] as string)) throw new JournalError(`${where}.status must be one of ${CELL_STATUSES.join(', ')}`, { cell: i + 1 });
    if (cell['status'] === 'awaiting-approval' && i !== cells.length - 1) throw new JournalError(`${where} awaits approval but is not the last cell`, { cell: i + 1 });
    if (cell['error'] !== undefined) {
      const e = object(cell['error'], `${where}.error`);
      string(e['type'], `${where}.error.type`);
      string(e['message'], `${where}.error.message`);
    }
    if (cell['resultBytes'] !== undefined) integer(cell['resultBytes'], `${where}.resultBytes`, 0, Number.MAX_SAFE_INTEGER);
    const calls = array(cell['calls'], `${where}.calls`);
    let pending = 0;
    calls.forEach((k, n) => {
      const at = `${where}.calls[${n}]`;
      const call = object(k, at);
      integer(call['seq'], `${at}.seq`, seq + 1, Number.MAX_SAFE_INTEGER);
      seq = call['seq'] as number;
      string(call['tool'], `${at}.tool`);
      if (!Array.isArray(call['args'])) throw new JournalError(`${at}.args must be the array of the guest's arguments`, { cell: i + 1, seq });
      if (!CALL_STATUSES.includes(call['status'] as string)) throw new JournalError(`${at}.status must be one of ${CALL_STATUSES.join(', ')}`, { cell: i + 1, seq });
      integer(call['ms'], `${at}.ms`, 0, Number.MAX_SAFE_INTEGER);
      if (call['argsDigest'] !== undefined && (typeof call['argsDigest'] !== 'string' || !/^([0-9a-f]{64}|unrecordable)$/.test(call['argsDigest']))) {
        throw new JournalError(`${at}.argsDigest must be a SHA-256 in hex`, { cell: i + 1, seq });
      }
      if (call['error'] !== undefined) {
        const e = object(call['error'], `${at}.error`);
        string(e['name'], `${at}.error.name`);
        string(e['message'], `${at}.error.message`);
      }
      if ((call['status'] === 'failed' || call['status'] === 'denied') && call['error'] === undefined) throw new JournalError(`${at} is ${String(call['status'])} without an error`, { cell: i + 1, seq });
      if (call['status'] === 'pending') {
        pending++;
        if (cell['status'] !== 'awaiting-approval') throw new JournalError(`${at} is pending, but only a call of a cell awaiting approval can be`, { cell: i + 1, seq });
        if (call['approval'] !== undefined) {
          const a = object(call['approval'], `${at}.approval`);
          if (typeof a['approved'] !== 'boolean') throw new JournalError(`${at}.approval.approved must be true or false`, { cell: i + 1, seq });
          if (a['reason'] !== undefined) string(a['reason'], `${at}.approval.reason`);
        }
      }
      if (call['status'] === 'started' && cell['status'] !== 'crashed' && cell['status'] !== 'interrupted') {
        throw new JournalError(`${at} is started without an outcome, but its cell did not crash`, { cell: i + 1, seq });
      }
    });
    if (cell['status'] === 'awaiting-approval' && pending !== 1) throw new JournalError(`${where} awaits approval, so exactly one of its calls must be pending`, { cell: i + 1 });
  });
  integer(j['nextSeq'], 'nextSeq', seq + 1, Number.MAX_SAFE_INTEGER);
  return copy as Journal;
}

function object(value: unknown, what: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new JournalError(`${what} must be an object`);
  return value as Record<string, unknown>;
}
function array(value: unknown, what: string): unknown[] {
  if (!Array.isArray(value)) throw new JournalError(`${what} must be an array`);
  return value;
}
function string(value: unknown, what: string): void {
  if (typeof value !== 'string') throw new JournalError(`${what} must be a string`);
}
function integer(value: unknown, what: string, min: number, max: number): void {
  if (!Number.isSafeInteger(value) || (value as number) < min || (value as number) > max) throw new JournalError(`${what} must be an integer from ${min} to ${max}`);
}

/** `major.minor` for 0.x (where a minor release may break), else `major`: releases whose journals are interchangeable. */
export function journalLine(version: string): string {
  const [major = '', minor = ''] = version.split('.');
  return major === '0' ? `0.${minor}` : major;
}

/**
 * Why a journal recorded under `recorded` cannot be replayed under `current`, or undefined when
 * it can: every setting that shapes the guest must be equal (the layers are informational).
 */
export function settingsMismatch(recorded: JournalSettings, current: JournalSettings): string | undefined {
  const problems: string[] = [];
  if (journalLine(recorded.strata) !== journalLine(current.strata)) problems.push(`it was recorded by Strata ${recorded.strata}, this is ${current.strata}`);
  if (recorded.clock.at !== current.clock.at) problems.push(`its clock is ${new Date(recorded.clock.at).toISOString()}, this session's ${new Date(current.clock.at).toISOString()}`);
  if (recorded.clock.seed !== current.clock.seed) problems.push(`its seed is ${recorded.clock.seed}, this session's ${current.clock.seed}`);
  if (JSON.stringify(recorded.bootstrap) !== JSON.stringify(current.bootstrap)) problems.push(`its bootstrap scripts differ (${recorded.bootstrap.length} recorded by hash, ${current.bootstrap.length} here)`);
  if ((recorded.strictEval ?? false) !== (current.strictEval ?? false)) problems.push(`it was recorded with strictEval ${recorded.strictEval === true ? 'on' : 'off'}, this session has it ${current.strictEval === true ? 'on' : 'off'}`);
  if (JSON.stringify(recorded.allowGlobals ?? []) !== JSON.stringify(current.allowGlobals ?? [])) problems.push('its allowGlobals differ');
  if (JSON.stringify(recorded.tools) !== JSON.stringify(current.tools)) problems.push(`its tools are [${recorded.tools.join(', ')}], this session's [${current.tools.join(', ')}]`);
  return problems.length === 0 ? undefined : problems.join('; ');
}
