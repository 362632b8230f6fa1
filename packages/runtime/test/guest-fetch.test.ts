// The guest's fetch (WEB_POLYFILLS) end to end, under the full sandbox: the worker has no network,
// the parent checks and performs each request under the egress policy. Against servers on
// 127.0.0.1: allowed, outside the list (path, origin), a redirect out of the list (never reached),
// an oversized body, a slow server cut at timeoutMs, the credential reaching the server and never
// the guest (nor when the server echoes it in its body), and no egress at all.
import test, { type ExecutionContext } from 'ava';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WEB_POLYFILLS } from '@strata/polyfills';
import { IsolatedRuntime, Runtime, type IsolatedRuntimeOptions } from '../src/index.js';

const SECRET = 'sk-live-GUEST-93d1f0c2';
const onLinux = process.platform === 'linux';

interface Server {
  readonly origin: string;
  readonly hits: { method: string; url: string; authorization: string | undefined; body: string }[];
}

async function serve(t: ExecutionContext, handle: (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void): Promise<Server> {
  const hits: Server['hits'] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      hits.push({ method: req.method ?? '', url: req.url ?? '', authorization: req.headers.authorization, body });
      handle(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits };
}

/** An API: JSON items, an echo of what it received, a redirect, a big body, a slow answer. */
function api(t: ExecutionContext, elsewhere?: string): Promise<Server> {
  return serve(t, (req, res, body) => {
    const url = req.url ?? '';
    if (url.startsWith('/v1/items/')) {
      res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'r-1' });
      res.end(JSON.stringify({ id: url.slice('/v1/items/'.length), price: 3.5 }));
    } else if (url === '/v1/echo') {
      res.writeHead(200, { 'content-type': 'application/json', 'x-auth-seen': req.headers.authorization ?? 'none' });
      res.end(JSON.stringify({ method: req.method, contentType: req.headers['content-type'], body }));
    } else if (url === '/v1/echo-auth') {
      // A debugging endpoint that echoes the request's headers in its body.
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ authorization: req.headers.authorization ?? 'none' }));
    } else if (url === '/v1/away') {
      res.writeHead(302, { location: `${elsewhere}/v1/items/1` });
      res.end();
    } else if (url === '/v1/big') {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(Buffer.alloc(256 * 1024, 0x61));
    } else if (url === '/v1/slow') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first part, then nothing');
    } else {
      res.writeHead(404);
      res.end('not here');
    }
  });
}

async function sandboxed(t: ExecutionContext, options: IsolatedRuntimeOptions): Promise<IsolatedRuntime> {
  const rt = await IsolatedRuntime.start({ sandbox: onLinux ? 'require' : 'auto', bootstrap: [WEB_POLYFILLS], ...options });
  t.teardown(() => rt.close());
  return rt;
}

// What the guest's attempt ended as, as data.
const attempt = (body: string) =>
  `(async () => { try { ${body} } catch (e) { return { thrown: e.name, message: e.message, isTypeError: e instanceof TypeError }; } })()`;

test('an allowed GET: the guest gets a Response with status, headers and a JSON body; the worker itself has no network', async (t) => {
  const server = await api(t);
  const rt = await sandboxed(t, { egress: { allow: [`${server.origin}/v1/*`] } });
  if (onLinux) t.is(rt.sandbox, 'landlock+seccomp');
  const got = await rt.eval(
    attempt(`
    const r = await fetch('${server.origin}/v1/items/7?full=1', { headers: { Accept: 'application/json' } });
    return { ok: r.ok, status: r.status, type: r.type, url: r.url, id: r.headers.get('X-Request-Id'), item: await r.json(), used: r.bodyUsed, isResponse: r instanceof Response };
  `),
  );
  t.deepEqual(got, {
    ok: true,
    status: 200,
    type: 'basic',
    url: `${server.origin}/v1/items/7?full=1`,
    id: 'r-1',
    item: { id: '7?full=1', price: 3.5 },
    used: true,
    isResponse: true,
  });
  t.is(server.hits.length, 1);
});

test('a POST with a JSON body, when the policy allows POST: the server gets the body and its content type', async (t) => {
  const server = await api(t);
  const rt = await sandboxed(t, { egress: { allow: [`${server.origin}/v1/*`], methods: ['GET', 'POST'] } });
  const got = await rt.eval(
    attempt(`
    const r = await fetch(new Request('${server.origin}/v1/echo', { method: 'post', body: JSON.stringify({ n: 1 }), headers: { 'content-type': 'application/json' } }));
    return r.json();
  `),
  );
  t.deepEqual(got, { method: 'POST', contentType: 'application/json', body: '{"n":1}' });
});

test('a path or an origin outside the list, or a method it does not allow: a TypeError saying why, and nothing is sent', async (t) => {
  const server = await api(t);
  const other = await api(t);
  const rt = await sandboxed(t, { egress: { allow: [`${server.origin}/v1/*`] } });
  const path = (await rt.eval(attempt(`await fetch('${server.origin}/admin/users'); return 'fetched';`))) as Record<string, unknown>;
  t.like(path, { thrown: 'TypeError', isTypeError: true });
  t.regex(path['message'] as string, /not in the egress allow-list/);
  const origin = (await rt.eval(attempt(`await fetch('${other.origin}/v1/items/1'); return 'fetched';`))) as Record<string, unknown>;
  t.regex(origin['message'] as string, /not in the egress allow-list/);
  const method = (await rt.eval(attempt(`await fetch('${server.origin}/v1/echo', { method: 'DELETE' }); return 'fetched';`))) as Record<string, unknown>;
  t.regex(method['message'] as string, /DELETE .* is refused: the egress policy allows GET, HEAD/);
  t.is(server.hits.length, 0);
  t.is(other.hits.length, 0);
});

test('a redirect out of the list is refused and its target never reached', async (t) => {
  const outside = await api(t);
  const server = await api(t, outside.origin);
  const rt = await sandboxed(t, { egress: { allow: [`${server.origin}/v1/*`] } });
  const got = (await rt.eval(attempt(`await fetch('${server.origin}/v1/away'); return 'fetched';`))) as Record<string, unknown>;
  t.like(got, { thrown: 'TypeError' });
  t.regex(got['message'] as string, /redirect refused/);
  t.is(server.hits.length, 1);
  t.is(outside.hits.length, 0);
  // With redirect: 'manual' the guest sees the 3xx itself, and still nothing goes to the target.
  const manual = await rt.eval(
    attempt(`const r = await fetch('${server.origin}/v1/away', { redirect: 'manual' }); return [r.status, r.headers.get('location')];`),
  );
  t.deepEqual(manual, [302, `${outside.origin}/v1/items/1`]);
  t.is(outside.hits.length, 0);
});

test('a body past maxResponseBytes fails the fetch, naming the limit', async (t) => {
  const server = await api(t);
  const rt = await sandboxed(t, { egress: { allow: [`${server.origin}/v1/*`], maxResponseBytes: 64 * 1024 } });
  const got = (await rt.eval(attempt(`await fetch('${server.origin}/v1/big'); return 'fetched';`))) as Record<string, unknown>;
  t.like(got, { thrown: 'TypeError' });
  t.regex(got['message'] as string, /maxResponseBytes \(65536\)/);
  const fits = await rt.eval(attempt(`return (await (await fetch('${server.origin}/v1/items/2')).text()).length;`));
  t.true((fits as number) > 0);
});

test('a slow server is cut at timeoutMs, and the guest can abort a request itself', async (t) => {
  const server = await api(t);
  const rt = await sandboxed(t, { egress: { allow: [`${server.origin}/v1/*`], timeoutMs: 300 } });
  const started = Date.now();
  const got = (await rt.eval(attempt(`await (await fetch('${server.origin}/v1/slow')).text(); return 'fetched';`))) as Record<string, unknown>;
  t.like(got, { thrown: 'TypeError' });
  t.regex(got['message'] as string, /timeoutMs \(300 ms\)/);
  t.true(Date.now() - started < 10_000, 'the request ended at its deadline, not at the test timeout');
  const aborted = await rt.eval(
    attempt(`
    const controller = new AbortController();
    const pending = fetch('${server.origin}/v1/slow', { signal: controller.signal });
    controller.abort();
    await pending;
    return 'fetched';
  `),
  );
  t.like(aborted, { thrown: 'AbortError' });
});

test("the policy's credential reaches the server and never the guest: not in its Request, its Response, or an error", async (t) => {
  const outside = await api(t);
  const server = await api(t, outside.origin);
  const rt = await sandboxed(t, {
    egress: { allow: [`${server.origin}/v1/*`, `${outside.origin}/v1/*`], headers: { [server.origin]: { authorization: `Bearer ${SECRET}` } } },
  });
  const got = (await rt.eval(
    attempt(`
    const request = new Request('${server.origin}/v1/echo');
    const r = await fetch(request);
    return { requestHeaders: [...request.headers], responseHeaders: [...r.headers], body: await r.text() };
  `),
  )) as Record<string, unknown>;
  t.is(server.hits[0]!.authorization, `Bearer ${SECRET}`);
  t.false(JSON.stringify(got).includes(SECRET), 'the server echoed it in a header: the parent removed it');
  // The guest may not set the policy's header itself, and the refusal does not show the value.
  const own = (await rt.eval(attempt(`await fetch('${server.origin}/v1/echo', { headers: { authorization: 'Bearer mine' } }); return 'fetched';`))) as Record<
    string,
    unknown
  >;
  t.like(own, { thrown: 'TypeError' });
  t.false(JSON.stringify(own).includes(SECRET));
  // Redirected to another allowed origin, the credential does not follow.
  await rt.eval(attempt(`await fetch('${server.origin}/v1/away'); return 'fetched';`));
  t.is(outside.hits.at(-1)!.authorization, undefined);
});

test("a server that echoes the credential in its body: the guest reads [redacted], or what the policy's onResponse made of it", async (t) => {
  const server = await api(t);
  const headers = { [server.origin]: { authorization: `Bearer ${SECRET}` } };
  const read = `const r = await fetch('${server.origin}/v1/echo-auth'); return { body: await r.json(), redacted: r.headers.get('x-strata-redacted') };`;
  const rt = await sandboxed(t, { egress: { allow: [`${server.origin}/v1/*`], headers } });
  const got = await rt.eval(attempt(read));
  t.deepEqual(got, { body: { authorization: '[redacted]' }, redacted: 'credential' });
  const hooked = await sandboxed(t, {
    egress: {
      allow: [`${server.origin}/v1/*`],
      headers,
      onResponse: (response) => ({
        ...response,
        body: new TextEncoder().encode(JSON.stringify({ seen: JSON.parse(new TextDecoder().decode(response.body)).authorization !== 'none' })),
      }),
    },
  });
  t.deepEqual(await hooked.eval(attempt(read)), { body: { seen: true }, redacted: null });
  const failing = await sandboxed(t, {
    egress: {
      allow: [`${server.origin}/v1/*`],
      headers,
      onResponse: () => {
        throw new Error(`no: ${SECRET}`);
      },
    },
  });
  const failed = (await failing.eval(attempt(read))) as Record<string, unknown>;
  t.like(failed, { thrown: 'TypeError' });
  t.regex(failed['message'] as string, /fetch failed: .*onResponse hook threw \(Error/);
  t.false(JSON.stringify(failed).includes(SECRET));
  t.is(server.hits.filter((hit) => hit.authorization === `Bearer ${SECRET}`).length, 3);
});

test('without egress the guest has a fetch that refuses, saying how the host allows a URL', async (t) => {
  const server = await api(t);
  const rt = await sandboxed(t, {});
  const got = (await rt.eval(attempt(`await fetch('${server.origin}/v1/items/1'); return 'fetched';`))) as Record<string, unknown>;
  t.like(got, { thrown: 'TypeError' });
  t.regex(got['message'] as string, /no egress policy.*egress: \{ allow:/);
  t.is(server.hits.length, 0);
});

test('Runtime, in this process, performs the same policy', async (t) => {
  const server = await api(t);
  const rt = await Runtime.start({ bootstrap: [WEB_POLYFILLS], egress: { allow: [`${server.origin}/v1/*`] } });
  t.teardown(() => rt.close());
  t.is(await rt.eval(attempt(`return (await (await fetch('${server.origin}/v1/items/3')).json()).id;`)), '3');
  const refused = (await rt.eval(attempt(`await fetch('${server.origin}/other'); return 'fetched';`))) as Record<string, unknown>;
  t.regex(refused['message'] as string, /not in the egress allow-list/);
  const bare = await Runtime.start({ bootstrap: [WEB_POLYFILLS] });
  t.teardown(() => bare.close());
  const none = (await bare.eval(attempt(`await fetch('${server.origin}/v1/items/3'); return 'fetched';`))) as Record<string, unknown>;
  t.like(none, { thrown: 'TypeError' });
  t.regex(none['message'] as string, /not available/);
});
