// The recorder on its own, with no worker: a fake host records what it is asked (events to
// publish, the worker to stop), plain functions are the tools, and the test plays the guest (it
// calls `call` as the tool wrappers do, and says how the cell's code ended). One row per case;
// each asserts the guest's answers, the error, the cell's result, the journal and the events.
import test from 'ava';
import type { ExecutionResult } from '@strata/runtime';
import { JournalError, SessionLimitExceeded, SessionStateError } from '../src/index.js';
import type { CallRecord, CellRecord, Journal, JournalSettings } from '../src/journal.js';
import { CellRecorder, replayDivergence, type CellResult, type Limits, type RecorderHost, type SessionEvent, type StopReason } from '../src/recorder.js';
import { sessionTools, type ToolAnswer, type ToolSet } from '../src/tools.js';

const SETTINGS: JournalSettings = { strata: '0.1.0', clock: { at: Date.UTC(2026, 0, 1), seed: 7 }, bootstrap: [], tools: ['lookup', 'send'], layers: {} };
const LIMITS: Limits = { maxCells: 10, maxCallsPerCell: 10, maxValueBytes: 1024, maxJournalBytes: 64 * 1024 };
/** What the guest sees of a call that never answers (a divergence, a stop for approval). */
const NO_ANSWER = 'no answer';

/** The fake host: everything the recorder asked of it. */
interface FakeHost extends RecorderHost {
  readonly events: SessionEvent[];
  readonly stops: StopReason[];
  /** What each stop waits for before the worker would close. */
  readonly after: Promise<unknown>[];
}

function fakeHost(): FakeHost {
  const host: FakeHost = {
    events: [],
    stops: [],
    after: [],
    publish: (event) => host.events.push(event),
    stopWorker: (reason, after) => {
      host.stops.push(reason);
      if (after !== undefined) host.after.push(after);
    },
  };
  return host;
}

function recorderWith(tools: ToolSet, options: { limits?: Partial<Limits>; restored?: Journal } = {}) {
  const host = fakeHost();
  const { restored } = options;
  const recorder = new CellRecorder({
    tools: new Map(sessionTools(tools).map((tool) => [tool.name, tool])),
    limits: { ...LIMITS, ...options.limits },
    settleWaitMs: 1_000,
    host,
    sessionId: 'recorder-test',
    restored: restored === undefined ? undefined : { journal: structuredClone(restored), bytes: Buffer.byteLength(JSON.stringify(restored)) },
  });
  if (restored === undefined) recorder.open(SETTINGS);
  return { recorder, host };
}

/** A cell's code ending as the worker reports it. */
function outcome(ended: Partial<ExecutionResult> = {}): ExecutionResult {
  return { status: 'ok', result: undefined, error: undefined, errorType: undefined, stdout: '', stderr: '', truncated: false, ...ended };
}

/** The guest's answer, or NO_ANSWER when the call has none after the recorder's work is done. */
async function answerOf(call: Promise<ToolAnswer>): Promise<ToolAnswer | typeof NO_ANSWER> {
  return Promise.race([call, new Promise<typeof NO_ANSWER>((resolve) => setTimeout(() => resolve(NO_ANSWER), 20))]);
}

/** A journal with one recorded cell that called lookup("A1"), answered "price A1", and ended with 2. */
async function recordedJournal(): Promise<Journal> {
  const { recorder } = recorderWith({ lookup: (sku: string) => `price ${sku}` });
  const running = recorder.begin(recorder.addCell('await lookup("A1"); 2', 'javascript'), { kind: 'live' });
  await recorder.call('lookup', ['A1']);
  recorder.end(running);
  recorder.finishCell(running, outcome({ result: 2 }), { unsettled: false, workerClosed: false });
  return recorder.snapshot();
}

/** What a row observed (each row adds what else it looks at); ms are zeroed (they are measured), values as JSON. */
interface Seen {
  readonly [more: string]: unknown;
  answers: unknown[];
  error?: { class: string; code: string; message: string; cell?: number | undefined; seq?: number | undefined; limit?: string };
  results?: { status: CellResult['status']; errorType?: string | undefined; error?: string | undefined; replayable: boolean }[];
  cell?: CellRecord | undefined;
  events: SessionEvent[];
  stops: StopReason[];
  toolRuns?: number;
}

function errorSeen(error: unknown): Seen['error'] {
  if (!(error instanceof Error)) throw new Error(`not an error: ${String(error)}`);
  const e = error as Error & { code: string; cell?: number; seq?: number; limit?: string };
  return {
    class: e.constructor.name,
    code: e.code,
    message: e.message,
    ...(e instanceof JournalError ? { cell: e.cell, seq: e.seq } : {}),
    ...(e instanceof SessionLimitExceeded ? { limit: e.limit } : {}),
  };
}

function finished(
  recorder: CellRecorder,
  running: ReturnType<CellRecorder['begin']>,
  ended: ExecutionResult,
  ending = { unsettled: false, workerClosed: false },
): NonNullable<Seen['results']>[number] {
  const { result, replayable } = recorder.finishCell(running, ended, ending);
  return { status: result.status, ...(result.status === 'ok' ? {} : { errorType: result.errorType, error: result.error }), replayable };
}

/** Zeroes measured times and makes every value plain JSON (tagged JSON objects are null-prototype). */
function plain(seen: Seen): Seen {
  return JSON.parse(JSON.stringify(seen, (key, value: unknown) => (key === 'ms' ? 0 : value)));
}

interface Row {
  readonly title: string;
  readonly act: () => Promise<Seen>;
  readonly expected: Seen;
}

const lookupCall: CallRecord = { seq: 1, tool: 'lookup', args: ['A1'], status: 'completed', result: 'price A1', ms: 0 };

const rows: Row[] = [
  {
    title: 'ok: a live call runs the tool, is journaled completed, and the guest gets the recorded answer',
    act: async () => {
      const { recorder, host } = recorderWith({ lookup: (sku: string) => `price ${sku}` });
      const running = recorder.begin(recorder.addCell('await lookup("A1"); 2', 'javascript'), { kind: 'live' });
      const answers = [await answerOf(recorder.call('lookup', ['A1']))];
      recorder.end(running);
      const results = [finished(recorder, running, outcome({ result: 2 }))];
      return { answers, results, cell: recorder.journal.cells.at(-1), events: host.events, stops: host.stops };
    },
    expected: {
      answers: [{ ok: true, value: 'price A1' }],
      results: [{ status: 'ok', replayable: true }],
      cell: { cell: 1, code: 'await lookup("A1"); 2', status: 'ok', calls: [lookupCall], result: 2 },
      events: [
        { type: 'tool-call', cell: 1, seq: 1, tool: 'lookup', args: ['A1'] },
        { type: 'tool-result', cell: 1, seq: 1, tool: 'lookup', status: 'completed', ms: 0, result: 'price A1' },
      ],
      stops: [],
    },
  },
  {
    title: "tool error: the call is journaled failed with the error's kind and message, and the guest gets that error",
    act: async () => {
      const { recorder, host } = recorderWith({
        lookup: () => {
          throw new RangeError('no such sku');
        },
      });
      const running = recorder.begin(recorder.addCell('await lookup("A1")', 'javascript'), { kind: 'live' });
      const answers = [await answerOf(recorder.call('lookup', ['A1']))];
      recorder.end(running);
      const results = [finished(recorder, running, outcome({ status: 'error', errorType: 'RangeError', error: 'no such sku' }))];
      return { answers, results, cell: recorder.journal.cells.at(-1), events: host.events, stops: host.stops };
    },
    expected: {
      answers: [{ ok: false, name: 'RangeError', message: 'no such sku' }],
      results: [{ status: 'error', errorType: 'RangeError', error: 'no such sku', replayable: true }],
      cell: {
        cell: 1,
        code: 'await lookup("A1")',
        status: 'error',
        calls: [{ seq: 1, tool: 'lookup', args: ['A1'], status: 'failed', ms: 0, error: { name: 'RangeError', message: 'no such sku' } }],
        error: { type: 'RangeError', message: 'no such sku' },
      },
      events: [
        { type: 'tool-call', cell: 1, seq: 1, tool: 'lookup', args: ['A1'] },
        { type: 'tool-result', cell: 1, seq: 1, tool: 'lookup', status: 'failed', ms: 0, error: { name: 'RangeError', message: 'no such sku' } },
      ],
      stops: [],
    },
  },
  ...(
    [
      ['wrong tool name', 'audit', ['A1'], 'audit("A1")'],
      ['wrong input', 'lookup', ['B2'], 'lookup("B2")'],
    ] as const
  ).map(
    ([what, tool, args, shown]): Row => ({
      title: `${what} on replay: a divergence naming cell and seq; the worker is stopped, the guest never hears back, no tool runs`,
      act: async () => {
        let toolRuns = 0;
        const count = () => void toolRuns++;
        const { recorder, host } = recorderWith({ lookup: count, audit: count }, { restored: await recordedJournal() });
        const cell = recorder.journal.cells[0]!;
        const running = recorder.begin(cell, { kind: 'replay' });
        const answers = [await answerOf(recorder.call(tool, [...args]))];
        const divergence = recorder.end(running);
        return { answers, error: errorSeen(divergence), cell: recorder.journal.cells[0], events: host.events, stops: host.stops, toolRuns };
      },
      expected: {
        answers: [NO_ANSWER],
        error: {
          class: 'JournalError',
          code: 'ERR_STRATA_JOURNAL',
          message: `cell 1 diverged from the journal at call 1: the journal has lookup("A1"), the replay called ${shown}`,
          cell: 1,
          seq: 1,
        },
        cell: { cell: 1, code: 'await lookup("A1"); 2', status: 'ok', calls: [lookupCall], result: 2 },
        events: [],
        stops: ['diverged'],
        toolRuns: 0,
      },
    }),
  ),
  {
    title: 'a replay is never live: a replayed cell without calls publishes none of its console lines',
    act: async () => {
      const { recorder, host } = recorderWith(
        {},
        {
          restored: {
            format: 'strata.agent.journal',
            version: 1,
            settings: SETTINGS,
            cells: [{ cell: 1, code: 'console.log(1)', status: 'ok', calls: [] }],
            nextSeq: 1,
          },
        },
      );
      const running = recorder.begin(recorder.journal.cells[0]!, { kind: 'replay' });
      recorder.console({ level: 'log', stream: 'stdout', text: '1' });
      recorder.end(running);
      const live = recorder.begin(recorder.addCell('console.log(2)', 'javascript'), { kind: 'live' });
      recorder.console({ level: 'log', stream: 'stdout', text: '2' });
      recorder.end(live);
      return { answers: [], events: host.events, stops: host.stops };
    },
    expected: { answers: [], events: [{ type: 'console', cell: 2, level: 'log', stream: 'stdout', text: '2' }], stops: [] },
  },
  {
    title: "an extra call on replay, past the journal's calls: a divergence; the recorded call was answered from the journal, no tool runs",
    act: async () => {
      let toolRuns = 0;
      const { recorder, host } = recorderWith({ lookup: () => void toolRuns++ }, { restored: await recordedJournal() });
      const running = recorder.begin(recorder.journal.cells[0]!, { kind: 'replay' });
      const answers = [await answerOf(recorder.call('lookup', ['A1'])), await answerOf(recorder.call('lookup', ['A1']))];
      const divergence = recorder.end(running);
      return { answers, error: errorSeen(divergence), events: host.events, stops: host.stops, toolRuns };
    },
    expected: {
      answers: [{ ok: true, value: 'price A1' }, NO_ANSWER],
      error: {
        class: 'JournalError',
        code: 'ERR_STRATA_JOURNAL',
        message: 'cell 1 diverged from the journal on replay: it calls lookup after its 1 recorded tool calls',
        cell: 1,
      },
      events: [],
      stops: ['diverged'],
      toolRuns: 0,
    },
  },
  {
    title: 'a missing call on replay (the journal has more than the cell made): the call matching sees none, the end-of-replay check names the counts',
    act: async () => {
      const journal = await recordedJournal();
      const cell = journal.cells[0]!;
      cell.calls.push({ ...cell.calls[0]!, seq: 2 });
      journal.nextSeq = 3;
      const { recorder, host } = recorderWith({ lookup: () => 'unused' }, { restored: journal });
      const replayed = recorder.journal.cells[0]!;
      const running = recorder.begin(replayed, { kind: 'replay' });
      const answers = [await answerOf(recorder.call('lookup', ['A1']))];
      const divergence = recorder.end(running);
      const what = replayDivergence(replayed, outcome({ result: 2 }), running.index);
      return { answers, ...(divergence === undefined ? {} : { error: errorSeen(divergence) }), what, events: host.events, stops: host.stops };
    },
    expected: { answers: [{ ok: true, value: 'price A1' }], what: 'it made 1 tool calls, the journal has 2', events: [], stops: [] },
  },
  ...(
    [
      ['approved', { approved: true }, { ok: true, value: 'sent to bob' }],
      ['denied', { approved: false, reason: 'not bob' }, { ok: false, name: 'Error', message: 'the call to send was denied: not bob' }],
    ] as const
  ).map(
    ([what, decision, answer]): Row => ({
      title: `approval ${what}: the cell stops before the tool (the worker goes once its calls settle), the decision resumes it by replay and the call runs or is refused live`,
      act: async () => {
        let toolRuns = 0;
        const { recorder, host } = recorderWith({
          send: {
            execute: (to: string) => {
              toolRuns++;
              return `sent to ${to}`;
            },
            needsApproval: true,
          },
        });
        const record = recorder.addCell('await send("bob")', 'javascript');
        const first = recorder.begin(record, { kind: 'live' });
        const answers: unknown[] = [await answerOf(recorder.call('send', ['bob']))];
        await Promise.all(host.after);
        recorder.end(first);
        const results = [
          finished(recorder, first, outcome({ status: 'error', errorType: 'RuntimeClosed', error: 'the runtime is closed' }), {
            unsettled: false,
            workerClosed: true,
          }),
        ];
        const pending = recorder.pendingCalls;
        const decided = recorder.decide(1, decision);
        if (!('resume' in decided)) throw new Error('the cell should resume');
        const resumed = recorder.begin(decided.resume, { kind: 'resume' });
        answers.push(await answerOf(recorder.call('send', ['bob'])));
        recorder.end(resumed);
        const ended = answer.ok ? outcome({ result: 'done' }) : outcome({ status: 'error', errorType: 'Error', error: answer.message });
        results.push(finished(recorder, resumed, ended));
        return { answers, results, pending, cell: recorder.journal.cells.at(-1), events: host.events, stops: host.stops, toolRuns };
      },
      expected: {
        answers: [NO_ANSWER, answer],
        results: [
          { status: 'awaiting-approval', replayable: true },
          answer.ok ? { status: 'ok', replayable: true } : { status: 'error', errorType: 'Error', error: answer.message, replayable: true },
        ],
        pending: [{ seq: 1, tool: 'send', args: ['bob'] }],
        cell: answer.ok
          ? {
              cell: 1,
              code: 'await send("bob")',
              status: 'ok',
              calls: [{ seq: 1, tool: 'send', args: ['bob'], status: 'completed', ms: 0, result: 'sent to bob' }],
              result: 'done',
            }
          : {
              cell: 1,
              code: 'await send("bob")',
              status: 'error',
              calls: [{ seq: 1, tool: 'send', args: ['bob'], status: 'denied', ms: 0, error: { name: 'Error', message: answer.message } }],
              error: { type: 'Error', message: answer.message },
            },
        events: [
          { type: 'tool-call', cell: 1, seq: 1, tool: 'send', args: ['bob'] },
          { type: 'tool-result', cell: 1, seq: 1, tool: 'send', status: 'pending', ms: 0 },
          answer.ok
            ? { type: 'tool-result', cell: 1, seq: 1, tool: 'send', status: 'completed', ms: 0, result: 'sent to bob' }
            : { type: 'tool-result', cell: 1, seq: 1, tool: 'send', status: 'denied', ms: 0, error: { name: 'Error', message: answer.message } },
        ],
        stops: ['awaiting-approval'],
        toolRuns: answer.ok ? 1 : 0,
      },
    }),
  ),
  {
    title:
      'a call started with no end (the worker died mid-call): the cell is crashed, the call stays started, and what the tool did later is kept as afterCrash',
    act: async () => {
      let finish!: (value: string) => void;
      const { recorder, host } = recorderWith({ slow: () => new Promise<string>((resolve) => (finish = resolve)) });
      const running = recorder.begin(recorder.addCell('await slow()', 'javascript'), { kind: 'live' });
      const call = recorder.call('slow', []);
      await answerOf(call);
      recorder.end(running);
      const results = [
        finished(recorder, running, outcome({ status: 'error', errorType: 'WorkerCrashed', error: 'the worker died' }), {
          unsettled: false,
          workerClosed: true,
        }),
      ];
      finish('late');
      const answers = [await answerOf(call)];
      return { answers, results, cell: recorder.journal.cells.at(-1), events: host.events, stops: host.stops };
    },
    expected: {
      answers: [{ ok: false, name: 'Error', message: 'the call to slow did not complete' }],
      results: [{ status: 'error', errorType: 'WorkerCrashed', error: 'the worker died', replayable: false }],
      cell: {
        cell: 1,
        code: 'await slow()',
        status: 'crashed',
        calls: [{ seq: 1, tool: 'slow', args: [], status: 'started', ms: 0, afterCrash: { status: 'completed', result: 'late' } }],
        error: { type: 'WorkerCrashed', message: 'the worker died' },
      },
      events: [{ type: 'tool-call', cell: 1, seq: 1, tool: 'slow', args: [] }],
      stops: [],
    },
  },
  {
    title: 'session limit exceeded (maxCallsPerCell): the call past it fails without running or being journaled, and the cell is interrupted, not replayable',
    act: async () => {
      let toolRuns = 0;
      const { recorder, host } = recorderWith(
        {
          lookup: (sku: string) => {
            toolRuns++;
            return `price ${sku}`;
          },
        },
        { limits: { maxCallsPerCell: 1 } },
      );
      const running = recorder.begin(recorder.addCell('c', 'javascript'), { kind: 'live' });
      const answers = [
        await answerOf(recorder.call('lookup', ['A1'])),
        await answerOf(recorder.call('lookup', ['B2'])),
        await answerOf(recorder.call('lookup', ['C3'])),
      ];
      recorder.end(running);
      const results = [finished(recorder, running, outcome({ result: 1 }))];
      return { answers, results, cell: recorder.journal.cells.at(-1), events: host.events, stops: host.stops, toolRuns };
    },
    expected: {
      answers: [
        { ok: true, value: 'price A1' },
        { ok: false, name: 'RangeError', message: 'lookup was not called: the cell reached maxCallsPerCell (1 tool calls)' },
        { ok: false, name: 'RangeError', message: 'lookup was not called: the cell reached maxCallsPerCell (1 tool calls)' },
      ],
      results: [
        {
          status: 'error',
          errorType: 'SessionLimitExceeded',
          error: 'lookup was not called: the cell reached maxCallsPerCell (1 tool calls)',
          replayable: false,
        },
      ],
      cell: {
        cell: 1,
        code: 'c',
        status: 'interrupted',
        calls: [lookupCall],
        error: { type: 'SessionLimitExceeded', message: 'lookup was not called: the cell reached maxCallsPerCell (1 tool calls)' },
      },
      events: [
        { type: 'tool-call', cell: 1, seq: 1, tool: 'lookup', args: ['A1'] },
        { type: 'tool-result', cell: 1, seq: 1, tool: 'lookup', status: 'completed', ms: 0, result: 'price A1' },
      ],
      stops: [],
      toolRuns: 1,
    },
  },
  {
    title: 'session limit exceeded (maxCells): a new cell is refused before it is journaled',
    act: async () => {
      const { recorder, host } = recorderWith({}, { limits: { maxCells: 1 } });
      const running = recorder.begin(recorder.addCell('1', 'javascript'), { kind: 'live' });
      recorder.end(running);
      finished(recorder, running, outcome({ result: 1 }));
      let error: unknown;
      try {
        recorder.checkNewCell('2');
      } catch (thrown) {
        error = thrown;
      }
      return { answers: [], error: errorSeen(error), cells: recorder.journal.cells.length, events: host.events, stops: host.stops };
    },
    expected: {
      answers: [],
      error: {
        class: 'SessionLimitExceeded',
        code: 'ERR_STRATA_SESSION_LIMIT',
        message: 'the session has run 1 cells, its maxCells (1): start another, or restore its journal with a larger maxCells',
        limit: 'maxCells',
      },
      cells: 1,
      events: [],
      stops: [],
    },
  },
  {
    title: 'an operation that throws rolls the journal back to its checkpoint; meanwhile the snapshot is the journal before it',
    act: async () => {
      const { recorder, host } = recorderWith({ lookup: (sku: string) => `price ${sku}` });
      let during: Journal | undefined;
      let error: unknown;
      try {
        await recorder.atomically(async () => {
          const running = recorder.begin(recorder.addCell('await lookup("A1")', 'javascript'), { kind: 'live' });
          await recorder.call('lookup', ['A1']);
          recorder.end(running);
          during = recorder.snapshot();
          throw new SessionStateError('failed on purpose');
        });
      } catch (thrown) {
        error = thrown;
      }
      return {
        answers: [],
        error: errorSeen(error),
        during: { cells: during?.cells.length, nextSeq: during?.nextSeq },
        after: { cells: recorder.journal.cells.length, nextSeq: recorder.journal.nextSeq },
        events: host.events,
        stops: host.stops,
      };
    },
    expected: {
      answers: [],
      error: { class: 'SessionStateError', code: 'ERR_STRATA_SESSION_STATE', message: 'failed on purpose' },
      during: { cells: 0, nextSeq: 1 },
      after: { cells: 0, nextSeq: 1 },
      events: [
        { type: 'tool-call', cell: 1, seq: 1, tool: 'lookup', args: ['A1'] },
        { type: 'tool-result', cell: 1, seq: 1, tool: 'lookup', status: 'completed', ms: 0, result: 'price A1' },
      ],
      stops: [],
    },
  },
];

for (const row of rows) {
  test(row.title, async (t) => {
    t.deepEqual(plain(await row.act()), plain(row.expected));
  });
}

// The end-of-replay check is pure: the recorded cell, how the replay ended, how many calls it made.
const cell: CellRecord = { cell: 3, code: 'c', status: 'ok', result: 2, calls: [] };
const thrown: CellRecord = { cell: 3, code: 'c', status: 'error', error: { type: 'TypeError', message: 'x is not a function' }, calls: [] };
const replayRows: readonly (readonly [string, CellRecord, ExecutionResult, number, string | undefined])[] = [
  ['the same ending', cell, outcome({ result: 2 }), 0, undefined],
  [
    'fewer calls',
    { ...cell, calls: [{ seq: 1, tool: 'lookup', args: [], status: 'completed', result: 1, ms: 0 }] },
    outcome({ result: 2 }),
    0,
    'it made 0 tool calls, the journal has 1',
  ],
  ['another result', cell, outcome({ result: 3 }), 0, 'its result differs from the journal'],
  [
    'a throw where the journal has a result',
    cell,
    outcome({ status: 'error', errorType: 'TypeError', error: 'boom' }),
    0,
    'it ended with TypeError: boom, the journal says ok',
  ],
  ['a result where the journal has a throw', thrown, outcome({ result: 2 }), 0, 'it ended with a result, the journal says error'],
  [
    'another error',
    thrown,
    outcome({ status: 'error', errorType: 'RangeError', error: 'x is not a function' }),
    0,
    'it threw RangeError: x is not a function, the journal has TypeError: x is not a function',
  ],
  ['the same error', thrown, outcome({ status: 'error', errorType: 'TypeError', error: 'x is not a function' }), 0, undefined],
];

for (const [title, recorded, ended, calls, expected] of replayRows) {
  test(`replayDivergence: ${title}`, (t) => {
    t.is(replayDivergence(recorded, ended, calls), expected);
  });
}
