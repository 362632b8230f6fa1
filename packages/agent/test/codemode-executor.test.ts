// StrataExecutor, codemode's Executor on Strata. `@cloudflare/codemode`'s main entry (and its
// `/ai`) import `cloudflare:workers` and do not load on Node; its `/browser` entry does, and its
// `createBrowserCodeTool` takes any executor: the first tests drive ours through it. The rest port
// the cases codemode's own executor tests use (DynamicWorkerExecutor's, IframeSandboxExecutor's),
// their intent rather than their code, against our executor directly, plus what Strata adds.
import test from 'ava';
import type { ResolvedProvider } from '@cloudflare/codemode';
import { createBrowserCodeTool } from '@cloudflare/codemode/browser';
import { InvalidOption, SandboxPool } from '@strata/runtime';
import { StrataExecutor } from '../src/codemode-executor.js';
import { codemodeFunction, codemodeToolName, MAX_CODE_CHARS } from '../src/codemode-normalize.js';
import { checkNoLeaks, gate } from './helpers/leaks.js';

checkNoLeaks(test);

type ToolFns = Record<string, (...args: unknown[]) => Promise<unknown>>;
const codemode = (fns: ToolFns): ResolvedProvider => ({ name: 'codemode', fns });
const executor = new StrataExecutor({ timeout: 20_000 });

// --- through codemode's own package ----------------------------------------------------------

test("codemode's createBrowserCodeTool with our executor: the tool runs the model's code against the tools, with logs", async (t) => {
  const seen: unknown[] = [];
  const tool = createBrowserCodeTool({
    executor,
    tools: {
      'add-numbers': {
        description: 'Adds two numbers',
        inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
        execute: async (input) => (seen.push(input), (input['a'] as number) + (input['b'] as number)),
      },
    },
  });
  t.true(tool.description.includes('add_numbers'));
  const output = await tool.execute({ code: 'async () => { const n = await codemode.add_numbers({ a: 2, b: 3 }); console.log("sum", n); return n * 10; }' });
  t.deepEqual(output, { result: 50, logs: ['sum 5'] });
  t.deepEqual(seen, [{ a: 2, b: 3 }]);
});

test("codemode's tool turns our error result into its own failure, with the console output", async (t) => {
  const tool = createBrowserCodeTool({ executor, tools: {} });
  const error = await t.throwsAsync(tool.execute({ code: 'console.log("before"); throw new Error("boom")' }));
  t.is(error?.message, 'Code execution failed: boom\n\nConsole output:\nbefore');
});

// --- results, as codemode's executors give them -------------------------------------------------

test('the function the code is called, its value the result: an arrow, a bare expression, a fence, a body with return, a named function', async (t) => {
  const cases: [string, unknown][] = [
    ['async () => 42', 42],
    ['42', 42],
    ['```js\n1 + 1\n```', 2],
    ['const x = 10;\nx * 2', 20],
    ['const r = await Promise.resolve(5);\nreturn r + 1;', 6],
    ['async function run() { return "named"; }', 'named'],
    ['export default async () => "exported"', 'exported'],
    ['async () => { return `hello ${"world"}`; }', 'hello world'],
    ['async () => { return 1; }; // with a trailing semicolon and comment', 1],
  ];
  for (const [code, expected] of cases) {
    const result = await executor.execute(code, [codemode({})]);
    t.deepEqual(result, { result: expected, logs: [] }, code);
  }
});

test('void code is undefined without an error; empty providers are fine', async (t) => {
  t.deepEqual(await executor.execute('async () => {}', []), { result: undefined, logs: [] });
  t.deepEqual(await executor.execute('   ', []), { result: undefined, logs: [] });
});

// --- tools -----------------------------------------------------------------------------------

test('tools are called as codemode.* with the arguments given; sequential, concurrent, positional, closures', async (t) => {
  const calls: unknown[][] = [];
  const secret = 'api-key-123';
  const fns: ToolFns = {
    add: async (...args) => (calls.push(args), (args[0] as { a: number }).a + (args[0] as { b: number }).b),
    slow: async (input) => ({ id: (input as { id: number }).id }),
    join: async (...args) => args.join('/'),
    getSecret: async () => ({ key: secret }),
  };
  const result = await executor.execute(
    `async () => {
      const sum = await codemode.add({ a: 3, b: 4 });
      const all = await Promise.all([codemode.slow({ id: 1 }), codemode.slow({ id: 2 }), codemode.slow({ id: 3 })]);
      return { sum, all, path: await codemode.join("a", "b", "c"), secret: await codemode.getSecret({}) };
    }`,
    [codemode(fns)],
  );
  t.deepEqual(result, { result: { sum: 7, all: [{ id: 1 }, { id: 2 }, { id: 3 }], path: 'a/b/c', secret: { key: secret } }, logs: [] });
  t.deepEqual(calls, [[{ a: 3, b: 4 }]]);
});

test('arguments and answers cross as JSON does in codemode, bytes kept: Uint8Array, ArrayBuffer, a view’s visible bytes', async (t) => {
  const received: unknown[] = [];
  const accept = async (...args: unknown[]) => (received.push(...args), args[0]);
  const result = await executor.execute(
    `async () => {
      const source = new Uint8Array([10, 20, 30, 40]);
      const back = await codemode.accept({ bytes: new Uint8Array([1, 2, 3]), buffer: new Uint8Array([4, 5]).buffer, view: source.subarray(1, 3), when: new Date(0), gone: undefined });
      return { isBytes: back.bytes instanceof Uint8Array, bytes: Array.from(back.bytes), isBuffer: back.buffer instanceof ArrayBuffer,
        buffer: Array.from(new Uint8Array(back.buffer)), view: Array.from(back.view), when: back.when, keys: Object.keys(back) };
    }`,
    [codemode({ accept })],
  );
  t.deepEqual(result, {
    result: {
      isBytes: true,
      bytes: [1, 2, 3],
      isBuffer: true,
      buffer: [4, 5],
      view: [20, 30],
      when: '1970-01-01T00:00:00.000Z',
      keys: ['bytes', 'buffer', 'view', 'when'],
    },
    logs: [],
  });
  const input = received[0] as { bytes: Uint8Array; buffer: ArrayBuffer; view: Uint8Array; when: unknown };
  t.true(input.bytes instanceof Uint8Array);
  t.true(input.buffer instanceof ArrayBuffer);
  t.deepEqual([...new Uint8Array(input.buffer)], [4, 5]);
  t.deepEqual([...input.view], [20, 30]);
  t.is(input.when, '1970-01-01T00:00:00.000Z');
});

test("a tool that throws: the execution's error, or the code catches its message; an unknown tool is the same kind of rejection", async (t) => {
  const fns: ToolFns = {
    fail: async () => {
      throw new Error('tool error');
    },
  };
  t.deepEqual(await executor.execute('async () => await codemode.fail({})', [codemode(fns)]), { result: undefined, error: 'tool error', logs: [] });
  const caught = await executor.execute(
    'async () => { const out = []; for (const name of ["fail", "nonexistent"]) { try { await codemode[name](); } catch (e) { out.push(e.message); } } return out; }',
    [codemode(fns)],
  );
  t.deepEqual(caught.result, ['tool error', 'Tool "nonexistent" not found']);
});

test("a tool's answer JSON cannot say (a cycle) rejects the call with JSON's message; the namespace is not a thenable", async (t) => {
  const cyclic: Record<string, unknown> = {};
  cyclic['self'] = cyclic;
  const result = await executor.execute(
    'async () => { const ns = await codemode; try { await ns.loop(); } catch (e) { return [typeof ns, e.message.includes("circular")]; } }',
    [codemode({ loop: async () => cyclic })],
  );
  t.deepEqual(result.result, ['object', true]);
});

// --- failures are results -------------------------------------------------------------------

test('code that throws is its message as error, result undefined; a syntax error is the parser’s message', async (t) => {
  t.deepEqual(await executor.execute('async () => { throw new Error("boom"); }', [codemode({})]), { result: undefined, error: 'boom', logs: [] });
  const syntax = await executor.execute('async () => { const = oops {{{ }', [codemode({})]);
  t.is(syntax.result, undefined);
  t.regex(syntax.error ?? '', /Unexpected|Invalid|token/i);
});

test('console.log, warn and error are the logs, one line per call, as codemode prefixes them', async (t) => {
  const result = await executor.execute('async () => { console.log("hello", "world"); console.warn("careful"); console.error("bad"); return 1; }', [
    codemode({}),
  ]);
  t.deepEqual(result, { result: 1, logs: ['hello world', '[warn] careful', '[error] bad'] });
});

test('logs stop at the runtime’s maxOutputBytes with a [truncated] line', async (t) => {
  const small = new StrataExecutor({ runtime: { maxOutputBytes: 64 } });
  const result = await small.execute('for (let i = 0; i < 100; i++) console.log("line " + i); "done"', []);
  t.is(result.result, 'done');
  t.is(result.logs?.at(-1), '[truncated]');
  t.true((result.logs?.length ?? 0) < 20);
});

test('an endless loop is stopped: the error says it timed out, and the sandbox is gone', async (t) => {
  const quick = new StrataExecutor({ timeout: 1_000 });
  const result = await quick.execute('async () => { console.log("start"); for (;;) {} }', [codemode({})]);
  t.is(result.result, undefined);
  t.true(result.error?.startsWith('Execution timed out'), result.error);
  t.deepEqual(result.logs, ['start']);
});

test('a tool that never answers meets the wall-clock timeout (tool time counts, as in codemode)', async (t) => {
  const quick = new StrataExecutor({ timeout: 1_000 });
  const never = gate();
  const result = await quick.execute('async () => await codemode.hang()', [codemode({ hang: () => never.promise })]);
  t.deepEqual(result, { result: undefined, error: 'Execution timed out after 1000 ms', logs: [] });
  never.open();
});

test('a crash of the sandbox (the worker killed past maxHostCalls) is an error result', async (t) => {
  const capped = new StrataExecutor({ runtime: { maxHostCalls: 2 } });
  const result = await capped.execute('async () => { for (let i = 0; i < 5; i++) await codemode.ping(); return "never"; }', [
    codemode({ ping: async () => 'pong' }),
  ]);
  t.is(result.result, undefined);
  t.regex(result.error ?? '', /maxHostCalls|host call/i);
});

test('the code cannot reach process, require or the network', async (t) => {
  const result = await executor.execute(
    'async () => { let net; try { await fetch("https://example.com"); net = "leaked"; } catch (e) { net = "blocked: " + e.message; } return [typeof process, typeof require, net]; }',
    [codemode({})],
  );
  const [processType, requireType, net] = result.result as string[];
  t.is(processType, 'undefined');
  t.is(requireType, 'undefined');
  t.true(net!.startsWith('blocked:'), net);
});

test('with sandbox: "require" the OS sandbox is in force, and nothing of one execution is left for the next', async (t) => {
  const strict = new StrataExecutor({ runtime: { sandbox: 'require' } });
  t.deepEqual(await strict.execute('globalThis.kept = 1; typeof kept', []), { result: 'number', logs: [] });
  t.deepEqual(await strict.execute('typeof kept', []), { result: 'undefined', logs: [] });
});

test('a SandboxPool: each execution checks out a fresh runtime', async (t) => {
  const pool = await SandboxPool.start({ size: 1, timeout: 5_000 });
  try {
    const pooled = new StrataExecutor({ pool });
    t.deepEqual(await pooled.execute('globalThis.kept = 1; await codemode.id({ n: 1 })', [codemode({ id: async (x) => x })]), { result: { n: 1 }, logs: [] });
    t.deepEqual(await pooled.execute('typeof kept', []), { result: 'undefined', logs: [] });
    t.true(pool.stats().checkouts >= 2);
  } finally {
    await pool.close();
  }
});

test('an abort signal stops the execution: before it runs, or while a tool works', async (t) => {
  const before = new AbortController();
  before.abort();
  t.deepEqual(await executor.execute('42', [], { signal: before.signal }), { result: undefined, error: 'Execution aborted before the code ran' });
  const during = new AbortController();
  const never = gate();
  const result = await executor.execute(
    'async () => { console.log("calling"); return await codemode.wait(); }',
    [codemode({ wait: () => (during.abort(), never.promise) })],
    {
      signal: during.signal,
    },
  );
  t.deepEqual(result, { result: undefined, error: 'Execution aborted', logs: ['calling'] });
  never.open();
});

// --- namespaces, preludes, connectors --------------------------------------------------------

test('providers are namespaces beside codemode.*; a provider’s error reaches the code', async (t) => {
  const result = await executor.execute(
    'async () => { const sum = await codemode.add({ a: 3, b: 4 }); const pong = await echo.ping({ msg: sum }); const a = await store.get({}); return { sum, pong, a }; }',
    [
      codemode({ add: async (x) => (x as { a: number }).a + (x as { b: number }).b }),
      { name: 'echo', fns: { ping: async (x) => ({ echoed: (x as { msg: unknown }).msg }) } },
      { name: 'store', fns: { get: async () => ({ from: 'store' }) } },
    ],
  );
  t.deepEqual(result, { result: { sum: 7, pong: { echoed: 7 }, a: { from: 'store' } }, logs: [] });
  const broken = await executor.execute('async () => await broken.doSomething({})', [
    {
      name: 'broken',
      fns: {
        doSomething: async () => {
          throw new Error('provider failed');
        },
      },
    },
  ]);
  t.is(broken.error, 'provider failed');
});

test('tool names are made identifiers by codemode’s rule; a collision, a duplicate or reserved provider name, a bad identifier are errors', async (t) => {
  const sanitized = await executor.execute('async () => await codemode.github_list_issues({})', [codemode({ 'github-list-issues': async () => [{ id: 1 }] })]);
  t.deepEqual(sanitized.result, [{ id: 1 }]);
  const refusals: [ResolvedProvider[], string][] = [
    [[codemode({ 'foo-bar': async () => 1, foo_bar: async () => 2 })], 'Tool names "foo-bar" and "foo_bar" both sanitize to "foo_bar" in provider "codemode"'],
    [
      [
        { name: 'dup', fns: {} },
        { name: 'dup', fns: {} },
      ],
      'Duplicate provider name "dup"',
    ],
    [[{ name: 'console', fns: {} }], 'Provider name "console" is reserved: give the provider another name'],
    [[{ name: 'Promise', fns: {} }], 'Provider name "Promise" is reserved: give the provider another name'],
    [[{ name: 'my-ns', fns: {} }], 'Provider name "my-ns" is not a valid JavaScript identifier'],
  ];
  for (const [providers, error] of refusals) t.deepEqual(await executor.execute('async () => 1', providers), { result: undefined, error });
});

test("a provider's prelude defines functions in the sandbox that win over dispatch (codemode's step)", async (t) => {
  const decided: unknown[] = [];
  const recorded: unknown[] = [];
  const provider: ResolvedProvider = {
    name: 'codemode',
    fns: { decide: async (seq) => (decided.push(seq), { kind: 'execute' }), record: async (value) => (recorded.push(value), true) },
    prelude: `codemode.step = async (seq, fn) => {
      const d = await codemode.decide(seq);
      if (d.kind === "replay") return d.result;
      const value = await fn();
      await codemode.record(value);
      return value;
    };`,
  };
  const result = await executor.execute(
    'async () => { let ran = 0; const v = await codemode.step(0, async () => { ran++; return 21 * 2; }); return { v, ran }; }',
    [provider],
  );
  t.deepEqual(result, { result: { v: 42, ran: 1 }, logs: [] });
  t.deepEqual(decided, [0]);
  t.deepEqual(recorded, [42]);
});

test("connectors: the namespace's methods call binding.callTool(method, args); its control answers are codemode's", async (t) => {
  const calls: unknown[] = [];
  const binding = {
    async callTool(method: string, args: unknown) {
      calls.push([method, args]);
      if (method === 'denied') return { __codemode_control__: 'error', message: 'not allowed' };
      if (method === 'approve') return { __codemode_control__: 'pause' };
      return { ok: method };
    },
  };
  const result = await executor.execute(
    'async () => { const out = [await gh.listIssues({ repo: "x" })]; for (const m of ["denied", "approve"]) { try { await gh[m]({}); } catch (e) { out.push(e.message); } } return out; }',
    [],
    { connectors: [{ name: 'gh', binding }] },
  );
  t.deepEqual(result.result, [{ ok: 'listIssues' }, 'not allowed', '__CODEMODE_PAUSE__']);
  t.deepEqual(calls, [
    ['listIssues', { repo: 'x' }],
    ['denied', {}],
    ['approve', {}],
  ]);
  const clash = await executor.execute('1', [{ name: 'gh', fns: {} }], { connectors: [{ name: 'gh', binding }] });
  t.is(clash.error, 'Duplicate name "gh" (connector clashes with provider)');
});

// --- bad input -------------------------------------------------------------------------------

test('bad input is a clear error result, never a throw: code not a string, code past the limit, providers, fns, options', async (t) => {
  const call = (code: unknown, providers: unknown, options?: unknown) =>
    executor.execute(code as string, providers as ResolvedProvider[], options as Parameters<StrataExecutor['execute']>[2]);
  t.deepEqual(await call(42, []), { result: undefined, error: 'code must be a string (the JavaScript to run), got number' });
  t.deepEqual(await call(undefined, []), { result: undefined, error: 'code must be a string (the JavaScript to run), got undefined' });
  t.deepEqual(await call('x'.repeat(MAX_CODE_CHARS + 1), []), {
    result: undefined,
    error: `code is ${MAX_CODE_CHARS + 1} characters, past the limit of ${MAX_CODE_CHARS}: send shorter code, or split the work into several executions`,
  });
  t.deepEqual(await call('1', null), { result: undefined, error: 'providers must be an array of { name, fns } (or an object of functions), got null' });
  t.deepEqual(await call('1', [{ name: 'codemode', fns: { x: 'not a function' } }]), {
    result: undefined,
    error: 'Provider "codemode": fns["x"] must be a function, got string',
  });
  t.deepEqual(await call('1', [], { signal: 'soon' }), { result: undefined, error: 'options.signal must be an AbortSignal' });
  t.deepEqual(await call('1', [], { connectors: [{ name: 'c', binding: {} }] }), {
    result: undefined,
    error: 'Connector "c": binding must have a callTool(method, args) function',
  });
});

test('the deprecated form, an object of functions, is the codemode namespace', async (t) => {
  t.deepEqual(await executor.execute('await codemode.two()', { two: async () => 2 }), { result: 2, logs: [] });
});

test('bad options are InvalidOption from the constructor', (t) => {
  const bad: unknown[] = [null, { timeout: 0 }, { timeout: Number.NaN }, { timeout: 2 ** 31 }, { runtime: {}, pool: {} }, { pool: {} }, { runtime: 'fast' }];
  for (const options of bad) t.throws(() => new StrataExecutor(options as never), { instanceOf: InvalidOption }, JSON.stringify(options));
  t.notThrows(() => new StrataExecutor({ timeout: Infinity }));
});

// --- the code's form (pure) ------------------------------------------------------------------

test("codemodeFunction: codemode's forms, each as one function expression", (t) => {
  const table: [string, string][] = [
    ['', 'async () => {}'],
    [' \n\t ', 'async () => {}'],
    ['async () => { return 1; }', 'async () => { return 1; }'],
    ['  () => 42  ', '() => 42'],
    ['async () => { return 1; };', 'async () => { return 1; }'],
    ['1 + 2', 'async () => {\nreturn (1 + 2)\n}'],
    ['const x = 42', 'async () => {\nconst x = 42\n}'],
    ['const = oops {{{', 'async () => {\nconst = oops {{{\n}'],
    ['return 42', 'async () => {\nreturn 42\n}'],
    ['```ts\n() => 42\n```', '() => 42'],
    ['```\nasync () => 1\n```  ', 'async () => 1'],
    ['```js\nexport default async () => { return 1; }\n```', 'async () => { return 1; }'],
    ['export default function() { return 42; }', 'async () => {\nreturn (function() { return 42; })();\n}'],
    ['export default class { constructor() {} }', 'async () => {\nreturn (class { constructor() {} });\n}'],
    ['export default 42', 'async () => {\nreturn (42)\n}'],
    ['function compute() { return 1 + 2; }', 'async () => {\nfunction compute() { return 1 + 2; }\nreturn compute();\n}'],
    ['function helper() { return 1; }\nhelper()', 'async () => {\nfunction helper() { return 1; }\nreturn (helper())\n}'],
  ];
  for (const [code, expected] of table) t.is(codemodeFunction(code), expected, JSON.stringify(code));
  // Not wholly fenced: left as it is (and then a body that does not parse).
  t.is(codemodeFunction('```js\nasync () => 1'), 'async () => {\n```js\nasync () => 1\n}');
});

test("codemodeToolName: codemode's rule", (t) => {
  const table: [string, string][] = [
    ['github-list.issues now', 'github_list_issues_now'],
    ['get weather!', 'get_weather'],
    ['3d', '_3d'],
    ['delete', 'delete_'],
    ['undefined', 'undefined_'],
    ['!!!', '_'],
    ['', '_'],
    ['$ok', '$ok'],
  ];
  for (const [name, expected] of table) t.is(codemodeToolName(name), expected, name);
});
