// The JournalStore contract, as tests any store must pass: the memory and SQLite stores here,
// the PostgreSQL store in its own package. Each test makes its own store (and sessions of its
// own ids) and closes it.
import type { ExecutionContext, TestFn } from 'ava';
import { InvalidOption } from '@strata/runtime';
import { JournalConflict, JournalStoreError, LeaseHeld, LeaseLost, type JournalStore } from '../../src/index.js';

/** Runs every contract test against stores made by `make` (a fresh, empty store each time, unless `shared`). */
export function journalStoreContract(test: TestFn, label: string, make: () => Promise<JournalStore>): void {
  const withStore = (title: string, body: (t: ExecutionContext, store: JournalStore) => Promise<void>) =>
    test(`${label}: ${title}`, async (t) => {
      const store = await make();
      try {
        await body(t, store);
      } finally {
        await store.close();
      }
    });

  withStore('create, load, and a second create of the same id refused', async (t, store) => {
    const created = await store.create('s-1', '{"a":1}', undefined);
    t.is(created.version, 1);
    t.is(created.lease, undefined);
    const rows = await store.load('s-1');
    t.is(rows?.session.sessionId, 's-1');
    t.is(rows?.session.settings, '{"a":1}');
    t.is(rows?.session.nextSeq, 1);
    t.is(rows?.session.version, 1);
    t.deepEqual(rows?.cells, []);
    t.deepEqual(rows?.calls, []);
    await t.throwsAsync(store.create('s-1', '{}', undefined), { instanceOf: JournalConflict });
    t.is(await store.load('s-unknown'), undefined);
  });

  withStore('append writes rows at the version read; a stale version writes nothing', async (t, store) => {
    await store.create('s-2', '{}', undefined);
    const v2 = await store.append(
      's-2',
      { cells: [{ cell: 1, record: '{"code":"1"}' }], calls: [{ cell: 1, seq: 1, record: '{"tool":"a"}' }], nextSeq: 2 },
      { version: 1 },
    );
    t.is(v2, 2);
    const stale = await t.throwsAsync(store.append('s-2', { cells: [{ cell: 2, record: '{}' }], calls: [], nextSeq: 9 }, { version: 1 }), {
      instanceOf: JournalConflict,
    });
    t.regex(stale.message, /version 2 in the store, this writer read 1/);
    // Rows replace rows of the same cell and seq.
    await store.append(
      's-2',
      {
        cells: [{ cell: 1, record: '{"code":"1","status":"ok"}' }],
        calls: [
          { cell: 1, seq: 1, record: '{"tool":"a","done":true}' },
          { cell: 1, seq: 2, record: '{"tool":"b"}' },
        ],
        nextSeq: 3,
      },
      { version: 2 },
    );
    const rows = await store.load('s-2');
    t.is(rows?.session.version, 3);
    t.is(rows?.session.nextSeq, 3);
    t.deepEqual(rows?.cells, [{ cell: 1, record: '{"code":"1","status":"ok"}' }]);
    t.deepEqual(rows?.calls, [
      { cell: 1, seq: 1, record: '{"tool":"a","done":true}' },
      { cell: 1, seq: 2, record: '{"tool":"b"}' },
    ]);
  });

  withStore('truncateFrom removes the cells from that one on, with their calls, before the rows are written', async (t, store) => {
    await store.create('s-3', '{}', undefined);
    await store.append(
      's-3',
      {
        cells: [1, 2, 3].map((cell) => ({ cell, record: `{"n":${cell}}` })),
        calls: [1, 2, 3].map((cell) => ({ cell, seq: cell, record: '{}' })),
        nextSeq: 4,
      },
      { version: 1 },
    );
    await store.append('s-3', { truncateFrom: 2, cells: [{ cell: 2, record: '{"n":"again"}' }], calls: [], nextSeq: 3 }, { version: 2 });
    const rows = await store.load('s-3');
    t.deepEqual(
      rows?.cells.map((row) => row.record),
      ['{"n":1}', '{"n":"again"}'],
    );
    t.deepEqual(
      rows?.calls.map((row) => row.seq),
      [1],
    );
  });

  withStore('a lease fences: held, expired, taken over, and the old holder can no longer write, renew or delete', async (t, store) => {
    const created = await store.create('s-4', '{}', { owner: 'machine-a', ttlMs: 150 });
    const first = created.lease!;
    t.is(first.token, 1);
    t.is(first.owner, 'machine-a');
    const held = await t.throwsAsync(store.acquireLease('s-4', 'machine-b', 1000), { instanceOf: LeaseHeld });
    t.is(held.owner, 'machine-a');
    t.is(held.expiresAt, first.expiresAt);
    // The holder writes under its lease.
    const v2 = await store.append('s-4', { cells: [{ cell: 1, record: '{}' }], calls: [], nextSeq: 1 }, { version: 1, lease: first });
    const renewed = await store.renewLease(first, 150);
    t.is(renewed.token, 1);
    await new Promise((resolve) => setTimeout(resolve, 250));
    const second = await store.acquireLease('s-4', 'machine-b', 10_000);
    t.is(second.token, 2);
    const late = await t.throwsAsync(
      store.append('s-4', { cells: [{ cell: 2, record: '{"late":true}' }], calls: [], nextSeq: 1 }, { version: v2, lease: first }),
      {
        instanceOf: LeaseLost,
      },
    );
    t.regex(late.message, /taken over/);
    t.deepEqual(
      (await store.load('s-4'))?.cells.map((row) => row.cell),
      [1],
      "the old holder's late write left nothing",
    );
    await t.throwsAsync(store.renewLease(first, 1000), { instanceOf: LeaseLost });
    await t.throwsAsync(store.delete('s-4', first), { instanceOf: LeaseLost });
    // Releasing a lease that is not the current one does nothing.
    await store.releaseLease(first);
    await t.throwsAsync(store.acquireLease('s-4', 'machine-c', 1000), { instanceOf: LeaseHeld });
    // The new holder writes; once it releases, the next acquisition is at once, with the next token.
    await store.append('s-4', { cells: [{ cell: 2, record: '{}' }], calls: [], nextSeq: 1 }, { version: v2, lease: second });
    await store.releaseLease(second);
    const third = await store.acquireLease('s-4', 'machine-c', 1000);
    t.is(third.token, 3);
    await t.throwsAsync(store.acquireLease('s-unknown', 'machine-c', 1000), { instanceOf: JournalStoreError });
  });

  withStore('list pages through sessions in id order and says who holds a lease', async (t, store) => {
    for (const id of ['b', 'a', 'c', 'd']) await store.create(id, '{}', id === 'c' ? { owner: 'holder', ttlMs: 60_000 } : undefined);
    await store.append(
      'a',
      {
        cells: [
          { cell: 1, record: '{}' },
          { cell: 2, record: '{}' },
        ],
        calls: [],
        nextSeq: 1,
      },
      { version: 1 },
    );
    const page = await store.list({ limit: 2 });
    t.deepEqual(
      page.map((s) => s.sessionId),
      ['a', 'b'],
    );
    t.is(page[0]!.cells, 2);
    t.is(page[0]!.version, 2);
    const next = await store.list({ after: 'b', limit: 2 });
    t.deepEqual(
      next.map((s) => [s.sessionId, s.leasedBy]),
      [
        ['c', 'holder'],
        ['d', undefined],
      ],
    );
    t.deepEqual(await store.list({ after: 'd' }), []);
  });

  withStore('delete removes a session and its rows; a second delete finds none', async (t, store) => {
    await store.create('s-5', '{}', undefined);
    await store.append('s-5', { cells: [{ cell: 1, record: '{}' }], calls: [{ cell: 1, seq: 1, record: '{}' }], nextSeq: 2 }, { version: 1 });
    t.true(await store.delete('s-5'));
    t.is(await store.load('s-5'), undefined);
    t.false(await store.delete('s-5'));
    await t.throwsAsync(store.append('s-5', { cells: [], calls: [], nextSeq: 1 }, { version: 2 }), { instanceOf: LeaseLost });
    // The id can be used again, from version 1.
    t.is((await store.create('s-5', '{}', undefined)).version, 1);
    t.deepEqual((await store.load('s-5'))?.calls, []);
  });

  withStore('bad input is InvalidOption, before the store is touched', async (t, store) => {
    for (const id of ['', 'a b', 'x'.repeat(129), '../etc', 42 as unknown as string]) {
      await t.throwsAsync(store.load(id), { instanceOf: InvalidOption }, `id ${String(id)}`);
      await t.throwsAsync(store.create(id, '{}', undefined), { instanceOf: InvalidOption });
    }
    await store.create('s-6', '{}', undefined);
    await t.throwsAsync(store.append('s-6', { cells: [{ cell: 0, record: '{}' }], calls: [], nextSeq: 1 }, { version: 1 }), { instanceOf: InvalidOption });
    await t.throwsAsync(store.append('s-6', { cells: [{ cell: 1, record: {} as unknown as string }], calls: [], nextSeq: 1 }, { version: 1 }), {
      instanceOf: InvalidOption,
    });
    await t.throwsAsync(store.append('s-6', { cells: [], calls: [], nextSeq: 1.5 }, { version: 1 }), { instanceOf: InvalidOption });
    await t.throwsAsync(store.create('s-7', '{}', { owner: 'x', ttlMs: 0 }), { instanceOf: InvalidOption });
    await t.throwsAsync(store.create('s-7', '{}', { owner: '', ttlMs: 10 }), { instanceOf: InvalidOption });
    await t.throwsAsync(store.list({ limit: 0 }), { instanceOf: InvalidOption });
    t.is((await store.load('s-6'))?.session.version, 1, 'nothing was written');
  });
}
