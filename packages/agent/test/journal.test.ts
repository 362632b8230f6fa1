// A journal read from outside is checked field by field (it may have been edited or truncated),
// and settings that shape the guest must match for a replay. Pure: no worker.
import test from 'ava';
import { toTaggedJson } from '@strata/wire';
import { JournalError } from '../src/index.js';
import { checkJournal, journalLine, settingsMismatch, type Journal, type JournalSettings } from '../src/journal.js';

const SETTINGS: JournalSettings = {
  strata: '0.1.0',
  clock: { at: Date.UTC(2026, 0, 1), seed: 7 },
  bootstrap: ['a'.repeat(64)],
  tools: ['lookup', 'send'],
  layers: {},
};

function journal(): Journal {
  return structuredClone({
    format: 'strata.agent.journal',
    version: 1,
    settings: SETTINGS,
    cells: [
      {
        cell: 1,
        code: 'await lookup("A1")',
        status: 'ok',
        result: 3.5,
        calls: [{ seq: 1, tool: 'lookup', args: ['A1'], status: 'completed', result: 3.5, ms: 1 }],
      },
      { cell: 2, code: 'x()', status: 'error', error: { type: 'ReferenceError', message: 'x is not defined' }, calls: [] },
      { cell: 3, code: 'await send("a")', status: 'awaiting-approval', calls: [{ seq: 2, tool: 'send', args: ['a'], status: 'pending', ms: 0 }] },
    ],
    nextSeq: 3,
  } satisfies Journal);
}

test('a well-formed journal passes, and the copy shares nothing with the input', (t) => {
  const input = journal();
  const checked = checkJournal(input);
  t.deepEqual(checked, input);
  t.not(checked, input);
  t.not(checked.cells[0], input.cells[0]);
});

const edits: [string, (j: any) => void, RegExp][] = [
  ['not an object', (j) => Object.assign(j, { format: undefined }), /not a Strata session journal/],
  ['another version', (j) => (j.version = 2), /format version 2; this release reads version 1/],
  ['a clock that is not a number', (j) => (j.settings.clock.at = 'soon'), /settings\.clock\.at must be an integer/],
  ['a seed out of range', (j) => (j.settings.clock.seed = 2 ** 32), /settings\.clock\.seed must be an integer from 0 to 4294967295/],
  ['a bootstrap hash that is not one', (j) => (j.settings.bootstrap = ['xyz']), /settings\.bootstrap\[0\] must be a SHA-256/],
  ['strictEval false (only true is written)', (j) => (j.settings.strictEval = false), /strictEval is true or absent/],
  ['cells out of order', (j) => (j.cells[1].cell = 5), /cells\[1\]\.cell must be 2/],
  ['an unknown cell status', (j) => (j.cells[0].status = 'done'), /cells\[0\]\.status must be one of/],
  ['a call seq that goes back', (j) => (j.cells[2].calls[0].seq = 1), /cells\[2\]\.calls\[0\]\.seq must be an integer from 2/],
  ['arguments that are not an array', (j) => (j.cells[0].calls[0].args = 'A1'), /args must be the array of the guest's arguments/],
  ['a failed call without its error', (j) => (j.cells[0].calls[0].status = 'failed'), /is failed without an error/],
  ['a started call in a cell that did not crash', (j) => (j.cells[0].calls[0].status = 'started'), /started without an outcome, but its cell did not crash/],
  ['a pending call in a finished cell', (j) => (j.cells[0].calls[0].status = 'pending'), /only a call of a cell awaiting approval can be/],
  [
    'approval awaited in a cell that is not the last',
    (j) => j.cells.push({ cell: 4, code: '', status: 'ok', calls: [] }),
    /awaits approval but is not the last cell/,
  ],
  [
    'an awaiting cell without its pending call',
    (j) => Object.assign(j.cells[2].calls[0], { status: 'completed', result: 1 }),
    /at least one of its calls must be pending without a decision/,
  ],
  ['nextSeq behind the calls', (j) => (j.nextSeq = 2), /nextSeq must be an integer from 3/],
  ['a negative duration', (j) => (j.cells[0].calls[0].ms = -1), /ms must be an integer from 0/],
];

for (const [label, edit, message] of edits) {
  test(`a journal with ${label} is a JournalError naming the field`, (t) => {
    const j = journal();
    edit(j);
    const error = t.throws(() => checkJournal(j), { instanceOf: JournalError, message });
    t.is(error?.code, 'ERR_STRATA_JOURNAL');
  });
}

test('what is not data at all is a JournalError, never another exception', (t) => {
  const cyclic: Record<string, unknown> = { format: 'strata.agent.journal' };
  cyclic['self'] = cyclic;
  let deep: unknown = {};
  for (let i = 0; i < 100_000; i++) deep = { d: deep };
  for (const input of [
    undefined,
    null,
    42,
    'journal',
    [],
    cyclic,
    deep,
    {
      toJSON: () => {
        throw new Error('boom');
      },
    },
  ]) {
    t.throws(() => checkJournal(input), { instanceOf: JournalError });
  }
});

test('settingsMismatch names each setting that shapes the guest; the layers do not count', (t) => {
  t.is(settingsMismatch(SETTINGS, { ...SETTINGS, layers: { sandbox: 'off' } }), undefined);
  t.is(settingsMismatch(SETTINGS, { ...SETTINGS, strata: '0.1.9' }), undefined, 'a patch release reads the journal');
  const cases: [Partial<JournalSettings>, RegExp][] = [
    [{ strata: '0.2.0' }, /recorded by Strata 0\.1\.0, this is 0\.2\.0/],
    [{ clock: { at: 0, seed: 7 } }, /its clock is 2026-01-01T00:00:00\.000Z, this session's 1970-01-01T00:00:00\.000Z/],
    [{ clock: { at: SETTINGS.clock.at, seed: 8 } }, /its seed is 7, this session's 8/],
    [{ bootstrap: [] }, /its bootstrap scripts differ/],
    [{ strictEval: true }, /recorded with strictEval off, this session has it on/],
    [{ allowGlobals: ['WeakRef'] }, /its allowGlobals differ/],
    [{ tools: ['lookup'] }, /its tools are \[lookup, send\], this session's \[lookup\]/],
  ];
  for (const [change, message] of cases) t.regex(settingsMismatch(SETTINGS, { ...SETTINGS, ...change }) ?? '', message);
  t.is(journalLine('0.1.3'), '0.1');
  t.is(journalLine('1.4.0'), '1');
});

// Every tagged value is checked as fromTaggedJson will read it: a journal that passes never fails
// to decode later (in `pending`, a replay's answer, a cell's calls).
const badValues: [string, (j: any) => void, number, number | undefined, RegExp][] = [
  [
    'an unknown tag in a result',
    (j) => (j.cells[0].calls[0].result = { $bogus: 1 }),
    1,
    1,
    /cells\[0\]\.calls\[0\]\.result \(cell 1, call 1\): unknown tag "\$bogus"/,
  ],
  [
    'an unknown tag deep in a pending call’s arguments',
    (j) => (j.cells[2].calls[0].args = [{ a: [{ $nope: [] }] }]),
    3,
    2,
    /cells\[2\]\.calls\[0\]\.args \(cell 3, call 2\): unknown tag "\$nope"/,
  ],
  ['a bigint that is not one', (j) => (j.cells[0].calls[0].result = { $bigint: '12n' }), 1, 1, /the tag "\$bigint" must hold a decimal integer/],
  ['a number tag that is not one of its four', (j) => (j.cells[0].calls[0].result = { $number: '5' }), 1, 1, /the tag "\$number" must hold 'NaN'/],
  [
    'a date that is not ISO',
    (j) => (j.cells[0].result = { $date: 'soon' }),
    1,
    undefined,
    /cells\[0\]\.result \(cell 1\): the tag "\$date" must hold an ISO date/,
  ],
  ['bytes that are not base64', (j) => (j.cells[0].calls[0].result = { $bytes: '*&^%' }), 1, 1, /the tag "\$bytes" must hold base64/],
  [
    'a map whose entries are not pairs',
    (j) => (j.cells[0].calls[0].result = { $map: [[1]] }),
    1,
    1,
    /the tag "\$map" must hold an array of \[key, value\] pairs/,
  ],
  ['a set that is not an array', (j) => (j.cells[0].calls[0].result = { $set: 1 }), 1, 1, /the tag "\$set" must hold an array/],
  ['an escaped object that is not an object', (j) => (j.cells[0].calls[0].result = { $object: 'x' }), 1, 1, /the tag "\$object" must hold an object/],
  ['undefined that is not true', (j) => (j.cells[0].calls[0].result = { $undefined: 1 }), 1, 1, /the tag "\$undefined" must hold true/],
  ['a bad tag inside a map key', (j) => (j.cells[0].calls[0].result = { $map: [[{ $x: 1 }, 2]] }), 1, 1, /unknown tag "\$x"/],
  [
    'a bad tag in what a tool did after a crash',
    (j) =>
      Object.assign(j.cells[0], { status: 'crashed', error: { type: 'WorkerCrashed', message: 'x' } }) &&
      Object.assign(j.cells[0].calls[0], { status: 'started', result: undefined, afterCrash: { status: 'completed', result: { $q: 1 } } }),
    1,
    1,
    /cells\[0\]\.calls\[0\]\.afterCrash\.result \(cell 1, call 1\): unknown tag "\$q"/,
  ],
  [
    'an afterCrash of another shape',
    (j) =>
      Object.assign(j.cells[0], { status: 'crashed' }) &&
      Object.assign(j.cells[0].calls[0], { status: 'started', result: undefined, afterCrash: { status: 'maybe' } }),
    1,
    1,
    /afterCrash\.status must be completed or failed/,
  ],
  ['a decision on a call that is not pending', (j) => (j.cells[0].calls[0].approval = { approved: true }), 1, 1, /approval is only for a pending call/],
];

for (const [label, edit, cell, seq, message] of badValues) {
  test(`a journal with ${label} is a JournalError naming the cell, the call and the field`, (t) => {
    const j = journal();
    edit(j);
    const error = t.throws(() => checkJournal(j), { instanceOf: JournalError, message });
    t.is(error?.cell, cell);
    t.is(error?.seq, seq);
  });
}

test('every value the wire tags passes, and a deep one does not overflow the check', (t) => {
  const j = journal();
  j.cells[0]!.calls[0]!.result = toTaggedJson([
    undefined,
    -0,
    NaN,
    12n,
    new Date(0),
    new Date(NaN),
    new Uint8Array([1, 2, 3]),
    new Map([[1, new Set([2])]]),
    { $looks: 'like a tag' },
  ]);
  let deep: any = 1;
  for (let i = 0; i < 1000; i++) deep = [deep];
  j.cells[0]!.result = deep;
  t.notThrows(() => checkJournal(j));
});

test('parallel approvals: an awaiting cell may hold several pending calls, decided or not, as long as one awaits a decision', (t) => {
  const j = journal();
  j.cells[2]!.calls.push({ seq: 3, tool: 'send', args: ['b'], status: 'pending', ms: 0, approval: { approved: false, reason: 'no' } });
  j.nextSeq = 4;
  t.notThrows(() => checkJournal(j));
  j.cells[2]!.calls[0]!.approval = { approved: true };
  t.throws(() => checkJournal(j), { instanceOf: JournalError, message: /at least one of its calls must be pending without a decision/ });
});
