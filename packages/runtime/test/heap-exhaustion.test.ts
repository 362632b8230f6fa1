import test from 'ava';
import { MAX_PENDING_TIMERS, WEB_POLYFILLS } from '@strata/polyfills';
import { HeapLimitExceeded, IsolatedRuntime, JsError, Runtime } from '../src/index.js';
import { checkNoLeaks } from './helpers/leaks.js';
import { startRestored } from './helpers/runtime.js';

checkNoLeaks(test);

// A guest that fills its heap is HeapLimitExceeded, whatever it allocates, in both runtimes with
// default memory options: never a process abort (SIGABRT), never the worker's maxMemory kill. The
// timer table and array buffers have their own documented caps, each a catchable RangeError.
const HEAP_FILLERS: Record<string, string> = {
  closures: 'const kept = []; for (let i = 0; ; i++) kept.push(() => i);',
  strings: 'const kept = []; for (let i = 0; ; i++) kept.push("x".repeat(100) + i);',
  'a Map': 'const kept = new Map(); for (let i = 0; ; i++) kept.set(i, { i });',
  'a growing array': 'const kept = []; for (;;) kept.push(1.5);',
  'an array that doubles': 'let kept = [1]; for (;;) kept = kept.concat(kept);',
  objects: 'const kept = []; for (;;) kept.push({ a: 1, b: 2, c: [1, 2, 3] });',
};

type AnyRuntime = Runtime | IsolatedRuntime;
const runtimes: [string, () => Promise<AnyRuntime>][] = [
  // Generous timeouts: on a loaded machine only the heap limit may end these.
  ['Runtime', () => Runtime.start({ bootstrap: WEB_POLYFILLS, timeout: 120_000 })],
  ['Runtime from a snapshot', () => startRestored({ bootstrap: WEB_POLYFILLS, timeout: 120_000 })],
  ['IsolatedRuntime', () => IsolatedRuntime.start({ bootstrap: WEB_POLYFILLS, timeout: 120_000, prewarm: false })],
];

// A restored runtime's heap is its own from the first allocation on: two shapes prove the limit
// holds for it (every shape runs against the other two, which the restore does not change).
const RESTORED_SHAPES = new Set(['strings', 'closures']);

for (const [kind, start] of runtimes) {
  for (const [shape, code] of Object.entries(HEAP_FILLERS)) {
    if (kind === 'Runtime from a snapshot' && !RESTORED_SHAPES.has(shape)) continue;
    test(`${kind}: a heap filled with ${shape} is HeapLimitExceeded, and a new runtime replaces the closed one`, async (t) => {
      const rt = await start();
      t.teardown(() => rt.close());
      await t.throwsAsync(rt.eval(code), { instanceOf: HeapLimitExceeded, message: /maxHeapSize/ });
      t.true(rt.closed);
      await t.throwsAsync(rt.eval('1 + 1'), { instanceOf: HeapLimitExceeded });
      const next = await start();
      t.teardown(() => next.close());
      t.is(await next.eval('1 + 1'), 2);
    });
  }

  test(`${kind}: a timer flood stops at the timer cap with a RangeError; the runtime stays usable`, async (t) => {
    const rt = await start();
    t.teardown(() => rt.close());
    const error = await t.throwsAsync(rt.eval('for (let i = 0; i < 2e6; i++) setTimeout(() => {}, 1);'), { instanceOf: JsError });
    t.is((error as JsError).guestName, 'RangeError');
    t.regex(error!.message, new RegExp(`${MAX_PENDING_TIMERS} timers are already pending`));
    t.is(await rt.eval('1 + 1'), 2);
  });

  test(`${kind}: typed arrays stop at maxBufferBytes with a RangeError; the runtime stays usable`, async (t) => {
    const rt = await start();
    t.teardown(() => rt.close());
    const error = await t.throwsAsync(rt.eval('const kept = []; for (;;) kept.push(new Uint8Array(1e6));'), { instanceOf: JsError });
    t.regex(error!.message, /RangeError: .*maxBufferBytes/);
    t.false(rt.closed);
    t.is(await rt.eval('1 + 1'), 2);
  });
}
