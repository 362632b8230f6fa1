import test from 'ava';
import * as strata from '../src/index.js';
import { checkNoLeaks } from './helpers/leaks.js';

checkNoLeaks(test);

test.serial('each async context has its own default runtime', async (t) => {
  const run = async (value: number) => {
    await strata.eval(`globalThis.mine = ${value}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
    const seen = await strata.eval('mine');
    await strata.closeDefaultRuntime();
    return seen;
  };
  // Each run starts in an async context of its own, as separate requests of a server would.
  const results = await Promise.all([1, 2, 3].map((v) => new Promise((resolve) => setImmediate(() => void run(v).then(resolve)))));
  t.deepEqual(results, [1, 2, 3]);
});

test.serial('module-level helpers run on an in-process Runtime by default', async (t) => {
  strata.bindFunction('double', (x: number) => x * 2);
  t.is(await strata.eval('double(21)'), 42);
  t.is((await strata.execute('console.log("x"); 1')).stdout, 'x\n');
  await strata.closeDefaultRuntime();
});

test.serial('configureDefaultRuntime({ isolated: true }) moves them into a worker; a crash quietly gets a fresh one', async (t) => {
  strata.configureDefaultRuntime({ isolated: true, timeout: 2_000 });
  strata.bindFunction('lookup', (sku: string) => ({ A1: 3.5 })[sku]);
  t.is(await strata.eval("lookup('A1') * 2"), 7);
  const crashed = await strata.execute('new Array(2 ** 32 - 1).fill(0)');
  t.is(crashed.status, 'error');
  t.true(['WorkerCrashed', 'RuntimeTimeout'].includes(crashed.errorType ?? ''), crashed.errorType);
  // The next call quietly gets a fresh runtime, with the same bindings.
  t.is(await strata.eval("lookup('A1') + 1"), 4.5);
  await strata.closeDefaultRuntime();
  strata.configureDefaultRuntime({});
});

test.serial('configureDefaultRuntime validates its options at once', (t) => {
  t.throws(() => strata.configureDefaultRuntime({ isolated: true, maxMemory: -5 }), { instanceOf: strata.InvalidOption });
  t.throws(() => strata.configureDefaultRuntime({ timeout: 'x' as never }), { instanceOf: strata.InvalidOption });
});
