import { fileURLToPath } from 'node:url';
import test from 'ava';
import { IsolatedRuntime, RuntimeTimeout, SandboxHost, WorkerCrashed } from '../src/index.js';
import { setWorkerEntryForTests } from '../src/isolated/isolated-runtime.js';
import { checkNoLeaks } from './helpers/leaks.js';

const COMPROMISED = fileURLToPath(new URL('./fixtures/compromised-worker.js', import.meta.url));

checkNoLeaks(test);
test.before(() => setWorkerEntryForTests(COMPROMISED));
test.after.always(() => setWorkerEntryForTests(undefined));

// One runtime per behaviour; the parent must survive each with the right error.
const cases: [string, (t: import('ava').ExecutionContext, error: unknown) => void, Parameters<typeof IsolatedRuntime.start>[0]?][] = [
  ['malformed', (t, e) => t.is((e as WorkerCrashed).reason, 'protocol')],
  ['oversized', (t, e) => t.regex((e as Error).message, /protocol violation/)],
  ['nested', (t, e) => t.is((e as WorkerCrashed).reason, 'protocol')],
  ['drip', (t, e) => t.regex((e as Error).message, /stopped sending/), { writeStallTimeout: 500 }],
  ['callFlood', (t, e) => t.is((e as WorkerCrashed).reason, 'protocol')],
  ['unknownFunction', (t, e) => t.regex((e as Error).message, /never given/)],
  ['unknownException', (t, e) => t.regex((e as Error).message, /protocol violation/)],
  ['wrongId', (t, e) => t.regex((e as Error).message, /not the one in flight/)],
  // maxMemory off: a hundred threads also take memory, and the memory check comes first.
  ['threads', (t, e) => t.is((e as WorkerCrashed).reason, 'threads'), { maxMemory: null }],
  // The parent's poll on its own (this worker has no watchdog): the evidence is the parent's message.
  [
    'memory',
    (t, e) => {
      t.is((e as WorkerCrashed).reason, 'maxMemory');
      t.regex((e as Error).message, /^the worker's resident memory \(\d+ bytes\) passed maxMemory \(268435456 bytes\); it was killed$/);
    },
    { maxMemory: 256 * 1024 * 1024, requestTimeout: 60_000 },
  ],
  ['exitQuietly', (t, e) => t.is((e as WorkerCrashed).reason, 'exit')],
  ['abort', (t, e) => t.is((e as WorkerCrashed).reason, 'signal')],
  ['hello', (t, e) => t.regex((e as Error).message, /hello/)],
  ['silence', (t, e) => t.true(e instanceof RuntimeTimeout), { timeout: 200, requestTimeout: 500 }],
];

for (const [behaviour, check, options] of cases) {
  test(`a compromised worker that sends ${behaviour} is killed with the right error`, async (t) => {
    const rt = await IsolatedRuntime.start({ prewarm: false, ...options });
    const error = await rt.eval(behaviour).catch((e: unknown) => e);
    t.true(error instanceof WorkerCrashed || error instanceof RuntimeTimeout, String(error));
    check(t, error);
    t.true(rt.closed);
    await t.throwsAsync(rt.eval('1'));
  });
}

test('a worker that stops reading its pipe is killed after writeStallTimeout', async (t) => {
  const rt = await IsolatedRuntime.start({ prewarm: false, writeStallTimeout: 300, requestTimeout: 60_000, timeout: 30_000 });
  // The compromised worker stops reading; then a large command fills the pipe.
  t.is(await rt.eval('stopReading'), 'no longer reading');
  const error = await rt.eval(`"${'x'.repeat(4 * 1024 * 1024)}"`).catch((e: unknown) => e);
  t.true(error instanceof WorkerCrashed, String(error));
  t.is((error as WorkerCrashed).reason, 'writeStallTimeout');
  t.true(rt.closed);
});

// The host's isolate opened ahead has run nothing: a call from it is a lie, and the worker is
// killed (left unanswered, the call would hold the worker's thread for good).
test('a compromised worker of many isolates that calls from the isolate opened ahead is killed, every isolate with it', async (t) => {
  const host = await SandboxHost.start({ tenant: 'acme', prewarm: false });
  t.teardown(() => host.close());
  const neighbour = await host.open();
  const liar = await host.open();
  // its answer lets the host open the next one ahead, which the fixture answers at once
  t.regex(String(await liar.eval('warm')), /unknown behaviour/);
  await new Promise((resolve) => setTimeout(resolve, 100));
  const waiting = neighbour.eval('silence').catch((e: unknown) => e);
  const error = await liar.eval('aheadIsolate').catch((e: unknown) => e);
  t.true(error instanceof WorkerCrashed, String(error));
  t.is((error as WorkerCrashed).reason, 'protocol');
  t.regex((error as WorkerCrashed).message, /which has run no command/);
  t.true((await waiting) instanceof WorkerCrashed);
  t.true(host.closed);
});

// A worker of many isolates (SandboxHost): an answer for no isolate, for one never opened, or for
// a neighbour that has no such request in flight is a protocol violation: the whole worker is
// killed (no isolate of a lying worker can be trusted), and no caller gets another's answer.
for (const behaviour of ['noIsolate', 'unopenedIsolate', 'otherIsolate']) {
  test(`a compromised worker of many isolates that sends ${behaviour} is killed, every isolate with it`, async (t) => {
    const host = await SandboxHost.start({ tenant: 'acme', prewarm: false });
    t.teardown(() => host.close());
    const neighbour = await host.open();
    const liar = await host.open();
    const waiting = neighbour.eval('silence').catch((e: unknown) => e);
    const error = await liar.eval(behaviour).catch((e: unknown) => e);
    t.true(error instanceof WorkerCrashed, String(error));
    t.is((error as WorkerCrashed).reason, 'protocol');
    const neighbourError = await waiting;
    t.true(neighbourError instanceof WorkerCrashed, `the neighbour's caller got ${String(neighbourError)}, not the liar's answer`);
    t.true(host.closed);
  });
}
