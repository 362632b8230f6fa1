// What a server sends back in a response body, in the parent, before the guest (or a journal)
// sees it: the credential a server echoes is scrubbed by default, byte for byte; the policy's
// onResponse hook sees and replaces the response, bounded by timeoutMs, its answer checked and
// its headers cleaned again, its failures EgressFailed without the credential.
import test, { type ExecutionContext } from 'ava';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import { EgressFailed, type EgressFailure } from '../src/errors.js';
import {
  MIN_BODY_SECRET_CHARS,
  performRequest,
  REDACTED_HEADER,
  resolveEgressPolicy,
  scrubBody,
  type EgressPolicy,
  type EgressRequest,
  type EgressResponse,
} from '../src/egress/index.js';
import { SCRUB_YIELD_EVERY } from '../src/egress/response-body.js';

const SECRET = 'sk-live-BODY-4be1d07a';

/** A server on 127.0.0.1 whose /echo answers with everything it got, the authorization header included, as JSON. */
async function echoServer(t: ExecutionContext): Promise<{ origin: string; seen: (string | undefined)[] }> {
  const seen: (string | undefined)[] = [];
  const server = http.createServer((req, res) => {
    seen.push(req.headers.authorization);
    const auth = req.headers.authorization ?? '';
    if (req.url === '/binary') {
      // Bytes around the token that are not UTF-8: they must come through untouched.
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(Buffer.concat([Buffer.from([0xff, 0x00, 0xfe]), Buffer.from(auth.slice('Bearer '.length)), Buffer.from([0x80, 0x81])]));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'x-plain': 'kept' });
    res.end(JSON.stringify({ headers: { authorization: auth }, token: auth.slice('Bearer '.length), query: encodeURIComponent(auth), short: 'v2' }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const get = (url: string): EgressRequest => ({ url, method: 'GET', headers: [] });
const text = (response: EgressResponse): string => Buffer.from(response.body).toString('latin1');
const header = (response: EgressResponse, name: string): string | undefined => response.headers.find(([n]) => n === name)?.[1];

function policyFor(origin: string, extra: Partial<EgressPolicy> = {}) {
  return resolveEgressPolicy({ allow: [`${origin}/*`], headers: { [origin]: { authorization: `Bearer ${SECRET}`, 'x-api-version': 'v2' } }, ...extra });
}

/** The value and everything it carries has no trace of the credential. */
function assertNoSecret(t: ExecutionContext, value: unknown, what: string): void {
  t.false(inspect(value, { depth: 10, showHidden: true }).includes(SECRET), `${what}: the credential leaked`);
  t.false(
    JSON.stringify(value, (_k, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString('latin1') : v)).includes(SECRET),
    `${what}: the credential leaked`,
  );
  if (value instanceof Error) t.false(`${value.message}\n${value.stack}\n${String(value.cause)}`.includes(SECRET), `${what}: the credential leaked`);
}

test('a server that echoes the credential in its body: the guest gets it as [redacted], whole, its token alone, and percent-encoded, and is told so', async (t) => {
  const server = await echoServer(t);
  const response = await performRequest(policyFor(server.origin), get(`${server.origin}/echo`));
  t.is(server.seen[0], `Bearer ${SECRET}`, 'the server got the credential');
  assertNoSecret(t, response, 'the response');
  t.deepEqual(JSON.parse(text(response)), {
    headers: { authorization: '[redacted]' },
    token: '[redacted]',
    query: '[redacted]',
    // A policy value shorter than MIN_BODY_SECRET_CHARS is no credential to scrub from every body.
    short: 'v2',
  });
  t.true('v2'.length < MIN_BODY_SECRET_CHARS);
  t.is(header(response, REDACTED_HEADER), 'credential');
  t.is(header(response, 'content-length'), String(response.body.byteLength));
  t.is(header(response, 'x-plain'), 'kept');
});

test('scrubbing is byte for byte: the bytes around the credential in a binary body come through unchanged', async (t) => {
  const server = await echoServer(t);
  const response = await performRequest(policyFor(server.origin), get(`${server.origin}/binary`));
  t.deepEqual([...response.body], [0xff, 0x00, 0xfe, ...Buffer.from('[redacted]'), 0x80, 0x81]);
});

test('a response without the credential, or with redactCredentialsInBody false, is left as the server sent it', async (t) => {
  const server = await echoServer(t);
  const clean = await performRequest(resolveEgressPolicy({ allow: [`${server.origin}/*`] }), get(`${server.origin}/echo`));
  t.is(header(clean, REDACTED_HEADER), undefined);
  t.deepEqual(JSON.parse(text(clean)), { headers: { authorization: '' }, token: '', query: '', short: 'v2' });
  const raw = await performRequest(policyFor(server.origin, { redactCredentialsInBody: false }), get(`${server.origin}/echo`));
  t.true(text(raw).includes(SECRET), 'the opt-out leaves the body byte-exact');
  t.is(header(raw, REDACTED_HEADER), undefined);
  // Headers are cleaned whatever the body option says.
  t.false(JSON.stringify(raw.headers).includes(SECRET));
});

test('onResponse sees the response in the parent and what it returns is what the guest gets, headers cleaned again and the body scrubbed after it', async (t) => {
  const server = await echoServer(t);
  const calls: { url: string; requestUrl: string; hadSecret: boolean; aborted: boolean }[] = [];
  const policy = policyFor(server.origin, {
    onResponse: async (response, { request, url, signal }) => {
      calls.push({ url: url.href, requestUrl: request.url, hadSecret: text(response).includes(SECRET), aborted: signal.aborted });
      const body = JSON.parse(text(response)) as Record<string, unknown>;
      // The hook keeps only what the guest needs; it also tries to hand out the credential in a header and the body.
      return {
        ...response,
        headers: [...response.headers, ['x-leak', `Bearer ${SECRET}`], ['Set-Cookie', 'minted']],
        body: new TextEncoder().encode(JSON.stringify({ short: body['short'], again: SECRET })),
      };
    },
  });
  const response = await performRequest(policy, get(`${server.origin}/echo?q=1`));
  t.deepEqual(calls, [{ url: `${server.origin}/echo?q=1`, requestUrl: `${server.origin}/echo?q=1`, hadSecret: true, aborted: false }]);
  t.deepEqual(JSON.parse(text(response)), { short: 'v2', again: '[redacted]' });
  t.is(header(response, 'x-leak'), undefined);
  t.is(header(response, 'set-cookie'), undefined);
  assertNoSecret(t, response, 'the response');
});

test('an onResponse that throws, rejects, returns garbage or never settles fails the request with EgressFailed, never showing the credential', async (t) => {
  const server = await echoServer(t);
  const hooks: [string, EgressPolicy['onResponse'], RegExp, EgressFailure][] = [
    [
      'throws',
      () => {
        throw new Error(`refusing ${SECRET}`);
      },
      /onResponse hook threw \(Error; its message is not shown/,
      'onResponse',
    ],
    [
      'rejects',
      async () => {
        throw new TypeError(`refusing ${SECRET}`);
      },
      /onResponse hook threw \(TypeError/,
      'onResponse',
    ],
    ['returns nothing', (() => undefined) as unknown as EgressPolicy['onResponse'], /onResponse hook returned no response object/, 'onResponse'],
    [
      'returns a string body',
      ((r: EgressResponse) => ({ ...r, body: SECRET })) as unknown as EgressPolicy['onResponse'],
      /onResponse hook returned a body that is not a Uint8Array/,
      'onResponse',
    ],
    [
      'returns a status out of range',
      ((r: EgressResponse) => ({ ...r, status: 1 })) as unknown as EgressPolicy['onResponse'],
      /a status that is not an integer from 200 to 599/,
      'onResponse',
    ],
    [
      'returns a body over maxResponseBytes',
      (r: EgressResponse) => ({ ...r, body: new Uint8Array(10 * 1024 * 1024 + 1) }),
      /a body larger than the egress policy's maxResponseBytes/,
      'onResponse',
    ],
    ['never settles', () => new Promise<EgressResponse>(() => {}), /timeoutMs/, 'timeoutMs'],
  ];
  // Only the hook that never settles meets the deadline; the others have one no loaded machine reaches.
  for (const [name, onResponse, message, reason] of hooks) {
    const error = await t.throwsAsync(
      performRequest(policyFor(server.origin, { onResponse, timeoutMs: reason === 'timeoutMs' ? 1_000 : 60_000 }), get(`${server.origin}/echo`)),
      { instanceOf: EgressFailed, message },
      name,
    );
    t.is((error as EgressFailed).reason, reason, name);
    t.is((error as EgressFailed).code, 'ERR_STRATA_EGRESS_FAILED');
    assertNoSecret(t, error, name);
  }
});

test("a body made of nothing but the credential is scrubbed whole, and the parent's event loop keeps turning meanwhile", async (t) => {
  const origin = 'http://127.0.0.1:1';
  const policy = policyFor(origin);
  const occurrences = SCRUB_YIELD_EVERY * 4 + 7;
  const body = new Uint8Array(Buffer.from(`${SECRET}|`.repeat(occurrences)));
  const response: EgressResponse = {
    status: 200,
    statusText: 'OK',
    url: `${origin}/x`,
    redirected: false,
    headers: [['content-length', String(body.byteLength)]],
    body,
  };
  // A ticker on the event loop: it can only count while the scrub lets the loop run.
  let turns = 0;
  let ticking = true;
  const tick = (): void => {
    turns++;
    if (ticking) setImmediate(tick);
  };
  setImmediate(tick);
  const scrubbed = await scrubBody(policy, new URL(origin), response);
  ticking = false;
  t.is(Buffer.from(scrubbed.body).toString(), '[redacted]|'.repeat(occurrences));
  t.deepEqual(scrubbed.headers, [
    ['content-length', String(scrubbed.body.byteLength)],
    [REDACTED_HEADER, 'credential'],
  ]);
  t.true(turns >= 4, `the event loop turned ${turns} times during the scrub`);
});
