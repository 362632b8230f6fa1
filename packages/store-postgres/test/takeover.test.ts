// Two processes on this machine sharing one PostgreSQL, as two machines of a fleet: the holder
// of a session is SIGKILLed in the middle of a cell, and the other takes the session over after
// the lease's TTL, does not run the call that had ended again, and retries the one that had
// started under its id; a holder paused (SIGSTOP) past its lease wakes to find its late writes
// refused, the stored session unchanged.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import test, { type ExecutionContext } from 'ava';
import { AgentSandbox, currentToolCall, LeaseHeld, SessionStateError, type ToolCallContext } from '@strata/agent';
import { PostgresJournalStore } from '../src/index.js';
import { HOLDER_CELL } from './fixtures/holder-cell.js';
import { postgresFileServer } from './helpers/postgres-server.js';

const HOLDER = fileURLToPath(new URL('./fixtures/holder.js', import.meta.url));
const files = await postgresFileServer(test);
const withServer = files.withServer;
let schemas = 0;

/** The other machine: a holder process on `schema`, and its report lines as they come. */
function holder(t: ExecutionContext, schema: string, sessionId: string, ttlMs: number, chargeMs: number) {
  const child = spawn(process.execPath, [HOLDER, files.server.connectionString(), schema, sessionId, String(ttlMs), String(chargeMs)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const lines: Record<string, unknown>[] = [];
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const waiters: (() => void)[] = [];
  createInterface({ input: child.stdout! }).on('line', (text) => {
    lines.push(JSON.parse(text) as Record<string, unknown>);
    for (const wake of waiters.splice(0)) wake();
  });
  const next = async (match: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> => {
    for (;;) {
      const seen = lines.find(match);
      if (seen !== undefined) return seen;
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the holder exited first; it said: ${JSON.stringify(lines)}`);
      await Promise.race([new Promise<void>((resolve) => waiters.push(resolve)), exited]);
    }
  };
  return { child, exited, next };
}

/** This machine's tools: `charge` keeps each call's context. */
function tools() {
  const count = { remember: 0, charge: 0 };
  const contexts: ToolCallContext[] = [];
  return {
    count,
    contexts,
    tools: {
      remember: async (text: string) => {
        count.remember++;
        return text.toUpperCase();
      },
      charge: async (cents: number) => {
        count.charge++;
        contexts.push(currentToolCall()!);
        return { charged: cents };
      },
    },
  };
}

withServer(
  'the holder SIGKILLed mid-cell: the other process takes over after the TTL, answers the ended call from the store and retries the started one under its id',
  async (t) => {
    const schema = `takeover_${++schemas}`;
    // Long enough that the dead holder's lease (renewed every third of it) still holds when this
    // side first asks, however slow the machine is between the kill, the connect and that resume.
    const ttlMs = 2_000;
    const machineA = holder(t, schema, 'killed', ttlMs, 0);
    t.like(await machineA.next((line) => line['tool'] === 'charge'), { id: 'killed:2', retry: false });
    machineA.child.kill('SIGKILL');
    const died = performance.now();
    await machineA.exited;

    const store = await PostgresJournalStore.connect({ connectionString: files.server.connectionString(), schema });
    t.teardown(() => store.close());
    await t.throwsAsync(AgentSandbox.resume('killed', { store }), { instanceOf: LeaseHeld }, "the dead holder's lease lasts until its TTL");
    const machineB = tools();
    const session = await AgentSandbox.resume('killed', { tools: machineB.tools, store, timeout: 30_000, lease: { waitMs: 10_000 } });
    t.teardown(() => session.close());
    t.log(`taken over ${Math.round(performance.now() - died)} ms after the holder died (lease TTL ${ttlMs} ms)`);
    t.deepEqual(session.interrupted, { cell: 1, code: HOLDER_CELL });
    await t.throwsAsync(session.run('1'), { instanceOf: SessionStateError, message: /interrupted/ });
    const continued = await session.continue();
    t.deepEqual(continued.result, ['A', 250]);
    t.deepEqual(machineB.count, { remember: 0, charge: 1 }, 'remember had ended: it is not run again');
    t.like(machineB.contexts[0], { id: 'killed:2', seq: 2, retry: true });
    const stored = await store.load('killed');
    t.deepEqual(
      stored!.calls.map((c) => JSON.parse(c.record).status),
      ['completed', 'completed'],
    );
    t.is(stored!.session.lease.token, 2, 'the second machine holds the second lease');
  },
);

withServer(
  "the holder paused (SIGSTOP) past its lease: the session is taken over, and the paused process's late writes are refused and change nothing",
  async (t) => {
    const schema = `takeover_${++schemas}`;
    const machineA = holder(t, schema, 'paused', 600, 1_500);
    await machineA.next((line) => line['tool'] === 'charge');
    machineA.child.kill('SIGSTOP');

    const store = await PostgresJournalStore.connect({ connectionString: files.server.connectionString(), schema });
    t.teardown(() => store.close());
    const machineB = tools();
    const session = await AgentSandbox.resume('paused', { tools: machineB.tools, store, timeout: 30_000, lease: { waitMs: 10_000 } });
    t.teardown(() => session.close());
    const taken = await store.load('paused');

    machineA.child.kill('SIGCONT');
    const ended = await machineA.next((line) => line['event'] === 'ran' || line['event'] === 'rejected');
    await machineA.exited;
    t.like(ended, { event: 'rejected', name: 'LeaseLost' }, `the paused side learns it lost the session: ${JSON.stringify(ended)}`);
    t.deepEqual(await store.load('paused'), taken, 'its late writes changed nothing');

    const continued = await session.continue();
    t.deepEqual(continued.result, ['A', 250]);
    t.deepEqual(machineB.count, { remember: 0, charge: 1 });
    t.like(machineB.contexts[0], { id: 'paused:2', retry: true });
  },
);
