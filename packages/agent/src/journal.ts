/**
 * The journal of a session: plain JSON, versioned. It holds what shaped the guest (the settings)
 * and, per cell, its code, how it ended and every tool call it made, with arguments and outcome
 * as tagged JSON (`@strata/wire`'s `toTaggedJson`: lossless for every value that crosses the
 * guest boundary). Everything here is pure: checking a journal read from outside, reading the
 * settings a worker runs under from its report and comparing them, sizing what is appended.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { InvalidOption, type IsolatedRuntime } from '@strata/runtime';
import type { JsonValue } from '@strata/wire';
import { JournalError, SessionLimitExceeded } from './errors.js';

const STRATA_VERSION = (createRequire(import.meta.url)('@strata/runtime/package.json') as { version: string }).version;

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

/**
 * How a tool call ended; `'started'`: it began and the guest never heard back (the worker died
 * first); `'pending'`: it awaits approval (a cell may have several, made in parallel), or it did
 * when its cell was lost (`'crashed'`, `'interrupted'`).
 */
export type CallStatus = 'completed' | 'failed' | 'denied' | 'started' | 'pending';

/** An error as the journal keeps it. */
export interface RecordedError {
  readonly name: string;
  readonly message: string;
}

/** One tool call as the journal stores it: a {@link ToolCall} with its values as tagged JSON, and what a replay needs. */
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
 * One tool call, as every path reports it: a cell's `calls` (`AgentSandbox`), `ToolBridge.bind`'s
 * `onCall`, and `strata mcp`'s receipts with or without `--session` (there as tagged JSON). A
 * {@link CallRecord} is the same call as the journal stores it.
 */
export interface ToolCall {
  /** The call's number, from 1, in the order calls started: in its session (the journal's seq), or in its runtime for `bind`. */
  readonly seq: number;
  /** The name the guest called it by: `lookup` for a global tool, `tools.weather` for a bridge's. */
  readonly tool: string;
  /** The guest's arguments, as it passed them (a bridge's tool takes the first as its input). */
  readonly args: readonly unknown[];
  /**
   * `'completed'` or `'failed'`; in a session also `'denied'`, `'started'` (began, and the worker
   * died before answering: reconcile it) or `'pending'` (awaits approval). `bind` reports a call
   * once it ended, so only `'completed'` or `'failed'`.
   */
  readonly status: CallStatus;
  /** The answer, when `completed`. */
  readonly result?: unknown;
  /** The error the guest got, by kind and message, when `failed` or `denied`. */
  readonly error?: RecordedError;
  /** Milliseconds the tool ran, rounded (0 for an answer from the journal or a call refused before it ran). */
  readonly ms: number;
}

/**
 * How a cell ended. `'ok'` and `'error'` (an exception of the guest's own, or a result that could
 * not cross) are replayed; `'crashed'` (the worker died: a V8 abort, a hard timeout, the memory
 * ceiling, a kill) and `'interrupted'` (the soft timeout or the heap limit stopped it at a point
 * no replay could find again) are not, and the session goes on from the cells before them;
 * `'awaiting-approval'` is the last cell, stopped before one or more `pending` calls, at least one
 * of them not decided yet. `'running'` is the last cell of a stored session, as the store had it
 * when the process running it stopped (or when its journal could not be written): its calls are
 * those the store had; `AgentSandbox.continue()` runs it on.
 */
export type CellStatus = 'ok' | 'error' | 'crashed' | 'interrupted' | 'awaiting-approval' | 'running';

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
  /** The session's id (`AgentSandbox.id`), when it has one: a restore keeps it, so tool call ids stay the same. */
  readonly session?: string;
}

/** What a session id may be: 1 to 128 of `A-Z a-z 0-9 . _ : -`. */
export const SESSION_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

const CELL_STATUSES: readonly string[] = ['ok', 'error', 'crashed', 'interrupted', 'awaiting-approval', 'running'];
const CALL_STATUSES: readonly string[] = ['completed', 'failed', 'denied', 'started', 'pending'];

/** The limits a journal is loaded under (a session's own, see `AgentSandboxOptions`); each absent one is not checked. */
export interface JournalLimits {
  readonly maxCells?: number;
  readonly maxCallsPerCell?: number;
  readonly maxValueBytes?: number;
  readonly maxJournalBytes?: number;
}

/**
 * A journal read from outside (`JSON.parse` of a saved one), checked field by field: it may have
 * been edited, truncated or written by someone else. Every tagged value (arguments, answers,
 * results) is checked too, so nothing in a journal that passes can fail to decode later. With
 * `limits`, a journal past one of them is refused before it is walked. Returns a fresh copy that
 * shares nothing with the input, and its size (as JSON, in bytes).
 *
 * @throws {@link JournalError} naming the first field that is wrong (and its cell and seq);
 * {@link SessionLimitExceeded} naming the limit the journal is over.
 */
export function checkJournal(input: unknown, limits: JournalLimits = {}): Journal {
  return checkJournalSized(input, limits).journal;
}

/** {@link checkJournal}, with the journal's size as JSON (bytes). */
export function checkJournalSized(input: unknown, limits: JournalLimits = {}): { journal: Journal; bytes: number } {
  let text: string | undefined;
  try {
    text = JSON.stringify(input);
  } catch (error) {
    throw new JournalError(`the journal is not JSON data: ${(error as Error).message}`);
  }
  if (text === undefined) throw new JournalError('the journal must be an object');
  const bytes = Buffer.byteLength(text);
  if (limits.maxJournalBytes !== undefined && bytes > limits.maxJournalBytes) {
    throw new SessionLimitExceeded(
      'maxJournalBytes',
      `the journal is ${bytes} bytes as JSON, over this session's maxJournalBytes (${limits.maxJournalBytes}): restore it with a larger maxJournalBytes`,
    );
  }
  const copy = JSON.parse(text) as unknown;
  const j = object(copy, 'the journal');
  if (j['format'] !== JOURNAL_FORMAT)
    throw new JournalError(`this is not a Strata session journal (format ${JSON.stringify(j['format'])}, expected ${JSON.stringify(JOURNAL_FORMAT)})`);
  if (j['version'] !== JOURNAL_VERSION)
    throw new JournalError(`journal format version ${JSON.stringify(j['version'])}; this release reads version ${JOURNAL_VERSION}`);
  const s = object(j['settings'], 'settings');
  string(s['strata'], 'settings.strata');
  const clock = object(s['clock'], 'settings.clock');
  integer(clock['at'], 'settings.clock.at', -8.64e15, 8.64e15);
  integer(clock['seed'], 'settings.clock.seed', 0, 0xffff_ffff);
  array(s['bootstrap'], 'settings.bootstrap').forEach((h, i) => {
    if (typeof h !== 'string' || !/^[0-9a-f]{64}$/.test(h)) throw new JournalError(`settings.bootstrap[${i}] must be a SHA-256 in hex`);
  });
  if (s['strictEval'] !== undefined && s['strictEval'] !== true) throw new JournalError('settings.strictEval is true or absent');
  if (s['allowGlobals'] !== undefined)
    for (const [i, g] of array(s['allowGlobals'], 'settings.allowGlobals').entries()) string(g, `settings.allowGlobals[${i}]`);
  for (const [i, g] of array(s['tools'], 'settings.tools').entries()) string(g, `settings.tools[${i}]`);
  const cells = array(j['cells'], 'cells');
  if (limits.maxCells !== undefined && cells.length > limits.maxCells) {
    throw new SessionLimitExceeded(
      'maxCells',
      `the journal has ${cells.length} cells, over this session's maxCells (${limits.maxCells}): restore it with a larger maxCells`,
    );
  }
  let seq = 0;
  cells.forEach((c, i) => {
    const where = `cells[${i}]`;
    const loc = { cell: i + 1 };
    const cell = object(c, where, loc);
    if (cell['cell'] !== i + 1) throw new JournalError(`${where}.cell must be ${i + 1}`, loc);
    string(cell['code'], `${where}.code`, loc);
    if (cell['language'] !== undefined && cell['language'] !== 'typescript') throw new JournalError(`${where}.language is 'typescript' or absent`, loc);
    if (!CELL_STATUSES.includes(cell['status'] as string)) throw new JournalError(`${where}.status must be one of ${CELL_STATUSES.join(', ')}`, loc);
    const status = cell['status'] as CellStatus;
    if (status === 'awaiting-approval' && i !== cells.length - 1) throw new JournalError(`${where} awaits approval but is not the last cell`, loc);
    if (status === 'running' && i !== cells.length - 1) throw new JournalError(`${where} is running but is not the last cell`, loc);
    if (cell['error'] !== undefined) recordedError(cell['error'], `${where}.error`, loc, 'type');
    if (cell['resultBytes'] !== undefined) integer(cell['resultBytes'], `${where}.resultBytes`, 0, Number.MAX_SAFE_INTEGER, loc);
    if (cell['result'] !== undefined) value(cell['result'], `${where}.result`, loc, limits);
    const calls = array(cell['calls'], `${where}.calls`, loc);
    if (limits.maxCallsPerCell !== undefined && calls.length > limits.maxCallsPerCell) {
      throw new SessionLimitExceeded(
        'maxCallsPerCell',
        `cell ${i + 1} of the journal has ${calls.length} tool calls, over this session's maxCallsPerCell (${limits.maxCallsPerCell}): restore it with a larger maxCallsPerCell`,
      );
    }
    let undecided = 0;
    calls.forEach((k, n) => {
      const at = `${where}.calls[${n}]`;
      const call = object(k, at, loc);
      integer(call['seq'], `${at}.seq`, seq + 1, Number.MAX_SAFE_INTEGER, loc);
      seq = call['seq'] as number;
      const here = { cell: i + 1, seq };
      string(call['tool'], `${at}.tool`, here);
      if (!Array.isArray(call['args'])) throw new JournalError(`${at}.args must be the array of the guest's arguments`, here);
      value(call['args'], `${at}.args`, here, limits);
      if (!CALL_STATUSES.includes(call['status'] as string)) throw new JournalError(`${at}.status must be one of ${CALL_STATUSES.join(', ')}`, here);
      integer(call['ms'], `${at}.ms`, 0, Number.MAX_SAFE_INTEGER, here);
      if (call['argsDigest'] !== undefined && (typeof call['argsDigest'] !== 'string' || !/^([0-9a-f]{64}|unrecordable)$/.test(call['argsDigest']))) {
        throw new JournalError(`${at}.argsDigest must be a SHA-256 in hex`, here);
      }
      if (call['result'] !== undefined) value(call['result'], `${at}.result`, here, limits);
      if (call['error'] !== undefined) recordedError(call['error'], `${at}.error`, here, 'name');
      if ((call['status'] === 'failed' || call['status'] === 'denied') && call['error'] === undefined)
        throw new JournalError(`${at} is ${String(call['status'])} without an error`, here);
      if (call['approval'] !== undefined) {
        if (call['status'] !== 'pending') throw new JournalError(`${at}.approval is only for a pending call`, here);
        const a = object(call['approval'], `${at}.approval`, here);
        if (typeof a['approved'] !== 'boolean') throw new JournalError(`${at}.approval.approved must be true or false`, here);
        if (a['reason'] !== undefined) string(a['reason'], `${at}.approval.reason`, here);
      }
      if (call['status'] === 'pending') {
        if (status === 'awaiting-approval' && call['approval'] === undefined) undecided++;
        if (status !== 'awaiting-approval' && status !== 'crashed' && status !== 'interrupted' && status !== 'running') {
          throw new JournalError(`${at} is pending, but only a call of a cell awaiting approval can be (or of a cell lost while it awaited)`, here);
        }
      }
      if (call['status'] === 'started' && status !== 'crashed' && status !== 'interrupted' && status !== 'running') {
        throw new JournalError(`${at} is started without an outcome, but its cell did not crash`, here);
      }
      if (call['status'] === 'completed' && !('result' in call)) throw new JournalError(`${at} is completed without its result`, here);
      if (call['status'] !== 'completed' && call['result'] !== undefined)
        throw new JournalError(`${at} has a result but is ${String(call['status'])}: only a completed call has one`, here);
      if (call['afterCrash'] !== undefined) {
        if (call['status'] !== 'started') throw new JournalError(`${at}.afterCrash is only for a started call`, here);
        const after = object(call['afterCrash'], `${at}.afterCrash`, here);
        if (after['status'] === 'completed') value(after['result'], `${at}.afterCrash.result`, here, limits);
        else if (after['status'] === 'failed') recordedError(after['error'], `${at}.afterCrash.error`, here, 'name');
        else throw new JournalError(`${at}.afterCrash.status must be completed or failed`, here);
      }
    });
    if (status === 'awaiting-approval' && undecided === 0)
      throw new JournalError(`${where} awaits approval, so at least one of its calls must be pending without a decision`, loc);
  });
  integer(j['nextSeq'], 'nextSeq', seq + 1, Number.MAX_SAFE_INTEGER);
  if (j['session'] !== undefined && (typeof j['session'] !== 'string' || !SESSION_ID_PATTERN.test(j['session'])))
    throw new JournalError('session must be a session id: 1 to 128 of A-Z a-z 0-9 . _ : -');
  return { journal: copy as Journal, bytes };
}

/**
 * Checks a tagged-JSON value (`@strata/wire`'s `toTaggedJson`) as `fromTaggedJson` will read it:
 * every one-key object whose key starts with `$` must be a tag it knows, with a payload of the
 * right shape, so decoding a journal that passed never throws. Iterative: a deep value cannot
 * overflow the stack. With `maxValueBytes`, a value larger as JSON is refused.
 */
function value(root: unknown, what: string, loc: Where, limits: JournalLimits): void {
  if (limits.maxValueBytes !== undefined) {
    const size = Buffer.byteLength(JSON.stringify(root));
    if (size > limits.maxValueBytes) {
      throw new SessionLimitExceeded(
        'maxValueBytes',
        `${what} (${where(loc)}) is ${size} bytes as JSON, over this session's maxValueBytes (${limits.maxValueBytes}): restore it with a larger maxValueBytes`,
      );
    }
  }
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const v = stack.pop();
    if (v === null || typeof v !== 'object') continue;
    if (Array.isArray(v)) {
      stack.push(...v);
      continue;
    }
    const entries = Object.entries(v as Record<string, unknown>);
    if (entries.length !== 1 || !entries[0]![0].startsWith('$')) {
      for (const [, child] of entries) stack.push(child);
      continue;
    }
    const [key, payload] = entries[0]!;
    const bad = (shape: string) => new JournalError(`${what} (${where(loc)}): the tag ${JSON.stringify(key)} must hold ${shape}, not ${preview(payload)}`, loc);
    switch (key) {
      case '$undefined':
        if (payload !== true) throw bad('true');
        break;
      case '$bigint':
        if (typeof payload !== 'string' || !/^-?(0|[1-9][0-9]*)$/.test(payload)) throw bad('a decimal integer as a string');
        break;
      case '$number':
        if (payload !== 'NaN' && payload !== 'Infinity' && payload !== '-Infinity' && payload !== '-0') throw bad("'NaN', 'Infinity', '-Infinity' or '-0'");
        break;
      case '$date':
        if (payload !== null && (typeof payload !== 'string' || !isIsoDate(payload))) throw bad('an ISO date (toISOString) or null');
        break;
      case '$bytes':
        if (typeof payload !== 'string' || payload.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(payload)) throw bad('base64');
        break;
      case '$map':
        if (!Array.isArray(payload) || !payload.every((entry) => Array.isArray(entry) && entry.length === 2)) throw bad('an array of [key, value] pairs');
        for (const entry of payload as unknown[][]) stack.push(entry[0], entry[1]);
        break;
      case '$set':
        if (!Array.isArray(payload)) throw bad('an array');
        stack.push(...(payload as unknown[]));
        break;
      case '$object':
        if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) throw bad('an object');
        for (const child of Object.values(payload)) stack.push(child);
        break;
      default:
        throw new JournalError(
          `${what} (${where(loc)}): unknown tag ${JSON.stringify(key)} (a guest object with one key starting with $ is written {"$object": …})`,
          loc,
        );
    }
  }
}

function isIsoDate(text: string): boolean {
  const date = new Date(text);
  return !Number.isNaN(date.getTime()) && date.toISOString() === text;
}

function preview(json: unknown): string {
  const text = JSON.stringify(json) ?? 'undefined';
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

type Where = { readonly cell?: number; readonly seq?: number };

function where(loc: Where): string {
  return loc.seq === undefined ? `cell ${loc.cell}` : `cell ${loc.cell}, call ${loc.seq}`;
}

function recordedError(input: unknown, what: string, loc: Where, nameKey: 'name' | 'type'): void {
  const e = object(input, what, loc);
  string(e[nameKey], `${what}.${nameKey}`, loc);
  string(e['message'], `${what}.message`, loc);
}

function object(value: unknown, what: string, loc: Where = {}): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new JournalError(`${what} must be an object`, loc);
  return value as Record<string, unknown>;
}
function array(value: unknown, what: string, loc: Where = {}): unknown[] {
  if (!Array.isArray(value)) throw new JournalError(`${what} must be an array`, loc);
  return value;
}
function string(value: unknown, what: string, loc: Where = {}): void {
  if (typeof value !== 'string') throw new JournalError(`${what} must be a string`, loc);
}
function integer(value: unknown, what: string, min: number, max: number, loc: Where = {}): void {
  if (!Number.isSafeInteger(value) || (value as number) < min || (value as number) > max)
    throw new JournalError(`${what} must be an integer from ${min} to ${max}`, loc);
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
  if (recorded.clock.at !== current.clock.at)
    problems.push(`its clock is ${new Date(recorded.clock.at).toISOString()}, this session's ${new Date(current.clock.at).toISOString()}`);
  if (recorded.clock.seed !== current.clock.seed) problems.push(`its seed is ${recorded.clock.seed}, this session's ${current.clock.seed}`);
  if (JSON.stringify(recorded.bootstrap) !== JSON.stringify(current.bootstrap))
    problems.push(`its bootstrap scripts differ (${recorded.bootstrap.length} recorded by hash, ${current.bootstrap.length} here)`);
  if ((recorded.strictEval ?? false) !== (current.strictEval ?? false))
    problems.push(
      `it was recorded with strictEval ${recorded.strictEval === true ? 'on' : 'off'}, this session has it ${current.strictEval === true ? 'on' : 'off'}`,
    );
  if (JSON.stringify(recorded.allowGlobals ?? []) !== JSON.stringify(current.allowGlobals ?? [])) problems.push('its allowGlobals differ');
  if (JSON.stringify(recorded.tools) !== JSON.stringify(current.tools))
    problems.push(`its tools are [${recorded.tools.join(', ')}], this session's [${current.tools.join(', ')}]`);
  return problems.length === 0 ? undefined : problems.join('; ');
}

/**
 * The settings a worker runs under, as a journal records them: from what the worker reports (a
 * pooled worker's are the pool's), the session's tools and its layer configuration.
 *
 * @throws `InvalidOption` when the worker's clock is not frozen: a replay could not find its state again.
 */
export function workerSettings(rt: Pick<IsolatedRuntime, 'report' | 'options'>, tools: readonly string[], layers: JsonValue): JournalSettings {
  const clockLayer = rt.report.layers.find((layer) => layer.name === 'clock');
  const detail = (clockLayer?.detail ?? {}) as { at?: unknown; seed?: unknown };
  const at = typeof detail.at === 'string' ? Date.parse(detail.at) : NaN;
  if (clockLayer === undefined || clockLayer.enforcement !== 'full' || !Number.isFinite(at) || typeof detail.seed !== 'number') {
    throw new InvalidOption(
      'an AgentSandbox needs its workers to run a frozen clock: start the pool with clock: { at, seed } (the clock layer was not in force)',
    );
  }
  const options = rt.options;
  return {
    strata: STRATA_VERSION,
    clock: { at, seed: detail.seed },
    bootstrap: options.bootstrap.map((script) => createHash('sha256').update(script).digest('hex')),
    ...(options.strictEval ? { strictEval: true as const } : {}),
    ...(options.allowGlobals.length > 0 ? { allowGlobals: [...options.allowGlobals] } : {}),
    tools: [...tools].sort(),
    layers,
  };
}

/** The layer configuration of a session's runtime options, as the journal records it. */
export function layersOf(runtime: Record<string, unknown>): JsonValue {
  const picked: Record<string, JsonValue> = {};
  for (const key of ['sandbox', 'layers', 'replaceDefaultLayers', 'omitDefaultLayers'] as const) {
    if (runtime[key] !== undefined) picked[key] = JSON.parse(JSON.stringify(runtime[key])) as JsonValue;
  }
  return picked;
}
