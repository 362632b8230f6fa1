// fetch() over the host transport contract (FETCH_GLOBAL, `__strataFetch`): what the host
// receives, what the guest gets back, redirects, aborts, the mapping of the transport's
// failures, and a sandbox without a transport. The transports here are written in the guest's
// own context before the bootstrap, as a host would define one; one test uses a real host
// function (an isolated-vm Callback).
import test from 'ava';
import ivm from 'isolated-vm';
import { FETCH_CANCEL_GLOBAL, FETCH_GLOBAL } from '../src/index.js';
import { caseSuites, GUEST_HELPERS, stream, type Case } from './helpers/fetch-cases.js';
import { createSandbox } from './helpers/isolate.js';

// A transport that records each request and answers with `__answer(request)` (replaceable per
// case with `answering(answer, run)`); `lastSeen()` is the last request the host received.
const TRANSPORT = `
  Object.defineProperty(globalThis, '__seen', { value: [] });
  globalThis.__defaultAnswer = (req) => ({ status: 200, statusText: 'OK', url: req.url, redirected: false, headers: [['content-type', 'text/plain']], body: new TextEncoder().encode('ok') });
  globalThis.__answer = __defaultAnswer;
  Object.defineProperty(globalThis, '__ids', { value: [] });
  Object.defineProperty(globalThis, '__cancelled', { value: [] });
  globalThis.__strataFetch = (req, id) => { __seen.push(req); __ids.push(id); return Promise.resolve().then(() => __answer(req)); };
  globalThis.__strataFetchCancel = (id) => { __cancelled.push(id); };
  globalThis.lastId = () => __ids[__ids.length - 1];
  globalThis.cancelled = () => [...__cancelled];
  globalThis.answering = async (answer, run) => { __answer = answer; try { return await run(); } finally { __answer = __defaultAnswer; } };
  globalThis.lastSeen = () => __seen[__seen.length - 1];
  globalThis.seenCount = () => __seen.length;
  // How a fetch settled: the response's status, or the error's name, message and classes.
  globalThis.outcome = (p) => p.then((r) => r.status, (e) => (e !== null && typeof e === 'object' ? [e.name, e.message, e instanceof DOMException, e instanceof TypeError] : e));
  globalThis.later = (ms, value) => new Promise((resolve) => setTimeout(() => resolve(value), ms));
`;

const answer = (fields: string) =>
  `(req) => ({ status: 200, statusText: '', url: req.url, redirected: false, headers: [], body: new Uint8Array(0), ...${fields} })`;

const SENT: Case[] = [
  [
    'the host gets a plain request: URL without fragment, normalised headers, the body bytes',
    `(async () => {
      await fetch('https://API.test:443/p/../q?x=1#frag', { method: 'post', headers: { 'X-Up': '  v  ', 'x-multi': 'a' }, body: 'hé' });
      const r = lastSeen();
      return { keys: Object.keys(r).sort(), url: r.url, method: r.method, headers: r.headers, body: Array.from(r.body), bytes: r.body instanceof Uint8Array, redirect: r.redirect };
    })()`,
    {
      keys: ['body', 'headers', 'method', 'redirect', 'url'],
      url: 'https://api.test/q?x=1',
      method: 'POST',
      bytes: true,
      redirect: 'follow',
      headers: [
        ['x-up', 'v'],
        ['x-multi', 'a'],
        ['content-type', 'text/plain;charset=UTF-8'],
        ['accept', '*/*'],
      ],
      body: [104, 195, 169],
    },
  ],
  [
    'a GET has no body field',
    `(async () => { await fetch('https://x.test/'); const r = lastSeen(); return ['body' in r, r.method, r.headers]; })()`,
    [false, 'GET', [['accept', '*/*']]],
  ],
  [
    'the header list goes as it is: repeated headers apart, a given Accept kept',
    `(async () => { await fetch('https://x.test/', { headers: [['X-A', '1'], ['x-a', '2'], ['Accept', 'application/json']] }); return lastSeen().headers; })()`,
    [
      ['x-a', '1'],
      ['x-a', '2'],
      ['accept', 'application/json'],
    ],
  ],
  [
    'a Headers init is read as its sorted, combined pairs (Fetch "fill")',
    `(async () => { const h = new Headers(); h.append('X-A', '1'); h.append('x-a', '2'); h.append('Accept', 'application/json'); await fetch('https://x.test/', { headers: h }); return lastSeen().headers; })()`,
    [
      ['accept', 'application/json'],
      ['x-a', '1, 2'],
    ],
  ],
  [
    'Content-Type derived from the body',
    `(async () => {
      const types = [];
      for (const body of [new URLSearchParams('a=1'), new Blob(['b'], { type: 'image/png' }), new Uint8Array([1]).buffer, new Blob(['u'])]) {
        await fetch('https://x.test/', { method: 'PUT', body });
        types.push(lastSeen().headers.filter((e) => e[0] === 'content-type').map((e) => e[1]));
      }
      return types;
    })()`,
    [['application/x-www-form-urlencoded;charset=UTF-8'], ['image/png'], [], []],
  ],
  [
    'a given Content-Type is kept',
    `(async () => { await fetch('https://x.test/', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' }); return lastSeen().headers; })()`,
    [
      ['content-type', 'application/json'],
      ['accept', '*/*'],
    ],
  ],
  [
    'a stream body is read whole before the call',
    `(async () => { await fetch('https://x.test/', { method: 'POST', body: ${stream(`[new Uint8Array([1, 2]), new Uint8Array(0), new Uint8Array([3])]`)}, duplex: 'half' }); return Array.from(lastSeen().body); })()`,
    [1, 2, 3],
  ],
  [
    'a stream body of other chunks rejects with a TypeError, the host never called',
    `(async () => { const n = seenCount(); const o = await outcome(fetch('https://x.test/', { method: 'POST', body: ${stream(`['x']`)}, duplex: 'half' })); return [o[0], seenCount() - n]; })()`,
    ['TypeError', 0],
  ],
  [
    'an empty body is an empty Uint8Array',
    `(async () => { await fetch('https://x.test/', { method: 'POST', body: '' }); return [lastSeen().body instanceof Uint8Array, lastSeen().body.length]; })()`,
    [true, 0],
  ],
  [
    'a Request is sent as it is, and its body is used',
    `(async () => { const req = new Request('https://x.test/r', { method: 'PATCH', headers: { a: '1' }, body: 'z' }); await fetch(req); const r = lastSeen(); return [r.method, r.url, r.headers, Array.from(r.body), req.bodyUsed]; })()`,
    [
      'PATCH',
      'https://x.test/r',
      [
        ['a', '1'],
        ['content-type', 'text/plain;charset=UTF-8'],
        ['accept', '*/*'],
      ],
      [122],
      true,
    ],
  ],
  [
    'init overrides the Request',
    `(async () => { await fetch(new Request('https://x.test/', { method: 'POST', body: 'a' }), { method: 'PUT', body: 'b' }); return [lastSeen().method, Array.from(lastSeen().body)]; })()`,
    ['PUT', [98]],
  ],
  [
    'a used Request rejects, the host never called',
    `(async () => { const req = new Request('https://x.test/', { method: 'POST', body: 'a' }); await req.text(); const n = seenCount(); const o = await outcome(fetch(req)); return [o[0], seenCount() - n]; })()`,
    ['TypeError', 0],
  ],
  [
    "redirect: 'follow' and 'manual' as given, 'error' as 'manual'",
    `(async () => { const out = []; for (const redirect of ['follow', 'manual', 'error']) { await fetch('https://x.test/', { redirect }); out.push(lastSeen().redirect); } return out; })()`,
    ['follow', 'manual', 'manual'],
  ],
  [
    'invalid requests reject before the host is called',
    `(async () => { const n = seenCount(); const out = [await outcome(fetch('/relative')), await outcome(fetch('https://x.test/', { method: 'TRACE' })), await outcome(fetch('https://x.test/', { body: 'x' }))]; return [out.map((o) => o[0]), seenCount() - n]; })()`,
    [['TypeError', 'TypeError', 'TypeError'], 0],
  ],
  ['fetch() rejects, it never throws', `(async () => { const p = fetch(); return [p instanceof Promise, (await outcome(p))[0]]; })()`, [true, 'TypeError']],
];

const RECEIVED: Case[] = [
  [
    'the Response: status, statusText, url, redirected, type, headers, body',
    `answering(${answer(`{ status: 201, statusText: 'Created', url: 'https://x.test/final#f', redirected: true, headers: [['X-A', ' 1 '], ['x-a', '2'], ['Set-Cookie', 's=1'], ['set-cookie', 't=2']], body: new TextEncoder().encode('héllo') }`)}, async () => {
      const r = await fetch('https://x.test/start');
      return [r instanceof Response, r.status, r.statusText, r.ok, r.url, r.redirected, r.type, [...r.headers], r.headers.getSetCookie(), await r.text()];
    })`,
    [
      true,
      201,
      'Created',
      true,
      'https://x.test/final',
      true,
      'basic',
      [
        ['set-cookie', 's=1'],
        ['set-cookie', 't=2'],
        ['x-a', '1, 2'],
      ],
      ['s=1', 't=2'],
      'héllo',
    ],
  ],
  [
    'its headers are immutable',
    `(async () => { const h = (await fetch('https://x.test/')).headers; return [thrown(() => h.set('a', '1')), thrown(() => h.append('a', '1')), thrown(() => h.delete('content-type')), h.get('content-type')]; })()`,
    ['TypeError', 'TypeError', 'TypeError', 'text/plain'],
  ],
  [
    'and stay so in a clone',
    `(async () => { const r = await fetch('https://x.test/'); return thrown(() => r.clone().headers.set('a', '1')); })()`,
    'TypeError',
  ],
  [
    'json(), arrayBuffer(), bytes(), blob()',
    `answering(${answer(`{ headers: [['content-type', 'application/json']], body: new TextEncoder().encode('{"a":[1]}') }`)}, async () => {
      const r1 = await fetch('https://x.test/'); const r2 = r1.clone(); const r3 = r1.clone(); const r4 = r1.clone();
      return [await r1.json(), (await r2.arrayBuffer()).byteLength, Array.from(await r3.bytes()).length, (await r4.blob()).type];
    })`,
    [{ a: [1] }, 9, 9, 'application/json'],
  ],
  [
    'the body is a stream of the bytes',
    `(async () => { const r = await fetch('https://x.test/'); const { value } = await r.body.getReader().read(); return [r.body instanceof ReadableStream, Array.from(value), r.bodyUsed]; })()`,
    [true, [111, 107], true],
  ],
  [
    "the body is a copy of the host's bytes",
    `(async () => { const bytes = new Uint8Array([65, 66]); const r = await answering(${answer('{ body: bytes }')}, () => fetch('https://x.test/')); bytes[0] = 90; return r.text(); })()`,
    'AB',
  ],
  [
    'an ArrayBuffer or no body from the host',
    `(async () => [await (await answering(${answer('{ body: new Uint8Array([67]).buffer }')}, () => fetch('https://x.test/'))).text(), await (await answering((req) => ({ status: 200, url: req.url, headers: [] }), () => fetch('https://x.test/'))).text()])()`,
    ['C', ''],
  ],
  [
    'no url from the host: the request URL, without fragment',
    `answering(${answer(`{ url: '' }`)}, async () => (await fetch('https://x.test/a#b')).url)`,
    'https://x.test/a',
  ],
  [
    'a null-body status or a HEAD request has a null body',
    `(async () => [(await answering(${answer('{ status: 204, body: new Uint8Array([1]) }')}, () => fetch('https://x.test/'))).body, (await fetch('https://x.test/', { method: 'HEAD' })).body, (await fetch('https://x.test/')).body === null])()`,
    [null, null, false],
  ],
  [
    'a 404 resolves: HTTP errors are responses',
    `answering(${answer('{ status: 404, statusText: "Not Found" }')}, async () => { const r = await fetch('https://x.test/'); return [r.status, r.ok, r.statusText]; })`,
    [404, false, 'Not Found'],
  ],
  [
    'an invalid answer from the host rejects with a TypeError',
    `(async () => {
      const bad = [null, 'text', { status: 0 }, { status: 199 }, { status: 600 }, { status: '200' }, { status: 200.5 }, { status: 200, headers: [['bad name', 'v']] }, { status: 200, headers: [['a', 'x\\ny']] }, { status: 200, headers: 'a: b' }, { status: 200, body: 'text' }];
      const out = [];
      for (const a of bad) out.push((await answering(() => a, () => outcome(fetch('https://x.test/'))))[0]);
      return out;
    })()`,
    Array(11).fill('TypeError'),
  ],
];

const REDIRECTS: Case[] = [
  [
    "redirect 'error' rejects a redirect answer with a TypeError",
    `(async () => { const out = []; for (const status of [301, 302, 303, 307, 308]) out.push((await answering(${answer('{ status, headers: [["location", "https://x.test/next"]] }')}, () => outcome(fetch('https://x.test/', { redirect: 'error' }))))[0]); return out; })()`,
    Array(5).fill('TypeError'),
  ],
  [
    "redirect 'error' takes other answers",
    `(async () => [await answering(${answer('{ status: 200 }')}, () => outcome(fetch('https://x.test/', { redirect: 'error' }))), await answering(${answer('{ status: 304 }')}, () => outcome(fetch('https://x.test/', { redirect: 'error' })))])()`,
    [200, 304],
  ],
  [
    "redirect 'manual' gives the redirect itself, as server runtimes do",
    `answering(${answer('{ status: 302, headers: [["Location", "/next"]] }')}, async () => { const r = await fetch('https://x.test/', { redirect: 'manual' }); return [r.status, r.type, r.headers.get('location'), r.redirected]; })`,
    [302, 'basic', '/next', false],
  ],
];

const ABORTS: Case[] = [
  [
    'an aborted signal rejects with its reason; the host is never called',
    `(async () => { const n = seenCount(); const reason = { why: 'stop' }; let got; try { await fetch('https://x.test/', { signal: AbortSignal.abort(reason) }); } catch (e) { got = e; } return [got === reason, seenCount() - n]; })()`,
    [true, 0],
  ],
  [
    'the default reason is an AbortError DOMException',
    `outcome(fetch('https://x.test/', { signal: AbortSignal.abort() }))`,
    ['AbortError', 'signal is aborted without reason', true, false],
  ],
  [
    'an aborted Request signal counts too',
    `outcome(fetch(new Request('https://x.test/', { signal: AbortSignal.abort() })))`,
    ['AbortError', 'signal is aborted without reason', true, false],
  ],
  [
    'abort during the call rejects at once; the late answer is ignored',
    `(async () => {
      const c = new AbortController();
      let settled = 'pending';
      const p = answering(() => later(1000, { status: 200, headers: [], body: new Uint8Array(0) }), () => fetch('https://x.test/', { signal: c.signal }));
      p.then(() => { settled = 'resolved'; }, (e) => { settled = e; });
      await later(10);
      c.abort('changed my mind');
      await later(0);
      const atAbort = settled;
      await later(2000);
      return [atAbort, settled];
    })()`,
    ['changed my mind', 'changed my mind'],
  ],
  [
    'each call of the transport has its own id; an abort while the host has the request cancels that id, once',
    `(async () => {
      await fetch('https://x.test/a');
      const first = lastId();
      await fetch('https://x.test/b');
      const second = lastId();
      const c = new AbortController();
      const p = answering(() => later(1000, { status: 200, headers: [], body: new Uint8Array(0) }), () => outcome(fetch('https://x.test/c', { signal: c.signal })));
      await later(10);
      const third = lastId();
      c.abort('stop');
      c.abort('again');
      const o = await p;
      return [second - first, third - second, o, cancelled().filter((id) => id === third).length, cancelled().includes(second)];
    })()`,
    [1, 1, 'stop', 1, false],
  ],
  [
    'an abort before the host has the request cancels nothing',
    `(async () => { const before = cancelled().length; await outcome(fetch('https://x.test/', { signal: AbortSignal.abort() })); return cancelled().length - before; })()`,
    0,
  ],
  [
    'AbortSignal.timeout() on virtual time',
    `answering(() => later(60000, { status: 200, headers: [] }), () => outcome(fetch('https://x.test/', { signal: AbortSignal.timeout(50) })))`,
    ['TimeoutError', 'signal timed out', true, false],
  ],
  [
    'abort while the request body streams cancels the stream',
    `(async () => {
      const c = new AbortController();
      let cancelled;
      const body = new ReadableStream({ pull(ctl) { return later(10).then(() => ctl.enqueue(new Uint8Array([1]))); }, cancel(reason) { cancelled = reason; } });
      const n = seenCount();
      const p = outcome(fetch('https://x.test/', { method: 'POST', body, duplex: 'half', signal: c.signal }));
      await later(35);
      c.abort('enough');
      const o = await p;
      await later(20);
      return [o, cancelled, seenCount() - n];
    })()`,
    ['enough', 'enough', 0],
  ],
];

const FAILURES: Case[] = [
  [
    'a rejection named AbortError becomes an AbortError DOMException',
    `answering(() => Promise.reject({ name: 'AbortError', message: 'the runtime closed' }), () => outcome(fetch('https://x.test/')))`,
    ['AbortError', 'the runtime closed', true, false],
  ],
  [
    'any other rejection becomes a TypeError with its message, nothing added',
    `answering(() => Promise.reject(new RangeError("fetch refused by the host's egress policy: https://x.test/ is not allowed")), () => outcome(fetch('https://x.test/')))`,
    ['TypeError', "fetch refused by the host's egress policy: https://x.test/ is not allowed", false, true],
  ],
  ['a rejection with a string', `answering(() => Promise.reject('no route'), () => outcome(fetch('https://x.test/')))`, ['TypeError', 'no route', false, true]],
  [
    'a transport that throws synchronously',
    `answering(() => { throw new Error('sync'); }, () => outcome(fetch('https://x.test/')))`,
    ['TypeError', 'sync', false, true],
  ],
  [
    'the transport global is gone before guest code; a new one changes nothing',
    `(async () => { const before = [typeof __strataFetch, Object.getOwnPropertyNames(globalThis).includes('__strataFetch'), typeof __strataFetchCancel]; const n = seenCount(); globalThis.__strataFetch = () => Promise.reject(new Error('guest transport')); const o = await outcome(fetch('https://x.test/')); delete globalThis.__strataFetch; return [before, o, seenCount() - n]; })()`,
    [['undefined', false, 'undefined'], 200, 1],
  ],
];

caseSuites(
  {
    'fetch: what the host receives': SENT,
    'fetch: what the guest gets': RECEIVED,
    'fetch: redirects': REDIRECTS,
    'fetch: aborts': ABORTS,
    'fetch: transport failures': FAILURES,
  },
  { before: TRANSPORT },
);

const NO_NETWORK =
  "fetch is not available: the host gave this sandbox no network access (Strata: pass an egress policy, e.g. egress: { allow: ['https://api.example.com/*'] })";

const NO_TRANSPORT: Case[] = [
  [
    'fetch is a global function all the same',
    `[typeof fetch, fetch.name, fetch.length, Object.getOwnPropertyDescriptor(globalThis, 'fetch').enumerable]`,
    ['function', 'fetch', 1, false],
  ],
  [
    'it rejects with a TypeError saying why',
    `fetch('https://x.test/').then(() => 'resolved', (e) => [e.name, e.message, e instanceof TypeError])`,
    ['TypeError', NO_NETWORK, true],
  ],
  [
    'an invalid request still rejects for what it is',
    `fetch('/relative').then(() => 'resolved', (e) => [e.name, /Invalid URL/.test(e.message)])`,
    ['TypeError', true],
  ],
  ['an aborted signal still wins', `fetch('https://x.test/', { signal: AbortSignal.abort('r') }).then(() => 'resolved', (e) => e)`, 'r'],
  [
    'a transport defined after the bootstrap is not used',
    `(async () => { globalThis.__strataFetch = () => Promise.resolve({ status: 200, headers: [] }); try { return await fetch('https://x.test/').then(() => 'resolved', (e) => e.message === ${JSON.stringify(NO_NETWORK)}); } finally { delete globalThis.__strataFetch; } })()`,
    true,
  ],
  ['Request and Response work without a network', `new Response(new Request('https://x.test/', { method: 'POST', body: 'b' }).body).text()`, 'b'],
];

caseSuites({ 'fetch without a transport': NO_TRANSPORT });
caseSuites(
  {
    'fetch with a transport that is not a function': [
      [
        'it is ignored and deleted all the same',
        `(async () => [typeof __strataFetch, await fetch('https://x.test/').then(() => 'resolved', (e) => e.message === ${JSON.stringify(NO_NETWORK)})])()`,
        ['undefined', true],
      ],
    ],
  },
  { before: `globalThis.__strataFetch = 'not a function';` },
);

test('FETCH_GLOBAL and FETCH_CANCEL_GLOBAL name the transport globals', (t) => {
  t.is(FETCH_GLOBAL, '__strataFetch');
  t.is(FETCH_CANCEL_GLOBAL, '__strataFetchCancel');
});

test('undici parses the multipart body the host receives', async (t) => {
  const s = await createSandbox({ before: TRANSPORT });
  try {
    s.value(GUEST_HELPERS);
    const r = await s.run<{ type: string; bytes: number[] }>(`(async () => {
      const fd = new FormData();
      fd.append('field', 'v\\nw');
      fd.append('file', new File(['<svg/>'], 'pic "1".svg', { type: 'image/svg+xml' }));
      await fetch('https://x.test/upload', { method: 'POST', body: fd });
      const seen = lastSeen();
      return { type: seen.headers.find((e) => e[0] === 'content-type')[1], bytes: Array.from(seen.body) };
    })()`);
    const { type, bytes } = r.value!;
    t.regex(type, /^multipart\/form-data; boundary=/);
    const parsed = await new Response(new Uint8Array(bytes), { headers: { 'content-type': type } }).formData();
    const file = parsed.get('file') as File;
    t.deepEqual([parsed.get('field'), file.name, file.type, await file.text()], ['v\r\nw', 'pic "1".svg', 'image/svg+xml', '<svg/>']);
  } finally {
    s.dispose();
  }
});

test('a host function as the transport: the request is copied out, the answer copied in', async (t) => {
  const received: unknown[] = [];
  const transport = (request: { url: string; body?: Uint8Array }) => {
    received.push(request);
    return {
      status: 200,
      statusText: 'OK',
      url: request.url,
      redirected: false,
      headers: [['content-type', 'application/json']],
      body: new TextEncoder().encode('{"host":true}'),
    };
  };
  const s = await createSandbox({ setup: (context) => context.global.set('__strataFetch', new ivm.Callback(transport)) });
  try {
    const r = await s.run(`(async () => {
      const res = await fetch('https://host.test/api', { method: 'POST', headers: { 'x-k': 'v' }, body: new Uint8Array([1, 2, 3]) });
      return [typeof __strataFetch, res.status, await res.json()];
    })()`);
    t.deepEqual(r.value, ['undefined', 200, { host: true }]);
    t.is(received.length, 1);
    const request = received[0] as { url: string; method: string; headers: unknown; body: Uint8Array; redirect: string };
    t.deepEqual(
      [request.url, request.method, request.headers, request.redirect],
      [
        'https://host.test/api',
        'POST',
        [
          ['x-k', 'v'],
          ['accept', '*/*'],
        ],
        'follow',
      ],
    );
    t.true(request.body instanceof Uint8Array);
    t.deepEqual([...request.body], [1, 2, 3]);
  } finally {
    s.dispose();
  }
});
