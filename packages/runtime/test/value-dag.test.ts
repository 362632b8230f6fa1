// Values with shared subtrees: each walk is linear in the distinct objects. A DAG with 2^40 paths
// is refused at once (it has more nodes than may cross, counting each place a shared object
// appears), whichever way it crosses; ordinary sharing ([a, a]) still crosses.
import test from 'ava';
import { IsolatedRuntime, Runtime, ValueNotTransferable } from '../src/index.js';

const DAG = 'let n = [1]; for (let i = 0; i < 40; i++) n = [n, n]; n';

const RUNTIMES = {
  Runtime: () => Runtime.start({ timeout: 5_000 }),
  IsolatedRuntime: () => IsolatedRuntime.start({ timeout: 5_000 }),
};

for (const [kind, start] of Object.entries(RUNTIMES)) {
  test(`${kind}: a 2^40-path DAG as a result is refused naming the node limit, not walked until the timeout`, async (t) => {
    await using rt = await start();
    const error = await t.throwsAsync(rt.eval(DAG), { instanceOf: ValueNotTransferable });
    t.regex(error?.message ?? '', /past the limit of \d+ nodes/);
    t.is(await rt.eval('1 + 1'), 2);
  });

  test(`${kind}: a 2^40-path DAG as a host function's argument is a TypeError in the guest`, async (t) => {
    await using rt = await start();
    let called = false;
    rt.bindFunction('take', () => (called = true));
    const seen = await rt.eval(`try { take((() => { ${DAG.replace(/ n$/, ' return n')} })()); 'taken' } catch (e) { e.name + ': ' + e.message }`);
    t.regex(String(seen), /^TypeError: .*past the limit of \d+ nodes/);
    t.false(called, 'the host function never ran');
  });

  test(`${kind}: shared references that stay small still cross, both ways`, async (t) => {
    await using rt = await start();
    t.deepEqual(await rt.eval('const a = { x: 1 }; [a, a, { a }]'), [{ x: 1 }, { x: 1 }, { a: { x: 1 } }]);
    const shared = [1, 2];
    rt.bindFunction('give', () => ({ first: shared, again: shared }));
    t.deepEqual(await rt.eval('give()'), { first: [1, 2], again: [1, 2] });
    t.deepEqual(await rt.eval('const d = [[1]]; const e = [d, d]; [e, e]'), [
      [[[1]], [[1]]],
      [[[1]], [[1]]],
    ]);
  });
}
