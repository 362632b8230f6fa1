import test from 'ava';
import { Runtime } from '../src/index.js';
import { inMode, RUNTIME_MODES } from './helpers/runtime.js';

for (const [mode, runtimeFor] of RUNTIME_MODES) {
  test(inMode(mode, 'execute returns ok with result and output'), async (t) => {
    const rt = await runtimeFor(t);
    t.deepEqual(await rt.execute('console.log("hello"); console.warn("careful"); ({ answer: 42 })'), {
      status: 'ok',
      stdout: 'hello\n',
      stderr: 'careful\n',
      result: { answer: 42 },
      error: undefined,
      errorType: undefined,
      truncated: false,
    });
  });

  test(inMode(mode, 'execute never throws for the run itself: guest error, timeout, bad value, never-settling promise'), async (t) => {
    const rt = await runtimeFor(t, { timeout: 100 });
    const cases: [string, string, RegExp][] = [
      ['console.log("before"); null.x', 'TypeError', /Cannot read properties of null/],
      ['for (;;) {}', 'RuntimeTimeout', /timeout/],
      ['() => 1', 'ValueNotTransferable', /function/],
      ['new Promise(() => {})', 'PromiseNeverSettled', /never settle/],
      ['let let', 'SyntaxError', /let/],
    ];
    for (const [code, errorType, message] of cases) {
      const result = await rt.execute(code);
      t.is(result.status, 'error', code);
      t.is(result.errorType, errorType, code);
      t.regex(result.error ?? '', message, code);
      t.is(result.result, undefined);
    }
    t.is((await rt.execute('console.log("before"); null.x')).stdout, 'before\n');
  });

  test(inMode(mode, 'execute on a heap blow-up reports HeapLimitExceeded and the runtime is closed'), async (t) => {
    const rt = await runtimeFor(t, { maxHeapSize: 16 * 1024 * 1024, timeout: 20_000 });
    const result = await rt.execute('const a = []; for (;;) a.push(new Array(1e5).fill(1))');
    t.is(result.status, 'error');
    t.is(result.errorType, 'HeapLimitExceeded');
    t.true(rt.closed);
    const after = await rt.execute('1');
    t.is(after.status, 'error');
    t.is(after.errorType, 'HeapLimitExceeded');
  });
}

test('execute on a closed runtime reports RuntimeClosed', async (t) => {
  const rt = await Runtime.start();
  await rt.close();
  const result = await rt.execute('1');
  t.is(result.status, 'error');
  t.is(result.errorType, 'RuntimeClosed');
});
