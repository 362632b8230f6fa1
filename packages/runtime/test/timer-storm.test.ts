// A guest that keeps the event loop busy with tiny tasks until its soft timeout: every task is
// one entry into the isolate. With isolated-vm's own per-entry `timeout` (shrinking to the
// command's deadline) this crashed the process with SIGSEGV (isolated-vm 7.0.1's timer thread
// overflows its stack; see the README's known issues). Strata's deadline queues nothing per
// entry: these storms end in RuntimeTimeout and the runtime goes on.
import test from 'ava';
import { WEB_POLYFILLS } from '@strata/polyfills';
import { IsolatedRuntime, RuntimeTimeout } from '../src/index.js';
import { inMode, RUNTIME_MODES, runtimeFor } from './helpers/runtime.js';

const STORMS = {
  'a setTimeout(0) chain': 'new Promise(() => { const tick = () => setTimeout(tick, 0); tick(); })',
  'an await-a-timer loop': '(async () => { for (;;) await new Promise((resolve) => setTimeout(resolve, 0)); })()',
  'a microtask loop': '(async () => { for (;;) await null; })()',
};

for (const [mode, runtimeFor] of RUNTIME_MODES) {
  for (const [name, code] of Object.entries(STORMS)) {
    // Ten rounds where the crash was found (fresh); a restored runtime shares that engine, three prove it.
    const rounds = mode === 'fresh' ? 10 : 3;
    test(
      inMode(mode, `Runtime (in this process, with the JIT): ${name} past the soft timeout is RuntimeTimeout, ${rounds === 10 ? 'ten' : 'three'} times over`),
      async (t) => {
        // The old code crashed here within a few runs: each storm queued ~10^5 timers due together.
        for (let round = 0; round < rounds; round++) {
          const rt = await runtimeFor(t, { bootstrap: WEB_POLYFILLS, timeout: 300 });
          await t.throwsAsync(rt.eval(code), { instanceOf: RuntimeTimeout });
          t.is(await rt.eval('1 + 1'), 2, 'the runtime is still usable');
          await rt.close();
        }
      },
    );
  }
}

for (const jitless of [false, true]) {
  test(`IsolatedRuntime (jitless: ${jitless}): timer storms past the soft timeout are RuntimeTimeout, the worker lives on`, async (t) => {
    // The hard deadline far away (by default it is timeout + 2 s of wall time, which a storm on a
    // loaded machine can reach first): only the soft timeout may end these storms here.
    await using rt = await IsolatedRuntime.start({ bootstrap: WEB_POLYFILLS, timeout: 1_000, requestTimeout: 60_000, jitless });
    const pid = rt.pid;
    for (const code of Object.values(STORMS)) {
      const run = await rt.execute(code);
      t.is(run.errorType, 'RuntimeTimeout', run.error);
    }
    t.is(await rt.eval('1 + 1'), 2);
    t.false(rt.closed);
    t.is(rt.pid, pid, 'the same worker: it never crashed');
  });
}

test('the soft timeout charges guest time only: time in a sync host function is not counted', async (t) => {
  const rt = await runtimeFor(t, { timeout: 300 });
  rt.bindFunction('slowTool', () => {
    const until = Date.now() + 150;
    while (Date.now() < until);
    return 'done';
  });
  // Four host calls of 150 ms each (600 ms) inside a 300 ms budget: the guest itself spends almost nothing.
  t.deepEqual(await rt.eval('[slowTool(), slowTool(), slowTool(), slowTool()]'), ['done', 'done', 'done', 'done']);
  // The guest's own loop is still stopped at its budget, host calls in between or not.
  await t.throwsAsync(rt.eval('slowTool(); for (;;);'), { instanceOf: RuntimeTimeout });
  t.is(await rt.eval('2 + 2'), 4);
});

test('a deadline that fires inside a host function stops the guest as soon as it resumes', async (t) => {
  const rt = await runtimeFor(t, { timeout: 200 });
  rt.bindFunction('noop', () => 0);
  // The guest burns its budget between host calls; it must not escape by catching anything.
  await t.throwsAsync(rt.eval('for (;;) { try { noop(); } catch {} }'), { instanceOf: RuntimeTimeout });
  t.is(await rt.eval('3'), 3);
});
