import test, { type ExecutionContext } from 'ava';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import { createServer as createNetServer, type AddressInfo, type Server as NetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { EgressFailed, EgressRefused, InvalidOption, type EgressRule } from '../src/errors.js';
import {
  addressScope,
  checkAddresses,
  checkRequest,
  performRequest,
  resolveEgressPolicy,
  type AddressScope,
  type EgressPolicy,
  type EgressRequest,
  type HostLookup,
} from '../src/egress/index.js';

const SECRET = 'sk-live-SECRET-7f3a9c1e';

// ---------------------------------------------------------------- helpers

interface Recorded {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  rawHeaders: string[];
  body: string;
}

interface TestServer {
  readonly origin: string;
  readonly port: number;
  readonly requests: Recorded[];
}

/** An HTTP server on 127.0.0.1 that records every request it gets. */
async function startServer(t: ExecutionContext, handle: (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void): Promise<TestServer> {
  const requests: Recorded[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, rawHeaders: req.rawHeaders, body });
      handle(req, res, body);
    });
  });
  await listen(server);
  t.teardown(() => close(server));
  const port = (server.address() as AddressInfo).port;
  return { origin: `http://127.0.0.1:${port}`, port, requests };
}

/** A TCP server that writes `reply` to every connection, for malformed responses. */
async function startRawServer(t: ExecutionContext, reply: string): Promise<TestServer> {
  const requests: Recorded[] = [];
  const server: NetServer = createNetServer((socket) => {
    socket.once('data', () => {
      requests.push({ method: '', url: '', headers: {}, rawHeaders: [], body: '' });
      socket.end(reply);
    });
    socket.on('error', () => {});
  });
  await listen(server);
  t.teardown(() => close(server));
  const port = (server.address() as AddressInfo).port;
  return { origin: `http://127.0.0.1:${port}`, port, requests };
}

function listen(server: NetServer): Promise<void> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
}

function close(server: NetServer): Promise<void> {
  (server as http.Server).closeAllConnections?.();
  return new Promise((resolve) => server.close(() => resolve()));
}

function get(url: string, headers: [string, string][] = [], extra: Partial<EgressRequest> = {}): EgressRequest {
  return { url, method: 'GET', headers, ...extra };
}

function text(body: Uint8Array): string {
  return Buffer.from(body).toString();
}

/** The error, and everything it carries (cause, stack, hidden fields), has no trace of the secret. */
function assertNoSecret(t: ExecutionContext, value: unknown): void {
  t.false(inspect(value, { depth: 10, showHidden: true }).includes(SECRET), 'the credential leaked');
  t.false(JSON.stringify(value, (_k, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString() : v)).includes(SECRET), 'the credential leaked');
  if (value instanceof Error) t.false(`${value.message}\n${value.stack}\n${String(value.cause)}`.includes(SECRET), 'the credential leaked');
}

// ---------------------------------------------------------------- the policy

test('a policy gets its defaults and is frozen; inspecting it never shows a credential', (t) => {
  const policy = resolveEgressPolicy({
    allow: ['https://api.example.com/v1/*'],
    headers: { 'https://api.example.com': { Authorization: `Bearer ${SECRET}` } },
  });
  t.deepEqual(policy.methods, ['GET', 'HEAD']);
  t.is(policy.maxResponseBytes, 10 * 1024 * 1024);
  t.is(policy.maxRequestBytes, 1024 * 1024);
  t.is(policy.timeoutMs, 30_000);
  t.is(policy.maxRedirects, 5);
  t.true(policy.redactCredentialsInBody);
  t.is(policy.onResponse, undefined);
  t.deepEqual(policy.headerNames, { 'https://api.example.com:443': ['authorization'] });
  t.true(Object.isFrozen(policy));
  t.true(Object.isFrozen(policy.allow[0]));
  assertNoSecret(t, policy);
});

const invalidPolicies: [string, unknown, RegExp][] = [
  ['not an object', 'https://x', /policy must be an object/],
  ['no allow', {}, /allow must be a non-empty array/],
  ['empty allow', { allow: [] }, /allow must be a non-empty array/],
  ['a number in allow', { allow: [1] }, /allow\[0\] must be a string/],
  ['a relative pattern', { allow: ['/v1/*'] }, /allow\[0\].*not an absolute URL/],
  ['a host wildcard', { allow: ['https://*.example.com/'] }, /allow\[0\].*hosts cannot be wildcards/],
  ['a star mid-path', { allow: ['https://a.example/*/x'] }, /allow\[0\].*only as the last character/],
  ['a query', { allow: ['https://a.example/v1?x=1'] }, /allow\[0\].*no query/],
  ['ftp', { allow: ['ftp://a.example/'] }, /allow\[0\].*only http: and https:/],
  ['userinfo', { allow: ['https://u:p@a.example/'] }, /allow\[0\].*user name or password/],
  ['0.0.0.0', { allow: ['http://0.0.0.0:80/'] }, /allow\[0\].*never reachable/],
  [
    'an onResponse that is not a function',
    { allow: ['https://a.example/'], onResponse: 'scrub' },
    /onResponse must be a function \(response, \{ request, url, signal \}\) => response/,
  ],
  [
    'a redactCredentialsInBody that is not a boolean',
    { allow: ['https://a.example/'], redactCredentialsInBody: 'yes' },
    /redactCredentialsInBody must be true or false/,
  ],
  ['a typo', { allow: ['https://a.example/'], timeout: 5 }, /unknown field "timeout"/],
  ['CONNECT', { allow: ['https://a.example/'], methods: ['CONNECT'] }, /methods\[0\]: CONNECT is never allowed/],
  ['a bad method', { allow: ['https://a.example/'], methods: ['GE T'] }, /methods\[0\] must be an HTTP method/],
  [
    'headers for an origin not allowed',
    { allow: ['https://a.example/'], headers: { 'https://b.example': { 'x-key': 'k' } } },
    /headers\["https:\/\/b.example"\]: no pattern in allow/,
  ],
  ['headers keyed by a URL with a path', { allow: ['https://a.example/'], headers: { 'https://a.example/v1': { 'x-key': 'k' } } }, /origin only/],
  [
    'a forbidden policy header',
    { allow: ['https://a.example/'], headers: { 'https://a.example': { Host: 'b.example' } } },
    /headers\["https:\/\/a.example"\].Host: the parent sets Host/,
  ],
  [
    'a credential with a newline',
    { allow: ['https://a.example/'], headers: { 'https://a.example': { 'x-key': `${SECRET}\r\nx: y` } } },
    /x-key: the value must be a string without CR, LF or NUL \(value not shown\)/,
  ],
  [
    'privateNetworkHosts not in allow',
    { allow: ['https://a.example/'], privateNetworkHosts: ['db.internal'] },
    /privateNetworkHosts\[0\].*no pattern in allow names this host/,
  ],
  ['privateNetworkHosts with a port', { allow: ['https://a.example/'], privateNetworkHosts: ['a.example:8080'] }, /privateNetworkHosts\[0\].*host name only/],
  ['a zero timeout', { allow: ['https://a.example/'], timeoutMs: 0 }, /timeoutMs must be an integer >= 1.*cannot be turned off/],
  ['a null cap', { allow: ['https://a.example/'], maxResponseBytes: null }, /maxResponseBytes must be/],
  ['too many redirects', { allow: ['https://a.example/'], maxRedirects: 100 }, /maxRedirects must be an integer from 0 to 20/],
];
for (const [name, policy, message] of invalidPolicies) {
  test(`policy refused: ${name}`, (t) => {
    const error = t.throws(() => resolveEgressPolicy(policy), { instanceOf: InvalidOption });
    t.is(error?.code, 'ERR_STRATA_INVALID_OPTION');
    t.regex(error?.message ?? '', /^egress policy: /);
    t.regex(error?.message ?? '', message);
    assertNoSecret(t, error);
  });
}

test('a policy object that did not go through resolveEgressPolicy is refused', async (t) => {
  const unchecked = { allow: [], methods: ['GET'] } as unknown as ReturnType<typeof resolveEgressPolicy>;
  t.throws(() => checkRequest(unchecked, get('https://a.example/')), { instanceOf: InvalidOption, message: /pass the result of resolveEgressPolicy/ });
  await t.throwsAsync(performRequest(unchecked, get('https://a.example/')), { instanceOf: InvalidOption });
});

// ---------------------------------------------------------------- checkRequest: must allow / must deny

const listPolicy = resolveEgressPolicy({
  allow: ['https://api.example.com/v1/*', 'https://api.example.com/status', 'https://bücher.example/*', 'http://127.0.0.1:8080/*'],
  methods: ['get', 'POST'],
  headers: { 'https://api.example.com': { 'X-Api-Key': SECRET } },
  maxRequestBytes: 16,
});

const mustAllow: [string, EgressRequest][] = [
  ['a path under the prefix', get('https://api.example.com/v1/users')],
  ['the prefix itself', get('https://api.example.com/v1/')],
  ['a query string under a matching path', get('https://api.example.com/v1/users?page=2&q=a*b')],
  ['an exact path', get('https://api.example.com/status')],
  ['an exact path with a query', get('https://api.example.com/status?verbose=1')],
  ['upper case and a trailing dot', get('HTTPS://API.Example.COM./v1/x')],
  ['the default port written out', get('https://api.example.com:443/v1/x')],
  ['a percent-encoded host', get('https://api.%65xample.com/v1/x')],
  ['the punycode of an IDN pattern', get('https://xn--bcher-kva.example/any')],
  ['dot segments that stay under the prefix', get('https://api.example.com/v1/a/../b')],
  ['a fragment (never sent)', get('https://api.example.com/v1/x#frag')],
  ['a lower-case method', { url: 'https://api.example.com/v1/x', method: 'post', headers: [], body: new Uint8Array(4) }],
  [
    'a guest cookie and authorization',
    get('https://api.example.com/v1/x', [
      ['Cookie', 'a=b'],
      ['Authorization', 'Bearer guest'],
    ]),
  ],
  ['a numeric IPv4 form of an allowed literal', get('http://0x7f.0.0.1:8080/x')],
];
for (const [name, request] of mustAllow) {
  test(`checkRequest allows ${name}`, (t) => {
    const decision = checkRequest(listPolicy, request);
    t.true(decision.ok, decision.ok ? '' : decision.reason);
  });
}

const mustDeny: [string, EgressRequest, EgressRule, RegExp?][] = [
  ['a path outside the list', get('https://api.example.com/v2/users'), 'allow', /not in the egress allow-list.*add a matching pattern/],
  ['the prefix without its slash', get('https://api.example.com/v1'), 'allow'],
  ['an exact path with more after it', get('https://api.example.com/status/x'), 'allow'],
  ['.. out of the prefix', get('https://api.example.com/v1/../admin'), 'allow'],
  ['encoded .. out of the prefix', get('https://api.example.com/v1/%2e%2E/admin'), 'allow'],
  ['backslash .. out of the prefix', get('https://api.example.com/v1\\..\\admin'), 'allow'],
  ['an encoded slash', get('https://api.example.com/v1/..%2Fadmin'), 'path', /encoded '\/'/],
  ['an encoded backslash', get('https://api.example.com/v1/..%5cadmin'), 'path'],
  ['another origin', get('https://evil.example.com/v1/x'), 'allow'],
  ['a suffix host', get('https://api.example.com.evil.com/v1/x'), 'allow'],
  ['another port', get('https://api.example.com:8443/v1/x'), 'allow'],
  ['another scheme', get('http://api.example.com/v1/x'), 'allow'],
  ['userinfo', get('https://user:pw@api.example.com/v1/x'), 'userinfo', /user name or password/],
  ['ftp', get('ftp://api.example.com/v1/x'), 'scheme'],
  ['file', get('file:///etc/passwd'), 'scheme'],
  ['not a URL', get('not a url'), 'url'],
  ['a method not in the list', { url: 'https://api.example.com/v1/x', method: 'DELETE', headers: [] }, 'method', /allows GET, POST; add DELETE to its methods/],
  ['TRACE', { url: 'https://api.example.com/v1/x', method: 'TRACE', headers: [] }, 'method'],
  ['a malformed method', { url: 'https://api.example.com/v1/x', method: 'GET /x HTTP/1.1\r\n', headers: [] }, 'method'],
  ['Host', get('https://api.example.com/v1/x', [['Host', 'evil.example.com']]), 'header', /may not set host/],
  ['Content-Length', get('https://api.example.com/v1/x', [['Content-Length', '0']]), 'header'],
  ['Transfer-Encoding', get('https://api.example.com/v1/x', [['transfer-encoding', 'chunked']]), 'header'],
  ['Connection', get('https://api.example.com/v1/x', [['Connection', 'upgrade']]), 'header'],
  ['Proxy-Authorization', get('https://api.example.com/v1/x', [['Proxy-Authorization', 'x']]), 'header', /proxy headers/],
  ['Accept-Encoding', get('https://api.example.com/v1/x', [['Accept-Encoding', 'gzip']]), 'header'],
  ['the credential header of this origin', get('https://api.example.com/v1/x', [['x-API-key', 'guess']]), 'header', /the host adds it for this origin/],
  ['a header value with CRLF', get('https://api.example.com/v1/x', [['x-a', 'b\r\nHost: evil']]), 'header'],
  ['a bad header name', get('https://api.example.com/v1/x', [['x a', 'b']]), 'header'],
  ['a GET with a body', { url: 'https://api.example.com/v1/x', method: 'GET', headers: [], body: new Uint8Array(1) }, 'body'],
  [
    'a body over maxRequestBytes',
    { url: 'https://api.example.com/v1/x', method: 'POST', headers: [], body: new Uint8Array(17) },
    'body',
    /17 bytes.*maxRequestBytes \(16\)/,
  ],
  ['headers that are not pairs', { url: 'https://api.example.com/v1/x', method: 'GET', headers: [['a']] } as unknown as EgressRequest, 'request'],
  ['a body that is not bytes', { url: 'https://api.example.com/v1/x', method: 'POST', headers: [], body: 'x' } as unknown as EgressRequest, 'request'],
];
for (const [name, request, rule, reason] of mustDeny) {
  test(`checkRequest refuses ${name}`, (t) => {
    const decision = checkRequest(listPolicy, request);
    t.false(decision.ok);
    if (decision.ok) return;
    t.is(decision.rule, rule, decision.reason);
    if (reason !== undefined) t.regex(decision.reason, reason);
    t.false(decision.reason.includes(SECRET));
  });
}

// ---------------------------------------------------------------- addresses

const scopes: [string, AddressScope][] = [
  ['8.8.8.8', 'public'],
  ['127.0.0.1', 'private'],
  ['127.255.0.9', 'private'],
  ['10.1.2.3', 'private'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['172.32.0.1', 'public'],
  ['192.168.1.1', 'private'],
  ['169.254.169.254', 'private'],
  ['100.64.0.1', 'private'],
  ['100.128.0.1', 'public'],
  ['0.0.0.0', 'never'],
  ['0.1.2.3', 'never'],
  ['224.0.0.1', 'never'],
  ['255.255.255.255', 'never'],
  ['::1', 'private'],
  ['::', 'never'],
  ['fc00::1', 'private'],
  ['fd12:3456::1', 'private'],
  ['fe80::1%eth0', 'private'],
  ['ff02::1', 'never'],
  ['::ffff:127.0.0.1', 'private'],
  ['::ffff:7f00:1', 'private'],
  ['::ffff:10.0.0.1', 'private'],
  ['::ffff:0.0.0.0', 'never'],
  ['::ffff:8.8.8.8', 'public'],
  ['64:ff9b::a9fe:a9fe', 'private'],
  ['2606:4700::1111', 'public'],
];
test('addressScope classifies each special range, IPv4-mapped forms included', (t) => {
  for (const [address, scope] of scopes) t.is(addressScope(address)?.scope, scope, address);
  t.is(addressScope('localhost'), undefined);
});

test('checkAddresses: a name resolving to a private address is refused unless privateNetworkHosts lists it', (t) => {
  const plain = resolveEgressPolicy({ allow: ['https://db.internal/*', 'http://127.0.0.1/*', 'https://api.example.com/*'] });
  const listed = resolveEgressPolicy({ allow: ['https://db.internal/*'], privateNetworkHosts: ['DB.internal'] });
  const db = new URL('https://db.internal/');
  const loopback = [{ address: '127.0.0.1', family: 4 as const }];
  const refused = checkAddresses(plain, db, loopback);
  t.false(refused.ok);
  if (!refused.ok) {
    t.is(refused.rule, 'address');
    t.regex(refused.reason, /db.internal resolves to 127.0.0.1, a loopback.*list db.internal in the egress policy's privateNetworkHosts/);
  }
  t.true(checkAddresses(listed, db, loopback).ok);
  t.true(checkAddresses(plain, new URL('http://127.0.0.1/'), loopback).ok, 'a literal IP in the pattern names the address');
  t.false(
    checkAddresses(plain, new URL('https://api.example.com/'), [
      { address: '8.8.8.8', family: 4 },
      { address: '::ffff:169.254.169.254', family: 6 },
    ]).ok,
    'every address must pass',
  );
  t.true(checkAddresses(plain, new URL('https://api.example.com/'), [{ address: '8.8.8.8', family: 4 }]).ok);
  t.false(checkAddresses(listed, db, [{ address: '0.0.0.0', family: 4 }]).ok, 'never-reachable ranges stay refused when listed');
});

// ---------------------------------------------------------------- performRequest against local servers

test('an allowed request carries the credential to the server; the response never shows it', async (t) => {
  const server = await startServer(t, (req, res) => {
    res.setHeader('x-echo', String(req.headers['x-api-key']));
    res.setHeader('set-cookie', 'session=minted-from-the-key');
    res.setHeader('x-plain', 'kept');
    res.end('hello');
  });
  const policy = resolveEgressPolicy({ allow: [`${server.origin}/v1/*`], headers: { [server.origin]: { 'X-Api-Key': SECRET } } });
  const response = await performRequest(
    policy,
    get(`${server.origin}/v1/items?id=3`, [
      ['x-guest', 'g'],
      ['X-Multi', 'a'],
      ['x-multi', 'b'],
      ['__proto__', 'p'],
    ]),
  );
  t.is(response.status, 200);
  t.is(response.statusText, 'OK');
  t.is(text(response.body), 'hello');
  t.is(response.url, `${server.origin}/v1/items?id=3`);
  t.false(response.redirected);
  t.deepEqual(
    response.headers.find(([n]) => n === 'x-plain'),
    ['x-plain', 'kept'],
  );
  t.is(
    response.headers.find(([n]) => n === 'set-cookie'),
    undefined,
    'set-cookie is dropped where the parent adds credentials',
  );
  t.is(
    response.headers.find(([n]) => n === 'x-echo'),
    undefined,
    'a header echoing the credential is dropped',
  );
  assertNoSecret(t, response);
  t.is(server.requests.length, 1);
  const seen = server.requests[0]!;
  t.is(seen.headers['x-api-key'], SECRET);
  t.is(seen.headers['x-guest'], 'g');
  t.is(seen.headers['x-multi'], 'a, b');
  t.is(seen.rawHeaders[seen.rawHeaders.indexOf('__proto__') + 1], 'p');
  t.is(seen.headers['accept-encoding'], 'identity');
  t.is(seen.headers.host, `127.0.0.1:${server.port}`);
  t.is(seen.url, '/v1/items?id=3');
});

test('a POST body reaches the server when the policy allows POST', async (t) => {
  const server = await startServer(t, (_req, res, body) => res.end(`got ${body}`));
  const policy = resolveEgressPolicy({ allow: [`${server.origin}/*`], methods: ['POST'] });
  const response = await performRequest(policy, {
    url: `${server.origin}/x`,
    method: 'post',
    headers: [['content-type', 'text/plain']],
    body: new TextEncoder().encode('abc'),
  });
  t.is(text(response.body), 'got abc');
  t.is(server.requests[0]?.method, 'POST');
  t.is(server.requests[0]?.headers['content-length'], '3');
});

test('refused requests never reach the server: another path, another origin, .. traversal, a method, a forbidden header, a large body', async (t) => {
  const server = await startServer(t, (_req, res) => res.end('no'));
  const other = await startServer(t, (_req, res) => res.end('no'));
  const policy = resolveEgressPolicy({
    allow: [`${server.origin}/v1/*`],
    methods: ['GET', 'POST'],
    maxRequestBytes: 8,
    headers: { [server.origin]: { authorization: SECRET } },
  });
  const cases: [EgressRequest, EgressRule][] = [
    [get(`${server.origin}/admin`), 'allow'],
    [get(`${other.origin}/v1/x`), 'allow'],
    [get(`${server.origin}/v1/../admin`), 'allow'],
    [get(`${server.origin}/v1/%2e%2e/admin`), 'allow'],
    [{ url: `${server.origin}/v1/x`, method: 'DELETE', headers: [] }, 'method'],
    [get(`${server.origin}/v1/x`, [['Host', 'evil']]), 'header'],
    [get(`${server.origin}/v1/x`, [['Authorization', 'mine']]), 'header'],
    [{ url: `${server.origin}/v1/x`, method: 'POST', headers: [], body: new Uint8Array(9) }, 'body'],
  ];
  for (const [request, rule] of cases) {
    const error = await t.throwsAsync(performRequest(policy, request), { instanceOf: EgressRefused });
    t.is(error?.code, 'ERR_STRATA_EGRESS_REFUSED');
    t.is(error?.rule, rule, `${request.method} ${request.url}`);
    assertNoSecret(t, error);
  }
  t.is(server.requests.length, 0);
  t.is(other.requests.length, 0);
});

test('a redirect out of the allow-list is refused before the target is reached', async (t) => {
  const outside = await startServer(t, (_req, res) => res.end('reached'));
  const server = await startServer(t, (_req, res) => {
    res.writeHead(302, { location: `${outside.origin}/v1/collect` });
    res.end();
  });
  const policy = resolveEgressPolicy({ allow: [`${server.origin}/v1/*`], headers: { [server.origin]: { authorization: `Bearer ${SECRET}` } } });
  const error = await t.throwsAsync(performRequest(policy, get(`${server.origin}/v1/go`)), { instanceOf: EgressRefused });
  t.is(error?.rule, 'allow');
  t.regex(error?.message ?? '', /^redirect refused: .*\/v1\/collect is not in the egress allow-list/);
  assertNoSecret(t, error);
  t.is(server.requests.length, 1);
  t.is(outside.requests.length, 0, 'the target outside the list was never contacted');
});

test('redirect: manual returns the 3xx as it is, without following', async (t) => {
  const outside = await startServer(t, (_req, res) => res.end('reached'));
  const server = await startServer(t, (_req, res) => {
    res.writeHead(307, { location: `${outside.origin}/` });
    res.end();
  });
  const policy = resolveEgressPolicy({ allow: [`${server.origin}/*`] });
  const response = await performRequest(policy, get(`${server.origin}/`, [], { redirect: 'manual' }));
  t.is(response.status, 307);
  t.deepEqual(
    response.headers.find(([n]) => n === 'location'),
    ['location', `${outside.origin}/`],
  );
  t.is(outside.requests.length, 0);
});

test('redirects within the list are followed; credentials go only to their own origin, guest authorization not across origins', async (t) => {
  const second = await startServer(t, (_req, res) => res.end('end'));
  const first = await startServer(t, (req, res) => {
    if (req.url === '/v1/start') res.writeHead(303, { location: '/v1/next' });
    else res.writeHead(301, { location: `${second.origin}/v1/end` });
    res.end();
  });
  const policy = resolveEgressPolicy({
    allow: [`${first.origin}/v1/*`, `${second.origin}/v1/*`],
    methods: ['GET', 'POST'],
    headers: { [first.origin]: { 'x-api-key': SECRET } },
  });
  const response = await performRequest(policy, {
    url: `${first.origin}/v1/start`,
    method: 'POST',
    headers: [
      ['authorization', 'Bearer guest'],
      ['content-type', 'text/plain'],
      ['x-trace', '1'],
    ],
    body: new Uint8Array([1, 2]),
  });
  t.is(text(response.body), 'end');
  t.true(response.redirected);
  t.is(response.url, `${second.origin}/v1/end`);
  t.deepEqual(
    first.requests.map((r) => [r.method, r.url, r.headers['x-api-key']]),
    [
      ['POST', '/v1/start', SECRET],
      ['GET', '/v1/next', SECRET],
    ],
  );
  t.is(first.requests[1]?.headers['content-type'], undefined, '303 turned the POST into a GET without its body headers');
  t.is(first.requests[1]?.headers['authorization'], 'Bearer guest', 'same origin keeps the guest authorization');
  const last = second.requests[0]!;
  t.is(second.requests.length, 1);
  t.is(last.headers['x-api-key'], undefined, "the first origin's credential never reaches the second");
  t.is(last.headers['authorization'], undefined, 'guest authorization is dropped across origins');
  t.is(last.headers['x-trace'], '1');
  assertNoSecret(t, last.headers);
});

test('redirects past maxRedirects fail naming the limit', async (t) => {
  const server = await startServer(t, (req, res) => {
    res.writeHead(302, { location: `/loop/${Number(req.url?.split('/')[2] ?? 0) + 1}` });
    res.end();
  });
  const policy = resolveEgressPolicy({ allow: [`${server.origin}/loop/*`], maxRedirects: 2, headers: { [server.origin]: { 'x-api-key': SECRET } } });
  const error = await t.throwsAsync(performRequest(policy, get(`${server.origin}/loop/0`)), { instanceOf: EgressFailed });
  t.is(error?.code, 'ERR_STRATA_EGRESS_FAILED');
  t.is(error?.reason, 'maxRedirects');
  t.regex(error?.message ?? '', /more than 2 redirects \(the egress policy's maxRedirects\)/);
  t.is(server.requests.length, 3);
});

test('a response body past maxResponseBytes is cut off while streaming, declared or not', async (t) => {
  let written = 0;
  let serverSawClose = false;
  const endless = await startServer(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    const chunk = Buffer.alloc(16 * 1024, 1);
    const pump = (): void => {
      while (!res.destroyed && written < 64 * 1024 * 1024) {
        written += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      res.end();
    };
    res.on('close', () => (serverSawClose = true));
    pump();
  });
  const declared = await startServer(t, (_req, res) => {
    res.writeHead(200, { 'content-length': String(1024 * 1024) });
    res.end(Buffer.alloc(1024 * 1024));
  });
  const policy = resolveEgressPolicy({ allow: [`${endless.origin}/*`, `${declared.origin}/*`], maxResponseBytes: 64 * 1024 });
  const cut = await t.throwsAsync(performRequest(policy, get(`${endless.origin}/big`)), { instanceOf: EgressFailed });
  t.is(cut?.reason, 'maxResponseBytes');
  t.regex(cut?.message ?? '', /larger than the egress policy's maxResponseBytes \(65536\); it was cut off/);
  const early = await t.throwsAsync(performRequest(policy, get(`${declared.origin}/big`)), { instanceOf: EgressFailed });
  t.is(early?.reason, 'maxResponseBytes');
  t.regex(early?.message ?? '', /Content-Length 1048576/);
  await new Promise((resolve) => setTimeout(resolve, 50));
  t.true(serverSawClose, 'the connection was closed');
  t.true(written < 64 * 1024 * 1024, 'the server was stopped long before it finished');
});

test('timeoutMs cuts a server that never answers, and one that stalls in the body', async (t) => {
  const silent = await startServer(t, () => {});
  const stalling = await startServer(t, (_req, res) => {
    res.writeHead(200);
    res.write('part');
  });
  const policy = resolveEgressPolicy({
    allow: [`${silent.origin}/*`, `${stalling.origin}/*`],
    timeoutMs: 300,
    headers: { [silent.origin]: { 'x-api-key': SECRET } },
  });
  for (const origin of [silent.origin, stalling.origin]) {
    const started = Date.now();
    const error = await t.throwsAsync(performRequest(policy, get(`${origin}/slow`)), { instanceOf: EgressFailed });
    const elapsed = Date.now() - started;
    t.is(error?.reason, 'timeoutMs');
    t.regex(error?.message ?? '', /GET http:\/\/127\.0\.0\.1:\d+\/slow: no complete response within the egress policy's timeoutMs \(300 ms\)/);
    t.true(elapsed >= 280 && elapsed < 2_000, `took ${elapsed} ms`);
    assertNoSecret(t, error);
  }
});

test("the caller's AbortSignal aborts the request", async (t) => {
  const silent = await startServer(t, () => {});
  const policy = resolveEgressPolicy({ allow: [`${silent.origin}/*`] });
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 50);
  const error = await t.throwsAsync(performRequest(policy, get(`${silent.origin}/`), { signal: controller.signal }), { instanceOf: EgressFailed });
  t.is(error?.reason, 'aborted');
  const before = await t.throwsAsync(performRequest(policy, get(`${silent.origin}/`), { signal: AbortSignal.abort() }), { instanceOf: EgressFailed });
  t.is(before?.reason, 'aborted');
});

test('localhost resolves to loopback: refused when only allow names it, allowed with privateNetworkHosts', async (t) => {
  const server = await startServer(t, (_req, res) => res.end('local'));
  const pattern = `http://localhost:${server.port}/*`;
  const refused = await t.throwsAsync(performRequest(resolveEgressPolicy({ allow: [pattern] }), get(`http://localhost:${server.port}/`)), {
    instanceOf: EgressRefused,
  });
  t.is(refused?.rule, 'address');
  t.regex(refused?.message ?? '', /localhost resolves to (127\.0\.0\.1|::1), a loopback .*privateNetworkHosts/);
  t.is(server.requests.length, 0);
  const ipv4Only: HostLookup = async () => [{ address: '127.0.0.1', family: 4 }];
  const allowed = await performRequest(resolveEgressPolicy({ allow: [pattern], privateNetworkHosts: ['localhost'] }), get(`http://localhost:${server.port}/`), {
    lookup: ipv4Only,
  });
  t.is(text(allowed.body), 'local');
  t.is(server.requests[0]?.headers.host, `localhost:${server.port}`);
});

test('the host is resolved once and the connection pinned to that answer (no DNS rebinding)', async (t) => {
  const server = await startServer(t, (_req, res) => res.end('pinned'));
  let lookups = 0;
  // A rebinding resolver: the checked answer first, the metadata service after.
  const rebinding: HostLookup = async () => (lookups++ === 0 ? [{ address: '127.0.0.1', family: 4 }] : [{ address: '169.254.169.254', family: 4 }]);
  const policy = resolveEgressPolicy({ allow: [`http://service.test:${server.port}/*`], privateNetworkHosts: ['service.test'] });
  const response = await performRequest(policy, get(`http://service.test:${server.port}/x`), { lookup: rebinding });
  t.is(text(response.body), 'pinned');
  t.is(lookups, 1);
  const publicName = resolveEgressPolicy({ allow: [`http://service.test:${server.port}/*`] });
  const refused = await t.throwsAsync(
    performRequest(publicName, get(`http://service.test:${server.port}/x`), { lookup: async () => [{ address: '::ffff:127.0.0.1', family: 6 }] }),
    { instanceOf: EgressRefused },
  );
  t.is(refused?.rule, 'address');
  const failed = await t.throwsAsync(
    performRequest(publicName, get(`http://service.test:${server.port}/x`), {
      lookup: async () => Promise.reject(Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' })),
    }),
    { instanceOf: EgressFailed },
  );
  t.is(failed?.reason, 'dns');
  t.regex(failed?.message ?? '', /could not resolve service.test \(ENOTFOUND\)/);
});

test('no error carries the credential, however the server fails', async (t) => {
  const policyFor = (origin: string, extra: Partial<EgressPolicy> = {}) =>
    resolveEgressPolicy({ allow: [`${origin}/*`], headers: { [origin]: { authorization: `Bearer ${SECRET}` } }, ...extra });
  const hangUp = await startServer(t, (req) => req.socket.destroy());
  const garbage = await startRawServer(t, `HTTP/1.1 200 OK\r\nX-Bad ${SECRET}: y\r\n\r\n`);
  const badStatus = await startRawServer(t, `HTTP/1.1 2${SECRET}\r\n\r\n`);
  const truncated = await startRawServer(t, `HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n${SECRET}`);
  const leakyRedirect = await startServer(t, (req, res) => {
    res.writeHead(302, { location: `http://elsewhere.example/${String(req.headers.authorization)}` });
    res.end();
  });
  const redirectLoop = await startServer(t, (req, res) => {
    res.writeHead(302, { location: `/${encodeURIComponent(String(req.headers.authorization))}/${Math.random()}` });
    res.end();
  });
  const cases: [string, string, Partial<EgressPolicy>?][] = [
    ['hang up', hangUp.origin],
    ['garbage header', garbage.origin],
    ['garbage status', badStatus.origin],
    ['truncated body', truncated.origin],
    ['redirect with the credential in its URL', leakyRedirect.origin],
    ['redirect loop echoing the credential', redirectLoop.origin, { maxRedirects: 1 }],
  ];
  for (const [name, origin, extra] of cases) {
    const error = await t.throwsAsync(performRequest(policyFor(origin, extra), get(`${origin}/x`)), { message: /./ }, name);
    t.true(error instanceof EgressFailed || error instanceof EgressRefused, `${name}: ${String(error)}`);
    if (process.env['EGRESS_TEST_LOG'] === '1') t.log(name, String(error), (error as EgressFailed).reason ?? (error as EgressRefused).rule);
    assertNoSecret(t, error);
  }
  t.true(hangUp.requests.length + garbage.requests.length + badStatus.requests.length + truncated.requests.length === 4, 'each server was reached');
});

test('https: the pinned address is dialled with the host name as TLS server name', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'strata-egress-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=api.test',
        '-addext',
        'subjectAltName=DNS:api.test',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
  } catch {
    t.pass('openssl is not available: skipped');
    return;
  }
  const cert = readFileSync(join(dir, 'cert.pem'));
  let servername: string | undefined;
  let key: string | undefined;
  const server = https.createServer({ key: readFileSync(join(dir, 'key.pem')), cert }, (req, res) => {
    servername = (req.socket as import('node:tls').TLSSocket).servername || undefined;
    key = req.headers['x-api-key'] as string | undefined;
    res.end('secure');
  });
  await listen(server);
  t.teardown(() => close(server));
  const port = (server.address() as AddressInfo).port;
  const policy = resolveEgressPolicy({
    allow: [`https://api.test:${port}/*`],
    privateNetworkHosts: ['api.test'],
    headers: { [`https://api.test:${port}`]: { 'x-api-key': SECRET } },
  });
  const lookup: HostLookup = async () => [{ address: '127.0.0.1', family: 4 }];
  const response = await performRequest(policy, get(`https://api.test:${port}/v1`), { lookup, ca: cert });
  t.is(text(response.body), 'secure');
  t.is(servername, 'api.test');
  t.is(key, SECRET);
  const untrusted = await t.throwsAsync(performRequest(policy, get(`https://api.test:${port}/v1`), { lookup }), { instanceOf: EgressFailed });
  t.is(untrusted?.reason, 'network');
  assertNoSecret(t, untrusted);
});
