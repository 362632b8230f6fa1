// The journal stores: the contract (test/helpers/store-contract.ts) against the memory store and
// the SQLite store, then what is SQLite's own: a file shared by two connections (as by two
// processes), a writer locked out, a transaction that fails half-way, the file's mode, and rows
// corrupted in the file, which load back as a JournalError naming the session and the row.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import test from 'ava';
import { InvalidOption } from '@strata/runtime';
import { JournalError, JournalStoreError, MemoryJournalStore, SessionLimitExceeded, SqliteJournalStore } from '../src/index.js';
import { assembleJournal, JournalRows } from '../src/stores/journal-rows.js';
import type { Journal } from '../src/journal.js';
import { journalStoreContract } from './helpers/store-contract.js';

const folder = mkdtempSync(join(tmpdir(), 'strata-stores-'));
test.after.always(() => rmSync(folder, { recursive: true, force: true }));
let files = 0;
const freshFile = () => join(folder, `store-${++files}.db`);

journalStoreContract(test, 'memory', async () => new MemoryJournalStore());
journalStoreContract(test, 'sqlite', async () => SqliteJournalStore.open(freshFile()));
journalStoreContract(test, 'sqlite in memory', async () => SqliteJournalStore.open(':memory:'));

test('sqlite: a new file is readable by its owner only', async (t) => {
  const path = freshFile();
  const store = SqliteJournalStore.open(path);
  await store.create('mode', '{}', undefined);
  await store.close();
  t.is(statSync(path).mode & 0o777, 0o600);
});

test('sqlite: two connections to one file (as two processes) see each other, and their leases fence each other', async (t) => {
  const path = freshFile();
  const a = SqliteJournalStore.open(path);
  const b = SqliteJournalStore.open(path);
  try {
    const { lease } = await a.create('shared', '{}', { owner: 'a', ttlMs: 60_000 });
    await t.throwsAsync(b.acquireLease('shared', 'b', 1000), { message: /leased by a/ });
    await a.append('shared', { cells: [{ cell: 1, record: '{"x":1}' }], calls: [], nextSeq: 1 }, { version: 1, lease: lease! });
    t.is((await b.load('shared'))?.cells.length, 1);
    await a.releaseLease(lease!);
    const taken = await b.acquireLease('shared', 'b', 1000);
    t.is(taken.token, 2);
    await t.throwsAsync(a.append('shared', { cells: [], calls: [], nextSeq: 1 }, { version: 2, lease: lease! }), { message: /taken over/ });
  } finally {
    await a.close();
    await b.close();
  }
});

test('sqlite: a writer locked out by another waits for it without holding the event loop, or fails past busyTimeoutMs', async (t) => {
  const path = freshFile();
  const store = SqliteJournalStore.open(path, { busyTimeoutMs: 2000 });
  const impatient = SqliteJournalStore.open(path, { busyTimeoutMs: 0 });
  await store.create('locked', '{}', undefined);
  const other = new DatabaseSync(path);
  other.exec('PRAGMA busy_timeout = 0');
  other.exec('BEGIN IMMEDIATE');
  try {
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 5);
    const waiting = store.append('locked', { cells: [{ cell: 1, record: '{}' }], calls: [], nextSeq: 1 }, { version: 1 });
    await t.throwsAsync(impatient.append('locked', { cells: [], calls: [], nextSeq: 1 }, { version: 1 }), {
      instanceOf: JournalStoreError,
      message: /stayed locked by another writer for 0 ms \(busyTimeoutMs\)/,
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    other.exec('COMMIT');
    t.is(await waiting, 2);
    clearInterval(ticker);
    t.true(ticks >= 10, `the event loop ran while the write waited (${ticks} ticks)`);
  } finally {
    other.close();
    await store.close();
    await impatient.close();
  }
});

test('sqlite: a write that fails half-way leaves the file as it was before it', async (t) => {
  const path = freshFile();
  const store = SqliteJournalStore.open(path);
  await store.create('half', '{}', undefined);
  await store.append('half', { cells: [{ cell: 1, record: '{"before":true}' }], calls: [], nextSeq: 1 }, { version: 1 });
  // A trigger makes the second call row of the next write fail, after its cell row and first call row went in.
  const admin = new DatabaseSync(path);
  admin.exec("CREATE TRIGGER refuse BEFORE INSERT ON strata_calls WHEN NEW.seq = 2 BEGIN SELECT RAISE(ABORT, 'disk says no'); END");
  admin.close();
  const failed = await t.throwsAsync(
    store.append(
      'half',
      {
        cells: [
          { cell: 1, record: '{"before":false}' },
          { cell: 2, record: '{}' },
        ],
        calls: [
          { cell: 2, seq: 1, record: '{}' },
          { cell: 2, seq: 2, record: '{}' },
        ],
        nextSeq: 3,
      },
      { version: 2 },
    ),
    { instanceOf: JournalStoreError },
  );
  t.regex(failed.message, /disk says no/);
  const rows = await store.load('half');
  t.deepEqual(rows?.cells, [{ cell: 1, record: '{"before":true}' }]);
  t.deepEqual(rows?.calls, []);
  t.is(rows?.session.version, 2);
  t.is(rows?.session.nextSeq, 1);
  await store.close();
});

test('sqlite: a file that is not a store, or of another schema, is a clear error', async (t) => {
  const path = freshFile();
  const other = new DatabaseSync(path);
  other.exec("CREATE TABLE strata_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL); INSERT INTO strata_meta VALUES ('schema', '99')");
  other.close();
  t.throws(() => SqliteJournalStore.open(path), { instanceOf: JournalStoreError, message: /schema is version 99/ });
  t.throws(() => SqliteJournalStore.open(join(folder, 'no-such-folder', 'x.db')), { instanceOf: JournalStoreError, message: /cannot create/ });
  t.throws(() => SqliteJournalStore.open(''), { instanceOf: InvalidOption });
  t.throws(() => SqliteJournalStore.open(freshFile(), { durability: 'sometimes' as 'full' }), { instanceOf: InvalidOption });
});

// --- rows and journals, both ways ------------------------------------------------------------

const SETTINGS = { strata: '0.1.0', clock: { at: 0, seed: 1 }, bootstrap: [], tools: ['lookup'], layers: {} };

function journalOf(cells: Journal['cells'], nextSeq: number): Journal {
  return { format: 'strata.agent.journal', version: 1, settings: SETTINGS, cells, nextSeq };
}

test('rows: a journal written row by row loads back the same, and a write carries only what changed', async (t) => {
  const store = new MemoryJournalStore();
  await store.create('rows', JSON.stringify(SETTINGS), undefined);
  const journal = journalOf([], 1);
  const rows = new JournalRows(undefined);
  let version = 1;
  const sync = async (open?: number) => {
    const append = rows.diff(journal, open);
    if (append === undefined) return undefined;
    version = await store.append('rows', append, { version });
    rows.written(journal, append);
    return append;
  };
  journal.cells.push({ cell: 1, code: 'await lookup("a")', status: 'ok', calls: [] });
  t.deepEqual((await sync(1))?.cells, [{ cell: 1, record: '{"code":"await lookup(\\"a\\")","status":"running"}' }]);
  journal.cells[0]!.calls.push({ seq: 1, tool: 'lookup', args: ['a'], status: 'started', ms: 0 });
  journal.nextSeq = 2;
  const started = await sync(1);
  t.deepEqual(started?.cells, [], 'the cell row did not change');
  t.is(started?.calls.length, 1);
  Object.assign(journal.cells[0]!.calls[0]!, { status: 'completed', result: 7, ms: 3 });
  t.is((await sync(1))?.calls.length, 1);
  journal.cells[0]!.result = 7;
  const ended = await sync(undefined);
  t.deepEqual(ended?.cells, [{ cell: 1, record: '{"code":"await lookup(\\"a\\")","status":"ok","result":7}' }]);
  t.deepEqual(ended?.calls, []);
  t.is(await sync(undefined), undefined, 'nothing left to write');
  const loaded = assembleJournal((await store.load('rows'))!);
  t.deepEqual(loaded.journal, { ...journal, session: 'rows' });
  // A rollback of the last cell (the operation failed) is written as a truncation.
  journal.cells.push({ cell: 2, code: '1', status: 'ok', calls: [] });
  await sync(2);
  journal.cells.length = 1;
  const rolledBack = await sync(undefined);
  t.is(rolledBack?.truncateFrom, 2);
  t.is(assembleJournal((await store.load('rows'))!).journal.cells.length, 1);
});

test('rows: a corrupted row is a JournalError naming the session, the cell and the seq', async (t) => {
  const rows = {
    session: {
      sessionId: 'bad',
      format: 1,
      settings: JSON.stringify(SETTINGS),
      nextSeq: 3,
      version: 4,
      lease: { owner: null, token: 0, expiresAt: null },
      createdAt: 0,
      updatedAt: 0,
    },
    cells: [{ cell: 1, record: '{"code":"1","status":"ok"}' }],
    calls: [
      { cell: 1, seq: 1, record: '{"tool":"lookup","args":[],"status":"completed","result":1,"ms":0}' },
      { cell: 1, seq: 2, record: '{"tool":"lookup","args":[],"status":"compl' },
    ],
  };
  const truncated = t.throws(() => assembleJournal(rows), { instanceOf: JournalError });
  t.regex(truncated.message, /^session "bad": the row of call 2 \(cell 1\) is not JSON/);
  t.is(truncated.cell, 1);
  t.is(truncated.seq, 2);
  const edited = t.throws(() => assembleJournal({ ...rows, calls: [{ cell: 1, seq: 1, record: '{"tool":"lookup","args":[],"status":"done","ms":0}' }] }), {
    instanceOf: JournalError,
  });
  t.regex(edited.message, /^session "bad": cells\[0\]\.calls\[0\]\.status must be one of/);
  t.is(edited.seq, 1);
  const orphan = t.throws(() => assembleJournal({ ...rows, calls: [{ cell: 5, seq: 1, record: '{}' }] }), { instanceOf: JournalError });
  t.regex(orphan.message, /belongs to cell 5, which the store does not have/);
  t.throws(() => assembleJournal(rows, { maxJournalBytes: 50 }), { instanceOf: SessionLimitExceeded, message: /^session "bad": the stored journal/ });
});
