// codeTool, the AI SDK adapter, driven by the SDK's own mock model (MockLanguageModelV4 from
// 'ai/test'): generateText calls the code tool, the code calls a bridged tool in a sandbox, and
// the model's next call sees the tool's answer; the code's failures are answers, never SDK errors.
import test from 'ava';
import { generateText, stepCountIs, type ToolExecutionOptions } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { InvalidOption, Runtime, SandboxPool } from '@strata/runtime';
import { codeTool, type CodeToolOutput } from '../src/code-tool.js';
import { ToolBridge } from '../src/index.js';
import { checkNoLeaks } from './helpers/leaks.js';

checkNoLeaks(test);

function weatherBridge() {
  const ran: unknown[] = [];
  const bridge = new ToolBridge({
    tools: {
      weather: {
        description: 'Current weather for a city',
        inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
        execute: async (input: { city: string }) => (ran.push(input), { tempC: 21, city: input.city }),
      },
    },
  });
  return { bridge, ran };
}

const usage = { inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 5, text: 5, reasoning: 0 } };

/** A model that first calls the code tool with `code`, then answers in text. */
function scriptedModel(code: string) {
  return new MockLanguageModelV4({
    doGenerate: [
      {
        content: [{ type: 'tool-call', toolCallId: 'call-1', toolName: 'code', input: JSON.stringify({ code }) }],
        finishReason: { unified: 'tool-calls', raw: undefined },
        usage,
        warnings: [],
      },
      { content: [{ type: 'text', text: 'Done.' }], finishReason: { unified: 'stop', raw: undefined }, usage, warnings: [] },
    ],
  });
}

/** Runs a two-step generation; the code tool's output as the SDK recorded it, and what the model's second call was sent. */
async function generate(code: string, tool: ReturnType<typeof codeTool>) {
  const model = scriptedModel(code);
  const result = await generateText({ model, tools: { code: tool }, stopWhen: stepCountIs(3), prompt: 'What is the weather in Oslo?' });
  const toolResults = result.steps[0]!.toolResults;
  const secondPrompt = model.doGenerateCalls[1]?.prompt ?? [];
  const sent = secondPrompt.flatMap((message) => (message.role === 'tool' ? message.content : [])).find((part) => part.type === 'tool-result');
  return { result, model, toolResults, output: toolResults[0]?.output as CodeToolOutput, sent };
}

/** Plain JSON (tagged JSON's objects have a null prototype), as the model receives it. */
const json = (value: unknown) => JSON.parse(JSON.stringify(value)) as unknown;

const execution = (abortSignal?: AbortSignal): ToolExecutionOptions<unknown> => ({
  toolCallId: 'direct',
  messages: [],
  context: {},
  ...(abortSignal ? { abortSignal } : {}),
});

test('generateText: the code calls a bridged tool once with the validated input; the SDK records result and receipt; the model sees them next', async (t) => {
  const { bridge, ran } = weatherBridge();
  const { result, model, toolResults, output, sent } = await generate(
    'const w = await tools.weather({ city: "Oslo" });\nconsole.log("got", w.city);\nw.tempC',
    codeTool({ bridge }),
  );
  t.is(result.text, 'Done.');
  t.is(result.steps.length, 2);
  t.is(toolResults.length, 1);
  t.is(toolResults[0]!.toolName, 'code');
  t.is(output.status, 'ok', JSON.stringify(output));
  t.is(output.result, 21);
  t.is(output.stdout, 'got Oslo\n');
  t.is(output.stderr, '');
  t.deepEqual(json(output.calls.map(({ ms: _ms, ...call }) => call)), [
    { tool: 'tools.weather', input: { city: 'Oslo' }, status: 'completed', result: { tempC: 21, city: 'Oslo' } },
  ]);
  t.is(typeof output.calls[0]!.ms, 'number');
  t.deepEqual(ran, [{ city: 'Oslo' }], 'the bridged tool ran once, with the input as validated');
  t.is(model.doGenerateCalls.length, 2);
  t.truthy(sent, 'the second call carries the tool result');
  t.like(sent, { type: 'tool-result', toolCallId: 'call-1', toolName: 'code' });
  const sentOutput = (sent as { output: { type: string; value: unknown } }).output;
  t.is(sentOutput.type, 'json');
  t.like(json(sentOutput.value), { status: 'ok', result: 21, calls: [{ tool: 'tools.weather', status: 'completed', result: { tempC: 21, city: 'Oslo' } }] });
  // The model was offered one tool: its description has the declarations, its input is { code }.
  const offered = model.doGenerateCalls[0]!.tools ?? [];
  t.is(offered.length, 1);
  t.like(offered[0], { type: 'function', name: 'code' });
  const definition = offered[0] as { description?: string; inputSchema: unknown };
  t.true(definition.description?.includes(bridge.declarations()));
  t.like(definition.inputSchema, { type: 'object', properties: { code: { type: 'string' } }, required: ['code'] });
});

test('code that throws, or runs past its timeout, is status error in the tool output, and the generation goes on', async (t) => {
  const { bridge } = weatherBridge();
  const thrown = await generate('console.error("about to fail");\nthrow new RangeError("nope")', codeTool({ bridge }));
  t.is(thrown.result.text, 'Done.');
  t.like(thrown.output, { status: 'error', errorType: 'RangeError', error: 'nope', stderr: 'about to fail\n', calls: [] });
  t.false('result' in thrown.output);
  t.like(json((thrown.sent as { output: { value: unknown } }).output.value), { status: 'error', errorType: 'RangeError', error: 'nope' });
  const loop = await generate('for (;;) {}', codeTool({ bridge, timeout: 300 }));
  t.is(loop.result.text, 'Done.');
  t.like(loop.output, { status: 'error', errorType: 'RuntimeTimeout' });
});

test('an invalid call inside the code rejects in the guest with the TypeError naming the field; the bridged tool does not run', async (t) => {
  const { bridge, ran } = weatherBridge();
  const { output } = await generate('await tools.weather({ town: "Oslo" })', codeTool({ bridge }));
  t.is(output.status, 'error');
  t.is(output.errorType, 'TypeError');
  t.regex(output.error ?? '', /tools\.weather: input\.city is required; input has an unknown field "town"; the tool was not called/);
  t.deepEqual(ran, []);
  t.like(output.calls, [{ tool: 'tools.weather', status: 'failed', error: { name: 'TypeError' } }]);
  // Caught by the code, the same rejection is an ordinary value.
  const caught = await generate('try { await tools.weather({ city: 3 }) } catch (e) { `${e.name}: ${e.message}` }', codeTool({ bridge }));
  t.is(caught.output.status, 'ok');
  t.regex(String(caught.output.result), /^TypeError: tools\.weather: input\.city must be string/);
  t.deepEqual(ran, []);
});

test('the description: what the tool does, each bridge’s declarations in a ts block, then the extra text', (t) => {
  const { bridge } = weatherBridge();
  const clock = new ToolBridge({ namespace: 'clock', tools: { now: { description: 'The time', execute: () => '12:00' } } });
  const tool = codeTool({ bridge: [bridge, clock], description: 'Prefer one call that does everything.' });
  const description = tool.description as string;
  t.regex(description, /^Runs JavaScript in a sandbox/);
  t.true(description.includes('```ts\n' + bridge.declarations() + '\n' + clock.declarations() + '\n```'));
  t.regex(description, /declare const tools: \{/);
  t.regex(description, /declare const clock: \{/);
  t.regex(description, /Current weather for a city/);
  t.true(description.endsWith('\nPrefer one call that does everything.'));
  const bare = codeTool({ bridge: [] }).description as string;
  t.false(bare.includes('```'), 'no tools, no declarations block');
});

test('with a SandboxPool as sandbox: a fresh pooled sandbox per call, both bridges bound', async (t) => {
  const pool = await SandboxPool.start({ size: 1, timeout: 5_000 });
  t.teardown(() => pool.close());
  const { bridge, ran } = weatherBridge();
  const clock = new ToolBridge({ namespace: 'clock', tools: { now: { execute: () => '12:00' } } });
  const tool = codeTool({ bridge: [bridge, clock], sandbox: pool });
  const first = await generate('globalThis.leftover = 1;\nconst w = await tools.weather({ city: "Bergen" });\n[w.city, await clock.now()]', tool);
  t.deepEqual(json(first.output.result), ['Bergen', '12:00']);
  t.deepEqual(
    first.output.calls.map((call) => call.tool),
    ['tools.weather', 'clock.now'],
  );
  const second = await generate('typeof globalThis.leftover', tool);
  t.is(second.output.result, 'undefined', 'nothing carries over: each call has its own sandbox');
  t.is(pool.stats().checkouts, 2);
  t.deepEqual(ran, [{ city: 'Bergen' }]);
});

test('with a pool of shared workers (isolatesPerWorker) as sandbox: a fresh isolate per call, nothing carries over', async (t) => {
  const pool = await SandboxPool.start({ size: 1, isolatesPerWorker: 8, timeout: 5_000 });
  t.teardown(() => pool.close());
  const { bridge } = weatherBridge();
  const tool = codeTool({ bridge, sandbox: pool });
  const first = await generate('globalThis.leftover = 1;\nconst w = await tools.weather({ city: "Bergen" });\nw.city', tool);
  t.is(first.output.result, 'Bergen');
  const second = await generate('typeof globalThis.leftover', tool);
  t.is(second.output.result, 'undefined', 'each call has its own isolate');
  t.is(pool.stats().checkouts, 2);
});

test('a function as sandbox: its runtime (an in-process Runtime here) is used for the call and closed after it', async (t) => {
  const { bridge } = weatherBridge();
  const runtimes: Runtime[] = [];
  const tool = codeTool({
    bridge,
    sandbox: async () => {
      const rt = await Runtime.start();
      runtimes.push(rt);
      return rt;
    },
  });
  const { output } = await generate('(await tools.weather({ city: "Oslo" })).city.toUpperCase()', tool);
  t.like(output, { status: 'ok', result: 'OSLO' });
  t.is(runtimes.length, 1);
  await t.throwsAsync(() => runtimes[0]!.eval('1'), { name: 'RuntimeClosed' });
});

test('a model’s markdown fence and default export are normalized before the cell runs', async (t) => {
  const { bridge } = weatherBridge();
  const code =
    'Here is the code:\n```js\nexport default async () => {\n  const w = await tools.weather({ city: "Oslo" });\n  return `${w.city}: ${w.tempC}`;\n};\n```\nIt prints the weather.';
  const { output } = await generate(code, codeTool({ bridge }));
  t.like(output, { status: 'ok', result: 'Oslo: 21' });
});

test('values JSON cannot say come back tagged; a sandbox that cannot start is an answer, not a throw', async (t) => {
  const { bridge } = weatherBridge();
  const { output } = await generate('[undefined, 2n ** 70n, new Map([["a", 1]])]', codeTool({ bridge }));
  t.deepEqual(json(output.result), [{ $undefined: true }, { $bigint: '1180591620717411303424' }, { $map: [['a', 1]] }]);
  const broken = codeTool({ bridge, sandbox: async () => Promise.reject(new Error('no capacity')) });
  const failed = await broken.execute!({ code: '1' }, execution());
  t.like(failed, { status: 'error', errorType: 'Error', error: 'the sandbox could not start: no capacity', calls: [] });
});

test('aborting the generation stops the run: the sandbox is closed and the answer says so', async (t) => {
  const controller = new AbortController();
  // Aborted once the code is surely running: 100 ms after its tool call, while it loops.
  const bridge = new ToolBridge({ tools: { start: { execute: () => void setTimeout(() => controller.abort(), 100) } } });
  const tool = codeTool({ bridge });
  const started = Date.now();
  const output = (await tool.execute!({ code: 'await tools.start();\nfor (;;) {}' }, execution(controller.signal))) as CodeToolOutput;
  t.like(output, { status: 'error', errorType: 'AbortError', calls: [{ tool: 'tools.start', status: 'completed' }] });
  t.true(Date.now() - started < 10_000, 'stopped long before the 30 s timeout');
  const late = (await tool.execute!({ code: '1' }, execution(controller.signal))) as CodeToolOutput;
  t.like(late, { status: 'error', errorType: 'AbortError', error: 'the generation was aborted before the code ran' });
});

test('bad options are InvalidOption when the tool is made; a bad input is an answer', async (t) => {
  const { bridge } = weatherBridge();
  const other = new ToolBridge({ tools: { x: { execute: () => 1 } } });
  t.throws(() => codeTool({ bridge: {} as ToolBridge }), { instanceOf: InvalidOption, message: /bridge must be a ToolBridge/ });
  t.throws(() => codeTool({ bridge: [bridge, other] }), { instanceOf: InvalidOption, message: /bridge\[0\] and bridge\[1\] both use the namespace tools/ });
  t.throws(() => codeTool({ bridge, timeout: -1 }), { instanceOf: InvalidOption, message: /timeout must be a positive number/ });
  t.throws(() => codeTool({ bridge, timeout: 1_000, sandbox: async () => Runtime.start() }), {
    instanceOf: InvalidOption,
    message: /with a sandbox, set the timeout there/,
  });
  t.throws(() => codeTool({ bridge, sandbox: {} as SandboxPool }), { instanceOf: InvalidOption, message: /sandbox must be a SandboxPool or a function/ });
  t.throws(() => codeTool({ bridge, description: 3 as unknown as string }), { instanceOf: InvalidOption, message: /description must be a string/ });
  t.throws(() => codeTool({ bridge, egress: { allow: ['https://a.test/*'] }, sandbox: async () => Runtime.start() }), {
    instanceOf: InvalidOption,
    message: /egress applies only to the runtimes Strata starts/,
  });
  t.throws(() => codeTool({ bridge, egress: { allow: [] } }), { instanceOf: InvalidOption, message: /egress policy: allow must be a non-empty array/ });
  const notARuntime = codeTool({ bridge, sandbox: async () => ({}) as Runtime });
  await t.throwsAsync(async () => notARuntime.execute!({ code: '1' }, execution()), {
    instanceOf: InvalidOption,
    message: /must resolve to an IsolatedRuntime or a Runtime/,
  });
  const tool = codeTool({ bridge });
  t.like(await tool.execute!({ code: 42 } as unknown as { code: string }, execution()), { status: 'error', errorType: 'TypeError' });
  // From the model, an input that is not { code } is the SDK's tool error (the model sees it), not a run.
  const model = new MockLanguageModelV4({
    doGenerate: [
      {
        content: [{ type: 'tool-call', toolCallId: 'call-1', toolName: 'code', input: JSON.stringify({ source: '1' }) }],
        finishReason: { unified: 'tool-calls', raw: undefined },
        usage,
        warnings: [],
      },
      { content: [{ type: 'text', text: 'Done.' }], finishReason: { unified: 'stop', raw: undefined }, usage, warnings: [] },
    ],
  });
  const result = await generateText({ model, tools: { code: tool }, stopWhen: stepCountIs(3), prompt: 'Run it' });
  t.is(result.steps[0]!.toolResults.length, 0);
  const toolError = result.steps[0]!.content.find((part) => part.type === 'tool-error');
  t.regex(String((toolError as { error?: unknown } | undefined)?.error), /the input must be \{ code: string \}/);
});

test("egress: the model's fetch reaches what the policy allows, and refuses without one", async (t) => {
  const { bridge } = weatherBridge();
  const http = await import('node:http');
  const server = http.createServer((_req, res) => res.end(JSON.stringify({ answer: 42 })));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const code = `(await (await fetch('${origin}/v1/answer')).json()).answer`;
  const allowed = (await codeTool({ bridge, egress: { allow: [`${origin}/v1/*`] } }).execute!({ code }, execution())) as CodeToolOutput;
  t.like(allowed, { status: 'ok', result: 42 });
  const refused = (await codeTool({ bridge }).execute!({ code }, execution())) as CodeToolOutput;
  t.like(refused, { status: 'error', errorType: 'TypeError' });
  t.regex(String(refused.error), /no egress policy/);
});
