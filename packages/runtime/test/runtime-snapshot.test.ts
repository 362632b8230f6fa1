// Runtime.createSnapshot and Runtime.start({ snapshot }): what a restored runtime gets from the
// snapshot and what each gets for itself (entropy, Math.random, egress, limits), that the
// prelude's attach step is never the guest's, and how making a snapshot fails. That a restored
// runtime behaves as a fresh one is tested by the suites that run over RUNTIME_MODES.
import test from 'ava';
import { WEB_POLYFILLS } from '@strata/polyfills';
import { InvalidOption, JsError, Runtime, RuntimeTimeout, StrataError, type EgressHandler, type RuntimeSnapshot } from '../src/index.js';
import { checkNoLeaks } from './helpers/leaks.js';
import { restoredRuntimeFor, snapshotOf } from './helpers/runtime.js';

checkNoLeaks(test);

const start = async (t: import('ava').ExecutionContext, snapshot: RuntimeSnapshot, options: Parameters<typeof Runtime.start>[0] = {}) => {
  const rt = await Runtime.start({ ...options, snapshot });
  t.teardown(() => rt.close());
  return rt;
};

// ---------------------------------------------------------------- each isolate its own

test('crypto.getRandomValues and randomUUID work after restore and differ per isolate', async (t) => {
  const [a, b] = await Promise.all([restoredRuntimeFor(t, { bootstrap: WEB_POLYFILLS }), restoredRuntimeFor(t, { bootstrap: WEB_POLYFILLS })]);
  const draw = 'Array.from(crypto.getRandomValues(new Uint8Array(32)))';
  const bytesA = (await a.eval(draw)) as number[];
  const bytesB = (await b.eval(draw)) as number[];
  t.is(bytesA.length, 32);
  t.true(bytesA.some((byte) => byte !== 0));
  t.notDeepEqual(bytesA, bytesB);
  t.notDeepEqual(await a.eval(draw), bytesA, 'each draw is new');
  const uuid = (await a.eval('crypto.randomUUID()')) as string;
  t.regex(uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  t.not(await b.eval('crypto.randomUUID()'), uuid);
});

test('Math.random is seeded anew in each restored isolate', async (t) => {
  const snapshot = await snapshotOf({ bootstrap: WEB_POLYFILLS });
  const sequences = await Promise.all(
    [0, 1, 2].map(async () => (await start(t, snapshot)).eval('[Math.random(), Math.random(), Math.random()]') as Promise<number[]>),
  );
  t.notDeepEqual(sequences[0], sequences[1]);
  t.notDeepEqual(sequences[1], sequences[2]);
  t.notDeepEqual(sequences[0], sequences[2]);
});

test("a bootstrap that captured __strataEntropy inside the snapshot draws the host's entropy after restore", async (t) => {
  const lazy = `(() => {
    const entropy = globalThis.__strataEntropy;
    delete globalThis.__strataEntropy;
    globalThis.drawBytes = (n) => Array.from(entropy(n));
  })();`;
  const a = await restoredRuntimeFor(t, { bootstrap: lazy });
  const b = await restoredRuntimeFor(t, { bootstrap: lazy });
  const bytes = (await a.eval('drawBytes(64)')) as number[];
  t.is(bytes.length, 64);
  t.notDeepEqual(bytes, await b.eval('drawBytes(64)'));
  const error = await t.throwsAsync(a.eval('drawBytes(65537)'), { instanceOf: JsError });
  t.is(error?.guestName, 'RangeError');
  t.regex(error?.message ?? '', /integer from 0 to 65536/);
  t.is(await a.eval('typeof __strataEntropy'), 'undefined');
});

test("the guest's fetch reaches the runtime's own egress after restore; without one it is refused, saying how to allow it", async (t) => {
  const snapshot = await snapshotOf({ bootstrap: WEB_POLYFILLS });
  const seen: string[] = [];
  const egress: EgressHandler = async (request) => {
    seen.push(`${request.method} ${request.url}`);
    return {
      status: 200,
      statusText: 'OK',
      url: request.url,
      redirected: false,
      headers: [['content-type', 'text/plain']],
      body: new TextEncoder().encode('hello'),
    };
  };
  const withEgress = await start(t, snapshot, { egress });
  t.is(await withEgress.eval("fetch('https://api.example.com/v1/x').then((r) => r.text())"), 'hello');
  t.deepEqual(seen, ['GET https://api.example.com/v1/x']);
  const without = await start(t, snapshot);
  t.regex((await without.eval("fetch('https://api.example.com/').then(() => 'fetched', (e) => e.name + ': ' + e.message)")) as string, /^TypeError: .*egress/);
  t.is(
    await without.eval("typeof __strataFetch + typeof __strataFetchCancel + Object.getOwnPropertyNames(globalThis).includes('__strataFetch')"),
    'undefinedundefinedfalse',
  );
});

test('the lazy installers are still lazy after restore: URL and the streams load on first use', async (t) => {
  const rt = await restoredRuntimeFor(t, { bootstrap: WEB_POLYFILLS });
  const kinds = "['URL', 'ReadableStream'].map((name) => typeof Object.getOwnPropertyDescriptor(globalThis, name).get)";
  t.deepEqual(await rt.eval(kinds), ['function', 'function'], 'accessors until first use');
  t.is(await rt.eval("new URL('https://a.example/b?c=1').searchParams.get('c')"), '1');
  t.is(await rt.eval("typeof Object.getOwnPropertyDescriptor(globalThis, 'URL').value"), 'function');
  t.is(await rt.eval("typeof Object.getOwnPropertyDescriptor(globalThis, 'ReadableStream').get"), 'function', 'the streams group is still lazy');
  t.is(await rt.eval("crypto.subtle.digest('SHA-256', new Uint8Array(0)).then((d) => new Uint8Array(d)[0])"), 0xe3);
});

test('each restored runtime has its own limits: maxHeapSize, maxBufferBytes and the soft timeout', async (t) => {
  const snapshot = await snapshotOf({ bootstrap: WEB_POLYFILLS });
  const small = await start(t, snapshot, { maxHeapSize: 16 * 1024 * 1024, maxBufferBytes: 1024 * 1024, timeout: 300 });
  t.regex(
    (await small.eval("try { new Uint8Array(2 * 1024 * 1024); 'allocated' } catch (e) { e.name + ': ' + e.message }")) as string,
    /^RangeError: .*maxBufferBytes/,
  );
  const big = await start(t, snapshot);
  t.is(await big.eval('new Uint8Array(2 * 1024 * 1024).length'), 2 * 1024 * 1024);
  await t.throwsAsync(small.eval('for (;;);'), { instanceOf: RuntimeTimeout });
  t.is(await small.eval('1 + 1'), 2);
  t.is(small.options.maxHeapSize, 16 * 1024 * 1024);
  t.deepEqual(small.options.bootstrap, [WEB_POLYFILLS], "the options report the snapshot's bootstrap");
});

// ---------------------------------------------------------------- the attach step is never the guest's

test('the guest finds no attach step, and none of the host hooks, in a restored runtime', async (t) => {
  const rt = await restoredRuntimeFor(t, { bootstrap: WEB_POLYFILLS });
  const hooks = ['__strataAttach', '__strataEntropy', '__strataFetch', '__strataFetchCancel', 'gc'];
  t.deepEqual(
    await rt.eval(
      `${JSON.stringify(hooks)}.filter((name) => typeof globalThis[name] === 'function' || Object.getOwnPropertyNames(globalThis).includes(name) && globalThis[name] !== undefined)`,
    ),
    [],
  );
  t.false(await rt.eval('Object.getOwnPropertyNames(globalThis).some((name) => /attach/i.test(name))'));
});

test('a bootstrap that keeps the attach step for the guest gives it nothing: the step works once, and the host took it', async (t) => {
  const keep = 'globalThis.keptAttach = globalThis.__strataAttach;';
  for (const rt of [await restoredRuntimeFor(t, { bootstrap: keep }), await Runtime.start({ bootstrap: keep })]) {
    t.teardown(() => rt.close());
    // In a fresh runtime the host attaches before the bootstrap runs: there is nothing to keep.
    const kept = await rt.eval('typeof keptAttach');
    if (kept === 'function') {
      const error = await t.throwsAsync(rt.eval('keptAttach(() => 0, () => 0, () => 0, () => 0, () => 0, () => 0, { maxBufferBytes: 1e12 })'), {
        instanceOf: JsError,
      });
      t.regex(error?.message ?? '', /already attached/);
    } else {
      t.is(kept, 'undefined');
    }
    rt.bindFunction('ping', () => 'pong');
    t.is(await rt.eval('ping()'), 'pong', "the host's callbacks are the ones attached");
  }
});

test('a bootstrap that calls the attach step itself inside the snapshot makes the restore fail with a StrataError', async (t) => {
  const snapshot = await Runtime.createSnapshot({
    bootstrap: 'globalThis.__strataAttach(() => 0, () => 0, () => 0, () => 0, () => 0, () => 0, { maxBufferBytes: 1 });',
  });
  await t.throwsAsync(Runtime.start({ snapshot }), { instanceOf: StrataError, message: /attach step/ });
});

// ---------------------------------------------------------------- what a snapshot fixes

test('bootstrap and strictEval come from the snapshot: the same values are accepted, others refused saying why', async (t) => {
  const snapshot = await snapshotOf({ bootstrap: ['globalThis.a = 1'], strictEval: true });
  const same = await start(t, snapshot, { bootstrap: 'globalThis.a = 1', strictEval: true });
  t.is(await same.eval('a'), 1);
  t.true(same.options.strictEval);
  t.regex((await same.eval("try { eval('1') } catch (e) { e.name }")) as string, /EvalError/);
  await t.throwsAsync(Runtime.start({ snapshot, bootstrap: 'globalThis.a = 2' }), {
    instanceOf: InvalidOption,
    message: /bootstrap: the snapshot holds its own/,
  });
  await t.throwsAsync(Runtime.start({ snapshot, strictEval: false }), {
    instanceOf: InvalidOption,
    message: /strictEval: the snapshot was made with strictEval: true/,
  });
});

test('only a snapshot Runtime.createSnapshot made is accepted', async (t) => {
  const real = await snapshotOf();
  const forged = Object.create(Object.getPrototypeOf(real), { bootstrap: { value: [] }, strictEval: { value: false } }) as RuntimeSnapshot;
  await t.throwsAsync(Runtime.start({ snapshot: forged }), { instanceOf: InvalidOption, message: /made by Runtime.createSnapshot/ });
  await t.throwsAsync(Runtime.start({ snapshot: {} as RuntimeSnapshot }), { instanceOf: InvalidOption });
  await t.throwsAsync(Runtime.createSnapshot({ timeout: 5 } as never), { instanceOf: InvalidOption, message: /fixes only bootstrap and strictEval/ });
  const rt = await start(t, real);
  t.is(await rt.eval('1 + 1'), 2);
});

// ---------------------------------------------------------------- making one fails as start() would

test('a bootstrap that throws fails createSnapshot with the JsError start() gives for it', async (t) => {
  const bootstrap = 'throw new TypeError("bad bootstrap")';
  const fromStart = await t.throwsAsync(Runtime.start({ bootstrap }), { instanceOf: JsError });
  const fromSnapshot = await t.throwsAsync(Runtime.createSnapshot({ bootstrap }), { instanceOf: JsError });
  t.is(fromSnapshot?.guestName, fromStart?.guestName);
  t.is(fromSnapshot?.message, fromStart?.message);
});

test('a bootstrap that never ends is stopped by the trial run: RuntimeTimeout, the process goes on', async (t) => {
  await t.throwsAsync(Runtime.createSnapshot({ bootstrap: 'for (;;);' }), { instanceOf: RuntimeTimeout });
});

test('a bootstrap that draws entropy or fetches while it loads cannot be snapshotted, and is told why', async (t) => {
  const entropy = await t.throwsAsync(Runtime.createSnapshot({ bootstrap: 'globalThis.__strataEntropy(16)' }), { instanceOf: JsError });
  t.regex(entropy?.message ?? '', /entropy is not attached yet.*on first use/);
  const fetched = await t.throwsAsync(Runtime.createSnapshot({ bootstrap: "globalThis.__strataFetch({ url: 'https://a.example/' }, 1)" }), {
    instanceOf: JsError,
  });
  t.regex(fetched?.message ?? '', /transport is not attached yet/);
});

test("a bootstrap's console output while the snapshot is made is dropped; after restore the console reaches the host", async (t) => {
  const rt = await restoredRuntimeFor(t, { bootstrap: 'console.log("while loading"); globalThis.loaded = true;' });
  t.true(await rt.eval('loaded'));
  const out = await rt.execute('console.log("after restore")');
  t.is(out.stdout, 'after restore\n');
});
