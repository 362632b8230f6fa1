// A guest that runs too long gets RuntimeTimeout whichever limit stops it first: the parent's
// hard deadline (requestTimeout), the parent's CPU check or the kernel's CPU cap (SIGXCPU from
// RLIMIT_CPU). Which one wins depends on the machine's load; the error type must not. Each test
// forces the case that a loaded machine produces by chance, instead of waiting for it.
import test from 'ava';
import { IsolatedRuntime, RuntimeTimeout, WorkerCrashed } from '../src/index.js';
import { checkNoLeaks } from './helpers/leaks.js';

checkNoLeaks(test);

const UNINTERRUPTIBLE_SORT = 'const a = []; a[2 ** 32 - 2] = 1; a.sort()';

/** Sends `signal` to `pid`, ignoring a process that is already gone. */
function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // ESRCH: the worker is gone already.
  }
}

// Regression test (fixed; it was a bug in packages/runtime, src/isolated/worker-process.ts #exit):
// a worker that died of SIGXCPU, its CPU cap, was WorkerCrashed('cpu') even while guest code ran,
// so a guest that ran too long got RuntimeTimeout or WorkerCrashed depending on whether the
// parent's deadline or the kernel's cap fired first. The test sends the kernel's signal itself.
test.serial("SIGXCPU, the kernel's CPU cap, while guest code runs: RuntimeTimeout (limit 'cpu'), the runtime closed", async (t) => {
  const rt = await IsolatedRuntime.start({ timeout: 60_000 });
  t.teardown(() => rt.close());
  rt.bindFunction('started', () => {
    setImmediate(() => signal(rt.pid, 'SIGXCPU'));
    return 0;
  });
  const error = await t.throwsAsync(rt.eval('started(); for (;;) {}'));
  t.true(error instanceof RuntimeTimeout, String(error));
  t.is((error as RuntimeTimeout).limit, 'cpu');
  t.is((error as RuntimeTimeout).code, 'ERR_STRATA_TIMEOUT');
  t.regex(
    error!.message,
    /CPU time cap \(\d+ s of CPU per command: twice requestTimeout, rounded up\); the worker was killed and the runtime is closed: start a new runtime/,
  );
  t.true(rt.closed);
  await t.throwsAsync(rt.eval('1'), { instanceOf: RuntimeTimeout });
});

test.serial('SIGXCPU while no command runs: WorkerCrashed (reason cpu); no guest time was exceeded', async (t) => {
  const rt = await IsolatedRuntime.start({ timeout: 1_000 });
  t.teardown(() => rt.close());
  t.is(await rt.eval('1 + 1'), 2);
  signal(rt.pid, 'SIGXCPU');
  const error = await t.throwsAsync(async () => {
    // The runtime learns of the death asynchronously; the next command reports it.
    for (let i = 0; i < 200 && !rt.closed; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    await rt.eval('2');
  });
  t.true(error instanceof WorkerCrashed, String(error));
  t.is((error as WorkerCrashed).reason, 'cpu');
  t.regex(error!.message, /while no guest code ran/);
});

// Regression test (fixed; it was a bug in packages/runtime, src/isolated/isolated-runtime.ts
// #supervise): with a host call in flight, a tick was charged to the guest only when the worker's
// CPU time over it was more than half the tick. On a loaded machine a running guest gets less
// than half a core, so it was never charged: requestTimeout did not stop it, the CPU cap at twice
// requestTimeout did, as WorkerCrashed('cpu') (the agent's crash tests failed so at load 15). Here
// the worker is stopped four fifths of the time, as on a machine with many more runnable threads
// than cores. Now the guest is charged the CPU time it used: RuntimeTimeout, however it is starved.
test.serial('a guest starved of CPU, running with a tool call in flight, still ends in RuntimeTimeout', async (t) => {
  const rt = await IsolatedRuntime.start({ timeout: 200, timeoutGrace: 300 }); // requestTimeout 500 ms
  t.teardown(() => rt.close());
  let starve: NodeJS.Timeout | undefined;
  t.teardown(() => clearInterval(starve));
  rt.bindFunction('slow', () => {
    let tick = 0;
    starve = setInterval(() => {
      if (rt.closed) return clearInterval(starve);
      signal(rt.pid, tick++ % 5 === 0 ? 'SIGCONT' : 'SIGSTOP');
    }, 10);
    return new Promise(() => {}); // never settles: the call stays in flight
  });
  const error = await t.throwsAsync(rt.eval(`const p = slow(); ${UNINTERRUPTIBLE_SORT}`));
  clearInterval(starve);
  t.true(error instanceof RuntimeTimeout, String(error));
  t.true(['requestTimeout', 'cpu'].includes((error as RuntimeTimeout).limit), (error as RuntimeTimeout).limit);
  t.true(rt.closed);
});

// Regression test (fixed; it was a bug in packages/runtime, src/worker/worker-session.ts create):
// a layer's self-test ran its guest script under the guest's soft timeout, so a start with a
// short timeout failed as LayerFailed ("the guest ran past its timeout") whenever the machine was
// loaded enough to slow the self-test past it (the clock layer's, at load 15, with timeout 200).
// The self-test here takes longer than the timeout on any machine; only startTimeout bounds it.
test.serial("a layer's self-test is not bound by the guest's soft timeout", async (t) => {
  const layer = { module: new URL('./fixtures/layers/configurable-layer.js', import.meta.url).href, options: { name: 'slowcheck', selfTestGuestMs: 1_500 } };
  await using rt = await IsolatedRuntime.start({ timeout: 1_000, layers: [layer] });
  t.is(rt.report.layers.find((l) => l.name === 'slowcheck')?.selfTest, 'passed');
  // The guest's own code still has the timeout.
  await t.throwsAsync(rt.eval('for (;;) {}'), { instanceOf: RuntimeTimeout, message: /timeout \(1000 ms\)/ });
});
