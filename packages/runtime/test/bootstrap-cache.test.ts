// Bootstrap scripts are compiled from V8's code cache after the first isolate of the process that
// compiled them: the cached compile must behave exactly as a fresh one (globals, behaviour, error
// places), a script that does not compile is never cached, and the cache stays bounded.
import test from 'ava';
import { JsError, Runtime } from '../src/index.js';

const BOOTSTRAP = `
globalThis.greet = function greet(name) {
  if (typeof name !== 'string') throw new TypeError('name must be a string');
  return 'hello ' + name;
};
globalThis.loadedAt = typeof performance;
`;

test('a bootstrap compiled from the cache behaves as the first compile did, errors at the same places', async (t) => {
  const outcomes: unknown[] = [];
  for (let i = 0; i < 3; i++) {
    await using rt = await Runtime.start({ bootstrap: [BOOTSTRAP] });
    const stack = await rt.eval('try { greet(1) } catch (e) { e.stack }');
    outcomes.push([await rt.eval('greet("cache")'), await rt.eval('loadedAt'), String(stack).split('\n').slice(0, 2).join('\n')]);
  }
  t.deepEqual(outcomes[1], outcomes[0]);
  t.deepEqual(outcomes[2], outcomes[0]);
  t.regex((outcomes[0] as string[])[2]!, /TypeError: name must be a string\n\s+at greet \(strata:bootstrap-0:3:/);
});

test('a bootstrap that does not compile is a SyntaxError every time (never cached)', async (t) => {
  for (let i = 0; i < 2; i++) {
    const error = await t.throwsAsync(Runtime.start({ bootstrap: ['let = = 1'] }), { instanceOf: JsError });
    t.regex(error!.message, /^SyntaxError/);
  }
});

test('many distinct bootstraps each run their own code (the cache is bounded and keyed by the whole text)', async (t) => {
  for (let i = 0; i < 24; i++) {
    await using rt = await Runtime.start({ bootstrap: [`globalThis.n = ${i};`] });
    t.is(await rt.eval('n'), i);
  }
  await using again = await Runtime.start({ bootstrap: ['globalThis.n = 0;'] });
  t.is(await again.eval('n'), 0);
});
