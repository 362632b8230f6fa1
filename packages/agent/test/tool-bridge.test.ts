// ToolBridge: schemas validated in the parent before the tool runs (JSON Schema draft-07 and
// 2020-12 with ajv, Standard Schema with zod), names made identifiers, answers checked against
// outputSchema; bound into Runtime, IsolatedRuntime and AgentSandbox alike.
import test from 'ava';
import { z } from 'zod';
import { InvalidOption, IsolatedRuntime, Runtime } from '@strata/runtime';
import { AgentSandbox, ToolBridge, toIdentifier, type ToolCall } from '../src/index.js';
import { checkNoLeaks } from './helpers/leaks.js';

checkNoLeaks(test);

function weatherBridge() {
  const ran: unknown[] = [];
  const bridge = new ToolBridge({
    tools: {
      weather: {
        description: 'Current weather for a city',
        inputSchema: {
          type: 'object',
          properties: { city: { type: 'string', minLength: 1 }, unit: { enum: ['C', 'F'] }, days: { type: 'integer', minimum: 1 } },
          required: ['city'],
          additionalProperties: false,
        },
        outputSchema: { type: 'object', properties: { tempC: { type: 'number' }, city: { type: 'string' } }, required: ['tempC', 'city'] },
        execute: async (input: { city: string }) => (
          ran.push(input), { tempC: input.city === 'Nowhere' ? ('warm' as unknown as number) : 21, city: input.city }
        ),
      },
      'get-time': {
        description: 'The time, as the host sees it',
        execute: async () => '12:00',
      },
      search: {
        inputSchema: z.object({ query: z.string().min(2), limit: z.number().int().max(10).default(3) }),
        execute: async (input: { query: string; limit: number }) => (ran.push(input), Array.from({ length: input.limit }, (_, i) => `${input.query} ${i + 1}`)),
      },
      delete: {
        inputSchema: {
          $schema: 'https://json-schema.org/draft/2020-12/schema',
          type: 'object',
          properties: { id: { type: 'string', pattern: '^[a-z]+$' } },
          required: ['id'],
          $defs: {},
        },
        execute: async ({ id }: { id: string }) => `deleted ${id}`,
      },
    },
  });
  return { bridge, ran };
}

/** What the guest gets for each call: the answer, or its error's kind and message. */
const PROBE = `(async () => {
  const attempt = async (call) => { try { return { ok: await call() }; } catch (e) { return { error: e.name, message: e.message, typeError: e instanceof TypeError }; } };
  return [
    await attempt(() => tools.weather({ city: 'Oslo' })),
    await attempt(() => tools.weather({ city: 3 })),
    await attempt(() => tools.weather({})),
    await attempt(() => tools.weather({ city: 'Oslo', unit: 'K' })),
    await attempt(() => tools.weather({ city: 'Oslo', wind: true })),
    await attempt(() => tools.weather({ city: 'Nowhere' })),
    await attempt(() => tools.get_time()),
    await attempt(() => tools.search({ query: 'cats' })),
    await attempt(() => tools.search({ query: 'x', limit: 99 })),
    await attempt(() => tools.delete_({ id: 'abc' })),
    await attempt(() => tools.delete_({ id: 'ABC' })),
    await attempt(() => tools.nope()),
  ];
})()`;

function checkProbe(t: import('ava').ExecutionContext, results: any[], ran: unknown[]) {
  t.deepEqual(results[0], { ok: { tempC: 21, city: 'Oslo' } });
  t.like(results[1], { error: 'TypeError', typeError: true, message: 'tools.weather: input.city must be string; the tool was not called' });
  t.like(results[2], { error: 'TypeError', message: 'tools.weather: input.city is required; the tool was not called' });
  t.like(results[3], { error: 'TypeError', message: 'tools.weather: input.unit must be one of ["C","F"]; the tool was not called' });
  t.like(results[4], { error: 'TypeError', message: 'tools.weather: input has an unknown field "wind"; the tool was not called' });
  t.like(results[5], { error: 'TypeError', message: "tools.weather: the tool's answer.tempC must be number (its outputSchema)" });
  t.deepEqual(results[6], { ok: '12:00' });
  t.deepEqual(results[7], { ok: ['cats 1', 'cats 2', 'cats 3'] }, 'the Standard Schema default filled in');
  t.like(results[8], { error: 'TypeError' });
  t.regex(results[8].message, /^tools\.search: input\.query: .*; input\.limit: .*; the tool was not called$/);
  t.deepEqual(results[9], { ok: 'deleted abc' });
  t.like(results[10], { error: 'TypeError' });
  t.regex(results[10].message, /^tools\.delete_: input\.id must match pattern/);
  t.like(results[11], { error: 'TypeError' });
  t.deepEqual(ran, [{ city: 'Oslo' }, { city: 'Nowhere' }, { query: 'cats', limit: 3 }], 'no invalid call reached a tool');
}

test('Runtime: invalid calls are refused in the parent, naming the field, and the tool never runs', async (t) => {
  const { bridge, ran } = weatherBridge();
  await using rt = await Runtime.start();
  await bridge.bind(rt);
  checkProbe(t, (await rt.eval(PROBE)) as unknown[], ran);
});

test('IsolatedRuntime: the same, with the worker (and redactHostErrors on: a bridge’s errors are for the model)', async (t) => {
  const { bridge, ran } = weatherBridge();
  await using rt = await IsolatedRuntime.start({ prewarm: false, redactHostErrors: true });
  await bridge.bind(rt);
  checkProbe(t, (await rt.eval(PROBE)) as unknown[], ran);
  t.deepEqual(await rt.eval('[typeof __strataBridge_tools, Object.isFrozen(tools), Object.keys(tools)]'), [
    'undefined',
    true,
    ['weather', 'get_time', 'search', 'delete_'],
  ]);
});

test('AgentSandbox takes a bridge: calls are journaled under the namespace, validated the same way, and replay', async (t) => {
  const { bridge, ran } = weatherBridge();
  let saved;
  {
    await using session = await AgentSandbox.start({ tools: bridge });
    const result = await session.run(PROBE);
    t.is(result.status, 'ok', result.error);
    checkProbe(t, result.result as unknown[], ran);
    t.deepEqual(session.journal.settings.tools, ['tools.delete_', 'tools.get_time', 'tools.search', 'tools.weather']);
    t.like(result.calls[1], {
      tool: 'tools.weather',
      status: 'failed',
      error: { name: 'TypeError', message: 'tools.weather: input.city must be string; the tool was not called' },
    });
    saved = JSON.stringify(session.journal);
  }
  const before = ran.length;
  await using again = await AgentSandbox.restore(JSON.parse(saved), { tools: bridge });
  t.is(ran.length, before, 'the replay called no tool');
  t.deepEqual((await again.run('(await tools.weather({ city: "Bergen" })).city')).result, 'Bergen');
});

test('names become identifiers, and the bridge refuses what it cannot bridge', (t) => {
  t.is(toIdentifier('get-time'), 'get_time');
  t.is(toIdentifier('2fa.check'), '_2fa_check');
  t.is(toIdentifier('delete'), 'delete_');
  t.is(toIdentifier(''), '_');
  const bad: [unknown, RegExp][] = [
    [{ tools: { 'a-b': { execute: () => 1 }, a_b: { execute: () => 2 } } }, /tools\["a_b"\] and tools\["a-b"\] both become tools\.a_b: rename one/],
    [{ namespace: 'class', tools: {} }, /namespace must be a JavaScript identifier that is not a reserved word/],
    [{ tools: { x: { execute: 'no' } } }, /tools\["x"\] must be an object with an execute function/],
    [{ tools: { x: { execute: () => 1, inputSchema: 'string' } } }, /tools\["x"\]\.inputSchema must be a JSON Schema/],
    [{ tools: { x: { execute: () => 1, inputSchema: { type: 'nonsense' } } } }, /tools\["x"\]\.inputSchema is not a valid JSON Schema/],
    [{ tools: { x: { execute: () => 1, needsApproval: 'yes' } } }, /needsApproval must be true, false or a function/],
    [{ tools: null }, /tools must be an object/],
  ];
  for (const [options, message] of bad) t.throws(() => new ToolBridge(options as never), { instanceOf: InvalidOption, message });
});

test('a bridge in a session: needsApproval sees the input; a tool object is called as a method', async (t) => {
  class Mailer {
    sent: string[] = [];
    readonly description = 'Sends mail';
    readonly inputSchema = { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] };
    needsApproval(input: { to: string }) {
      return !input.to.endsWith('@example.com') || this.sent.length > 5;
    }
    async execute(input: { to: string }) {
      this.sent.push(input.to);
      return `sent to ${input.to}`;
    }
  }
  const mailer = new Mailer();
  const bridge = new ToolBridge({ namespace: 'mail', tools: { send: mailer } });
  await using session = await AgentSandbox.start({ tools: bridge });
  t.is((await session.run('await mail.send({ to: "me@example.com" })')).result, 'sent to me@example.com');
  const p = await session.run('await mail.send({ to: "boss@elsewhere.org" })');
  t.is(p.status, 'awaiting-approval');
  t.deepEqual(p.pending?.args, [{ to: 'boss@elsewhere.org' }]);
  t.is((await session.approve(p.pending!.seq)).result, 'sent to boss@elsewhere.org');
  t.deepEqual(mailer.sent, ['me@example.com', 'boss@elsewhere.org']);
});

test('JSON Schema formats are validated (ajv-formats), not ignored', async (t) => {
  const bridge = new ToolBridge({
    tools: {
      book: {
        inputSchema: { type: 'object', properties: { at: { type: 'string', format: 'date-time' }, mail: { type: 'string', format: 'email' } } },
        execute: async (input: unknown) => input,
      },
    },
  });
  t.deepEqual(await bridge.call('book', { at: '2026-01-01T10:00:00Z', mail: 'a@example.com' }), { at: '2026-01-01T10:00:00Z', mail: 'a@example.com' });
  await t.throwsAsync(bridge.call('book', { at: 'tomorrow' }), {
    instanceOf: TypeError,
    message: 'tools.book: input.at must match format "date-time"; the tool was not called',
  });
  await t.throwsAsync(bridge.call('book', { mail: 'nobody' }), { instanceOf: TypeError, message: /input\.mail must match format "email"/ });
});

test('bind describes what a tool threw without running its code: no toString, no getter, no Proxy trap (the session path’s describer)', async (t) => {
  const ran: string[] = [];
  const slowToString = { toString: () => (ran.push('toString'), 'never read') };
  const getters = Object.assign(new Error('kept'), {});
  Object.defineProperty(getters, 'message', { get: () => (ran.push('message getter'), 'never read') });
  Object.defineProperty(getters, 'name', { get: () => (ran.push('name getter'), 'never read') });
  const trapped = Object.create(
    new Proxy(Error.prototype, { getPrototypeOf: (target) => (ran.push('getPrototypeOf trap'), Object.getPrototypeOf(target)) }),
  ) as object;
  const longName = Object.assign(new Error('m'.repeat(20_000)), { name: 'N'.repeat(1_000) });
  const throws: Record<string, unknown> = { slowToString, getters, trapped, longName, text: 'plain' };
  const bridge = new ToolBridge({
    tools: Object.fromEntries(Object.entries(throws).map(([name, value]) => [name, { execute: () => Promise.reject(value) }])),
  });
  const receipts: { tool: string; error?: { name: string; message: string } }[] = [];
  await using rt = await Runtime.start();
  await bridge.bind(rt, { onCall: (receipt) => receipts.push(receipt) });
  const seen = (await rt.eval(`(async () => {
    const out = {};
    for (const name of ${JSON.stringify(Object.keys(throws))}) out[name] = await tools[name]().then(() => 'no', (e) => [e.name, e.message.length > 100 ? e.message.length : e.message]);
    return out;
  })()`)) as Record<string, [string, string | number]>;
  t.deepEqual(ran, [], 'no code of the thrown values ran in the parent');
  t.deepEqual(seen['slowToString'], ['Error', 'the tool threw a non-Error object']);
  t.deepEqual(seen['getters'], ['Error', '']);
  t.deepEqual(seen['trapped'], ['Error', 'the tool threw a non-Error object']);
  t.deepEqual(seen['longName'], ['N'.repeat(128), 8 * 1024]);
  t.deepEqual(seen['text'], ['Error', 'plain']);
  t.is(receipts.find((receipt) => receipt.tool === 'tools.getters')?.error?.message, '');
});

test('bind: onCall gives each call as a session reports it (seq, tool, args, status, result or error, ms), numbered across the bridges bound to one runtime', async (t) => {
  const a = new ToolBridge({ namespace: 'a', tools: { echo: { inputSchema: {}, execute: async (input: unknown) => input } } });
  const b = new ToolBridge({ namespace: 'b', tools: { fail: { execute: async () => Promise.reject(new RangeError('no')) } } });
  const calls: ToolCall[] = [];
  await using rt = await Runtime.start();
  await a.bind(rt, { onCall: (call) => calls.push(call) });
  await b.bind(rt, { onCall: (call) => calls.push(call) });
  await rt.eval('(async () => { await a.echo({ n: 1 }); await b.fail().catch(() => 0); await a.echo([2]); })()');
  t.true(calls.every((call) => Number.isInteger(call.ms) && call.ms >= 0));
  t.deepEqual(
    calls.map(({ ms: _ms, ...call }) => call),
    [
      { seq: 1, tool: 'a.echo', args: [{ n: 1 }], status: 'completed', result: { n: 1 } },
      { seq: 2, tool: 'b.fail', args: [], status: 'failed', error: { name: 'RangeError', message: 'no' } },
      { seq: 3, tool: 'a.echo', args: [[2]], status: 'completed', result: [2] },
    ],
  );
});

test('bind: a tool whose needsApproval asks is refused without an approve hook, and decided by one after its input is checked', async (t) => {
  const ran: unknown[] = [];
  const asked: unknown[] = [];
  const bridge = new ToolBridge({
    namespace: 'bank',
    tools: {
      transfer: {
        inputSchema: { type: 'object', properties: { amount: { type: 'integer' } }, required: ['amount'] },
        needsApproval: (input: { amount: number }) => input.amount > 100,
        execute: async (input: { amount: number }) => (ran.push(input.amount), 'sent'),
      },
    },
  });
  const attempt = `(async () => {
    const outcome = (p) => p.then((value) => ({ value }), (e) => e.message);
    return [await outcome(bank.transfer({ amount: 5 })), await outcome(bank.transfer({ amount: 500 })), await outcome(bank.transfer({ amount: 'lots' }))];
  })()`;
  {
    await using rt = await Runtime.start();
    await bridge.bind(rt);
    t.deepEqual(await rt.eval(attempt), [
      { value: 'sent' },
      'bank.transfer needs approval, and this runtime cannot ask for it (bind has no approve hook); the tool was not called',
      'bank.transfer: input.amount must be integer; the tool was not called',
    ]);
  }
  t.deepEqual(ran, [5], 'the call that needed approval never ran');
  for (const [decision, expected] of [
    [true, { value: 'sent' }],
    [false, 'bank.transfer was not approved; the tool was not called'],
    [{ approved: false, reason: 'over the limit' }, 'bank.transfer was not approved: over the limit; the tool was not called'],
  ] as const) {
    await using rt = await Runtime.start();
    await bridge.bind(rt, { approve: async (request) => (asked.push(request), decision) });
    t.deepEqual((await rt.eval(attempt)) as unknown[], [{ value: 'sent' }, expected, 'bank.transfer: input.amount must be integer; the tool was not called']);
  }
  t.deepEqual(
    asked,
    [1, 2, 3].map(() => ({ tool: 'bank.transfer', input: { amount: 500 } })),
    'asked once per call that needs it, with its checked input; never for invalid input',
  );
  t.deepEqual(ran, [5, 5, 500, 5, 5]);
});
