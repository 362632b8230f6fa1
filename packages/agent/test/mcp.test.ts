// MCP with the real SDK, both ways: an MCP Client over stdio spawning `strata mcp` (its execute
// tool runs code that calls bridged tools, and an endless loop is answered as a timeout, the
// server going on), and `mcpTools` bridging a real upstream MCP server (a fixture on the SDK).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { InvalidOption, Runtime } from '@strata/runtime';
import { mcpTools, ToolBridge } from '../src/index.js';
import { checkNoLeaks } from './helpers/leaks.js';

checkNoLeaks(test);

const UPSTREAM = fileURLToPath(new URL('./fixtures/upstream-server.js', import.meta.url));
const TOOLS_MODULE = fileURLToPath(new URL('./fixtures/tools-module.js', import.meta.url));
const STRATA = fileURLToPath(new URL('../../../runtime/dist/src/cli/strata.js', import.meta.url));

/** A client connected to `strata mcp` with this config (and extra flags). */
async function strataMcp(t: import('ava').ExecutionContext, config: object, flags: string[] = []): Promise<Client> {
  const dir = mkdtempSync(join(tmpdir(), 'strata-mcp-'));
  const file = join(dir, 'strata.json');
  writeFileSync(file, JSON.stringify(config));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [STRATA, 'mcp', '--config', file, ...flags], stderr: 'inherit' }));
  t.teardown(() => client.close());
  return client;
}

const CONFIG = {
  tools: [
    { module: TOOLS_MODULE, namespace: 'tools' },
    { mcp: { command: process.execPath, args: [UPSTREAM] }, namespace: 'up' },
  ],
  timeout: 1_000,
  poolSize: 1,
};

test('strata mcp with isolatesPerWorker: each call a fresh isolate of a shared worker, nothing carries over', async (t) => {
  const client = await strataMcp(t, { tools: [{ module: TOOLS_MODULE, namespace: 'tools' }], timeout: 5_000, poolSize: 1, isolatesPerWorker: 4 });
  const first = await client.callTool({ name: 'execute', arguments: { code: 'globalThis.kept = 1; (await tools.weather({ city: "Oslo" })).tempC' } });
  t.falsy(first.isError, JSON.stringify(first.content));
  t.is((first.structuredContent as { result: unknown }).result, 4);
  const second = await client.callTool({ name: 'execute', arguments: { code: 'typeof kept' } });
  t.is((second.structuredContent as { result: unknown }).result, 'undefined');
});

test('strata mcp: one execute tool, described with the bridged tools’ declarations; code calling them answers with result, console and receipts', async (t) => {
  const client = await strataMcp(t, CONFIG);
  const { tools } = await client.listTools();
  t.deepEqual(
    tools.map((tool) => tool.name),
    ['execute'],
  );
  const description = tools[0]!.description ?? '';
  t.regex(description, /declare const tools: \{/);
  t.regex(description, /Current weather for a city/);
  t.regex(description, /declare const up: \{/);
  t.regex(description, /echo_text\(/, 'the upstream tool name became an identifier');
  const result = await client.callTool({
    name: 'execute',
    arguments: {
      code: 'const w = await tools.weather({ city: "Oslo" }); const s = await up.add({ a: 2, b: 3 }); console.log("sum", s.sum); [w.tempC, s.sum, await up.echo_text({ text: "hi" })]',
    },
  });
  t.falsy(result.isError, JSON.stringify(result.content));
  const structured = result.structuredContent as { status: string; result: unknown; stdout: string; calls: { tool: string; status: string }[] };
  t.is(structured.status, 'ok');
  t.deepEqual(structured.result, [4, 5, 'echo: hi']);
  t.is(structured.stdout, 'sum 5\n');
  t.deepEqual(
    structured.calls.map((c) => [c.tool, c.status]),
    [
      ['tools.weather', 'completed'],
      ['up.add', 'completed'],
      ['up.echo_text', 'completed'],
    ],
  );
  t.regex((result.content as { text: string }[])[0]!.text, /"status": "ok"/);
});

test('strata mcp: an endless loop is a timeout, a throw and an invalid call are tool errors, an upstream isError rejects in the guest; the server goes on', async (t) => {
  const client = await strataMcp(t, CONFIG);
  const loop = await client.callTool({ name: 'execute', arguments: { code: 'for (;;) {}' } });
  t.true(loop.isError);
  t.regex(String((loop.structuredContent as { error: string }).error), /^RuntimeTimeout: /);
  const thrown = await client.callTool({ name: 'execute', arguments: { code: 'throw new RangeError("nope")' } });
  t.true(thrown.isError);
  t.is((thrown.structuredContent as { error: string }).error, 'RangeError: nope');
  const invalid = await client.callTool({ name: 'execute', arguments: { code: 'await tools.weather({ town: "Oslo" })' } });
  t.true(invalid.isError);
  t.regex(
    (invalid.structuredContent as { error: string }).error,
    /tools\.weather: input\.city is required; input has an unknown field "town"; the tool was not called/,
  );
  const upstreamError = await client.callTool({ name: 'execute', arguments: { code: 'try { await up.fail({}) } catch (e) { e.message }' } });
  t.falsy(upstreamError.isError);
  t.is((upstreamError.structuredContent as { result: unknown }).result, 'the upstream tool failed on purpose');
  const missing = await client.callTool({ name: 'execute', arguments: {} });
  t.true(missing.isError);
  const after = await client.callTool({ name: 'execute', arguments: { code: '6 * 7' } });
  t.is((after.structuredContent as { result: unknown }).result, 42);
  const fresh = await client.callTool({ name: 'execute', arguments: { code: 'globalThis.kept = 1; typeof kept' } });
  t.is((fresh.structuredContent as { result: unknown }).result, 'number');
  t.is(
    ((await client.callTool({ name: 'execute', arguments: { code: 'typeof kept' } })).structuredContent as { result: unknown }).result,
    'undefined',
    'a fresh sandbox per call',
  );
});

test('strata mcp --session: state persists across execute calls, with the calls journaled', async (t) => {
  const client = await strataMcp(t, { tools: [{ module: TOOLS_MODULE }] }, ['--session']);
  await client.callTool({ name: 'execute', arguments: { code: 'const w = await tools.weather({ city: "Bergen" })' } });
  const next = await client.callTool({ name: 'execute', arguments: { code: 'w.tempC * 2' } });
  t.falsy(next.isError, JSON.stringify(next.content));
  t.is((next.structuredContent as { result: unknown }).result, 12);
});

test('strata mcp --session --store: the session outlives the server; started again with its id, it resumes with its state', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'strata-mcp-store-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'sessions.db');
  const flags = ['--session', '--store', file, '--session-id', 'chat-7'];
  const first = await strataMcp(t, { tools: [{ module: TOOLS_MODULE }] }, flags);
  const ran = await first.callTool({ name: 'execute', arguments: { code: 'const w = await tools.weather({ city: "Bergen" }); globalThis.n = 20; w.tempC' } });
  t.falsy(ran.isError, JSON.stringify(ran.content));
  await first.close();

  const second = await strataMcp(t, { tools: [{ module: TOOLS_MODULE }] }, flags);
  const next = await second.callTool({ name: 'execute', arguments: { code: '[w.city, n + 1]' } });
  t.falsy(next.isError, JSON.stringify(next.content));
  t.deepEqual((next.structuredContent as { result: unknown }).result, ['Bergen', 21]);
  await second.close();

  const { SqliteJournalStore } = await import('../src/index.js');
  const store = SqliteJournalStore.open(file);
  t.teardown(() => store.close());
  t.like((await store.list())[0], { sessionId: 'chat-7', cells: 2 });
});

test('strata mcp --store stopped by SIGTERM gives its lease up first: the next server resumes at once', async (t) => {
  const { spawn } = await import('node:child_process');
  const dir = mkdtempSync(join(tmpdir(), 'strata-mcp-store-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'sessions.db');
  const server = spawn(process.execPath, [STRATA, 'mcp', '--session', '--store', file, '--session-id', 'stopped'], { stdio: ['pipe', 'ignore', 'pipe'] });
  t.teardown(() => server.kill('SIGKILL'));
  await new Promise<void>((resolve) => server.stderr!.on('data', (chunk: Buffer) => String(chunk).includes('kept in') && resolve()));
  const exited = new Promise<NodeJS.Signals | null>((resolve) => server.once('exit', (_code, signal) => resolve(signal)));
  server.kill('SIGTERM');
  t.is(await exited, 'SIGTERM', 'it still ends by the signal');
  const { SqliteJournalStore } = await import('../src/index.js');
  const store = SqliteJournalStore.open(file);
  t.teardown(() => store.close());
  t.is((await store.load('stopped'))?.session.lease.owner, null, 'the lease was given up');
});

test('strata mcp: --store without --session, and a bad --session-id, are refused with exit status 2', async (t) => {
  const { spawnSync } = await import('node:child_process');
  const dir = mkdtempSync(join(tmpdir(), 'strata-mcp-store-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'sessions.db');
  const noSession = spawnSync(process.execPath, [STRATA, 'mcp', '--store', file], { encoding: 'utf8', input: '' });
  t.is(noSession.status, 2);
  t.regex(noSession.stderr, /config\.store keeps a session: set session too/);
  const badId = spawnSync(process.execPath, [STRATA, 'mcp', '--session', '--store', file, '--session-id', 'no spaces'], { encoding: 'utf8', input: '' });
  t.is(badId.status, 2);
  t.regex(badId.stderr, /sessionId must be/);
  const idOnly = spawnSync(process.execPath, [STRATA, 'mcp', '--session', '--session-id', 'x'], { encoding: 'utf8', input: '' });
  t.is(idOnly.status, 2);
  t.regex(idOnly.stderr, /set store too/);
});

test('strata mcp refuses a bad config before serving, with exit status 2', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'strata-mcp-'));
  const file = join(dir, 'strata.json');
  writeFileSync(file, JSON.stringify({ tools: [{ nonsense: true }] }));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const { spawnSync } = await import('node:child_process');
  const ran = spawnSync(process.execPath, [STRATA, 'mcp', '--config', file], { encoding: 'utf8', input: '' });
  t.is(ran.status, 2);
  t.regex(ran.stderr, /config\.tools\[0\] must be/);
  t.is(ran.stdout, '', 'nothing but the protocol on stdout');
});

test('strata mcp checks config.egress before serving: a policy that is wrong is refused naming its field', async (t) => {
  const { checkConfig } = await import('../src/mcp-server.js');
  t.notThrows(() =>
    checkConfig({ egress: { allow: ['https://api.example.com/v1/*'], headers: { 'https://api.example.com': { authorization: 'Bearer x' } } } }),
  );
  t.throws(() => checkConfig({ egress: { allow: ['ftp://x/'] } }), { message: /egress policy: allow\[0\]/ });
  t.throws(() => checkConfig({ egress: ['https://x/*'] }), { message: /config\.egress must be an egress policy/ });
  t.throws(() => checkConfig({ egress: { allow: ['https://x/*'], timeout: 1 } }), { message: /unknown field "timeout"/ });
});

test('mcpTools: a real upstream server’s tools become bridge tools: structured content preferred, text otherwise, isError a rejection', async (t) => {
  const upstream = await mcpTools({ command: process.execPath, args: [UPSTREAM] });
  t.teardown(() => upstream.close());
  t.deepEqual(Object.keys(upstream.tools), ['add', 'echo-text', 'fail']);
  t.is(upstream.tools['add']!.description, 'Adds two numbers');
  const bridge = new ToolBridge({ namespace: 'up', tools: upstream.tools });
  t.regex(bridge.declarations(), /add\(input: \{ a: number; b: number \}\): Promise<\{ sum: number \}>/);
  await using rt = await Runtime.start();
  await bridge.bind(rt);
  const out = await rt.eval(`(async () => {
    const failed = await up.fail({}).then(() => 'no', (e) => e.message);
    const invalid = await up.add({ a: 1 }).then(() => 'no', (e) => e.message);
    return [await up.add({ a: 1, b: 2 }), await up.echo_text({ text: 'x' }), failed, invalid];
  })()`);
  t.deepEqual(out, [{ sum: 3 }, 'echo: x', 'the upstream tool failed on purpose', 'up.add: input.b is required; the tool was not called']);
});

test('mcpTools: a hostile upstream cannot poison the tools record: names that cannot be tools are refused by name', async (t) => {
  const { UpstreamMcpError } = await import('../src/index.js');
  const refused: [string, RegExp][] = [
    ['__proto__', /a tool named "__proto__", which cannot be a tool's name in JavaScript/],
    ['constructor', /a tool named "constructor"/],
    ['', /a tool named "": a tool name must be 1 to 128 of A-Z a-z 0-9 _ - \./],
    ['x'.repeat(129), /a tool named "x{128}…": a tool name must be 1 to 128/],
    ['drop table', /a tool named "drop table"/],
    ['add', /lists the tool "add" twice/],
  ];
  for (const [name, message] of refused) {
    await t.throwsAsync(
      mcpTools({ command: process.execPath, args: [UPSTREAM, '--name', name] }),
      { instanceOf: UpstreamMcpError, code: 'ERR_STRATA_UPSTREAM_MCP', message } as never,
      name,
    );
  }
  const upstream = await mcpTools({ command: process.execPath, args: [UPSTREAM, '--name', 'ok.name-1'] });
  t.teardown(() => upstream.close());
  t.is(Object.getPrototypeOf(upstream.tools), null, 'a null-prototype record');
  const inherited: string[] = [];
  for (const key in upstream.tools) inherited.push(key);
  t.deepEqual(inherited, ['ok.name-1', 'add', 'echo-text', 'fail']);
});

test('mcpTools stops at a bound: a server that pages forever, or lists too many tools', async (t) => {
  const { UpstreamMcpError } = await import('../src/index.js');
  await t.throwsAsync(mcpTools({ command: process.execPath, args: [UPSTREAM, '--endless-pages'] }, { maxPages: 5 }), {
    instanceOf: UpstreamMcpError,
    message: /tool list goes on past 5 pages \(maxPages\)/,
  });
  await t.throwsAsync(mcpTools({ command: process.execPath, args: [UPSTREAM, '--many', '30'] }, { maxTools: 20 }), {
    instanceOf: UpstreamMcpError,
    message: /more than 20 tools \(maxTools\)/,
  });
  await t.throwsAsync(
    mcpTools({ command: process.execPath, args: [UPSTREAM, '--endless-pages'] }),
    { instanceOf: UpstreamMcpError, message: /past 100 pages/ },
    'the default bound',
  );
  await t.throwsAsync(mcpTools({ command: process.execPath, args: [UPSTREAM] }, { maxPages: 0 }), {
    instanceOf: InvalidOption,
    message: /maxPages must be a positive integer/,
  });
});

test('strata mcp answers an over-long line and a line that is not JSON with JSON-RPC errors, and goes on serving', async (t) => {
  const { spawn } = await import('node:child_process');
  const dir = mkdtempSync(join(tmpdir(), 'strata-mcp-'));
  const file = join(dir, 'strata.json');
  writeFileSync(file, JSON.stringify({ poolSize: 1, timeout: 5_000 }));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const child = spawn(process.execPath, [STRATA, 'mcp', '--config', file], { stdio: ['pipe', 'pipe', 'pipe'] });
  t.teardown(() => void (child.exitCode === null && child.kill()));
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  let gone = false;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => ((gone = true), resolve(code))));
  const send = (text: string) => new Promise<void>((resolve) => (child.stdin.write(text) ? resolve() : child.stdin.once('drain', () => resolve())));
  await send(
    `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } })}\n`,
  );
  await send(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
  // 11 MiB in one line, written in pieces as a pipe delivers it, then a line that is not JSON.
  const big = JSON.stringify({
    jsonrpc: '2.0',
    id: 2,
    method: 'tools/call',
    params: { name: 'execute', arguments: { code: `"${'x'.repeat(11 * 1024 * 1024)}"` } },
  });
  for (let i = 0; i < big.length; i += 1 << 20) await send(big.slice(i, i + (1 << 20)));
  await send('\n{not json\n');
  await send(`${JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/list' })}\n`);
  // Whole lines only: the last piece may still be arriving.
  const answers = () =>
    stdout
      .split('\n')
      .slice(0, -1)
      .map((line) => JSON.parse(line) as { id: unknown; error?: { code: number; message: string }; result?: { tools?: { name: string }[] } });
  const listed = await Promise.race([
    exited.then((code) => `exited with ${String(code)}`),
    (async () => {
      while (!gone && !answers().some((answer) => answer.id === 3)) await new Promise((resolve) => setTimeout(resolve, 20));
      return 'answered';
    })(),
  ]);
  t.is(listed, 'answered', stderr);
  const [tooLong, notJson] = answers().filter((answer) => answer.id === null);
  t.is(tooLong?.error?.code, -32600);
  t.regex(tooLong?.error?.message ?? '', /a message longer than 10485760 bytes \(strata mcp's limit\) was dropped unread; send smaller messages/);
  t.is(notJson?.error?.code, -32700);
  t.regex(notJson?.error?.message ?? '', /a message is not JSON/);
  t.deepEqual(
    answers()
      .find((answer) => answer.id === 3)
      ?.result?.tools?.map((tool) => tool.name),
    ['execute'],
  );
  t.regex(stderr, /strata mcp: a message longer than 10485760 bytes/, 'and why, on stderr');
  child.stdin.end();
  t.is(await exited, 0, 'the client went away: a clean exit');
});

test('strata mcp: a receipt has one shape with and without --session (seq, tool, args, status, result, ms), values as tagged JSON', async (t) => {
  const code = 'const a = await tools.weather({ city: "Oslo" }); await tools.weather({ town: "x" }).catch(() => 0); a.city';
  const receipts = async (flags: string[]) => {
    const client = await strataMcp(t, { tools: [{ module: TOOLS_MODULE }], timeout: 5_000, poolSize: 1 }, flags);
    const done = await client.callTool({ name: 'execute', arguments: { code } });
    t.falsy(done.isError, JSON.stringify(done.content));
    const calls = (done.structuredContent as { calls: { ms: unknown }[] }).calls;
    t.true(calls.every((call) => typeof call.ms === 'number'));
    return calls.map(({ ms: _ms, ...call }) => call);
  };
  const fresh = await receipts([]);
  t.like(fresh, [
    { seq: 1, tool: 'tools.weather', args: [{ city: 'Oslo' }], status: 'completed' },
    { seq: 2, tool: 'tools.weather', args: [{ town: 'x' }], status: 'failed', error: { name: 'TypeError' } },
  ]);
  t.deepEqual(await receipts(['--session']), fresh);
});

test('SDK 2.x over stdio both ways: strata mcp serving on the 2.x server, bridged by mcpTools on the 2.x client', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'strata-mcp-'));
  const file = join(dir, 'strata.json');
  writeFileSync(file, JSON.stringify({ tools: [{ module: TOOLS_MODULE, namespace: 'tools' }], sdk: 2, timeout: 5_000, poolSize: 1 }));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const upstream = await mcpTools({ command: process.execPath, args: [STRATA, 'mcp', '--config', file] }, { sdk: 2 });
  t.teardown(() => upstream.close());
  t.deepEqual(Object.keys(upstream.tools), ['execute']);
  const bridge = new ToolBridge({ namespace: 'remote', tools: upstream.tools });
  await using rt = await Runtime.start();
  await bridge.bind(rt);
  const answer = await rt.eval('(async () => (await remote.execute({ code: "(await tools.weather({ city: \\"Oslo\\" })).tempC" })))()');
  t.like(answer, { status: 'ok', result: 4, calls: [{ tool: 'tools.weather', status: 'completed' }] });
});
