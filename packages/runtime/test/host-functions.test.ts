import test from 'ava';
import { InvalidOption, JsError, StrataError } from '../src/index.js';
import { BOTH_RUNTIMES, inMode, RUNTIME_MODES } from './helpers/runtime.js';

for (const [mode, runtimeFor] of RUNTIME_MODES) {
  test(inMode(mode, "the seed's example: lookup('A1') * 2 is 7"), async (t) => {
    const rt = await runtimeFor(t);
    rt.bindFunction('lookup', (sku: string) => ({ A1: 3.5 })[sku]);
    t.is(await rt.eval("lookup('A1') * 2"), 7);
  });

  test(inMode(mode, 'arguments and results cross as copies of every transferable kind'), async (t) => {
    const rt = await runtimeFor(t);
    const seen: unknown[] = [];
    rt.bindFunction('echo', (...args: unknown[]) => {
      seen.push(...args);
      return args;
    });
    const out = await rt.eval(
      'echo(1, "s", 2n, null, undefined, true, [1, [2]], { a: { b: 1 } }, new Map([[1, "x"]]), new Set([1]), new Date(5), new Uint8Array([1, 2]))',
    );
    const expected = [1, 's', 2n, null, undefined, true, [1, [2]], { a: { b: 1 } }, new Map([[1, 'x']]), new Set([1]), new Date(5), new Uint8Array([1, 2])];
    t.deepEqual(seen, expected);
    t.deepEqual(out, expected);
  });

  test(inMode(mode, 'async host functions return promises to the guest and run concurrently'), async (t) => {
    const rt = await runtimeFor(t);
    let running = 0;
    let peak = 0;
    let openGate: () => void = () => {};
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    rt.bindFunction('fetchTool', async (x: number) => {
      running++;
      peak = Math.max(peak, running);
      // Held until all three are in flight at once (or 5 s pass, and the peak assertion fails).
      if (running === 3) openGate();
      await Promise.race([gate, new Promise((resolve) => setTimeout(resolve, 5_000))]);
      running--;
      return x * 2;
    });
    t.deepEqual(await rt.eval('Promise.all([fetchTool(1), fetchTool(2), fetchTool(3)])'), [2, 4, 6]);
    t.is(peak, 3);
  });

  test(inMode(mode, 'a function returning a promise (not declared async) is handled as async'), async (t) => {
    const rt = await runtimeFor(t);
    rt.bindFunction('later', (x: number) => new Promise((resolve) => setTimeout(() => resolve(x + 1), 5)));
    t.is(await rt.eval('later(1)'), 2);
  });

  test(inMode(mode, 'host errors reach the guest with their class and a redacted message by default'), async (t) => {
    const rt = await runtimeFor(t);
    rt.bindFunction('boom', () => {
      throw new TypeError('secret: /home/user/.ssh/id_rsa');
    });
    rt.bindFunction('boomAsync', async () => {
      throw new RangeError('secret token abc');
    });
    t.deepEqual(await rt.eval('try { boom() } catch (e) { [e.name, e.message, e instanceof TypeError] }'), ['TypeError', 'host function failed', true]);
    t.deepEqual(await rt.eval('boomAsync().catch((e) => [e.name, e.message])'), ['RangeError', 'host function failed']);
  });

  test(inMode(mode, 'redactHostErrors: false passes the message through'), async (t) => {
    const rt = await runtimeFor(t, { redactHostErrors: false });
    rt.bindFunction('boom', () => {
      throw new Error('visible detail');
    });
    t.is(await rt.eval('try { boom() } catch (e) { e.message }'), 'visible detail');
  });

  test(inMode(mode, 'an uncaught host error surfaces as a JsError'), async (t) => {
    const rt = await runtimeFor(t);
    rt.bindFunction('boom', () => {
      throw new Error('x');
    });
    const error = await t.throwsAsync(rt.eval('boom()'), { instanceOf: JsError });
    t.regex(error?.message ?? '', /host function failed/);
  });

  test(inMode(mode, 'bindObject binds nested functions and copies data'), async (t) => {
    const rt = await runtimeFor(t);
    rt.bindObject('tools', { version: 3, math: { add: (a: number, b: number) => a + b }, list: ['a'], greet: async (n: string) => `hi ${n}` });
    t.deepEqual(await rt.eval('(async () => [tools.version, tools.math.add(2, 3), tools.list[0], await tools.greet("x")])()'), [3, 5, 'a', 'hi x']);
  });

  test(inMode(mode, 'revoke removes the binding and disables kept references'), async (t) => {
    const rt = await runtimeFor(t);
    rt.bindFunction('secret', () => 'ok');
    t.is(await rt.eval('globalThis.kept = secret; kept()'), 'ok');
    rt.revoke('secret');
    t.is(await rt.eval('typeof secret'), 'undefined');
    t.regex((await rt.eval('try { kept() } catch (e) { e.message }')) as string, /revoked/);
    t.throws(() => rt.revoke('secret'), { instanceOf: InvalidOption });
  });

  test(inMode(mode, 'rebinding a name revokes the old functions'), async (t) => {
    const rt = await runtimeFor(t);
    rt.bindFunction('f', () => 1);
    await rt.eval('globalThis.old = f; 0');
    rt.bindFunction('f', () => 2);
    t.is(await rt.eval('f()'), 2);
    t.regex((await rt.eval('try { old() } catch (e) { e.message }')) as string, /revoked/);
  });

  test(inMode(mode, 'bindFunction validates its arguments'), async (t) => {
    const rt = await runtimeFor(t);
    t.throws(() => rt.bindFunction('not a name', () => 1), { instanceOf: InvalidOption });
    t.throws(() => rt.bindFunction('f', 42 as never), { instanceOf: InvalidOption });
    t.throws(() => rt.bindObject('o', null as never), { instanceOf: InvalidOption });
    t.throws(() => rt.bindObject('o', { when: new (class Foo {})() }), { message: /instance of Foo/ });
  });

  test(inMode(mode, 'a host function returning a non-transferable value gives the guest a TypeError naming it'), async (t) => {
    const rt = await runtimeFor(t);
    rt.bindFunction('bad', () => ({ when: new URL('https://example.com') }));
    rt.bindFunction('badAsync', async () => () => 1);
    t.regex((await rt.eval('try { bad() } catch (e) { e.name + ": " + e.message }')) as string, /^TypeError: .*instance of URL/);
    t.regex((await rt.eval('badAsync().catch((e) => e.name + ": " + e.message)')) as string, /^TypeError: .*function/);
  });

  test(inMode(mode, 'escape attempts through bound functions find nothing'), async (t) => {
    const rt = await runtimeFor(t);
    rt.bindFunction('tool', () => 1);
    const result = await rt.eval(`
      const attempts = [
        () => tool.constructor.constructor('return typeof process')(),
        () => tool.constructor('return this')().process,
        () => Object.getPrototypeOf(tool).constructor('return typeof require')(),
        () => tool.caller,
        () => tool.arguments,
      ];
      attempts.map((f) => { try { return String(f()) } catch (e) { return e.name } })
    `);
    t.deepEqual(result, ['undefined', 'undefined', 'undefined', 'TypeError', 'TypeError']);
  });

  test(inMode(mode, 'a host function cannot call back into its own runtime'), async (t) => {
    const rt = await runtimeFor(t, { redactHostErrors: false });
    let caught: unknown;
    rt.bindFunction('reenter', () => {
      try {
        rt.bindFunction('x', () => 1);
      } catch (error) {
        caught = error;
      }
      return 1;
    });
    rt.bindFunction('reenterAsync', async () => rt.eval('1'));
    rt.bindFunction('reenterLater', async () => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      return rt.eval('1');
    });
    const other = await runtimeFor(t);
    rt.bindFunction('otherRuntime', () => other.eval('40 + 2'));
    await rt.eval('reenter()');
    t.true(caught instanceof StrataError);
    t.regex((caught as Error).message, /cannot call back into its own runtime/);
    t.regex((await rt.eval('reenterAsync().catch((e) => e.message)')) as string, /cannot call back into its own runtime/);
    // Every call of a command, and what it continues after an await, is inside the host function.
    const messages = await rt.eval('Promise.all([reenterAsync(), reenterLater(), reenterAsync()].map((p) => p.catch((e) => e.message)))');
    t.is((messages as string[]).length, 3);
    for (const message of messages as string[]) t.regex(message, /cannot call back into its own runtime/);
    // Another runtime is not this one; and once the host function has returned, the runtime is usable.
    t.is(await rt.eval('otherRuntime()'), 42);
    t.is(await rt.eval('1 + 1'), 2);
  });

  test(inMode(mode, 'a host function is called with this undefined'), async (t) => {
    const rt = await runtimeFor(t);
    let seen: unknown = 'not called';
    rt.bindFunction('who', function (this: unknown) {
      seen = this;
      return 1;
    });
    t.is(await rt.eval('who()'), 1);
    t.is(seen, undefined);
  });
}

// Regression test (fixed; it was a bug in src/worker/worker-main.ts): a worker of one isolate
// reads its commands synchronously, so the event loop that reads host calls' settlements never
// turned between commands that did not wait on the host, and an async host call the guest did
// not await never settled: its `then` never ran, however many commands came after.
for (const [engine, start] of BOTH_RUNTIMES) {
  test(`${engine}: an async host call the guest did not await settles by its next command`, async (t) => {
    const rt = await start({});
    t.teardown(() => rt.close());
    let settle: (value: number) => void = () => {};
    const settled = new Promise<number>((resolve) => (settle = resolve));
    rt.bindFunction('tool', async (x: number) => (await settled) * x);
    t.is(await rt.eval('globalThis.got = "not yet"; tool(2).then((v) => { globalThis.got = v; }); 1'), 1);
    t.is(await rt.eval('got'), 'not yet');
    settle(21);
    // the parent's answer is on its way to the worker: the next command finds it
    await new Promise((resolve) => setTimeout(resolve, 100));
    t.is(await rt.eval('got'), 42);
    t.is(await rt.eval('1 + 1'), 2);
  });
}

for (const [engine, start] of BOTH_RUNTIMES) {
  test(`${engine}: a bad binding is refused in the contract's words, before anything crosses`, async (t) => {
    const rt = await start({});
    t.teardown(() => rt.close());
    t.throws(() => rt.bindFunction('not a name', () => 1), {
      instanceOf: InvalidOption,
      message: 'bindFunction: name must be a JavaScript identifier (got "not a name")',
    });
    t.throws(() => rt.bindObject('café', {}), { instanceOf: InvalidOption, message: 'bindObject: name must be a JavaScript identifier (got "café")' });
    t.throws(() => rt.bindFunction('f', 42 as never), { instanceOf: InvalidOption, message: 'bindFunction("f"): fn must be a function' });
    t.throws(() => rt.bindObject('o', [] as never), { instanceOf: InvalidOption, message: 'bindObject("o"): object must be a plain object' });
    t.is(await rt.eval('typeof f + typeof o'), 'undefinedundefined');
  });
}
