import test from 'ava';
import { WEB_POLYFILLS } from '@strata/polyfills';
import { PromiseNeverSettled, RuntimeTimeout } from '../src/index.js';
import { inMode, RUNTIME_MODES } from './helpers/runtime.js';

for (const [mode, runtimeFor] of RUNTIME_MODES) {
  test(inMode(mode, 'with WEB_POLYFILLS, eval drives timers on virtual time: nothing sleeps'), async (t) => {
    const rt = await runtimeFor(t, { bootstrap: WEB_POLYFILLS });
    const started = Date.now();
    const out = await rt.eval(`
      const order = [];
      setTimeout(() => order.push('b'), 20);
      setTimeout(() => order.push('a'), 10);
      new Promise((resolve) => setTimeout(() => resolve(order), 60_000))
    `);
    t.deepEqual(out, ['a', 'b']);
    // Real time: half the timer's virtual minute, so a loaded machine cannot fail it and a real wait would.
    t.true(Date.now() - started < 30_000, `a one-minute timer returned after ${Date.now() - started} ms`);
  });

  test(inMode(mode, 'timers wait for in-flight host calls before virtual time advances'), async (t) => {
    const rt = await runtimeFor(t, { bootstrap: WEB_POLYFILLS });
    rt.bindFunction('slowTool', () => new Promise((resolve) => setTimeout(() => resolve('tool'), 30)));
    t.is(await rt.eval('Promise.race([slowTool(), new Promise((r) => setTimeout(() => r("timer"), 10_000))])'), 'tool');
  });

  test(inMode(mode, 'a runaway setInterval is cut off and the eval still ends'), async (t) => {
    const rt = await runtimeFor(t, { bootstrap: WEB_POLYFILLS, timeout: 10_000 });
    const out = await rt.execute('let n = 0; setInterval(() => n++, 1); new Promise((resolve) => setTimeout(() => resolve(n), 1e9))');
    t.is(out.status, 'ok');
    t.is(out.result, 10_000, 'the interval ran until it was cut off, then the long timer fired');
    t.regex(out.stderr, /cut off/);
  });

  test(inMode(mode, 'a timer loop that re-arms itself forever is stopped by the timeout'), async (t) => {
    const rt = await runtimeFor(t, { bootstrap: WEB_POLYFILLS, timeout: 300 });
    await t.throwsAsync(rt.eval('const tick = () => setTimeout(tick, 1); tick(); new Promise(() => {})'), { instanceOf: RuntimeTimeout });
  });

  test(inMode(mode, 'without WEB_POLYFILLS there are no timers, and a pending promise is reported'), async (t) => {
    const rt = await runtimeFor(t);
    t.is(await rt.eval('typeof setTimeout'), 'undefined');
    await t.throwsAsync(rt.eval('new Promise(() => {})'), { instanceOf: PromiseNeverSettled });
  });

  test(inMode(mode, 'WEB_POLYFILLS loads under strictEval, and a string passed to setTimeout is never compiled'), async (t) => {
    const rt = await runtimeFor(t, { bootstrap: WEB_POLYFILLS, strictEval: true });
    t.is(await rt.eval('globalThis.ran = false; setTimeout("globalThis.ran = true", 0); new Promise((r) => setTimeout(() => r(ran), 5))'), false);
    t.is(await rt.eval('new TextDecoder().decode(new TextEncoder().encode("héllo"))'), 'héllo');
  });
}
