import test from 'ava';
import { WEB_POLYFILLS } from '@strata/polyfills';
import { JsError, RuntimeTimeout } from '../src/index.js';
import { checkNoLeaks } from './helpers/leaks.js';
import { BOTH_RUNTIMES, type AnyRuntime } from './helpers/runtime.js';

checkNoLeaks(test);

// As browsers and test262 do: a script that ends normally keeps its value when it left a promise
// rejected with no handler; the rejection is reported on the guest's console (stderr, level
// `error`, "Uncaught (in promise) …"), never thrown in place of the result. Both runtimes.

for (const [kind, start] of BOTH_RUNTIMES) {
  const withRuntime = async (t: import('ava').ExecutionContext): Promise<AnyRuntime> => {
    const rt = await start({ timeout: 20_000, bootstrap: WEB_POLYFILLS });
    t.teardown(() => rt.close());
    return rt;
  };

  test(`${kind}: a script that leaves a rejection unhandled returns its value; the rejection is on the console`, async (t) => {
    const rt = await withRuntime(t);
    const capture = rt.captureConsole();
    t.is(await rt.eval("Promise.reject(new RangeError('x')); 42"), 42);
    t.is(await rt.eval('(async () => { throw new TypeError("from async"); })(); 43'), 43);
    t.is(await rt.eval('Promise.reject(7); 44'), 44);
    capture.stop();
    t.regex(capture.stderr, /Uncaught \(in promise\) RangeError: x/);
    t.regex(capture.stderr, /Uncaught \(in promise\) TypeError: from async/);
    t.regex(capture.stderr, /Uncaught \(in promise\) 7/);
  });

  test(`${kind}: execute reports an unhandled rejection in stderr and keeps the status and the value`, async (t) => {
    const rt = await withRuntime(t);
    const result = await rt.execute("Promise.reject(new RangeError('x')); 42");
    t.is(result.status, 'ok');
    t.is(result.result, 42);
    t.regex(result.stderr, /Uncaught \(in promise\) RangeError: x/);
  });

  test(`${kind}: a rejection left by a timer callback or after an await does not end the command`, async (t) => {
    const rt = await withRuntime(t);
    const capture = rt.captureConsole();
    t.is(await rt.eval("new Promise((resolve) => setTimeout(() => { Promise.reject(new Error('in timer')); resolve(5); }, 10))"), 5);
    t.is(await rt.eval("(async () => { await null; Promise.reject(new Error('after await')); return 6; })()"), 6);
    capture.stop();
    t.regex(capture.stderr, /Uncaught \(in promise\) Error: in timer/);
    t.regex(capture.stderr, /Uncaught \(in promise\) Error: after await/);
  });

  test(`${kind}: what the caller awaits or what is handled in time is not reported`, async (t) => {
    const rt = await withRuntime(t);
    const capture = rt.captureConsole();
    await t.throwsAsync(rt.eval("Promise.reject(new RangeError('returned'))"), { instanceOf: JsError, message: /RangeError: returned/ });
    t.is(await rt.eval('const late = Promise.reject(1); late.catch(() => undefined); 46'), 46);
    // A script that throws is still its own error.
    await t.throwsAsync(rt.eval("Promise.reject(new Error('left')); throw new TypeError('thrown')"), { instanceOf: JsError, message: /TypeError: thrown/ });
    capture.stop();
    t.notRegex(capture.stderr, /returned|Uncaught \(in promise\) 1/);
    t.regex(capture.stderr, /Uncaught \(in promise\) Error: left/);
  });

  test(`${kind}: a flood of unhandled rejections is reported in part, and counted`, async (t) => {
    const rt = await withRuntime(t);
    const capture = rt.captureConsole();
    t.is(await rt.eval('for (let i = 0; i < 100000; i++) Promise.reject(i); 7'), 7);
    capture.stop();
    const lines = capture.stderr.split('\n').filter((line) => line.startsWith('Uncaught (in promise)'));
    // The first 64 one by one, then how many more: none is lost without a word, and the host keeps 64 at most.
    t.is(lines.length, 65);
    t.is(lines[0], 'Uncaught (in promise) 0');
    t.is(lines[63], 'Uncaught (in promise) 63');
    t.is(lines[64], 'Uncaught (in promise): 99936 more promises rejected with no handler (not shown)');
    t.is(await rt.eval('1 + 1'), 2);
  });

  test(`${kind}: a rejection's getters run as guest code: what they reject is reported next, and a getter that never ends times out`, async (t) => {
    const rt = await start({ timeout: 1_000 });
    t.teardown(() => rt.close());
    const capture = rt.captureConsole();
    const leftByGetter = "Promise.reject({ get name() { Promise.reject(new Error('from a getter')); return 'Named'; }, message: 'outer' }); 8";
    t.is(await rt.eval(leftByGetter), 8);
    t.is(await rt.eval('9'), 9);
    await t.throwsAsync(rt.eval('Promise.reject({ get name() { for (;;); } }); 10'), { instanceOf: RuntimeTimeout });
    t.is(await rt.eval('11'), 11);
    capture.stop();
    t.regex(capture.stderr, /Uncaught \(in promise\) Named: outer/);
    t.regex(capture.stderr, /Uncaught \(in promise\) Error: from a getter/);
  });

  test(`${kind}: a module keeps its exports past an unhandled rejection; a module that throws is its error`, async (t) => {
    const rt = await withRuntime(t);
    t.deepEqual(await rt.evalModule("Promise.reject(new Error('m')); export const x = 1;"), { x: 1 });
    await t.throwsAsync(rt.evalModule("throw new TypeError('in module')"), { instanceOf: JsError, message: /TypeError: in module/ });
    await t.throwsAsync(rt.evalModule("await null; throw new TypeError('after its await')"), { instanceOf: JsError, message: /TypeError: after its await/ });
    t.is(await rt.eval('1 + 1'), 2);
  });
}
