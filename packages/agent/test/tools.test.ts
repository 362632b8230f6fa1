// Tools as the guest sees them: validated when the session starts; what a tool throws reaches the
// guest as an Error of its kind (or a plain Error for anything stranger), never the host; an
// answer that cannot cross fails in the guest; every value the boundary carries crosses both ways
// unchanged, live and on replay; and needsApproval as a function of the arguments.
import test from 'ava';
import { InvalidOption } from '@strata/runtime';
import { AgentSandbox, type ToolSet } from '../src/index.js';
import { checkNoLeaks } from './helpers/leaks.js';

checkNoLeaks(test);

/** What the guest caught: `{ ok }` or the error's name, message, constructor and kinds. */
interface Caught {
  ok?: unknown;
  name?: string;
  message?: string;
  ctor?: string;
  isError?: boolean;
  isTypeError?: boolean;
}
const attempt = (call: string) =>
  `(async () => { try { return { ok: await ${call} }; } catch (e) { return { name: e.name, message: e.message, ctor: e.constructor.name, isError: e instanceof Error, isTypeError: e instanceof TypeError }; } })()`;

/** Records every 'uncaughtException' and 'unhandledRejection' of this process while `run` runs (and a turn after). */
async function nothingEscapes<T>(run: () => Promise<T>): Promise<{ value: T; escaped: unknown[] }> {
  const escaped: unknown[] = [];
  const listener = (error: unknown) => escaped.push(error);
  process.on('uncaughtException', listener);
  process.on('unhandledRejection', listener);
  try {
    const value = await run();
    await new Promise((resolve) => setTimeout(resolve, 20));
    return { value, escaped };
  } finally {
    process.off('uncaughtException', listener);
    process.off('unhandledRejection', listener);
  }
}

test('tool validation: bad names, non-functions, a missing execute, a bad needsApproval or description are InvalidOption', async (t) => {
  const noop = async () => 1;
  const cases: [ToolSet | unknown, RegExp][] = [
    [{ 'get-time': noop }, /tool name "get-time" is not a name the guest can call/],
    [{ class: noop }, /tool name "class" is not a name the guest can call/],
    [{ eval: noop }, /tool name "eval" is not a name the guest can call/],
    [{ '': noop }, /tool name "" is not a name the guest can call/],
    [{ '1st': noop }, /tool name "1st"/],
    [{ await: noop }, /tool name "await"/],
    [{ undefined: noop }, /tool name "undefined"/],
    [{ globalThis: noop }, /tool name "globalThis"/],
    [{ lookup: 42 }, /tools\.lookup must be a function or an object with an execute function/],
    [{ lookup: 'lookup' }, /tools\.lookup must be a function or an object with an execute function/],
    [{ lookup: null }, /tools\.lookup must be a function or an object with an execute function/],
    [{ lookup: {} }, /tools\.lookup must be a function or an object with an execute function/],
    [{ lookup: { execute: 'run' } }, /tools\.lookup must be a function or an object with an execute function/],
    [{ lookup: { execute: noop, needsApproval: 'yes' } }, /tools\.lookup\.needsApproval must be true, false or a function/],
    [{ lookup: { execute: noop, needsApproval: 1 } }, /tools\.lookup\.needsApproval must be/],
    [{ lookup: { execute: noop, needsApproval: null } }, /tools\.lookup\.needsApproval must be/],
    [{ lookup: { execute: noop, description: 5 } }, /tools\.lookup\.description must be a string/],
    [[noop], /tools as an array must be ToolBridges/],
    ['lookup', /tools must be an object of tools by name/],
    [null, /tools must be an object of tools by name/],
  ];
  for (const [tools, message] of cases) {
    const error = await t.throwsAsync(AgentSandbox.start({ tools: tools as ToolSet }), { instanceOf: InvalidOption, message }, String(message));
    t.is(error?.code, 'ERR_STRATA_INVALID_OPTION');
  }
  // The same checks on restore, before any worker starts.
  await using session = await AgentSandbox.start({ tools: { lookup: noop } });
  await t.throwsAsync(AgentSandbox.restore(session.journal, { tools: { 'get-time': noop } }), { instanceOf: InvalidOption });
  // Valid shapes: a function, an object with execute, needsApproval false/true/a function, a description.
  await using valid = await AgentSandbox.start({
    tools: {
      a: noop,
      b: { execute: noop },
      c: { execute: noop, needsApproval: false, description: 'c' },
      $d: { execute: noop, needsApproval: () => false },
      _e: { execute: noop, needsApproval: true },
    },
  });
  t.deepEqual(valid.journal.settings.tools, ['$d', '_e', 'a', 'b', 'c']);
  t.deepEqual((await valid.run('[typeof a, typeof b, typeof c, typeof $d, typeof _e, a.name]')).result, [
    'function',
    'function',
    'function',
    'function',
    'function',
    'a',
  ]);
});

test('a tool throwing TypeError("bad sku"): the guest catches a TypeError with that message; the call is failed in calls and journal; uncaught, the cell errors and replays so', async (t) => {
  const runs = { lookup: 0 };
  const tools = {
    lookup: async (_sku: string) => {
      runs.lookup++;
      throw new TypeError('bad sku');
    },
  };
  await using session = await AgentSandbox.start({ tools });
  const caught = await session.run(attempt("lookup('Z9')"));
  t.is(caught.status, 'ok', caught.error);
  t.deepEqual(caught.result, { name: 'TypeError', message: 'bad sku', ctor: 'TypeError', isError: true, isTypeError: true });
  t.deepEqual(
    caught.calls.map((c) => [c.tool, c.args, c.status, c.error]),
    [['lookup', ['Z9'], 'failed', { name: 'TypeError', message: 'bad sku' }]],
  );
  t.false('result' in caught.calls[0]!);
  t.deepEqual(session.journal.cells[0]!.calls[0]!.error, { name: 'TypeError', message: 'bad sku' });
  t.is(session.journal.cells[0]!.calls[0]!.status, 'failed');

  const uncaught = await session.run("await lookup('Z8')");
  t.is(uncaught.status, 'error');
  t.is(uncaught.errorType, 'TypeError');
  t.regex(uncaught.error!, /bad sku/);
  t.is(session.journal.cells[1]!.status, 'error');
  t.is(runs.lookup, 2);

  await using restored = await AgentSandbox.restore(session.journal, { tools });
  t.is(runs.lookup, 2, 'the restore called no tool');
  t.deepEqual(restored.journal.cells, session.journal.cells);
});

test("a tool throwing a custom-named error (class NotFound extends Error { name = 'NotFound' }): the guest gets an Error named NotFound", async (t) => {
  class NotFound extends Error {
    override name = 'NotFound';
  }
  // A name on the prototype only, and one of a built-in kind set on an instance.
  class Gone extends Error {}
  Object.defineProperty(Gone.prototype, 'name', { value: 'Gone' });
  const tools = {
    find: async () => {
      throw new NotFound('no such sku: Z9');
    },
    gone: async () => {
      throw new Gone('gone');
    },
    range: async () => {
      const error = new Error('out of range');
      error.name = 'RangeError';
      throw error;
    },
  };
  await using session = await AgentSandbox.start({ tools });
  const result = await session.run(`[await ${attempt('find()')}, await ${attempt('gone()')}, await ${attempt('range()')}]`);
  const [find, gone, range] = result.result as Caught[];
  t.deepEqual(find, { name: 'NotFound', message: 'no such sku: Z9', ctor: 'Error', isError: true, isTypeError: false });
  t.deepEqual(gone, { name: 'Gone', message: 'gone', ctor: 'Error', isError: true, isTypeError: false });
  t.is(range!.name, 'RangeError');
  t.is(range!.ctor, 'RangeError', 'a built-in kind by name is that kind in the guest');
  t.deepEqual(
    result.calls.map((c) => c.error?.name),
    ['NotFound', 'Gone', 'RangeError'],
  );
});

test('a tool throwing a revoked Proxy, a string, an object whose getters throw, or worse never reaches the host: the guest gets an Error', async (t) => {
  const { proxy: revoked, revoke } = Proxy.revocable({}, {});
  revoke();
  const trap = () => {
    throw new Error('trap ran');
  };
  const hostile = new Proxy(new Error('x'), { get: trap, getPrototypeOf: trap, getOwnPropertyDescriptor: trap, has: trap, ownKeys: trap });
  const getters = {
    get name(): string {
      throw new Error('getter ran');
    },
    get message(): string {
      throw new Error('getter ran');
    },
  };
  const errorWithGetters = new Error('m');
  Object.defineProperty(errorWithGetters, 'message', { get: trap });
  Object.defineProperty(errorWithGetters, 'name', { get: trap });
  const errorOnProxy = new Error('proto');
  Object.setPrototypeOf(errorOnProxy, revoked);
  const throwers: Record<string, () => unknown> = {
    revoked: () => revoked,
    hostile: () => hostile,
    text: () => 'a string',
    getters: () => getters,
    errorWithGetters: () => errorWithGetters,
    errorOnProxy: () => errorOnProxy,
    nothing: () => undefined,
    nul: () => null,
    symbol: () => Symbol('s'),
    number: () => 42,
  };
  const tools: Record<string, () => Promise<never>> = {};
  for (const [name, value] of Object.entries(throwers)) {
    tools[name] = async () => {
      throw value();
    };
  }
  // Sync throws, and a rejection with a revoked Proxy.
  tools['syncThrow'] = (() => {
    throw revoked;
  }) as never;
  tools['rejects'] = () => Promise.reject(revoked);
  const { value: result, escaped } = await nothingEscapes(async () => {
    await using session = await AgentSandbox.start({ tools });
    const names = Object.keys(tools);
    const run = await session.run(`const out = {}; for (const name of ${JSON.stringify(names)}) out[name] = await ${attempt('globalThis[name]()')}; out`);
    const journal = session.journal;
    await using restored = await AgentSandbox.restore(journal, { tools });
    return { run, journal, replayed: (await restored.run('out')).result };
  });
  t.deepEqual(escaped, [], 'nothing reached uncaughtException or unhandledRejection');
  t.is(result.run.status, 'ok', result.run.error);
  const out = result.run.result as Record<string, Caught>;
  for (const [name, caught] of Object.entries(out)) {
    t.true(caught.isError, `${name}: the guest got an Error`);
    t.is(typeof caught.message, 'string', name);
    t.false('ok' in caught, name);
  }
  t.is(out['revoked']!.message, 'the tool threw a Proxy');
  t.is(out['hostile']!.message, 'the tool threw a Proxy');
  t.is(out['text']!.message, 'a string');
  t.is(out['getters']!.message, 'the tool threw a non-Error object');
  t.is(out['errorWithGetters']!.name, 'Error');
  t.is(out['errorOnProxy']!.name, 'Error');
  t.is(out['symbol']!.message, 'Symbol(s)');
  t.is(out['syncThrow']!.message, 'the tool threw a Proxy');
  t.is(out['rejects']!.message, 'the tool threw a Proxy');
  t.true(result.run.calls.every((c) => c.status === 'failed'));
  t.deepEqual(result.replayed, out, 'the replay gives the guest the same errors');
});

test('a tool answering a function, a class instance, a symbol or a cycle: the guest gets a TypeError saying the answer cannot cross, and the call is failed', async (t) => {
  class Price {
    amount = 3;
  }
  const runs = { n: 0 };
  const answer = (value: () => unknown) => async () => {
    runs.n++;
    return value();
  };
  const tools = {
    fn: answer(() => () => 1),
    instance: answer(() => new Price()),
    nested: answer(() => ({ list: [1, new Price()] })),
    symbol: answer(() => Symbol('x')),
    cycle: answer(() => {
      const a: Record<string, unknown> = {};
      a['self'] = a;
      return a;
    }),
    mapOfFn: answer(() => new Map([['k', () => 2]])),
  };
  await using session = await AgentSandbox.start({ tools });
  const names = Object.keys(tools);
  const result = await session.run(`const out = {}; for (const name of ${JSON.stringify(names)}) out[name] = await ${attempt('globalThis[name]()')}; out`);
  t.is(result.status, 'ok', result.error);
  for (const [name, caught] of Object.entries(result.result as Record<string, Caught>)) {
    t.is(caught.name, 'TypeError', name);
    t.true(caught.isTypeError, name);
    t.regex(caught.message!, new RegExp(`^the answer of ${name} cannot cross to the guest: `), name);
  }
  t.is(runs.n, names.length, 'each tool ran once');
  t.true(result.calls.every((c) => c.status === 'failed' && c.error?.name === 'TypeError' && !('result' in c)));
  t.true(session.journal.cells[0]!.calls.every((c) => c.status === 'failed' && c.result === undefined));
});

/** Compares what came back with what was sent, in the guest: every kind the boundary carries. */
const SAME = `function same(a, b) {
  if (typeof a !== typeof b) return false;
  if (typeof a === 'number') return Object.is(a, b);
  if (a === null || typeof a !== 'object') return a === b;
  if (a instanceof Date) return b instanceof Date && Object.is(a.getTime(), b.getTime());
  if (a instanceof Uint8Array) return b instanceof Uint8Array && a.length === b.length && a.every((x, i) => x === b[i]);
  if (a instanceof Map) { const x = [...a], y = b instanceof Map ? [...b] : []; return b instanceof Map && x.length === y.length && x.every(([k, v], i) => same(k, y[i][0]) && same(v, y[i][1])); }
  if (a instanceof Set) { const x = [...a], y = b instanceof Set ? [...b] : []; return b instanceof Set && x.length === y.length && x.every((v, i) => same(v, y[i])); }
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => same(x, b[i]));
  const ka = Object.keys(a), kb = Object.keys(b);
  return Object.getPrototypeOf(b) === Object.prototype && ka.length === kb.length && ka.every((k, i) => k === kb[i] && same(a[k], b[k]));
}`;
const VALUES = `[undefined, -0, 0, NaN, Infinity, -Infinity, 10n ** 30n, -5n, 0n, new Date(0), new Date(NaN), new Date(8.64e15),
  new Map([[1, 'a'], [{ k: 1 }, new Set([2])], [undefined, null]]), new Set([1, 'x', undefined, -0]), new Uint8Array([0, 1, 255]), new Uint8Array(0),
  { a: { b: [1, { c: null, d: undefined }], e: new Map([['f', [new Date(1)]]]) }, s: 'é\\u{1F600}\\u0000' }, { $date: 'not a tag' }, { ['__proto__']: 5 },
  '', 'text', true, false, null, [], {}, [[[]]], 1.5, -1e308, Number.MAX_SAFE_INTEGER]`;

test('every kind of value the boundary carries round-trips through arguments and answers identically, live and after restore', async (t) => {
  const received: unknown[][] = [];
  const tools = {
    echo: async (...args: unknown[]) => {
      received.push(args);
      return args;
    },
    // Host-made values: answered, not echoed.
    make: async () => [
      undefined,
      -0,
      NaN,
      2n ** 70n,
      new Date(0),
      new Map([[1, new Set(['s'])]]),
      new Uint8Array([7, 8]),
      Buffer.from([9]),
      { deep: { er: [null, undefined] } },
    ],
  };
  await using session = await AgentSandbox.start({ tools });
  const result = await session.run(`${SAME}
    const values = ${VALUES};
    const back = await echo(...values);
    const made = await make();
    globalThis.report = {
      count: [values.length, back.length],
      differ: values.map((v, i) => (same(v, back[i]) ? null : i)).filter((i) => i !== null),
      made: [made[0] === undefined, Object.is(made[1], -0), Number.isNaN(made[2]), made[3] === 2n ** 70n, made[4] instanceof Date && made[4].getTime() === 0,
        made[5] instanceof Map && made[5].get(1) instanceof Set && made[5].get(1).has('s'), made[6] instanceof Uint8Array && made[6][1] === 8,
        made[7] instanceof Uint8Array && made[7].length === 1 && made[7][0] === 9, Object.getPrototypeOf(made[8].deep) === Object.prototype && made[8].deep.er.length === 2 && made[8].deep.er[1] === undefined && 1 in made[8].deep.er],
    };
    report`);
  t.is(result.status, 'ok', result.error);
  const report = result.result as { count: [number, number]; differ: number[]; made: boolean[] };
  t.is(report.count[0], report.count[1]);
  t.deepEqual(report.differ, [], 'every value came back as sent');
  t.deepEqual(
    report.made,
    report.made.map(() => true),
    "the host's values arrived as made",
  );

  // What the tool received, host side: the same values (plain objects may have a null prototype).
  t.is(received.length, 1);
  const args = received[0]!;
  t.is(args.length, report.count[0]);
  t.is(args[0], undefined);
  t.true(Object.is(args[1], -0));
  t.true(Number.isNaN(args[3]));
  t.is(args[6], 10n ** 30n);
  t.true(args[9] instanceof Date && (args[9] as Date).getTime() === 0);
  t.true(args[10] instanceof Date && Number.isNaN((args[10] as Date).getTime()));
  t.true(args[12] instanceof Map && (args[12] as Map<unknown, unknown>).size === 3);
  t.true(args[13] instanceof Set && (args[13] as Set<unknown>).has(undefined));
  t.true(args[14] instanceof Uint8Array && (args[14] as Uint8Array)[2] === 255);
  t.is(JSON.stringify(args[17]), '{"$date":"not a tag"}');
  t.deepEqual(Object.keys(args[18] as object), ['__proto__'], 'a guest key __proto__ stays a key');
  t.deepEqual(result.calls[0]!.args, args);
  // The calls' record decodes to the same values too.
  t.true(Object.is((result.calls[0]!.result as unknown[])[1], -0));

  // After a restore (through JSON text, as it would be kept), the guest has exactly the same: the
  // replayed answers are the journal's, decoded.
  const kept = JSON.stringify(session.journal);
  await using restored = await AgentSandbox.restore(JSON.parse(kept), { tools });
  t.is(received.length, 1, 'the restore called no tool');
  const again = await restored.run(`${SAME}
    const valuesAgain = ${VALUES};
    [valuesAgain.map((v, i) => (same(v, back[i]) ? null : i)).filter((i) => i !== null), made.length, report.differ]`);
  t.is(again.status, 'ok', again.error);
  t.deepEqual(again.result, [[], 9, []]);
});

test('needsApproval as a function of the arguments: calls it answers false for run directly, the others wait for approve or deny', async (t) => {
  const sent: string[] = [];
  const asked: unknown[][] = [];
  const tools = {
    send: {
      execute: async (to: string, body: string) => {
        sent.push(to);
        return `sent ${body} to ${to}`;
      },
      needsApproval: async (to: string, body: string) => {
        asked.push([to, body]);
        return to.endsWith('@external.com');
      },
    },
  };
  await using session = await AgentSandbox.start({ tools });
  const first = await session.run(`globalThis.out = []; out.push(await send('a@corp.com', 'x')); out.push(await send('b@corp.com', 'y')); out`);
  t.is(first.status, 'ok', first.error);
  t.deepEqual(first.result, ['sent x to a@corp.com', 'sent y to b@corp.com']);
  t.deepEqual(sent, ['a@corp.com', 'b@corp.com'], 'run directly');
  t.deepEqual(
    first.calls.map((c) => c.status),
    ['completed', 'completed'],
  );

  const second = await session.run(
    `out.push(await send('c@corp.com', 'z')); try { out.push(await send('d@external.com', 'w')); } catch (e) { out.push(e.message); } out.push(await send('e@corp.com', 'v')); out.push(await send('f@external.com', 'u')); out`,
  );
  t.is(second.status, 'awaiting-approval');
  t.deepEqual(second.pending, { seq: 4, tool: 'send', args: ['d@external.com', 'w'] });
  t.deepEqual(sent, ['a@corp.com', 'b@corp.com', 'c@corp.com'], 'the call needing approval did not run');
  t.deepEqual(
    second.calls.map((c) => c.status),
    ['completed', 'pending'],
  );

  const denied = await session.deny(4, 'not to externals');
  t.is(denied.status, 'awaiting-approval', 'the cell went on and stopped at the next external call');
  t.deepEqual(denied.pending, { seq: 6, tool: 'send', args: ['f@external.com', 'u'] });
  t.deepEqual(sent, ['a@corp.com', 'b@corp.com', 'c@corp.com', 'e@corp.com'], 'e@corp.com ran directly, once');

  const approved = await session.approve(6);
  t.is(approved.status, 'ok', approved.error);
  t.deepEqual(approved.result, [
    'sent x to a@corp.com',
    'sent y to b@corp.com',
    'sent z to c@corp.com',
    'the call to send was denied: not to externals',
    'sent v to e@corp.com',
    'sent u to f@external.com',
  ]);
  t.deepEqual(
    approved.calls.map((c) => c.status),
    ['completed', 'denied', 'completed', 'completed'],
  );
  t.deepEqual(sent, ['a@corp.com', 'b@corp.com', 'c@corp.com', 'e@corp.com', 'f@external.com'], 'no call ran twice');
  t.deepEqual(
    asked.map(([to]) => to),
    ['a@corp.com', 'b@corp.com', 'c@corp.com', 'd@external.com', 'e@corp.com', 'f@external.com'],
    'needsApproval was asked once per call, with its arguments',
  );
  t.deepEqual(asked[3], ['d@external.com', 'w']);

  // needsApproval that throws: the call fails in the guest, the tool does not run.
  await using throwing = await AgentSandbox.start({
    tools: {
      send: {
        execute: tools.send.execute,
        needsApproval: () => {
          throw new TypeError('policy unavailable');
        },
      },
    },
  });
  const refused = await throwing.run(attempt("send('g@corp.com', 't')"));
  t.like(refused.result as Caught, { name: 'TypeError', isTypeError: true, message: 'needsApproval of send threw: policy unavailable' });
  t.is(sent.length, 5);
});

// Regression test (fixed; it was a bug in packages/agent, src/agent-sandbox.ts #settle): an answer that passes toTaggedJson but not
// the runtime's own checks when it is sent to the guest (here nested deeper than the runtime's 64
// levels, counting the `{ ok, value }` envelope the agent wraps it in) is journaled as
// 'completed', with its result, while the guest gets a TypeError from the runtime ("the host
// function returned a value that.value.o.o... is nested deeper than 64 levels": it names the
// envelope's `value`, an internal). The journal and `calls` say the guest got an answer it never
// got. Expected: as for any answer that cannot cross, the call is 'failed' with a TypeError
// "the answer of deep cannot cross to the guest: ...".
test('an answer nested deeper than the boundary carries is a failed call, and the guest is told the answer cannot cross', async (t) => {
  const tools = {
    deep: async (levels: number) => {
      let value: Record<string, unknown> = {};
      for (let i = 0; i < levels; i++) value = { o: value };
      return value;
    },
  };
  await using session = await AgentSandbox.start({ tools });
  const result = await session.run(attempt('deep(100)'));
  const caught = result.result as Caught;
  t.is(caught.name, 'TypeError');
  t.is(result.calls[0]!.status, 'failed', 'the journal says the guest got the answer');
  t.regex(caught.message!, /^the answer of deep cannot cross to the guest/);
});

// Regression test (fixed; it was a bug in packages/agent, src/tools.ts sessionTools): a tool object's `execute` and `needsApproval`
// are taken off the object and called detached: `execute` with `this` set to the session's own
// internal record ({ name, description, execute, needsApproval }), `needsApproval` with `this`
// undefined. A tool written as an object or class instance whose methods use `this`
// (`{ prices, execute(sku) { return this.prices[sku]; } }`, `new LookupTool(db)`) fails in the
// guest with "Cannot read properties of undefined". Expected: both are called as methods of the
// tool object the host gave.
test('a tool object whose execute and needsApproval use `this` is called as a method of that object', async (t) => {
  class Lookup {
    readonly prices: Record<string, number> = { A1: 3.5 };
    async execute(sku: string): Promise<number | undefined> {
      return this.prices[sku];
    }
  }
  class Guarded extends Lookup {
    needsApproval(sku: string): boolean {
      return (this.prices[sku] ?? 0) > 100;
    }
  }
  await using session = await AgentSandbox.start({ tools: { lookup: new Lookup(), guarded: new Guarded() } });
  const result = await session.run(`[await ${attempt("lookup('A1')")}, await ${attempt("guarded('A1')")}]`);
  t.deepEqual(result.result, [{ ok: 3.5 }, { ok: 3.5 }]);
});
