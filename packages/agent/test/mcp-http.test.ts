// MCP over Streamable HTTP with the real SDKs, 1.x and 2.x, on 127.0.0.1 (free ports, closed
// after): `strata mcp --http` refuses a request without its bearer token before anything runs
// (a tools module records every call: the refused ones are not in it), bounds the body, serves
// execute to the 1.x client (2025 revision) and the 2.x client (2026-07-28 when the server offers
// it); `mcpTools({ url, headers })` bridges an upstream SDK server over HTTP, and refuses one that
// lies about its tools, naming the tool.
import { spawn, spawnSync } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import test, { type ExecutionContext } from 'ava';
import { Runtime } from '@strata/runtime';
import { UpstreamMcpError } from '../src/errors.js';
import { startMcpHttpServer, type McpServerConfig } from '../src/mcp-server.js';
import { checkMcpHttpOptions, isLoopbackHost } from '../src/mcp-http.js';
import { mcpTools } from '../src/mcp-tools.js';
import { ToolBridge } from '../src/tool-bridge.js';
import { calls } from './fixtures/counting-tools.js';
import { checkNoLeaks } from './helpers/leaks.js';
import { HONEST_TOOLS, upstreamHttp } from './helpers/upstream-http.js';

checkNoLeaks(test);

const COUNTING = new URL('./fixtures/counting-tools.js', import.meta.url).href;
const STRATA = fileURLToPath(new URL('../../../runtime/dist/src/cli/strata.js', import.meta.url));
const TOKEN = 'a-test-token-0123456789abcdef';
const CONFIG: McpServerConfig = { tools: [{ module: COUNTING, namespace: 'tools' }], poolSize: 1, timeout: 5_000 };

/** `strata mcp --http` in this process, closed after the test. */
async function serve(t: ExecutionContext, sdk: 1 | 2, options: { token?: string; maxBodyBytes?: number; config?: McpServerConfig } = {}) {
  const running = await startMcpHttpServer(
    { ...(options.config ?? CONFIG), sdk },
    {
      host: '127.0.0.1',
      port: 0,
      ...(options.token === undefined ? {} : { token: options.token }),
      ...(options.maxBodyBytes === undefined ? {} : { maxBodyBytes: options.maxBodyBytes }),
    },
  );
  t.teardown(() => running.close());
  return running;
}

/** An official SDK client over Streamable HTTP; `versions` gets the MCP-Protocol-Version of each request it sends. */
async function client(t: ExecutionContext, sdk: 1 | 2, url: URL, token: string | undefined, versions: (string | null)[] = []) {
  const headers = token === undefined ? {} : { Authorization: `Bearer ${token}` };
  const recording = (input: string | URL | Request, init?: RequestInit) => {
    versions.push(new Headers(init?.headers).get('mcp-protocol-version'));
    return fetch(input, init);
  };
  if (sdk === 1) {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    const c = new Client({ name: 'test-1', version: '1.0.0' });
    await c.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers }, fetch: recording }));
    t.teardown(() => c.close());
    return c as unknown as SdkClient;
  }
  const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
  const c = new Client({ name: 'test-2', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await c.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers }, fetch: recording }));
  t.teardown(() => c.close());
  return c as unknown as SdkClient;
}

interface SdkClient {
  listTools(): Promise<{ tools: { name: string; description?: string }[] }>;
  callTool(params: { name: string; arguments: Record<string, unknown> }): Promise<{ isError?: boolean; structuredContent?: unknown; content: unknown }>;
}

/** A raw POST of one JSON-RPC message: its status and body text. */
async function post(url: URL, message: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(message),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

const executeCall = (tag: string) => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: { name: 'execute', arguments: { code: `await tools.count({ tag: ${JSON.stringify(tag)} })` } },
});

for (const sdk of [1, 2] as const) {
  test(`SDK ${sdk}.x server: without its bearer token, or with a wrong one, a request is a 401 that runs nothing; with it, execute runs`, async (t) => {
    const running = await serve(t, sdk, { token: TOKEN });
    t.is(running.sdk, sdk);
    const tag = `token-${sdk}`;
    const missing = await post(running.url, executeCall(tag));
    t.is(missing.status, 401);
    t.is(missing.headers.get('www-authenticate'), 'Bearer realm="strata mcp"');
    t.regex(missing.text, /needs its bearer token: send Authorization: Bearer TOKEN/);
    for (const wrong of [`Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, TOKEN, `Basic ${TOKEN}`, 'Bearer ']) {
      t.is((await post(running.url, executeCall(tag), { authorization: wrong })).status, 401, wrong);
    }
    // The official client with a wrong token cannot even connect.
    await t.throwsAsync(client(t, sdk, running.url, 'not-the-token-at-all-000'));
    t.false(calls.includes(tag), 'no refused request ran the code');

    const c = await client(t, sdk, running.url, TOKEN);
    t.deepEqual(
      (await c.listTools()).tools.map((tool) => tool.name),
      ['execute'],
    );
    const ran = await c.callTool({ name: 'execute', arguments: { code: `[await tools.count({ tag: ${JSON.stringify(tag)} }), 6 * 7]` } });
    t.falsy(ran.isError, JSON.stringify(ran.content));
    t.deepEqual((ran.structuredContent as { result: unknown }).result, [1, 42]);
    t.deepEqual(
      calls.filter((call) => call === tag),
      [tag],
      'the one call with the token ran, once',
    );
  });

  test(`SDK ${sdk}.x server: other paths are 404, GET and DELETE 405, a body that is not JSON 400, an over-large body 413 without running`, async (t) => {
    const running = await serve(t, sdk, { token: TOKEN, maxBodyBytes: 4096 });
    const auth = { authorization: `Bearer ${TOKEN}` };
    const elsewhere = new URL('/other', running.url);
    t.is((await post(elsewhere, executeCall('x'), auth)).status, 404);
    t.is((await fetch(running.url, { headers: auth })).status, 405);
    t.is((await fetch(running.url, { method: 'DELETE', headers: auth })).status, 405);
    const notJson = await fetch(running.url, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{nope' });
    t.is(notJson.status, 400);
    t.regex(await notJson.text(), /not JSON/);

    const tag = `big-${sdk}`;
    const big = executeCall(tag);
    (big.params.arguments as { code: string }).code += `; "${'x'.repeat(8192)}"`;
    const declared = await post(running.url, big, auth);
    t.is(declared.status, 413);
    t.regex(declared.text, /over 4096 bytes \(strata mcp's limit\)/);
    // Chunked, without a Content-Length: refused as it passes the bound.
    const chunked = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(running.url, { method: 'POST', headers: { ...auth, 'content-type': 'application/json', accept: 'application/json' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      const text = JSON.stringify(big);
      for (let i = 0; i < text.length; i += 1024) req.write(text.slice(i, i + 1024));
      req.end();
    });
    t.is(chunked, 413);
    t.false(calls.includes(tag));
  });
}

test('SDK 2.x server speaks both revisions: the 2.x client negotiates 2026-07-28, the 1.x client the 2025 handshake', async (t) => {
  const running = await serve(t, 2, { token: TOKEN });
  const modern: (string | null)[] = [];
  const c2 = await client(t, 2, running.url, TOKEN, modern);
  const legacy: (string | null)[] = [];
  const c1 = await client(t, 1, running.url, TOKEN, legacy);
  for (const c of [c2, c1]) {
    const ran = await c.callTool({ name: 'execute', arguments: { code: '[1, 2].map((n) => n * 10)' } });
    t.deepEqual((ran.structuredContent as { result: unknown }).result, [10, 20]);
  }
  t.is(modern.at(-1), '2026-07-28');
  t.not(legacy.at(-1), '2026-07-28');
  t.regex(String(legacy.at(-1)), /^2025-/);
});

test('SDK 1.x server with a 2.x client: the client falls back to the 2025 handshake', async (t) => {
  const running = await serve(t, 1, { token: TOKEN });
  const versions: (string | null)[] = [];
  const c = await client(t, 2, running.url, TOKEN, versions);
  const ran = await c.callTool({ name: 'execute', arguments: { code: '"both"' } });
  t.is((ran.structuredContent as { result: unknown }).result, 'both');
  t.regex(String(versions.at(-1)), /^2025-/);
});

test('--session over HTTP: the state is the server’s, shared by every client with the token (no HTTP session)', async (t) => {
  const running = await serve(t, 1, { token: TOKEN, config: { ...CONFIG, session: true } });
  const first = await client(t, 1, running.url, TOKEN);
  await first.callTool({ name: 'execute', arguments: { code: 'globalThis.kept = await tools.count({ tag: "session" })' } });
  const second = await client(t, 2, running.url, TOKEN);
  const next = await second.callTool({ name: 'execute', arguments: { code: 'kept + 1' } });
  t.falsy(next.isError, JSON.stringify(next.content));
  t.is((next.structuredContent as { result: unknown }).result, 2);
});

test('without a token, loopback only: a Host or Origin that is not loopback (DNS rebinding) is a 403 that runs nothing', async (t) => {
  const running = await serve(t, 1);
  const tag = 'rebinding';
  const rebound = await new Promise<number>((resolve, reject) => {
    const body = JSON.stringify(executeCall(tag));
    const req = httpRequest(
      running.url,
      {
        method: 'POST',
        headers: { host: `attacker.example:${running.url.port}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
  t.is(rebound, 403);
  t.is((await post(running.url, executeCall(tag), { origin: 'https://attacker.example' })).status, 403);
  t.false(calls.includes(tag));
  const c = await client(t, 1, running.url, undefined);
  const ran = await c.callTool({ name: 'execute', arguments: { code: `await tools.count({ tag: "loopback" })` } });
  t.is((ran.structuredContent as { result: unknown }).result, 1);
});

test('checkMcpHttpOptions: a token is required off loopback, and must look like one', (t) => {
  for (const host of ['127.0.0.1', '127.1.2.3', '::1', 'localhost', '[::1]']) t.true(isLoopbackHost(host), host);
  for (const host of ['0.0.0.0', '::', '10.0.0.1', 'example.com', '128.0.0.1', 'localhost.example.com']) t.false(isLoopbackHost(host), host);
  t.throws(() => checkMcpHttpOptions({ host: '0.0.0.0', port: 8080 }), { message: /needs a bearer token: .*--token-file FILE, or set STRATA_MCP_TOKEN/ });
  t.notThrows(() => checkMcpHttpOptions({ host: '0.0.0.0', port: 8080, token: TOKEN }));
  t.throws(() => checkMcpHttpOptions({ host: '127.0.0.1', port: 8080, token: 'short' }), { message: /16 to 4096 printable ASCII/ });
  t.throws(() => checkMcpHttpOptions({ host: '127.0.0.1', port: 70000 }), { message: /port must be 0 to 65535/ });
});

test('strata mcp --http: off loopback without a token it refuses to start (exit 2, saying how to give one); a short token is refused too', (t) => {
  const env = { ...process.env };
  delete env['STRATA_MCP_TOKEN'];
  const refused = spawnSync(process.execPath, [STRATA, 'mcp', '--http', '0.0.0.0:0'], { encoding: 'utf8', input: '', env });
  t.is(refused.status, 2, refused.stderr);
  t.regex(
    refused.stderr,
    /serving MCP on 0\.0\.0\.0, not loopback, needs a bearer token: put one in a file and give --token-file FILE, or set STRATA_MCP_TOKEN/,
  );
  const short = spawnSync(process.execPath, [STRATA, 'mcp', '--http', '0.0.0.0:0'], {
    encoding: 'utf8',
    input: '',
    env: { ...env, STRATA_MCP_TOKEN: 'short' },
  });
  t.is(short.status, 2);
  t.regex(short.stderr, /16 to 4096 printable ASCII/);
  const noHttp = spawnSync(process.execPath, [STRATA, 'mcp', '--token-file', 'x'], { encoding: 'utf8', input: '', env });
  t.is(noHttp.status, 2);
  t.regex(noHttp.stderr, /--token-file is the bearer token of --http HOST:PORT/);
  const badAddress = spawnSync(process.execPath, [STRATA, 'mcp', '--http', 'nowhere'], { encoding: 'utf8', input: '', env });
  t.is(badAddress.status, 2);
  t.regex(badAddress.stderr, /--http must be HOST:PORT/);
});

test('strata mcp --http --token-file: the CLI serves the SDK client with the token, refuses one without, and stops on SIGTERM', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'strata-mcp-http-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const tokenFile = join(dir, 'token');
  writeFileSync(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
  const config = join(dir, 'strata.json');
  writeFileSync(config, JSON.stringify({ poolSize: 1, timeout: 5_000 }));
  const server = spawn(process.execPath, [STRATA, 'mcp', '--config', config, '--http', '127.0.0.1:0', '--token-file', tokenFile], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  t.teardown(() => void (server.exitCode === null && server.signalCode === null && server.kill('SIGKILL')));
  const exited = new Promise<NodeJS.Signals | null>((resolve) => server.once('exit', (_code, signal) => resolve(signal)));
  let stderr = '';
  const url = await new Promise<URL>((resolve, reject) => {
    server.stderr!.on('data', (chunk: Buffer) => {
      stderr += String(chunk);
      const match = /serving MCP \(SDK \d\.x, Streamable HTTP\) at (\S+), bearer token required/.exec(stderr);
      if (match !== null) resolve(new URL(match[1]!));
    });
    server.once('exit', () => reject(new Error(`strata mcp exited: ${stderr}`)));
  });
  t.is((await post(url, executeCall('cli'))).status, 401);
  const c = await client(t, 1, url, TOKEN);
  const ran = await c.callTool({ name: 'execute', arguments: { code: '"over http"' } });
  t.is((ran.structuredContent as { result: unknown }).result, 'over http');
  server.kill('SIGTERM');
  t.is(await exited, 'SIGTERM', 'it closes, then ends by the signal');
});

for (const [serverSdk, clientSdk] of [
  [1, 1],
  [1, 2],
  [2, 1],
  [2, 2],
] as const) {
  test(`mcpTools({ url, headers }) on SDK ${clientSdk}.x bridges an SDK ${serverSdk}.x upstream over HTTP, with its bearer token`, async (t) => {
    const upstream = await upstreamHttp(serverSdk, { token: TOKEN });
    t.teardown(() => upstream.close());
    const bridged = await mcpTools({ url: upstream.url, headers: { authorization: `Bearer ${TOKEN}` } }, { sdk: clientSdk });
    t.teardown(() => bridged.close());
    t.deepEqual(Object.keys(bridged.tools), ['add', 'echo-text']);
    const bridge = new ToolBridge({ namespace: 'up', tools: bridged.tools });
    await using rt = await Runtime.start();
    await bridge.bind(rt);
    t.deepEqual(await rt.eval('(async () => [await up.add({ a: 2, b: 3 }), await up.echo_text({ text: "hi" })])()'), [{ sum: 5 }, 'echo: hi']);
    const modern = serverSdk === 2 && clientSdk === 2;
    t.is(upstream.versions.at(-1) === '2026-07-28', modern, `the revision spoken: ${String(upstream.versions.at(-1))}`);
  });
}

test('mcpTools({ url }): a wrong token is refused by the server, and the error names the endpoint, never the token', async (t) => {
  const upstream = await upstreamHttp(1, { token: TOKEN });
  t.teardown(() => upstream.close());
  for (const sdk of [1, 2] as const) {
    const error = await t.throwsAsync(mcpTools({ url: `${upstream.url.href}?key=secret`, headers: { authorization: 'Bearer wrong-secret-value' } }, { sdk }), {
      instanceOf: UpstreamMcpError,
      message: new RegExp(`the MCP server at ${upstream.url.href.replace(/[.]/g, '\\.')} could not be connected to`),
    });
    t.notRegex(error?.message ?? '', /wrong-secret-value|secret/);
  }
  await t.throwsAsync(mcpTools({ url: 'file:///etc/passwd' }), { message: /needs an http: or https: URL/ });
});

test('mcpTools({ url }): a remote server that lies about its tools is refused, naming the tool', async (t) => {
  const lies: [Record<string, unknown>, RegExp][] = [
    [{ name: 'drop table', inputSchema: { type: 'object' } }, /a tool named "drop table": a tool name must be 1 to 128/],
    [{ name: '__proto__', inputSchema: { type: 'object' } }, /a tool named "__proto__", which cannot be a tool's name/],
    [{ name: 'stringly', inputSchema: { type: 'string' } }, /tool "stringly" has an inputSchema that is not a JSON Schema object with type "object"/],
    [{ name: 'listy', inputSchema: [{ type: 'object' }] }, /tool "listy" has an inputSchema that is not a JSON Schema object/],
    [{ name: 'none' }, /tool "none" has an inputSchema that is not/],
    [{ name: 'said', description: 42, inputSchema: { type: 'object' } }, /tool "said" has a description that is not a string/],
  ];
  for (const serverSdk of [1, 2] as const) {
    for (const [lie, message] of lies) {
      const upstream = await upstreamHttp(serverSdk, { tools: [...HONEST_TOOLS, lie] });
      try {
        for (const sdk of [1, 2] as const) {
          await t.throwsAsync(
            mcpTools({ url: upstream.url }, { sdk }),
            { instanceOf: UpstreamMcpError, message },
            `${String(lie['name'])} ${serverSdk}→${sdk}`,
          );
        }
      } finally {
        await upstream.close();
      }
    }
  }
});
