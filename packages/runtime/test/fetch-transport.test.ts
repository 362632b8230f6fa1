// The host half of the guest's fetch: what every runtime offers the bootstrap as `__strataFetch`,
// how the parent answers it (policy, handler, no egress at all), and what a guest or a
// compromised bootstrap can do with the raw transport. The guest's `fetch` itself, over this
// transport, is tested in guest-fetch.test.ts.
import test, { type ExecutionContext } from 'ava';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { IsolatedRuntime, Runtime, SandboxPool, egressHandler, type EgressHandler, type EgressRequest } from '../src/index.js';
import { WEB_POLYFILLS } from '@strata/polyfills';
import { MAX_CONCURRENT_REQUESTS } from '../src/egress/guest-fetch.js';
import { runtimeFor } from './helpers/runtime.js';

const SECRET = 'sk-live-TRANSPORT-4b1d9e';
// A bootstrap that keeps the raw transport where guest code can reach it: what a compromised
// bootstrap, or a guest that got hold of it, would have.
const EXPOSE_TRANSPORT = `globalThis.rawFetch = globalThis.__strataFetch; globalThis.offered = typeof globalThis.__strataFetch;`;

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

async function startServer(t: ExecutionContext): Promise<{ origin: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString() });
      if (req.url === '/echo-auth') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end(`auth=${req.headers.authorization ?? ''}`);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', 'x-served': 'yes' });
      res.end(JSON.stringify({ path: req.url }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const GET = (url: string) => `rawFetch({ url: ${JSON.stringify(url)}, method: 'GET', headers: [['accept', 'application/json']], redirect: 'follow' })`;
// The response as plain data the test can compare: the body decoded.
const SUMMARY = `.then((r) => ({ status: r.status, url: r.url, redirected: r.redirected, headers: r.headers, body: String.fromCharCode(...r.body), bodyIsBytes: r.body instanceof Uint8Array }))`;
const ERROR = `.then(() => 'resolved', (e) => ({ name: e.name, message: e.message }))`;

async function isolatedFor(t: ExecutionContext, options: Parameters<typeof IsolatedRuntime.start>[0] = {}): Promise<IsolatedRuntime> {
  const rt = await IsolatedRuntime.start({ sandbox: 'off', bootstrap: EXPOSE_TRANSPORT, ...options });
  t.teardown(() => rt.close());
  return rt;
}

// ---------------------------------------------------------------- offered, and gone before guest code

test('Runtime offers the transport to bootstraps only when it has an egress; guest code never sees the global', async (t) => {
  const without = await runtimeFor(t, { bootstrap: EXPOSE_TRANSPORT });
  t.is(await without.eval('offered'), 'undefined');
  const withEgress = await runtimeFor(t, { bootstrap: EXPOSE_TRANSPORT, egress: { allow: ['http://127.0.0.1/*'] } });
  t.is(await withEgress.eval('offered'), 'function');
  t.is(await withEgress.eval(`typeof __strataFetch + ' ' + Object.getOwnPropertyNames(globalThis).includes('__strataFetch')`), 'undefined false');
});

test('an IsolatedRuntime always offers the transport (the parent answers), and guest code never sees the global', async (t) => {
  const rt = await isolatedFor(t);
  t.is(await rt.eval('offered'), 'function');
  t.is(await rt.eval(`typeof __strataFetch + ' ' + Object.getOwnPropertyNames(globalThis).includes('__strataFetch')`), 'undefined false');
});

test('without egress an IsolatedRuntime refuses every request, saying how to allow one', async (t) => {
  const rt = await isolatedFor(t);
  const error = (await rt.eval(`${GET('http://127.0.0.1:1/')}${ERROR}`)) as { name: string; message: string };
  t.is(error.name, 'TypeError');
  t.regex(error.message, /no egress policy/);
  t.regex(error.message, /egress: \{ allow:/);
});

// ---------------------------------------------------------------- a policy, in both engines

for (const engine of ['Runtime', 'IsolatedRuntime'] as const) {
  const start = async (t: ExecutionContext, egress: NonNullable<Parameters<typeof Runtime.start>[0]>['egress'], bootstrap: string[] = [EXPOSE_TRANSPORT]) =>
    engine === 'Runtime' ? runtimeFor(t, { bootstrap, egress }) : isolatedFor(t, { egress, bootstrap });

  test(`${engine}: an allowed request is performed by the host and its response reaches the guest as data`, async (t) => {
    const server = await startServer(t);
    const rt = await start(t, { allow: [`${server.origin}/api/*`] });
    const response = (await rt.eval(`${GET(`${server.origin}/api/items?q=1`)}${SUMMARY}`)) as Record<string, unknown>;
    t.is(response['status'], 200);
    t.is(response['url'], `${server.origin}/api/items?q=1`);
    t.is(response['redirected'], false);
    t.true(response['bodyIsBytes'] as boolean);
    t.deepEqual(JSON.parse(response['body'] as string), { path: '/api/items?q=1' });
    t.true((response['headers'] as [string, string][]).some(([n, v]) => n === 'x-served' && v === 'yes'));
    t.is(server.seen.length, 1);
    t.is(server.seen[0]!.headers['accept'], 'application/json');
  });

  test(`${engine}: a refusal reaches the guest as a TypeError naming the rule, though host errors are redacted`, async (t) => {
    const server = await startServer(t);
    const rt = await start(t, { allow: [`${server.origin}/api/*`] });
    const error = (await rt.eval(`${GET(`${server.origin}/admin`)}${ERROR}`)) as { name: string; message: string };
    t.is(error.name, 'TypeError');
    t.regex(error.message, /^fetch refused by the host's egress policy: .*not in the egress allow-list/);
    t.is(server.seen.length, 0);
  });

  test(`${engine}: the policy's credential reaches the server and never the guest`, async (t) => {
    const server = await startServer(t);
    const rt = await start(t, { allow: [`${server.origin}/*`], headers: { [server.origin]: { authorization: `Bearer ${SECRET}` } } });
    const response = (await rt.eval(`${GET(`${server.origin}/echo-auth`)}${SUMMARY}`)) as Record<string, unknown>;
    t.is(server.seen[0]!.headers.authorization, `Bearer ${SECRET}`);
    // The server echoed it in the body: that is the server's doing and the guest's data. What the
    // host controls (headers, errors, the request the guest holds) never carries it.
    t.false(JSON.stringify(response['headers']).includes(SECRET));
    const refused = (await rt.eval(
      `rawFetch({ url: '${server.origin}/x', method: 'GET', headers: [['authorization', 'mine']], redirect: 'follow' })${ERROR}`,
    )) as { message: string };
    t.regex(refused.message, /authorization/i);
    t.false(refused.message.includes(SECRET));
  });

  test(`${engine}: malformed transport calls are refused before any handler runs`, async (t) => {
    let calls = 0;
    const handler: EgressHandler = async () => {
      calls++;
      return { status: 200, statusText: '', url: 'http://x/', redirected: false, headers: [], body: new Uint8Array() };
    };
    const rt = await start(t, handler);
    for (const bad of [
      `undefined`,
      `'http://x/'`,
      `{ url: 1, method: 'GET', headers: [] }`,
      `{ url: 'http://x/', method: 'GET', headers: [['a']] }`,
      `{ url: 'http://x/', method: 'GET', headers: {} }`,
      `{ url: 'http://x/', method: 'GET', headers: [], body: 'text' }`,
      `{ url: 'http://x/', method: 'GET', headers: [], redirect: 'error' }`,
      `{ url: 'http://x/', method: '', headers: [] }`,
    ]) {
      const error = (await rt.eval(`rawFetch(${bad})${ERROR}`)) as { name: string; message: string } | string;
      t.like(error, { name: 'TypeError' }, bad);
      t.regex((error as { message: string }).message, /the request is malformed/, bad);
    }
    t.is(calls, 0);
  });

  test(`${engine}: at most MAX_CONCURRENT_REQUESTS requests are in flight at once; the others wait their turn and all complete`, async (t) => {
    let running = 0;
    let most = 0;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    // Every request holds its place until the test lets them all go.
    const handler: EgressHandler = async (request) => {
      running++;
      most = Math.max(most, running);
      await released;
      running--;
      return { status: 200, statusText: 'OK', url: request.url, redirected: false, headers: [], body: new Uint8Array([1]) };
    };
    const rt = await start(t, handler);
    const done = rt.eval(
      `Promise.all(Array.from({ length: 20 }, (_, i) => rawFetch({ url: 'http://x/' + i, method: 'GET', headers: [] }))).then((all) => all.length)`,
    );
    for (let i = 0; i < 1000 && running < MAX_CONCURRENT_REQUESTS; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    t.is(running, MAX_CONCURRENT_REQUESTS, 'the first ones are in flight');
    // Time for any request past the limit to arrive, if one could.
    await new Promise((resolve) => setTimeout(resolve, 300));
    t.is(most, MAX_CONCURRENT_REQUESTS);
    release();
    t.is(await done, 20);
    t.is(most, MAX_CONCURRENT_REQUESTS);
  });
  test(`${engine}: the guest's abort reaches the handler, so a cancelled request frees its place at once`, async (t) => {
    const signals: AbortSignal[] = [];
    const handler: EgressHandler = (request, { signal }) => {
      if (request.url.endsWith('/ok'))
        return Promise.resolve({ status: 200, statusText: 'OK', url: request.url, redirected: false, headers: [], body: new Uint8Array() });
      signals.push(signal);
      // A request that never answers by itself: only an abort ends it.
      return new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(new Error('stopped'))));
    };
    const rt = await start(t, handler, [WEB_POLYFILLS]);
    // The guest's timers are virtual and wait for host calls in flight: a host call that answers
    // after a while is how the guest gets to run while its requests hang.
    rt.bindFunction('pause', async () => {
      // Until the six are in the handler (a loaded machine may take a while to deliver them).
      for (let i = 0; i < 500 && signals.length < MAX_CONCURRENT_REQUESTS; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    });
    // Six requests that hang, each aborted by the guest once the host has it; then a seventh,
    // which must not wait behind them.
    const out = await rt.eval(`(async () => {
      const controllers = Array.from({ length: ${MAX_CONCURRENT_REQUESTS} }, () => new AbortController());
      const hung = controllers.map((c) => fetch('http://x/hang', { signal: c.signal }).catch((e) => e.name));
      await pause();
      for (const c of controllers) c.abort();
      const names = await Promise.all(hung);
      // Would wait for ever behind the six if cancelling did not free their places.
      names.push((await fetch('http://x/ok')).status);
      return names;
    })()`);
    t.deepEqual(out, [...Array.from({ length: MAX_CONCURRENT_REQUESTS }, () => 'AbortError'), 200]);
    for (let i = 0; i < 500 && signals.filter((s) => s.aborted).length < MAX_CONCURRENT_REQUESTS; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    t.is(signals.length, MAX_CONCURRENT_REQUESTS, 'all six reached the handler before the guest aborted them');
    t.is(signals.filter((s) => s.aborted).length, MAX_CONCURRENT_REQUESTS, 'every cancelled request was aborted in the host');
  });

  test(`${engine}: a request the guest aborts at once is never sent`, async (t) => {
    let calls = 0;
    const rt = await start(
      t,
      async (request) => {
        calls++;
        return { status: 200, statusText: 'OK', url: request.url, redirected: false, headers: [], body: new Uint8Array() };
      },
      [WEB_POLYFILLS],
    );
    const out = await rt.eval(
      `(async () => { const c = new AbortController(); const p = fetch('http://x/', { signal: c.signal }); c.abort(); return p.then(() => 'fetched', (e) => e.name); })()`,
    );
    t.is(out, 'AbortError');
    t.is(calls, 0);
  });
}

// ---------------------------------------------------------------- your own handler

test('a handler gets the request as checked data and answers the guest; a Buffer body arrives as bytes', async (t) => {
  const received: EgressRequest[] = [];
  const rt = await isolatedFor(t, {
    egress: async (request) => {
      received.push(request);
      return { status: 201, statusText: 'Created', url: request.url, redirected: false, headers: [['x-a', '1']], body: Buffer.from('made') };
    },
  });
  const response = (await rt.eval(
    `rawFetch({ url: 'https://api.test/v1/x', method: 'POST', headers: [['content-type', 'text/plain']], body: new Uint8Array([104, 105]) })${SUMMARY}`,
  )) as Record<string, unknown>;
  t.like(response, { status: 201, body: 'made', bodyIsBytes: true });
  t.is(received.length, 1);
  t.is(received[0]!.method, 'POST');
  t.deepEqual([...received[0]!.body!], [104, 105]);
  t.is(received[0]!.redirect, 'follow');
  t.true(Object.isFrozen(received[0]));
});

test('what a careless handler returns is checked before the guest sees it', async (t) => {
  let answer: unknown;
  const rt = await isolatedFor(t, { egress: async () => answer as never });
  const cases: [unknown, RegExp][] = [
    [undefined, /no response object/],
    [{ status: 99, body: new Uint8Array() }, /status/],
    [{ status: 200.5, body: new Uint8Array() }, /status/],
    [{ status: 200, statusText: 'a\r\nb', body: new Uint8Array() }, /statusText/],
    [{ status: 200, headers: [['a', 1]], body: new Uint8Array() }, /header/],
    [{ status: 200, body: 'text' }, /body/],
    [{ status: 200, redirected: 'yes', body: new Uint8Array() }, /redirected/],
  ];
  for (const [given, expected] of cases) {
    answer = given;
    const error = (await rt.eval(`${GET('http://x/')}${ERROR}`)) as { name: string; message: string };
    t.is(error.name, 'TypeError', JSON.stringify(given));
    t.regex(error.message, expected, JSON.stringify(given));
  }
  answer = { status: 204 };
  t.like(await rt.eval(`${GET('http://x/')}${SUMMARY}`), { status: 204, body: '', url: 'http://x/', redirected: false });
});

test("a handler's own error is redacted unless redactHostErrors is false; an abort is an AbortError", async (t) => {
  const failing: EgressHandler = async () => {
    throw new Error(`upstream said ${SECRET}`);
  };
  const redacted = await isolatedFor(t, { egress: failing });
  const hidden = (await redacted.eval(`${GET('http://x/')}${ERROR}`)) as { name: string; message: string };
  t.deepEqual(hidden, { name: 'TypeError', message: "fetch failed: the host's egress handler failed" });
  const open = await isolatedFor(t, { egress: failing, redactHostErrors: false });
  t.deepEqual(await open.eval(`${GET('http://x/')}${ERROR}`), { name: 'TypeError', message: `fetch failed: upstream said ${SECRET}` });
  const { EgressFailed } = await import('../src/index.js');
  const aborting = await isolatedFor(t, {
    egress: async () => {
      throw new EgressFailed('aborted by the caller', 'aborted');
    },
  });
  t.like(await aborting.eval(`${GET('http://x/')}${ERROR}`), { name: 'AbortError' });
});

// The in-process Runtime makes its signal at the first request: closing must abort it all the same.
for (const [engine, start] of [
  ['IsolatedRuntime', (egress: EgressHandler) => IsolatedRuntime.start({ sandbox: 'off', bootstrap: EXPOSE_TRANSPORT, egress })],
  ['Runtime', (egress: EgressHandler) => Runtime.start({ bootstrap: EXPOSE_TRANSPORT, egress })],
] as const) {
  test(`${engine}: closing the runtime aborts the requests its handler is still working on`, async (t) => {
    let signal: AbortSignal | undefined;
    let started!: () => void;
    const inHandler = new Promise<void>((resolve) => (started = resolve));
    const rt = await start((_request, context) => {
      signal = context.signal;
      started();
      return new Promise(() => undefined);
    });
    const pending = rt.eval(GET('http://x/')).catch(() => undefined);
    await inHandler;
    t.false(signal!.aborted);
    await rt.close();
    await pending;
    t.true(signal!.aborted);
  });
}

test('a pool sets egress per checkout: each runtime answers with its own', async (t) => {
  const server = await startServer(t);
  const pool = await SandboxPool.start({ size: 1, sandbox: 'off', bootstrap: EXPOSE_TRANSPORT });
  t.teardown(() => pool.close());
  const plain = await pool.checkout();
  t.teardown(() => plain.close());
  t.like(await plain.eval(`${GET(`${server.origin}/a`)}${ERROR}`), { name: 'TypeError' });
  const allowed = await pool.checkout({ egress: { allow: [`${server.origin}/*`] } });
  t.teardown(() => allowed.close());
  t.like(await allowed.eval(`${GET(`${server.origin}/a`)}${SUMMARY}`), { status: 200 });
  t.is(server.seen.length, 1);
});

test('egressHandler and the egress option refuse what is not a policy, naming the field', async (t) => {
  t.throws(() => egressHandler({ allow: [] }), { message: /egress policy: allow must be a non-empty array/ });
  t.throws(() => egressHandler({ allow: ['https://a.test/*'] }, { cache: true } as never), { message: /unknown field "cache"/ });
  t.throws(() => egressHandler({ allow: ['https://a.test/*'], maxResponseBytes: 64 * 1024 * 1024 }), {
    message: /maxResponseBytes must be an integer from 1 to 33554432/,
  });
  await t.throwsAsync(Runtime.start({ egress: 'https://a.test/*' as never }), { message: /egress must be a policy/ });
  await t.throwsAsync(IsolatedRuntime.start({ sandbox: 'off', egress: { allow: ['https://a.test/*'], timeout: 5 } as never }), {
    message: /unknown field "timeout"/,
  });
});
