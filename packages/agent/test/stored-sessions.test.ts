// Sessions kept in a store (SQLite files here; the PostgreSQL store runs the same contract in its
// own package): start persists from the first cell and resume takes the session up in another
// object or process, with no tool run again; the lease lets one holder run it at a time; each
// tool call has a stable id; a process killed or paused mid-cell loses the session to the next
// resume after its lease, whose continue() retries the call that had started under its id while
// the paused side's late writes are refused; a store that fails mid-cell interrupts the cell
// and loses nothing.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { DatabaseSync } from 'node:sqlite';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { InvalidOption } from '@strata/runtime';
import {
  AgentSandbox,
  currentToolCall,
  JournalConflict,
  JournalStoreError,
  LeaseHeld,
  LeaseLost,
  SessionStateError,
  SqliteJournalStore,
  ToolBridge,
  type JournalAppend,
  type JournalStore,
  type ToolCallContext,
} from '../src/index.js';
import { CHILD_CELL } from './fixtures/stored-session-cell.js';
import { checkNoLeaks, gate } from './helpers/leaks.js';

checkNoLeaks(test);

const CHILD = fileURLToPath(new URL('./fixtures/stored-session-child.js', import.meta.url));
const folder = mkdtempSync(join(tmpdir(), 'strata-stored-'));
test.after.always(() => rmSync(folder, { recursive: true, force: true }));
let files = 0;
const freshFile = () => join(folder, `sessions-${++files}.db`);

/** A store that records every append it is given (and passes everything on to `inner`). */
function recording(inner: JournalStore): { store: JournalStore; appends: JournalAppend[] } {
  const appends: JournalAppend[] = [];
  const store: JournalStore = {
    name: inner.name,
    create: (...args) => inner.create(...args),
    load: (...args) => inner.load(...args),
    append: (sessionId, append, expect) => {
      appends.push(append);
      return inner.append(sessionId, append, expect);
    },
    list: (...args) => inner.list(...args),
    delete: (...args) => inner.delete(...args),
    acquireLease: (...args) => inner.acquireLease(...args),
    renewLease: (...args) => inner.renewLease(...args),
    releaseLease: (...args) => inner.releaseLease(...args),
    close: () => inner.close(),
  };
  return { store, appends };
}

/** Tools that count their calls and keep each call's context. */
function counted() {
  const count = { lookup: 0, charge: 0 };
  const contexts: ToolCallContext[] = [];
  const tools = {
    lookup: async (sku: string) => {
      count.lookup++;
      contexts.push(currentToolCall()!);
      return { sku, price: sku.length * 100 };
    },
    charge: async (cents: number) => {
      count.charge++;
      contexts.push(currentToolCall()!);
      return { charged: cents };
    },
  };
  return { tools, count, contexts };
}

test('start persists from the first cell; resume in another object replays it (no tool runs again) and goes on', async (t) => {
  const store = SqliteJournalStore.open(freshFile());
  t.teardown(() => store.close());
  const first = counted();
  const session = await AgentSandbox.start({ tools: first.tools, store, sessionId: 'order-1' });
  t.is(session.id, 'order-1');
  t.is((await session.run('const item = await lookup("A12"); item.price')).result, 300);
  t.is((await session.run('const paid = await charge(item.price); paid.charged')).result, 300);
  const journal = session.journal;
  await session.close();
  t.deepEqual(first.count, { lookup: 1, charge: 1 });

  const second = counted();
  const resumed = await AgentSandbox.resume('order-1', { tools: second.tools, store });
  t.deepEqual(resumed.journal, journal, 'the store gives back the journal the session had');
  t.deepEqual(second.count, { lookup: 0, charge: 0 }, 'the replay calls no tool');
  const next = await resumed.run('[item.sku, paid.charged, await lookup("B")]');
  t.deepEqual(next.result, ['A12', 300, { sku: 'B', price: 100 }]);
  t.like(next.calls[0], { seq: 3, tool: 'lookup', status: 'completed' });
  t.deepEqual(second.count, { lookup: 1, charge: 0 });
  await resumed.close();

  const summaries = await store.list();
  t.like(summaries[0], { sessionId: 'order-1', cells: 3 });
  t.is(summaries[0]?.leasedBy, undefined, 'close gives the lease up');
});

test('restore with a store moves a journal kept in memory into the store, every cell; a second restore of that id is JournalConflict', async (t) => {
  const store = SqliteJournalStore.open(freshFile());
  t.teardown(() => store.close());
  const { tools, count } = counted();
  const inMemory = await AgentSandbox.start({ tools, sessionId: 'moved' });
  await inMemory.run('const item = await lookup("AB"); item.price');
  await inMemory.run('const paid = await charge(item.price)');
  const journal = inMemory.journal;
  await inMemory.close();
  t.is(journal.session, 'moved');

  const moved = await AgentSandbox.restore(journal, { tools, store });
  t.is(moved.id, 'moved', "the journal's id");
  await moved.close();
  t.deepEqual(
    (await store.load('moved'))?.cells.map((c) => c.cell),
    [1, 2],
  );
  await t.throwsAsync(AgentSandbox.restore(journal, { tools, store }), { instanceOf: JournalConflict, message: /resume it/ });
  await using resumed = await AgentSandbox.resume('moved', { tools, store });
  t.deepEqual((await resumed.run('[item.price, paid.charged]')).result, [200, 200]);
  t.deepEqual(count, { lookup: 1, charge: 1 });
});

test('appends are incremental: the running cell and its calls, never the cells before', async (t) => {
  const { store, appends } = recording(SqliteJournalStore.open(freshFile()));
  t.teardown(() => store.close());
  const { tools } = counted();
  await using session = await AgentSandbox.start({ tools, store });
  await session.run('globalThis.a = await lookup("x"); 1');
  await session.run('2');
  appends.length = 0;
  await session.run('const [p, q] = await Promise.all([lookup("p"), charge(3)]); const r = await lookup("rr"); [p.price, q.charged, r.price]');
  t.true(appends.length >= 2, 'the cell as running, its calls, its end');
  for (const append of appends) {
    t.true(
      append.cells.every((c) => c.cell === 3),
      'only the cell that runs',
    );
    t.true(
      append.calls.every((c) => c.cell === 3),
      'only its calls',
    );
    t.is(append.truncateFrom, undefined);
  }
  const last = appends.at(-1)!;
  t.is(JSON.parse(last.cells[0]!.record).status, 'ok');
  const stored = await store.load(session.id);
  t.deepEqual(
    stored?.calls.filter((c) => c.cell === 3).map((c) => JSON.parse(c.record).status),
    ['completed', 'completed', 'completed'],
  );
});

test('a tool call is durable as started before the tool runs, and its context carries its stable id and a signal', async (t) => {
  const store = SqliteJournalStore.open(freshFile());
  t.teardown(() => store.close());
  const seen: { context: ToolCallContext | undefined; aborted: boolean | undefined; stored: string[] }[] = [];
  const bridge = new ToolBridge({
    namespace: 'pay',
    tools: {
      refund: {
        inputSchema: { type: 'object', properties: { cents: { type: 'integer' } }, required: ['cents'] },
        async execute(input: { cents: number }, context?: ToolCallContext) {
          const rows = await store.load(context!.sessionId);
          seen.push({ context, aborted: context?.signal.aborted, stored: rows!.calls.map((c) => JSON.parse(c.record).status) });
          return input.cents;
        },
      },
    },
  });
  const log = new ToolBridge({
    namespace: 'log',
    tools: {
      note: {
        // No second parameter: currentToolCall() gives the same context.
        async execute() {
          const context = currentToolCall();
          const rows = await store.load(context!.sessionId);
          seen.push({ context, aborted: context?.signal.aborted, stored: rows!.calls.map((c) => JSON.parse(c.record).status) });
          return 'noted';
        },
      },
    },
  });
  await using session = await AgentSandbox.start({ tools: [log, bridge], store, sessionId: 'ids' });
  const result = await session.run('[await log.note(), await pay.refund({ cents: 5 })]');
  t.deepEqual(result.result, ['noted', 5]);
  t.like(seen[0]?.context, { id: 'ids:1', sessionId: 'ids', seq: 1, cell: 1, tool: 'log.note', retry: false });
  t.like(seen[1]?.context, { id: 'ids:2', seq: 2, tool: 'pay.refund', retry: false });
  t.true(seen[0]?.context?.signal instanceof AbortSignal);
  t.false(seen[0]?.aborted, 'not aborted while the cell runs');
  t.true(seen[0]?.context?.signal.aborted, 'aborted once the cell has ended');
  t.deepEqual(seen[0]?.stored, ['started'], 'the store had the call as started when the tool ran');
  t.deepEqual(seen[1]?.stored, ['completed', 'started']);
  t.is(currentToolCall(), undefined, 'outside a tool call there is none');
});

test('a cell awaiting approval is kept in the store: approved after a resume in another object, the tool runs there, once', async (t) => {
  const store = SqliteJournalStore.open(freshFile());
  t.teardown(() => store.close());
  const sent: { to: string; id: string | undefined }[] = [];
  const tools = () => ({
    send: {
      needsApproval: true,
      execute: async (to: string) => {
        sent.push({ to, id: currentToolCall()?.id });
        return `sent to ${to}`;
      },
    },
  });
  const session = await AgentSandbox.start({ tools: tools(), store, sessionId: 'approve-later' });
  const waiting = await session.run('const receipt = await send("ops"); receipt');
  t.is(waiting.status, 'awaiting-approval');
  await session.close();
  t.deepEqual(sent, []);

  await using resumed = await AgentSandbox.resume('approve-later', { tools: tools(), store });
  const approved = await resumed.approve(waiting.pending!.seq);
  t.is(approved.result, 'sent to ops');
  t.deepEqual(sent, [{ to: 'ops', id: 'approve-later:1' }]);
  t.like((await store.load('approve-later'))?.cells[0], { cell: 1 });
  t.is(JSON.parse((await store.load('approve-later'))!.cells[0]!.record).status, 'ok');
});

test('close() while a cell runs (a machine drained) leaves the cell interrupted in the store, and resume + continue() finish it elsewhere', async (t) => {
  const store = SqliteJournalStore.open(freshFile());
  t.teardown(() => store.close());
  const reached = gate();
  const tools = {
    wait: () => {
      reached.open();
      return new Promise<never>(() => {});
    },
  };
  const draining = await AgentSandbox.start({ tools, store, sessionId: 'drained' });
  await draining.run('globalThis.before = 1');
  const running = draining.run('before + (await wait())');
  await reached.promise;
  await draining.close();
  t.is((await running).errorType, 'RuntimeClosed');
  t.is(JSON.parse((await store.load('drained'))!.cells[1]!.record).status, 'running');
  await using resumed = await AgentSandbox.resume('drained', { tools: { wait: async () => 41 }, store });
  t.like(resumed.interrupted, { cell: 2 });
  t.is((await resumed.continue()).result, 42);
});

test('the lease: a second resume is LeaseHeld while the session lives (also after waiting), and takes it at once after close', async (t) => {
  const file = freshFile();
  const store = SqliteJournalStore.open(file);
  const other = SqliteJournalStore.open(file);
  t.teardown(async () => {
    await store.close();
    await other.close();
  });
  // A TTL that a loaded test machine's timers cannot miss (renewed every third of it), waited on for more than two.
  const session = await AgentSandbox.start({ store, sessionId: 'held', lease: { ttlMs: 1_500 } });
  await session.run('globalThis.x = 41');
  await t.throwsAsync(AgentSandbox.resume('held', { store: other }), { instanceOf: LeaseHeld, message: /runs elsewhere/ });
  // Renewed every third of its TTL, the lease outlives several TTLs of waiting.
  const waited = await t.throwsAsync(AgentSandbox.resume('held', { store: other, lease: { waitMs: 3_500 } }), { instanceOf: LeaseHeld });
  t.regex(waited.message, /waited 3500 ms/);
  await session.close();
  await using resumed = await AgentSandbox.resume('held', { store: other });
  t.is((await resumed.run('x + 1')).result, 42);
});

test('start with an id the store has is JournalConflict; resume of an unknown id is JournalStoreError; bad options are InvalidOption', async (t) => {
  const store = SqliteJournalStore.open(freshFile());
  t.teardown(() => store.close());
  const session = await AgentSandbox.start({ store, sessionId: 'taken' });
  await session.close();
  await t.throwsAsync(AgentSandbox.start({ store, sessionId: 'taken' }), { instanceOf: JournalConflict });
  await t.throwsAsync(AgentSandbox.resume('nobody', { store }), { instanceOf: JournalStoreError, message: /nobody/ });
  await t.throwsAsync(AgentSandbox.resume('taken', {} as never), { instanceOf: InvalidOption, message: /options.store/ });
  await t.throwsAsync(AgentSandbox.resume('bad id!', { store }), { instanceOf: InvalidOption, message: /sessionId/ });
  await t.throwsAsync(AgentSandbox.resume('taken', { store, sessionId: 'other' }), { instanceOf: InvalidOption, message: /another session/ });
  await t.throwsAsync(AgentSandbox.start({ lease: { ttlMs: 1000 } }), { instanceOf: InvalidOption, message: /give store too/ });
  await t.throwsAsync(AgentSandbox.start({ store, lease: { ttlMs: 5 } }), { instanceOf: InvalidOption, message: /lease.ttlMs/ });
  await t.throwsAsync(AgentSandbox.start({ store, lease: { waitMs: -1 } }), { instanceOf: InvalidOption, message: /lease.waitMs/ });
  await t.throwsAsync(AgentSandbox.start({ store: { name: 'half' } as never }), { instanceOf: InvalidOption, message: /JournalStore/ });
  await t.throwsAsync(AgentSandbox.start({ sessionId: 'x'.repeat(129) }), { instanceOf: InvalidOption, message: /sessionId/ });
  t.deepEqual(
    (await store.list()).map((s) => s.sessionId),
    ['taken'],
    'nothing refused was created',
  );
});

test('a session whose stored row is deleted under it loses it: the next write is LeaseLost and the session closes, saying why', async (t) => {
  const file = freshFile();
  const store = SqliteJournalStore.open(file);
  const admin = SqliteJournalStore.open(file);
  t.teardown(async () => {
    await store.close();
    await admin.close();
  });
  const { tools, count } = counted();
  const session = await AgentSandbox.start({ tools, store, sessionId: 'gone' });
  await session.run('1');
  t.true(await admin.delete('gone'));
  await t.throwsAsync(session.run('await lookup("z")'), { instanceOf: LeaseLost });
  t.is(count.lookup, 0, 'the cell never ran');
  await t.throwsAsync(session.run('2'), { instanceOf: SessionStateError, message: /closed: .*gone/ });
  await session.close();
});

test('a lease lost while a cell runs (a renewal refused) ends that run with LeaseLost', async (t) => {
  const file = freshFile();
  const store = SqliteJournalStore.open(file);
  const admin = SqliteJournalStore.open(file);
  t.teardown(async () => {
    await store.close();
    await admin.close();
  });
  const tools = {
    slow: async () => {
      await admin.delete('renewed');
      // Long enough for a renewal (every third of the 150 ms TTL) to find the lease gone.
      await new Promise((resolve) => setTimeout(resolve, 400));
      return 1;
    },
  };
  const session = await AgentSandbox.start({ tools, store, sessionId: 'renewed', lease: { ttlMs: 150 } });
  await t.throwsAsync(session.run('await slow()'), { instanceOf: LeaseLost });
  await t.throwsAsync(session.run('1'), { instanceOf: SessionStateError, message: /closed/ });
  await session.close();
});

test('a store that fails when a cell begins: the run rejects, no tool runs, the journal is as it was, and the next run works', async (t) => {
  const file = freshFile();
  const store = SqliteJournalStore.open(file, { busyTimeoutMs: 20 });
  t.teardown(() => store.close());
  const { tools, count } = counted();
  await using session = await AgentSandbox.start({ tools, store, sessionId: 'locked-at-start' });
  await session.run('globalThis.n = 1');
  const locker = new DatabaseSync(file);
  locker.exec('BEGIN IMMEDIATE');
  try {
    await t.throwsAsync(session.run('await lookup("q")'), { instanceOf: JournalStoreError });
  } finally {
    locker.exec('ROLLBACK');
    locker.close();
  }
  t.is(count.lookup, 0);
  t.is(session.journal.cells.length, 1);
  t.is(session.interrupted, undefined);
  const next = await session.run('n + (await lookup("qq")).price');
  t.is(next.result, 201);
  t.is(next.cell, 2);
  t.is((await store.load('locked-at-start'))?.cells.length, 2);
});

test("a store that fails on a tool's answer: the cell is interrupted, nothing is lost; continue() answers the call that ended from the journal", async (t) => {
  const file = freshFile();
  const store = SqliteJournalStore.open(file, { busyTimeoutMs: 20 });
  t.teardown(() => store.close());
  let locker: DatabaseSync | undefined;
  const count = { lookup: 0, charge: 0 };
  const contexts: ToolCallContext[] = [];
  const tools = {
    lookup: async (sku: string) => {
      count.lookup++;
      // The database is taken by someone else while this tool runs: its answer cannot be written.
      locker = new DatabaseSync(file);
      locker.exec('BEGIN IMMEDIATE');
      return { price: sku.length };
    },
    charge: async (cents: number) => {
      count.charge++;
      contexts.push(currentToolCall()!);
      return cents;
    },
  };
  await using session = await AgentSandbox.start({ tools, store, sessionId: 'locked-mid-cell' });
  const cell = 'const p = await lookup("abc"); const c = await charge(p.price * 10); [p.price, c]';
  const failed = await session.run(cell);
  t.is(failed.status, 'error');
  t.is(failed.errorType, 'JournalStoreError');
  t.regex(failed.error ?? '', /continue\(\)/);
  t.deepEqual(session.interrupted, { cell: 1, code: cell });
  t.deepEqual(count, { lookup: 1, charge: 0 }, "the guest never heard lookup's answer");
  await t.throwsAsync(session.run('1'), { instanceOf: SessionStateError, message: /continue\(\) it, or abandon\(\) it/ });
  await t.throwsAsync(session.continue(), { instanceOf: JournalStoreError }, 'still locked: continue fails as well');
  locker!.exec('ROLLBACK');
  locker!.close();
  const continued = await session.continue();
  t.is(continued.status, 'ok');
  t.deepEqual(continued.result, [3, 30]);
  t.deepEqual(count, { lookup: 1, charge: 1 }, 'lookup ended before: answered from the journal');
  t.like(contexts[0], { id: 'locked-mid-cell:2', retry: false });
  t.is(session.interrupted, undefined);
  const stored = await store.load('locked-mid-cell');
  t.is(JSON.parse(stored!.cells[0]!.record).status, 'ok');
  t.deepEqual(
    stored!.calls.map((c) => JSON.parse(c.record).status),
    ['completed', 'completed'],
  );
});

test('abandon() gives the interrupted cell up: kept as crashed, never replayed, and the session goes on', async (t) => {
  const file = freshFile();
  const store = SqliteJournalStore.open(file, { busyTimeoutMs: 20 });
  t.teardown(() => store.close());
  let locker: DatabaseSync | undefined;
  const tools = {
    lock: async () => {
      locker = new DatabaseSync(file);
      locker.exec('BEGIN IMMEDIATE');
      return 1;
    },
  };
  await using session = await AgentSandbox.start({ tools, store, sessionId: 'abandoned' });
  await session.run('globalThis.kept = "before"');
  t.is((await session.run('globalThis.lost = await lock()')).errorType, 'JournalStoreError');
  locker!.exec('ROLLBACK');
  locker!.close();
  await session.abandon();
  t.is(session.interrupted, undefined);
  t.like(session.journal.cells[1], { status: 'crashed', error: { type: 'SessionInterrupted' } });
  t.deepEqual((await session.run('[kept, typeof lost]')).result, ['before', 'undefined']);
  await t.throwsAsync(session.abandon(), { instanceOf: SessionStateError, message: /nothing to abandon/ });
  await t.throwsAsync(session.continue(), { instanceOf: SessionStateError, message: /nothing to continue/ });
  const stored = await store.load('abandoned');
  t.deepEqual(
    stored!.cells.map((c) => JSON.parse(c.record).status),
    ['ok', 'crashed', 'ok'],
  );
});

/** A child process running the session's cell (test/fixtures/stored-session-child.ts), and its report lines as they come. */
function child(file: string, sessionId: string, ttlMs: number, chargeMs: number) {
  const process_ = spawn(process.execPath, [CHILD, file, sessionId, String(ttlMs), String(chargeMs)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines: Record<string, unknown>[] = [];
  const waiters: { match: (line: Record<string, unknown>) => boolean; resolve: (line: Record<string, unknown>) => void }[] = [];
  createInterface({ input: process_.stdout! }).on('line', (text) => {
    const line = JSON.parse(text) as Record<string, unknown>;
    lines.push(line);
    for (const waiter of waiters.splice(0))
      if (waiter.match(line)) waiter.resolve(line);
      else waiters.push(waiter);
  });
  const exited = new Promise<void>((resolve) => process_.once('exit', () => resolve()));
  return {
    process: process_,
    lines,
    exited,
    /** The first line `match` accepts (one already seen, or the next). */
    next(match: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> {
      const seen = lines.find(match);
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        waiters.push({ match, resolve });
        void exited.then(() => reject(new Error(`the child exited first; it said: ${JSON.stringify(lines)}`)));
      });
    },
  };
}

function kill(running: ChildProcess): void {
  if (running.exitCode === null && running.signalCode === null) running.kill('SIGKILL');
}

/**
 * SIGSTOPs `running` at a moment it holds no SQLite lock on `file`: a process paused inside a
 * write (a lease renewal, every third of the TTL) would keep every other writer out until it
 * wakes, which is SQLite's nature, not what the test is about. Tries the write lock without
 * waiting; if taken, lets the process run a moment and stops it again.
 */
async function stopOutsideATransaction(running: ChildProcess, file: string): Promise<void> {
  const probe = new DatabaseSync(file, { timeout: 0 });
  try {
    for (let attempt = 0; attempt < 50; attempt++) {
      running.kill('SIGSTOP');
      try {
        probe.exec('BEGIN IMMEDIATE; ROLLBACK');
        return;
      } catch {
        running.kill('SIGCONT');
        await new Promise((resolve) => setTimeout(resolve, 7));
      }
    }
    throw new Error('the holder held the database lock at every one of 50 tries');
  } finally {
    probe.close();
  }
}

/** The tools of the side that takes the session over: `charge` keeps each call's context. */
function takeoverTools() {
  const count = { remember: 0, charge: 0 };
  const contexts: ToolCallContext[] = [];
  const tools = {
    remember: async (text: string) => {
      count.remember++;
      return text.toUpperCase();
    },
    charge: async (cents: number) => {
      count.charge++;
      contexts.push(currentToolCall()!);
      return { charged: cents };
    },
  };
  return { tools, count, contexts };
}

test('a process killed mid-cell: resume takes the session over after its lease; continue() does not run the call that ended again and retries the started one under its id', async (t) => {
  const file = freshFile();
  // Long enough that the dead holder's lease (renewed every third of it) still holds when this
  // side first asks, however slow the machine is between the kill and that resume.
  const ttlMs = 2_000;
  const holder = child(file, 'killed', ttlMs, 0);
  t.teardown(() => kill(holder.process));
  const started = await holder.next((line) => line['event'] === 'tool' && line['tool'] === 'charge');
  t.like(started, { id: 'killed:2', retry: false });
  holder.process.kill('SIGKILL');
  await holder.exited;

  const store = SqliteJournalStore.open(file);
  t.teardown(() => store.close());
  await t.throwsAsync(AgentSandbox.resume('killed', { store }), { instanceOf: LeaseHeld }, 'the dead holder lease lasts until its TTL');
  const { tools, count, contexts } = takeoverTools();
  const before = performance.now();
  const session = await AgentSandbox.resume('killed', { tools, store, timeout: 30_000, lease: { waitMs: 10_000 } });
  t.log(`taken over ${Math.round(performance.now() - before)} ms after the holder's death (TTL ${ttlMs} ms)`);
  t.teardown(() => session.close());
  t.deepEqual(session.interrupted, { cell: 1, code: CHILD_CELL });
  await t.throwsAsync(session.run('1'), { instanceOf: SessionStateError, message: /interrupted/ });
  const continued = await session.continue();
  t.is(continued.status, 'ok');
  t.deepEqual(continued.result, ['A', 250]);
  t.deepEqual(count, { remember: 0, charge: 1 }, 'remember had ended: answered from the journal');
  t.like(contexts[0], { id: 'killed:2', seq: 2, retry: true });
  t.like(continued.calls, [
    { seq: 1, status: 'completed' },
    { seq: 2, status: 'completed' },
  ]);
  t.deepEqual((await session.run('[noted, paid.charged]')).result, ['A', 250]);
});

test('a process paused mid-cell: the session is taken over after its lease, and when the paused side wakes its late write is refused and changes nothing', async (t) => {
  const file = freshFile();
  const holder = child(file, 'paused', 400, 1_500);
  t.teardown(() => kill(holder.process));
  await holder.next((line) => line['event'] === 'tool' && line['tool'] === 'charge');
  await stopOutsideATransaction(holder.process, file);

  const store = SqliteJournalStore.open(file);
  t.teardown(() => store.close());
  const { tools, count, contexts } = takeoverTools();
  const session = await AgentSandbox.resume('paused', { tools, store, timeout: 30_000, lease: { waitMs: 10_000 } });
  t.teardown(() => session.close());
  const taken = await store.load('paused');
  t.deepEqual(session.interrupted, { cell: 1, code: CHILD_CELL });

  holder.process.kill('SIGCONT');
  const ended = await holder.next((line) => line['event'] === 'ran' || line['event'] === 'rejected');
  await holder.exited;
  t.like(ended, { event: 'rejected', name: 'LeaseLost' }, `the paused side learns it lost the session: ${JSON.stringify(ended)}`);
  t.deepEqual(await store.load('paused'), taken, 'its late write changed nothing');

  const continued = await session.continue();
  t.deepEqual(continued.result, ['A', 250]);
  t.deepEqual(count, { remember: 0, charge: 1 });
  t.like(contexts[0], { id: 'paused:2', retry: true });
});
