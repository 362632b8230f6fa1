// Approvals over MCP with the official SDKs: a bridged tool with needsApproval, called by the code
// `execute` runs, is put to the client as an elicitation; approving runs it once, denying refuses
// it in the guest with the user's reason; a client that cannot be asked gets a refusal that says
// why. The 2026-07-28 revision asks in rounds (input_required, SDK 2.x over HTTP, its client
// fulfilling them through its elicitation handler); the 2025 ones with a request to the client
// during the call (SDK 1.x and 2.x over a stream). The request state the client echoes is signed,
// single-use and checked.
import test, { type ExecutionContext } from 'ava';
import { AgentSandbox } from '../src/agent-sandbox.js';
import { McpApprovals, NO_ELICITATION } from '../src/mcp-approvals.js';
import { startMcpHttpServer, startMcpServer, type McpServerConfig } from '../src/mcp-server.js';
import { ToolBridge } from '../src/tool-bridge.js';
import { sent, tools } from './fixtures/approval-tools.js';
import { checkNoLeaks } from './helpers/leaks.js';

checkNoLeaks(test);

const APPROVAL_TOOLS = new URL('./fixtures/approval-tools.js', import.meta.url).href;
const CONFIG: McpServerConfig = { tools: [{ module: APPROVAL_TOOLS, namespace: 'bank' }], poolSize: 1, timeout: 10_000, sandbox: 'off' };

interface Asked {
  message: string;
  schema: unknown;
}
type Answer = { action: 'accept' | 'decline' | 'cancel'; content?: Record<string, string | number | boolean | string[]> };
type Decide = (message: string) => Answer;

interface Outcome {
  isError?: boolean;
  structuredContent?: { status: string; result?: unknown; error?: string; calls: { tool: string; status: string; error?: { message: string } }[] };
  content: { type: string; text: string }[];
}
interface SdkClient {
  callTool(params: { name: string; arguments: Record<string, unknown> }): Promise<Outcome>;
  close(): Promise<void>;
}

/** The 2.x client over HTTP (2026-07-28), its elicitation handler answering by `decide` (or no elicitation capability). */
async function httpClient(t: ExecutionContext, url: URL, decide: Decide | undefined, asked: Asked[]): Promise<SdkClient> {
  const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
  const c = new Client(
    { name: 'approver-2', version: '1.0.0' },
    { versionNegotiation: { mode: 'auto' }, ...(decide === undefined ? {} : { capabilities: { elicitation: { form: {} } } }) },
  );
  if (decide !== undefined) {
    c.setRequestHandler('elicitation/create', async (request) => {
      const params = request.params as { message: string; requestedSchema: unknown };
      asked.push({ message: params.message, schema: params.requestedSchema });
      return decide(params.message);
    });
  }
  await c.connect(new StreamableHTTPClientTransport(url));
  t.is(c.getNegotiatedProtocolVersion(), '2026-07-28');
  t.teardown(() => c.close());
  return c as unknown as SdkClient;
}

/** A 1.x client over a pair of streams to `startMcpServer` (a 2025 revision; the server's stdio transport), answering by `decide`. */
async function streamClient(t: ExecutionContext, config: McpServerConfig, decide: Decide | undefined, asked: Asked[]): Promise<SdkClient> {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { InMemoryTransport } = await import('@modelcontextprotocol/sdk/inMemory.js');
  const { ElicitRequestSchema } = await import('@modelcontextprotocol/sdk/types.js');
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const running = await startMcpServer(config, serverSide);
  t.teardown(() => running.close());
  const c = new Client({ name: 'approver-1', version: '1.0.0' }, decide === undefined ? {} : { capabilities: { elicitation: {} } });
  if (decide !== undefined) {
    c.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push({ message: request.params.message, schema: (request.params as { requestedSchema?: unknown }).requestedSchema });
      return decide(request.params.message);
    });
  }
  await c.connect(clientSide);
  t.teardown(() => c.close());
  return c as unknown as SdkClient;
}

async function httpServer(t: ExecutionContext, config: McpServerConfig) {
  const running = await startMcpHttpServer({ ...config, sdk: 2 }, { host: '127.0.0.1', port: 0 });
  t.teardown(() => running.close());
  return running;
}

// A function, not top-level declarations: with --session the cells share one global scope.
const CODE = (to: string) => `await (async () => {
  const small = await bank.transfer({ to: ${JSON.stringify(to)}, amount: 5 });
  let big;
  try { big = await bank.transfer({ to: ${JSON.stringify(to)}, amount: 500 }); } catch (e) { big = 'refused: ' + e.message; }
  return [small, big];
})()`;

const transfersTo = (to: string) => sent.filter((transfer) => transfer.to === to).map((transfer) => transfer.amount);

const approve: Decide = () => ({ action: 'accept', content: { approve: true } });
const deny: Decide = () => ({ action: 'accept', content: { approve: false, reason: 'too much' } });

for (const session of [false, true]) {
  const mode = session ? 'with --session' : 'without --session';
  const config = { ...CONFIG, session };

  test(`2026-07-28 over HTTP (SDK 2.x), ${mode}: the client is asked in rounds; approved, the call runs once`, async (t) => {
    const running = await httpServer(t, config);
    const asked: Asked[] = [];
    const to = `http-approve-${session}`;
    const c = await httpClient(t, running.url, approve, asked);
    const outcome = await c.callTool({ name: 'execute', arguments: { code: CODE(to) } });
    t.falsy(outcome.isError, outcome.content[0]?.text);
    t.deepEqual(outcome.structuredContent?.result, ['sent 5 to ' + to, 'sent 500 to ' + to]);
    t.deepEqual(transfersTo(to), [5, 500], 'each transfer ran once: the approved one after the decision, the first not again on replay');
    t.is(asked.length, 1);
    t.is(asked[0]!.message, `The code asks to call bank.transfer({"to":"${to}","amount":500}). Approve this call?`);
    t.deepEqual((asked[0]!.schema as { required: string[] }).required, ['approve']);
  });

  test(`2026-07-28 over HTTP (SDK 2.x), ${mode}: denied, the guest gets the user's reason and the tool never runs; no elicitation capability is a refusal saying so`, async (t) => {
    const running = await httpServer(t, config);
    const to = `http-deny-${session}`;
    const denied = await (await httpClient(t, running.url, deny, [])).callTool({ name: 'execute', arguments: { code: CODE(to) } });
    t.deepEqual(denied.structuredContent?.result, [`sent 5 to ${to}`, 'refused: the call to bank.transfer was denied: denied by the user: too much']);
    const unable = await (await httpClient(t, running.url, undefined, [])).callTool({ name: 'execute', arguments: { code: CODE(to) } });
    t.deepEqual(unable.structuredContent?.result, [`sent 5 to ${to}`, `refused: the call to bank.transfer was denied: ${NO_ELICITATION}`]);
    t.deepEqual(transfersTo(to), [5, 5], 'neither large transfer ran');
  });

  test(`2025 revision over a stream (SDK 1.x client), ${mode}: elicitation/create during the call; approve, decline, no capability`, async (t) => {
    const to = `stream-${session}`;
    const asked: Asked[] = [];
    const approving = await streamClient(t, config, approve, asked);
    t.deepEqual((await approving.callTool({ name: 'execute', arguments: { code: CODE(`${to}-a`) } })).structuredContent?.result, [
      `sent 5 to ${to}-a`,
      `sent 500 to ${to}-a`,
    ]);
    t.is(asked.length, 1);
    const declining = await streamClient(t, config, () => ({ action: 'decline' }), []);
    t.deepEqual((await declining.callTool({ name: 'execute', arguments: { code: CODE(`${to}-d`) } })).structuredContent?.result, [
      `sent 5 to ${to}-d`,
      'refused: the call to bank.transfer was denied: declined by the user',
    ]);
    const unable = await streamClient(t, config, undefined, []);
    t.deepEqual((await unable.callTool({ name: 'execute', arguments: { code: CODE(`${to}-n`) } })).structuredContent?.result, [
      `sent 5 to ${to}-n`,
      `refused: the call to bank.transfer was denied: ${NO_ELICITATION}`,
    ]);
    t.deepEqual(transfersTo(`${to}-a`), [5, 500]);
    t.deepEqual(transfersTo(`${to}-d`), [5]);
    t.deepEqual(transfersTo(`${to}-n`), [5]);
  });
}

test('a 2025 client over stateless HTTP (SDK 1.x) cannot be asked: the call is refused, saying how to get approvals', async (t) => {
  const running = await startMcpHttpServer({ ...CONFIG, sdk: 1 }, { host: '127.0.0.1', port: 0 });
  t.teardown(() => running.close());
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
  const c = new Client({ name: 'test-1', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  await c.connect(new StreamableHTTPClientTransport(running.url));
  t.teardown(() => c.close());
  const outcome = (await c.callTool({ name: 'execute', arguments: { code: CODE('stateless-1') } })) as unknown as Outcome;
  t.regex(
    String((outcome.structuredContent?.result as string[] | undefined)?.[1]),
    /^refused: the call to bank.transfer was denied: the MCP client cannot be asked for approval over stateless HTTP on a 2025 revision/,
  );
  t.deepEqual(transfersTo('stateless-1'), [5]);
});

test('the request state: a forged, tampered, replayed or stale state is refused and runs nothing; an answer missing is a denial', async (t) => {
  const approvals = new McpApprovals();
  const bridge = new ToolBridge({ namespace: 'bank', tools });
  const start = (journal?: unknown) =>
    journal === undefined ? AgentSandbox.start({ sandbox: 'off', tools: bridge }) : AgentSandbox.restore(journal, { sandbox: 'off', tools: bridge });
  const run = (s: AgentSandbox) => s.run(CODE('state'));
  const first = await approvals.execute({ kind: 'rounds', responses: undefined, state: undefined }, { start }, run);
  if (!('inputRequired' in first)) return t.fail('expected input_required');
  const { requestState, inputRequests } = first.inputRequired;
  t.deepEqual(Object.keys(inputRequests), ['approve-2']);
  t.is(approvals.waiting, 1, 'the paused journal waits in memory');
  const yes = { 'approve-2': { action: 'accept', content: { approve: true } } };
  const [body, mac] = requestState.split('.') as [string, string];
  const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(body, 'base64url').toString()), seqs: [1] })).toString('base64url');
  for (const state of ['garbage', `${forged}.${mac}`, `${body}.${mac.slice(0, -2)}AA`, `${body}.${mac}.x`, 'x'.repeat(10_000)]) {
    t.deepEqual(await approvals.execute({ kind: 'rounds', responses: yes, state }, { start }, run), {
      refused: 'this approval is not one this server asked for, or has expired: call execute again',
    });
  }
  t.deepEqual(transfersTo('state'), [5], 'nothing ran on a bad state; the paused code is still waiting');
  const done = await approvals.execute({ kind: 'rounds', responses: yes, state: requestState }, { start }, run);
  t.true('status' in done && done.status === 'ok');
  t.deepEqual(transfersTo('state'), [5, 500]);
  t.deepEqual(await approvals.execute({ kind: 'rounds', responses: yes, state: requestState }, { start }, run), {
    refused: 'this approval has expired or was already answered: call execute again',
  });
  t.deepEqual(transfersTo('state'), [5, 500], 'a replayed state ran nothing');
  // A round without an answer for its call denies it.
  const again = await approvals.execute({ kind: 'rounds', responses: undefined, state: undefined }, { start }, (s) => s.run(CODE('unanswered')));
  if (!('inputRequired' in again)) return t.fail('expected input_required');
  const unanswered = await approvals.execute({ kind: 'rounds', responses: {}, state: again.inputRequired.requestState }, { start }, run);
  t.deepEqual('result' in unanswered ? unanswered.result : undefined, [
    'sent 5 to unanswered',
    'refused: the call to bank.transfer was denied: the MCP client sent no answer for this approval',
  ]);
  t.is(approvals.waiting, 0);
});
