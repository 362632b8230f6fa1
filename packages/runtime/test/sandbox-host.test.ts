// SandboxHost: one tenant's isolates in one sandboxed worker. What one isolate does ends that
// isolate only, while the others keep answering (each answer checked against the isolate that
// asked); what kills the process ends every isolate in it with WorkerCrashed naming the cause.
// The suite runs as root and again as an ordinary user (scripts/test-unprivileged.mjs).
import test from 'ava';
import { WEB_POLYFILLS } from '@strata/polyfills';
import {
  HeapLimitExceeded,
  InvalidOption,
  type IsolatedRuntime,
  RuntimeClosed,
  RuntimeTimeout,
  SandboxHost,
  SandboxHostFull,
  type SandboxHostOptions,
  SandboxPool,
  WorkerCrashed,
} from '../src/index.js';
import { checkNoLeaks } from './helpers/leaks.js';

checkNoLeaks(test);

const linux = process.platform === 'linux' && (process.arch === 'x64' || process.arch === 'arm64');
// Under 'require' where the platform has an OS sandbox, so that sharing is tested as users run it.
const SANDBOX: SandboxHostOptions['sandbox'] = linux ? 'require' : 'auto';
const NEIGHBOURS = 50;

/** Opens `count` isolates, each knowing its own number as `me`. */
async function openMany(host: SandboxHost, count: number): Promise<IsolatedRuntime[]> {
  const runtimes: IsolatedRuntime[] = [];
  for (let i = 0; i < count; i++) {
    const rt = await host.open();
    await rt.eval(`globalThis.me = ${i}`);
    runtimes.push(rt);
  }
  return runtimes;
}

/** Every runtime answers with its own number, all asked at once. */
async function allAnswer(runtimes: readonly IsolatedRuntime[]): Promise<number[]> {
  return Promise.all(runtimes.map((rt) => rt.eval('me') as Promise<number>));
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

test('options: a tenant is required, maxIsolates is bounded, and a process option is refused at open', async (t) => {
  await t.throwsAsync(SandboxHost.start({} as SandboxHostOptions), { instanceOf: InvalidOption, message: /tenant must be a non-empty string/ });
  await t.throwsAsync(SandboxHost.start({ tenant: '' }), { instanceOf: InvalidOption, message: /tenant/ });
  await t.throwsAsync(SandboxHost.start({ tenant: 'a', maxIsolates: 0 }), { instanceOf: InvalidOption, message: /maxIsolates must be an integer from 1/ });
  await t.throwsAsync(SandboxHost.start({ tenant: 'a', maxIsolates: 1.5 }), { instanceOf: InvalidOption });
  await using host = await SandboxHost.start({ tenant: 'acme', maxIsolates: 2, sandbox: SANDBOX });
  for (const key of ['maxMemory', 'layers', 'jitless', 'sandbox', 'strictEval', 'tenant']) {
    await t.throwsAsync(host.open({ [key]: undefined } as never), {
      instanceOf: InvalidOption,
      message: new RegExp(`${key} is the worker's.*SandboxHost\\.start`),
    });
  }
  await t.throwsAsync(host.open({ timeout: -1 }), { instanceOf: InvalidOption });
  await using a = await host.open();
  await using b = await host.open();
  await t.throwsAsync(host.open(), { instanceOf: SandboxHostFull, message: /maximum of 2 isolates/ });
  await b.close();
  await using c = await host.open();
  t.is(await c.eval('1 + 1'), 2);
  t.is(await a.eval('2 + 2'), 4);
});

test('isolates of one host share its process and its sandbox, and each has its own globals, bindings and console', async (t) => {
  await using host = await SandboxHost.start({ tenant: 'acme', sandbox: SANDBOX });
  if (linux) t.is(host.report.sandbox, 'landlock+seccomp');
  t.is(host.report.tenant, 'acme');
  const [a, b, c] = await openMany(host, 3);
  t.teardown(() => Promise.all([a!, b!, c!].map((rt) => rt.close())));
  t.is(a!.pid, host.pid);
  t.is(b!.pid, host.pid);
  t.is(a!.report.sharedWith, 2);
  t.is(a!.report.tenant, 'acme');
  t.is(a!.sandbox, host.report.sandbox);
  a!.bindFunction('double', (x: number) => x * 2);
  t.is(await a!.eval('double(21)'), 42);
  t.is(await b!.eval('typeof double'), 'undefined');
  await b!.eval('globalThis.secret = "b"');
  t.is(await c!.eval('typeof secret'), 'undefined');
  const printed = c!.captureConsole();
  const other = b!.captureConsole();
  await Promise.all([c!.eval('console.log("from c")'), b!.eval('console.log("from b")')]);
  t.is(printed.stdout, 'from c\n');
  t.is(other.stdout, 'from b\n');
  await c!.close();
  t.is(a!.report.sharedWith, 1);
});

test('an isolate awaiting a slow host function does not hold up its neighbours', async (t) => {
  await using host = await SandboxHost.start({ tenant: 'acme', sandbox: SANDBOX });
  const [slow, quick] = await openMany(host, 2);
  t.teardown(() => Promise.all([slow!.close(), quick!.close()]));
  let release: (value: number) => void = () => {};
  slow!.bindFunction('wait', () => new Promise<number>((resolve) => (release = resolve)));
  const waiting = slow!.eval('wait()');
  // The neighbour answers many times while the first isolate's command waits on its host.
  for (let i = 0; i < 20; i++) t.is(await quick!.eval(`me + ${i}`), 1 + i);
  release(7);
  t.is(await waiting, 7);
});

// Regression test (it killed the worker): in a worker of many isolates, the continuation of an
// async host call the command did not await runs as soon as the call settles, after its command
// ended. A host call from there got "protocol violation" and the whole worker (every isolate of
// the tenant) was killed. It is refused with an error the guest can catch (a module request from
// there is refused the same way).
test('a host call from guest code that ran after its command is refused in the guest; the worker and its neighbours go on', async (t) => {
  await using host = await SandboxHost.start({ tenant: 'acme', sandbox: SANDBOX });
  const [careless, neighbour] = await openMany(host, 2);
  t.teardown(() => Promise.all([careless!.close(), neighbour!.close()]));
  const lines: string[] = [];
  careless!.onConsole((entry) => lines.push(entry.text));
  let settle: (value: number) => void = () => {};
  const settled = new Promise<number>((resolve) => (settle = resolve));
  careless!.bindFunction('later', async (x: number) => (await settled) * x);
  careless!.bindFunction('note', (x: number) => `noted ${x}`);
  const pid = careless!.pid;
  t.is(
    await careless!.eval(`
      later(2).then((v) => {
        try { console.log(note(v)); } catch (e) { console.log('caught: ' + e.message); }
        note(v + 1);
      });
      'sent'`),
    'sent',
  );
  settle(21);
  for (let waited = 0; waited < 5_000 && lines.length < 2; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
  t.regex(lines[0] ?? '', /^caught: host function note was called by guest code that ran after its command had ended/);
  // the one not caught is the guest's unhandled rejection, reported on its own console
  t.true(
    lines.some((line) => /Uncaught \(in promise\) Error: host function note was called/.test(line)),
    lines.join('\n'),
  );
  t.is(await careless!.eval('me'), 0);
  t.is(await neighbour!.eval('me'), 1);
  t.is(careless!.pid, pid);
  t.is(neighbour!.pid, pid);
  // inside a command, the same continuation reaches the host
  t.is(await careless!.eval('later(1).then((v) => note(v))'), 'noted 21');
});

interface Misbehaviour {
  readonly options?: Parameters<SandboxHost['open']>[0];
  readonly bind?: (rt: IsolatedRuntime) => void;
  readonly code: string;
  readonly check: (t: import('ava').ExecutionContext, error: unknown) => void;
  /** Whether the misbehaving isolate itself survives (a soft timeout) or is closed. */
  readonly survives: boolean;
}

const MISBEHAVIOURS: Record<string, Misbehaviour> = {
  'a guest that spins past its soft timeout': {
    options: { timeout: 300 },
    code: 'for (;;) {}',
    check: (t, error) => t.true(error instanceof RuntimeTimeout, String(error)),
    survives: true,
  },
  'a timer flood past the soft timeout': {
    options: { timeout: 300 },
    code: 'new Promise(() => { const tick = () => setTimeout(tick, 0); tick(); })',
    check: (t, error) => t.true(error instanceof RuntimeTimeout, String(error)),
    survives: true,
  },
  'a guest that fills its heap': {
    options: { maxHeapSize: 32 * 1024 * 1024, timeout: 60_000 },
    code: 'const kept = []; for (let i = 0; ; i++) kept.push("x".repeat(100) + i);',
    check: (t, error) => t.true(error instanceof HeapLimitExceeded, String(error)),
    survives: false,
  },
  'a command that waits on its host past maxHostWait': {
    options: { maxHostWait: 300 },
    bind: (rt) => rt.bindFunction('never', () => new Promise(() => {})),
    code: 'never()',
    check: (t, error) => {
      t.true(error instanceof RuntimeTimeout, String(error));
      t.is((error as RuntimeTimeout).limit, 'maxHostWait');
      t.regex((error as Error).message, /the isolate was disposed \(its worker lives on\)/);
    },
    survives: false,
  },
  'a guest that makes more than maxHostCalls host calls': {
    options: { maxHostCalls: 10 },
    bind: (rt) => rt.bindFunction('ping', () => 1),
    code: 'for (;;) ping()',
    check: (t, error) => {
      t.true(error instanceof WorkerCrashed, String(error));
      t.is((error as WorkerCrashed).reason, 'maxHostCalls');
    },
    survives: false,
  },
};

for (const [name, misbehaviour] of Object.entries(MISBEHAVIOURS)) {
  test(`${name} ends that isolate's command only: ${NEIGHBOURS} neighbours keep answering, each its own`, async (t) => {
    await using host = await SandboxHost.start({ tenant: 'acme', sandbox: SANDBOX, bootstrap: WEB_POLYFILLS, maxIsolates: NEIGHBOURS + 1 });
    const neighbours = await openMany(host, NEIGHBOURS);
    t.teardown(() => Promise.all(neighbours.map((rt) => rt.close())));
    const culprit = await host.open(misbehaviour.options);
    t.teardown(() => culprit.close());
    misbehaviour.bind?.(culprit);
    const failing = culprit.eval(misbehaviour.code).then(
      () => undefined,
      (error: unknown) => error,
    );
    // The neighbours are asked while the culprit misbehaves, and after.
    t.deepEqual(await allAnswer(neighbours), range(NEIGHBOURS));
    const error = await failing;
    misbehaviour.check(t, error);
    t.deepEqual(await allAnswer(neighbours), range(NEIGHBOURS));
    if (misbehaviour.survives) {
      t.is(await culprit.eval('1 + 1'), 2);
      t.false(culprit.closed);
    } else {
      t.true(culprit.closed);
      await t.throwsAsync(culprit.eval('1'));
      t.is(host.isolates, NEIGHBOURS);
    }
    t.false(host.closed);
    for (const rt of neighbours) t.false(rt.closed);
  });
}

test(`a closed handle is one isolate gone: ${NEIGHBOURS} neighbours keep answering, and its slot is free again`, async (t) => {
  await using host = await SandboxHost.start({ tenant: 'acme', sandbox: SANDBOX, maxIsolates: NEIGHBOURS });
  const runtimes = await openMany(host, NEIGHBOURS);
  t.teardown(() => Promise.all(runtimes.map((rt) => rt.close())));
  const closing = runtimes[7]!.close();
  t.deepEqual(
    await allAnswer(runtimes.filter((_, i) => i !== 7)),
    range(NEIGHBOURS).filter((i) => i !== 7),
  );
  await closing;
  await t.throwsAsync(runtimes[7]!.eval('me'), { instanceOf: RuntimeClosed });
  t.is(host.isolates, NEIGHBOURS - 1);
  const again = await host.open();
  t.is(await again.eval('typeof me'), 'undefined', 'a new isolate, not the closed one');
  await again.close();
});

test('a V8 abort in one isolate kills the process: every isolate of it ends with WorkerCrashed, the host is closed', async (t) => {
  const host = await SandboxHost.start({ tenant: 'acme', sandbox: SANDBOX });
  t.teardown(() => host.close());
  const runtimes = await openMany(host, 5);
  const abort = runtimes[0]!.eval("'ab'.repeat(2 ** 27).split('')");
  const errors = await Promise.all(
    [abort, ...runtimes.slice(1).map((rt) => rt.eval('new Promise(() => {})'))].map((p) =>
      p.then(
        () => undefined,
        (e: unknown) => e,
      ),
    ),
  );
  for (const error of errors) t.true(error instanceof WorkerCrashed, String(error));
  t.true(host.closed);
  for (const rt of runtimes) t.true(rt.closed);
  await t.throwsAsync(host.open(), { instanceOf: WorkerCrashed });
});

test('a guest stuck in code V8 cannot interrupt takes its worker down: WorkerCrashed (stuck) for every isolate of it', async (t) => {
  const host = await SandboxHost.start({ tenant: 'acme', sandbox: SANDBOX, timeout: 200, timeoutGrace: 300 });
  t.teardown(() => host.close());
  const [stuck, neighbour] = await openMany(host, 2);
  const errors = await Promise.all(
    [stuck!.eval('const a = []; a[2 ** 32 - 2] = 1; a.sort()'), neighbour!.eval('me')].map((p) =>
      p.then(
        (v) => v,
        (e: unknown) => e,
      ),
    ),
  );
  // The neighbour's command was queued behind the stuck one on the worker's one thread.
  for (const error of errors) {
    t.true(error instanceof WorkerCrashed, String(error));
    t.true(['stuck', 'cpu'].includes((error as WorkerCrashed).reason), (error as WorkerCrashed).reason);
  }
  t.true(host.closed);
});

test("closing the host ends every isolate with RuntimeClosed, and the worker's process is gone", async (t) => {
  const host = await SandboxHost.start({ tenant: 'acme', sandbox: SANDBOX });
  const runtimes = await openMany(host, 3);
  const pending = runtimes[0]!.eval('new Promise(() => {})');
  await host.close();
  await t.throwsAsync(pending, { instanceOf: RuntimeClosed });
  for (const rt of runtimes) {
    t.true(rt.closed);
    await t.throwsAsync(rt.eval('1'), { instanceOf: RuntimeClosed });
  }
  t.throws(() => process.kill(host.pid, 0), { code: 'ESRCH' });
});

test('SandboxPool({ isolatesPerWorker }): one tenant shares workers, two tenants never do, and a worker with no isolate left is closed', async (t) => {
  await using pool = await SandboxPool.start({ size: 1, isolatesPerWorker: 3, sandbox: SANDBOX });
  const a1 = await pool.checkout({ tenant: 'a' });
  const a2 = await pool.checkout({ tenant: 'a' });
  const b1 = await pool.checkout({ tenant: 'b' });
  const anonymous = await pool.checkout();
  const anonymous2 = await pool.checkout();
  t.teardown(() => Promise.all([a1, a2, b1, anonymous, anonymous2].map((rt) => rt.close())));
  t.is(a1.pid, a2.pid);
  t.not(a1.pid, b1.pid);
  t.not(anonymous.pid, a1.pid);
  t.not(anonymous.pid, b1.pid);
  t.is(anonymous.pid, anonymous2.pid, 'checkouts that name no tenant are one tenant between them');
  t.is(a1.report.tenant, 'a');
  t.is(a1.report.sharedWith, 1);
  // A full worker: the tenant's next checkout gets another worker of its own.
  const a3 = await pool.checkout({ tenant: 'a' });
  const a4 = await pool.checkout({ tenant: 'a' });
  t.teardown(() => Promise.all([a3.close(), a4.close()]));
  t.is(a3.pid, a1.pid);
  t.not(a4.pid, a1.pid);
  t.not(a4.pid, b1.pid);
  await Promise.all([b1.eval('globalThis.x = 1'), a1.eval('globalThis.x = 2')]);
  t.is(await b1.eval('x'), 1);
  const bPid = b1.pid;
  await b1.close();
  for (let i = 0; i < 100; i++) {
    try {
      process.kill(bPid, 0);
    } catch {
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  t.throws(() => process.kill(bPid, 0), { code: 'ESRCH' }, "tenant b's worker is closed with its last isolate");
  await t.throwsAsync(pool.checkout({ tenant: 'a', writeStallTimeout: 5 }), { instanceOf: InvalidOption, message: /writeStallTimeout is the worker's/ });
});

test("SandboxPool({ isolatesPerWorker }): a worker's death is one crash of its tenant, however many isolates it held", async (t) => {
  await using pool = await SandboxPool.start({ size: 1, isolatesPerWorker: 5, sandbox: SANDBOX, crashBudget: { crashes: 2, windowMs: 60_000 } });
  const runtimes = await Promise.all(range(4).map(() => pool.checkout({ tenant: 'acme' })));
  t.teardown(() => Promise.all(runtimes.map((rt) => rt.close())));
  const errors = await Promise.all(
    [runtimes[0]!.eval("'ab'.repeat(2 ** 27).split('')"), ...runtimes.slice(1).map((rt) => rt.eval('new Promise(() => {})'))].map((p) =>
      p.then(
        () => undefined,
        (e: unknown) => e,
      ),
    ),
  );
  for (const error of errors) t.true(error instanceof WorkerCrashed, String(error));
  await new Promise((resolve) => setTimeout(resolve, 50));
  t.deepEqual(pool.stats().tenantCrashes, { acme: 1 });
  const fresh = await pool.checkout({ tenant: 'acme' });
  t.is(await fresh.eval('1 + 1'), 2, 'one crash is within the budget');
  await fresh.close();
});

test('a stopped worker (SIGSTOP) with commands in flight is killed past requestTimeout: WorkerCrashed (stuck) for every isolate of it', async (t) => {
  const host = await SandboxHost.start({ tenant: 'acme', sandbox: SANDBOX, timeout: 200, timeoutGrace: 300 });
  t.teardown(() => host.close());
  const runtimes = await openMany(host, 3);
  let stopped: () => void = () => {};
  const stop = new Promise<void>((resolve) => (stopped = resolve));
  runtimes[0]!.bindFunction('stopMe', async () => {
    process.kill(host.pid, 'SIGSTOP');
    stopped();
    return 0;
  });
  const first = runtimes[0]!.eval('stopMe().then(() => 1)');
  await stop;
  // Asked of a worker that runs nothing: only the parent's supervision can end these.
  const errors = await Promise.all(
    [first, ...runtimes.slice(1).map((rt) => rt.eval('me'))].map((p) =>
      p.then(
        (v) => v,
        (e: unknown) => e,
      ),
    ),
  );
  for (const error of errors) {
    t.true(error instanceof WorkerCrashed, String(error));
    t.is((error as WorkerCrashed).reason, 'stuck');
    t.regex((error as Error).message, /stopped/);
  }
  t.true(host.closed);
});

// Regression test (fixed; it was a bug in packages/runtime, src/worker/worker-host.ts #disposeNow):
// open() hands the isolate over before the worker has opened it, and a close() right after sent a
// dispose that overtook the open: the isolate was made after its disposal and lived on in the
// worker, holding a slot, with no parent. A dispose now waits for its isolate's open.
test('an isolate closed right after open() is gone from the worker too: its slot is free again', async (t) => {
  await using host = await SandboxHost.start({ tenant: 'acme', sandbox: SANDBOX, maxIsolates: 2 });
  for (let i = 0; i < 20; i++) {
    const rt = await host.open();
    await rt.close();
  }
  t.is(host.isolates, 0);
  await using a = await host.open();
  await using b = await host.open();
  t.deepEqual(await Promise.all([a.eval('1'), b.eval('2')]), [1, 2]);
});
