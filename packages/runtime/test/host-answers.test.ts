// Whatever a host function returns or throws, the guest gets a value or a catchable error, the
// runtime stays usable, and nothing reaches this process's event loop: a careless tool must not
// be able to crash or hang the host.
import test, { type ExecutionContext } from 'ava';
import { Prng } from '@strata/wire/testing/prng';
import { ValueGenerator } from '@strata/wire/testing/value-generator';
import { wireEqual } from '@strata/wire/testing/wire-equal';
import { IsolatedRuntime, Runtime } from '../src/index.js';

type AnyRuntime = Runtime | IsolatedRuntime;

// Anything that escapes to the event loop fails the test that was running.
const escaped: unknown[] = [];
process.on('uncaughtException', (error) => escaped.push(error));
process.on('unhandledRejection', (error) => escaped.push(error));

async function both(t: ExecutionContext, body: (rt: AnyRuntime, kind: string) => Promise<void>): Promise<void> {
  for (const kind of ['Runtime', 'IsolatedRuntime']) {
    const before = escaped.length;
    // Not a test of timeouts: generous ones. The file's tests run at once (some with 50 MB answers)
    // and the parent's requestTimeout is wall-clock, so a busy process and a loaded machine are
    // charged to every command in flight: 5 s (7 s hard) failed beside a CPU burner.
    const rt: AnyRuntime = kind === 'Runtime' ? await Runtime.start({ timeout: 30_000 }) : await IsolatedRuntime.start({ timeout: 30_000 });
    try {
      await body(rt, kind);
      t.is(await rt.eval('1 + 1'), 2, `${kind} is still usable`);
      t.false(rt.closed, `${kind} is not closed`);
    } finally {
      await rt.close();
    }
    // Let stray callbacks run before counting.
    await new Promise((resolve) => setTimeout(resolve, 20));
    t.deepEqual(escaped.slice(before), [], `${kind}: nothing reached the event loop`);
  }
}

/** Calls `fn` from the guest, sync or awaited, and returns what the guest saw. */
async function guestCall(rt: AnyRuntime, call: string): Promise<{ ok: boolean; name?: string; message?: string; value?: unknown }> {
  return (await rt.eval(`(async () => {
    try { return { ok: true, value: await ${call} }; }
    catch (e) { return { ok: false, name: String(e?.name), message: String(e?.message) }; }
  })()`)) as { ok: boolean; name?: string; message?: string; value?: unknown };
}

function revokedProxy(): object {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
}

const throwingTraps = new Proxy(
  {},
  new Proxy(
    {},
    {
      get() {
        return () => {
          throw new Error('trap');
        };
      },
    },
  ),
);

function errorWithThrowingGetters(): Error {
  const error = new Error('x');
  Object.defineProperty(error, 'name', {
    get() {
      throw new Error('name getter');
    },
  });
  Object.defineProperty(error, 'message', {
    get() {
      throw new Error('message getter');
    },
  });
  return error;
}

const HOSTILE: Record<string, () => unknown> = {
  'a revoked Proxy': revokedProxy,
  'a Proxy whose traps throw': () => throwingTraps,
  'an Error whose name and message getters throw': errorWithThrowingGetters,
  'an object whose toString throws': () => ({
    toString() {
      throw new Error('toString');
    },
  }),
  'a thenable whose then getter throws': () => ({
    get then() {
      throw new Error('then getter');
    },
  }),
  'a thenable whose then throws': () => ({
    then() {
      throw new Error('then');
    },
  }),
  'a function': () => () => 1,
  'a symbol': () => Symbol('s'),
  undefined: () => undefined,
  null: () => null,
};

for (const [name, make] of Object.entries(HOSTILE)) {
  test(`a host function that throws ${name}: the guest catches an Error, the host error stays redacted`, async (t) => {
    await both(t, async (rt) => {
      rt.bindFunction('sync', () => {
        throw make();
      });
      rt.bindFunction('later', async () => {
        throw make();
      });
      for (const call of ['sync()', 'later()']) {
        const seen = await guestCall(rt, call);
        t.false(seen.ok, call);
        t.is(seen.message, 'host function failed', `${call}: redacted by default`);
      }
    });
  });

  test(`a host function that returns ${name}: the guest gets a value or a catchable error`, async (t) => {
    await both(t, async (rt) => {
      rt.bindFunction('sync', () => make());
      rt.bindFunction('later', async () => make());
      for (const call of ['sync()', 'later()']) {
        const seen = await guestCall(rt, call);
        if (seen.ok) t.true(seen.value === undefined || seen.value === null, `${call} gave ${String(seen.value)}`);
        else t.regex(seen.message ?? '', /.+/, call);
      }
    });
  });
}

test('a result too large for the boundary is an error naming the limit (IsolatedRuntime), not a crash', async (t) => {
  await both(t, async (rt, kind) => {
    const big = 'x'.repeat(50 * 1024 * 1024);
    rt.bindFunction('huge', () => big);
    rt.bindFunction('hugeLater', async () => big);
    for (const call of ['huge()', 'hugeLater()']) {
      const seen = await guestCall(rt, `Promise.resolve(${call}).then((s) => s.length)`);
      if (kind === 'Runtime') {
        // In this process there is no wire: the string crosses whole.
        t.true(seen.ok, seen.message);
      } else {
        t.false(seen.ok);
        t.is(seen.name, 'RangeError');
        t.regex(seen.message ?? '', /cannot cross to the worker.*(bytes|maxFrameBytes)/i);
      }
    }
  });
});

test('a result with more nodes than the boundary carries is a catchable error naming the limit', async (t) => {
  await both(t, async (rt, kind) => {
    rt.bindFunction('range', (n: number) => Array.from({ length: n }, (_, i) => i));
    rt.bindFunction('rangeLater', async (n: number) => Array.from({ length: n }, (_, i) => i));
    for (const call of ['range(3e6)', 'rangeLater(3e6)']) {
      const seen = await guestCall(rt, `Promise.resolve(${call}).then((a) => a.length)`);
      if (seen.ok) {
        t.is(kind, 'Runtime', `${call}: only the in-process runtime may carry it`);
        t.is(seen.value, 3e6);
      } else {
        t.regex(seen.message ?? '', /node|limit|max/i, `${call}: ${seen.message}`);
      }
    }
  });
});

test('arguments too large for the boundary are a catchable TypeError in the guest (IsolatedRuntime)', async (t) => {
  await using rt = await IsolatedRuntime.start({ timeout: 30_000 });
  rt.bindFunction('take', (s: string) => s.length);
  const seen = await guestCall(rt, "take('x'.repeat(40 * 1024 * 1024))");
  t.false(seen.ok);
  t.is(seen.name, 'TypeError');
  t.regex(seen.message ?? '', /take: the arguments cannot cross to the host/);
  t.is(await rt.eval("take('abc')"), 3);
});

test('property: host functions returning or throwing random wire values never crash or stall a runtime', async (t) => {
  const rng = new Prng(0x5eed);
  const values = new ValueGenerator(rng, 4, 6);
  await both(t, async (rt) => {
    let current: unknown;
    rt.bindFunction('give', () => current);
    rt.bindFunction('giveLater', async () => current);
    rt.bindFunction('fail', () => {
      throw current;
    });
    rt.bindFunction('failLater', async () => {
      throw current;
    });
    for (let i = 0; i < 60; i++) {
      current = values.value();
      for (const call of ['give()', 'giveLater()']) {
        const seen = await guestCall(rt, call);
        // Every wire value is transferable: it must come back equal (NaN and -0 included).
        t.true(seen.ok, `${call} of case ${i}: ${seen.message}`);
        t.true(wireEqual(seen.value, current), `${call} of case ${i} came back equal`);
      }
      for (const call of ['fail()', 'failLater()']) {
        const seen = await guestCall(rt, call);
        t.false(seen.ok, `${call} of case ${i}`);
        t.is(seen.message, 'host function failed');
      }
    }
  });
});

for (const [name, make] of Object.entries(HOSTILE)) {
  test(`a module loader or resolver that throws ${name}: evalModule rejects with ModuleNotFound, nothing escapes`, async (t) => {
    await both(t, async (rt) => {
      rt.setModuleLoader(() => {
        throw make();
      });
      const viaLoader = await rt.evalModule("import x from 'lib'; export default x;").catch((e: { code?: string }) => e);
      t.is((viaLoader as { code?: string }).code, 'ERR_STRATA_MODULE_NOT_FOUND', String(viaLoader));
      rt.setModuleLoader(async () => {
        throw make();
      });
      const viaAsyncLoader = await rt.evalModule("import x from 'lib2'; export default x;").catch((e: { code?: string }) => e);
      t.is((viaAsyncLoader as { code?: string }).code, 'ERR_STRATA_MODULE_NOT_FOUND', String(viaAsyncLoader));
      rt.setModuleResolver(() => {
        throw make();
      });
      const viaResolver = await rt.evalModule("import x from 'lib3'; export default x;").catch((e: { code?: string }) => e);
      t.is((viaResolver as { code?: string }).code, 'ERR_STRATA_MODULE_NOT_FOUND', String(viaResolver));
      rt.setModuleResolver(undefined);
      rt.setModuleLoader(undefined);
    });
  });
}

test('a console listener that throws reaches neither the guest nor the event loop', async (t) => {
  await both(t, async (rt) => {
    rt.onConsole(() => {
      throw revokedProxy();
    });
    t.is(await rt.eval('console.log("hi"); 5'), 5);
  });
});
