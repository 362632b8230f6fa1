// Approvals inside codeTool, through the AI SDK's own flow, driven by its mock model
// (MockLanguageModelV4 from 'ai/test') in a generateText loop as the SDK's docs write it: the
// first call ends with a tool-approval-request for the code call (its reason names the bridged
// call the code waits on), the app pushes a tool-approval-response, the second call resumes the
// code by replay (no call runs twice) or, denied, the SDK answers execution-denied itself.
import test from 'ava';
import { generateText, stepCountIs, type ModelMessage, type ToolApprovalResponse, type ToolExecutionOptions } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { InvalidOption } from '@strata/runtime';
import { codeTool, type CodeTool, type CodeToolOutput } from '../src/code-tool.js';
import { ToolBridge } from '../src/tool-bridge.js';
import { checkNoLeaks } from './helpers/leaks.js';

checkNoLeaks(test);

/** `lookup` runs freely; `send` needs approval except to "me". */
function mailer() {
  const sent: string[] = [];
  const looked: string[] = [];
  const bridge = new ToolBridge({
    tools: {
      lookup: {
        description: 'Price of a SKU',
        inputSchema: { type: 'object', properties: { sku: { type: 'string' } }, required: ['sku'], additionalProperties: false },
        execute: async ({ sku }: { sku: string }) => (looked.push(sku), { A1: 3.5 } as Record<string, number>)[sku],
      },
      send: {
        description: 'Sends an e-mail',
        inputSchema: {
          type: 'object',
          properties: { to: { type: 'string' }, text: { type: 'string' } },
          required: ['to', 'text'],
          additionalProperties: false,
        },
        needsApproval: (input: { to: string }) => input.to !== 'me',
        execute: async ({ to, text }: { to: string; text: string }) => (sent.push(`${to}: ${text}`), `sent to ${to}`),
      },
    },
  });
  return { bridge, sent, looked };
}

const usage = { inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 5, text: 5, reasoning: 0 } };
const codeCall = (code: string, toolCallId = 'call-1') => ({
  content: [{ type: 'tool-call' as const, toolCallId, toolName: 'code', input: JSON.stringify({ code }) }],
  finishReason: { unified: 'tool-calls' as const, raw: undefined },
  usage,
  warnings: [],
});
const answer = (text: string) => ({
  content: [{ type: 'text' as const, text }],
  finishReason: { unified: 'stop' as const, raw: undefined },
  usage,
  warnings: [],
});

/** The model's script: each entry answers one model call, in order. */
const scripted = (...steps: ReturnType<typeof codeCall | typeof answer>[]) => new MockLanguageModelV4({ doGenerate: steps });

/** Plain JSON (tagged JSON's objects have a null prototype), as the model receives it. */
const json = (value: unknown) => JSON.parse(JSON.stringify(value)) as unknown;

/** The tool results the model was sent in its `n`th call. */
function resultsSent(model: MockLanguageModelV4, n: number) {
  return (model.doGenerateCalls[n]?.prompt ?? [])
    .flatMap((message) => (message.role === 'tool' ? message.content : []))
    .filter((part) => part.type === 'tool-result') as { toolCallId: string; output: { type: string; value?: unknown; reason?: string } }[];
}

/**
 * The docs' loop: generate, answer every approval request with `decide` (approved or not), generate
 * again with the responses. Gives both results, the requests and the messages.
 */
async function approvalLoop(
  model: MockLanguageModelV4,
  code: CodeTool,
  approved: boolean,
  options: { withReason?: boolean; reason?: string; between?: () => void } = {},
) {
  const settings = {
    model,
    tools: { code },
    stopWhen: stepCountIs(4),
    ...(options.withReason === false ? {} : { toolApproval: { code: code.toolApproval } }),
  };
  const messages: ModelMessage[] = [{ role: 'user', content: 'Mail ops the price of A1' }];
  const first = await generateText({ ...settings, messages });
  messages.push(...first.responseMessages);
  const requests = first.content.filter((part) => part.type === 'tool-approval-request');
  const responses: ToolApprovalResponse[] = requests.map((part) => ({
    type: 'tool-approval-response',
    approvalId: part.approvalId,
    approved,
    ...(options.reason === undefined ? {} : { reason: options.reason }),
  }));
  messages.push({ role: 'tool', content: responses });
  const waitingBefore = code.waitingCalls('call-1');
  options.between?.();
  const second = await generateText({ ...settings, messages });
  return { first, second, requests, waitingBefore, messages };
}

const CELL =
  'const price = await tools.lookup({ sku: "A1" });\nconsole.log("price", price);\nconst receipt = await tools.send({ to: "ops", text: "price " + price });\n[receipt, price]';

test('approve: the code pauses before the call that needs approval; the request names it; approved, the code resumes by replay and the tool runs once', async (t) => {
  const { bridge, sent, looked } = mailer();
  const code = codeTool({ bridge });
  const model = scripted(codeCall(CELL), answer('Mailed.'));
  const before: { sent: string[]; looked: string[]; modelCalls: number }[] = [];
  const between = () => before.push({ sent: [...sent], looked: [...looked], modelCalls: model.doGenerateCalls.length });
  const { first, second, requests, waitingBefore } = await approvalLoop(model, code, true, { between });
  // The first generation stops at the request: the code ran up to the call, which did not run.
  t.deepEqual(before, [{ sent: [], looked: ['A1'], modelCalls: 1 }], 'before the decision: the lookup ran, the send did not, the model waits');
  t.is(requests.length, 1);
  t.like(requests[0], { type: 'tool-approval-request', toolCall: { toolName: 'code', toolCallId: 'call-1' } });
  t.is(
    requests[0]!.reason,
    'The code waits to call tools.send({"to":"ops","text":"price 3.5"}): approve to run it and go on; deny and the code call is refused.',
  );
  t.deepEqual(json(waitingBefore), [{ tool: 'tools.send', input: { to: 'ops', text: 'price 3.5' } }]);
  t.deepEqual(first.toolResults, [], 'no result before the decision');
  // Approved: the call ran once, the lookup came from the journal, the model saw the whole answer.
  t.is(second.text, 'Mailed.');
  t.deepEqual(sent, ['ops: price 3.5']);
  t.deepEqual(looked, ['A1'], 'replayed from the journal, not run again');
  const [sentResult] = resultsSent(model, 1);
  t.is(sentResult?.toolCallId, 'call-1');
  t.is(sentResult?.output.type, 'json');
  const output = json(sentResult?.output.value) as CodeToolOutput;
  t.like(output, { status: 'ok', result: ['sent to ops', 3.5], stdout: 'price 3.5\n' });
  t.deepEqual(
    output.calls.map((call) => [call.tool, call.status]),
    [
      ['tools.lookup', 'completed'],
      ['tools.send', 'completed'],
    ],
  );
  t.is(code.waitingCalls('call-1'), undefined, 'nothing waits once it ran');
});

test('deny: the SDK answers the model execution-denied with the reason, the tool never runs, and the paused code is dropped when the tool next sees the denial', async (t) => {
  const { bridge, sent } = mailer();
  const code = codeTool({ bridge });
  // Without toolApproval the tool's own needsApproval asks (a request without a reason).
  const model = scripted(codeCall(CELL), codeCall('await tools.lookup({ sku: "A1" })', 'call-2'), answer('Not mailed.'));
  const { second, requests, waitingBefore } = await approvalLoop(model, code, false, { withReason: false, reason: 'not to ops' });
  t.is(requests.length, 1);
  t.is(requests[0]!.reason, undefined);
  t.truthy(waitingBefore);
  t.is(second.text, 'Not mailed.');
  t.deepEqual(sent, [], 'the tool never ran');
  const [denied] = resultsSent(model, 1);
  t.like(denied, { toolCallId: 'call-1', output: { type: 'execution-denied', reason: 'not to ops' } });
  t.like(json(second.steps[0]!.toolResults[0]?.output), { status: 'ok', result: 3.5 }, 'the model went on with another code call');
  t.is(code.waitingCalls('call-1'), undefined, 'the denied code call was dropped');
});

test('one decision per code call: after the approved call, a further call that needs approval is denied in the guest, which catches it', async (t) => {
  const { bridge, sent } = mailer();
  const code = codeTool({ bridge });
  const twice =
    'const a = await tools.send({ to: "ops", text: "one" });\n' +
    'let second;\ntry { await tools.send({ to: "dev", text: a }) } catch (e) { second = `${e.name}: ${e.message}` }\n[a, second]';
  const model = scripted(codeCall(twice), answer('Done.'));
  const { requests, waitingBefore } = await approvalLoop(model, code, true);
  t.is(requests.length, 1, 'one request for the code call');
  t.regex(requests[0]!.reason ?? '', /tools\.send\(\{"to":"ops","text":"one"\}\): approve to run it/);
  t.is(waitingBefore?.length, 1);
  t.deepEqual(sent, ['ops: one'], 'the approved call ran once, the other never');
  const output = json(resultsSent(model, 1)[0]?.output.value) as CodeToolOutput;
  t.is(output.status, 'ok');
  const [a, second] = output.result as string[];
  t.is(a, 'sent to ops');
  t.regex(second!, /^Error: the call to tools\.send was denied: it needs approval too, after the calls approved for this code call/);
  t.deepEqual(
    output.calls.map((call) => [call.tool, call.status]),
    [
      ['tools.send', 'completed'],
      ['tools.send', 'denied'],
    ],
  );
});

test('a call that does not need approval runs without asking: no request, one generation', async (t) => {
  const { bridge, sent, looked } = mailer();
  const code = codeTool({ bridge });
  const model = scripted(codeCall('const p = await tools.lookup({ sku: "A1" });\nawait tools.send({ to: "me", text: "p " + p })'), answer('Done.'));
  const result = await generateText({ model, tools: { code }, toolApproval: { code: code.toolApproval }, stopWhen: stepCountIs(3), prompt: 'Mail me' });
  t.is(result.text, 'Done.');
  t.deepEqual(
    result.content.filter((part) => part.type === 'tool-approval-request'),
    [],
  );
  t.deepEqual(looked, ['A1']);
  t.deepEqual(sent, ['me: p 3.5']);
  t.like(json(result.steps[0]!.toolResults[0]?.output), { status: 'ok', result: 'sent to me' });
  t.is(code.waitingCalls('call-1'), undefined);
});

test('an approval response with an unknown approvalId is the SDK’s InvalidToolApprovalError; nothing runs, and the right response still resumes the code', async (t) => {
  const { bridge, sent } = mailer();
  const code = codeTool({ bridge });
  const model = scripted(codeCall(CELL), answer('Mailed.'));
  const settings = { model, tools: { code }, toolApproval: { code: code.toolApproval }, stopWhen: stepCountIs(3) };
  const messages: ModelMessage[] = [{ role: 'user', content: 'Mail ops' }];
  const first = await generateText({ ...settings, messages });
  messages.push(...first.responseMessages);
  const request = first.content.find((part) => part.type === 'tool-approval-request')!;
  await t.throwsAsync(
    generateText({ ...settings, messages: [...messages, { role: 'tool', content: [{ type: 'tool-approval-response', approvalId: 'nope', approved: true }] }] }),
    { name: 'AI_InvalidToolApprovalError' },
  );
  t.deepEqual(sent, []);
  t.truthy(code.waitingCalls('call-1'), 'the code still waits');
  const second = await generateText({
    ...settings,
    messages: [...messages, { role: 'tool', content: [{ type: 'tool-approval-response', approvalId: request.approvalId, approved: true }] }],
  });
  t.is(second.text, 'Mailed.');
  t.deepEqual(sent, ['ops: price 3.5']);
});

const direct = (toolCallId: string, messages: ModelMessage[] = []): ToolExecutionOptions<unknown> => ({ toolCallId, messages, context: {} });

test('execute without the approval check (the app’s own toolApproval, or a direct call) denies a call that needs approval, in the guest; a waiting call is not resumed without its approval', async (t) => {
  const { bridge, sent } = mailer();
  const code = codeTool({ bridge });
  const unchecked = (await code.execute!(
    { code: 'try { await tools.send({ to: "ops", text: "x" }) } catch (e) { e.message }' },
    direct('d-1'),
  )) as CodeToolOutput;
  t.is(unchecked.status, 'ok');
  t.regex(
    String(unchecked.result),
    /^the call to tools\.send was denied: it needs approval, and this code call did not go through the code tool's approval check/,
  );
  t.deepEqual(sent, []);
  // The app answering 'not-applicable' for the code tool: the same, inside generateText.
  const model = scripted(codeCall('await tools.send({ to: "ops", text: "y" })'), answer('Done.'));
  const result = await generateText({ model, tools: { code }, toolApproval: { code: 'not-applicable' }, stopWhen: stepCountIs(3), prompt: 'Mail ops' });
  t.like(json(result.steps[0]!.toolResults[0]?.output), { status: 'error', errorType: 'Error', calls: [{ tool: 'tools.send', status: 'denied' }] });
  t.deepEqual(sent, []);
  // Paused by the check, then executed with no approval in the messages: refused, still waiting.
  const status = await code.toolApproval({ code: CELL }, { toolCallId: 'd-2', messages: [] });
  t.is(status.type, 'user-approval');
  const refused = (await code.execute!({ code: CELL }, direct('d-2'))) as CodeToolOutput;
  t.like(refused, { status: 'error', errorType: 'ApprovalRequired' });
  t.deepEqual(sent, []);
  t.truthy(code.waitingCalls('d-2'));
});

test('approvals.maxWaiting: past it the oldest paused code call is dropped, and its approval answers ApprovalExpired without running anything', async (t) => {
  const { bridge, sent, looked } = mailer();
  const code = codeTool({ bridge, approvals: { maxWaiting: 1 } });
  const model = scripted(codeCall(CELL, 'old'), codeCall(CELL, 'new'), answer('Late.'));
  const settings = { model, tools: { code }, toolApproval: { code: code.toolApproval }, stopWhen: stepCountIs(3) };
  const old: ModelMessage[] = [{ role: 'user', content: 'Mail ops' }];
  const firstOld = await generateText({ ...settings, messages: old });
  old.push(...firstOld.responseMessages);
  await generateText({ ...settings, prompt: 'Mail ops again' });
  t.is(code.waitingCalls('old'), undefined, 'dropped for the newer one');
  t.truthy(code.waitingCalls('new'));
  const request = firstOld.content.find((part) => part.type === 'tool-approval-request')!;
  old.push({ role: 'tool', content: [{ type: 'tool-approval-response', approvalId: request.approvalId, approved: true }] });
  await generateText({ ...settings, messages: old });
  const output = json(resultsSent(model, 2)[0]?.output.value) as CodeToolOutput;
  t.like(output, { status: 'error', errorType: 'ApprovalExpired' });
  t.deepEqual(sent, []);
  t.deepEqual(looked, ['A1', 'A1'], 'each code call ran up to its pause once, and not again');
});

test('options: a sandbox function beside a tool that needs approval, and bad approvals limits, are InvalidOption', (t) => {
  const { bridge } = mailer();
  t.throws(() => codeTool({ bridge, sandbox: async () => undefined as never }), { instanceOf: InvalidOption, message: /approvals need a session/ });
  t.throws(() => codeTool({ bridge, approvals: { maxWaiting: 0 } }), {
    instanceOf: InvalidOption,
    message: /approvals\.maxWaiting must be a positive integer/,
  });
  t.throws(() => codeTool({ bridge, approvals: { waitMs: 1.5 } }), { instanceOf: InvalidOption, message: /approvals\.waitMs/ });
  t.throws(() => codeTool({ bridge, approvals: 'soon' as never }), { instanceOf: InvalidOption, message: /approvals must be an object/ });
  // Without a tool that needs approval nothing changes: no check, no note in the description.
  const plain = codeTool({ bridge: new ToolBridge({ tools: { now: { execute: () => 1 } } }) });
  t.is((plain as { needsApproval?: unknown }).needsApproval, undefined);
  t.false(String(plain.description).includes('approval'));
  t.regex(String(codeTool({ bridge }).description), /Some tools need the user's approval/);
});
