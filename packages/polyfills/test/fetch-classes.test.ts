// Conformance of Request, Response and the Body mixin as the guest sees them, written from the
// Fetch standard (§5.3 Body mixin, §5.4 Request class, §5.5 Response class, "extract a body"),
// with the server-runtime conventions of WinterTC (no CORS, no forbidden headers, no window).
import { caseSuites, stream, type Case } from './helpers/fetch-cases.js';

const REQUEST: Case[] = [
  ['the URL is parsed and serialised', `new Request('HTTPS://Example.COM:443/a/../b?q=1#frag').url`, 'https://example.com/b?q=1#frag'],
  ['a URL object is converted to its string', `new Request(new URL('https://x.test/p')).url`, 'https://x.test/p'],
  [
    'a relative URL has no base here',
    `[thrown(() => new Request('/path')), thrown(() => new Request('path')), thrown(() => new Request(''))]`,
    ['TypeError', 'TypeError', 'TypeError'],
  ],
  ['an invalid URL throws a TypeError', `thrown(() => new Request('https://a b/'))`, 'TypeError'],
  [
    'a URL with credentials throws',
    `[thrown(() => new Request('https://user:pw@x.test/')), thrown(() => new Request('https://user@x.test/'))]`,
    ['TypeError', 'TypeError'],
  ],
  [
    'the defaults',
    `(() => { const r = new Request('https://x.test/'); return [r.method, r.mode, r.credentials, r.cache, r.redirect, r.referrer, r.referrerPolicy, r.integrity, r.keepalive, r.destination, r.duplex, r.isReloadNavigation, r.isHistoryNavigation, r.body, r.bodyUsed, [...r.headers]]; })()`,
    ['GET', 'cors', 'same-origin', 'default', 'follow', 'about:client', '', '', false, '', 'half', false, false, null, false, []],
  ],
  [
    'the six standard methods are upper-cased',
    `['get', 'post', 'put', 'delete', 'head', 'options'].map((m) => new Request('https://x.test/', { method: m }).method)`,
    ['GET', 'POST', 'PUT', 'DELETE', 'HEAD', 'OPTIONS'],
  ],
  [
    'other methods are kept as given (PATCH too)',
    `['patch', 'Propfind', 'MKCOL'].map((m) => new Request('https://x.test/', { method: m }).method)`,
    ['patch', 'Propfind', 'MKCOL'],
  ],
  [
    'CONNECT, TRACE and TRACK are forbidden, in any case',
    `['connect', 'TRACE', 'Track'].map((m) => thrown(() => new Request('https://x.test/', { method: m })))`,
    ['TypeError', 'TypeError', 'TypeError'],
  ],
  [
    'a method must be a token',
    `['', 'GE T', 'G\\u00e9T', 'a/b'].map((m) => thrown(() => new Request('https://x.test/', { method: m })))`,
    Array(4).fill('TypeError'),
  ],
  [
    'GET and HEAD cannot have a body',
    `[thrown(() => new Request('https://x.test/', { body: 'x' })), thrown(() => new Request('https://x.test/', { method: 'head', body: '' })), thrown(() => new Request('https://x.test/', { body: null }))]`,
    ['TypeError', 'TypeError', 'none'],
  ],
  [
    'enum members are checked',
    `[['mode', 'x'], ['credentials', 'x'], ['cache', 'x'], ['redirect', 'x'], ['referrerPolicy', 'x'], ['duplex', 'full'], ['priority', 'x']].map(([k, v]) => thrown(() => new Request('https://x.test/', { [k]: v })))`,
    Array(7).fill('TypeError'),
  ],
  [
    'valid enum members are kept',
    `(() => { const r = new Request('https://x.test/', { mode: 'same-origin', credentials: 'omit', cache: 'no-store', redirect: 'manual', referrerPolicy: 'no-referrer', integrity: 'sha256-x', keepalive: 1 }); return [r.mode, r.credentials, r.cache, r.redirect, r.referrerPolicy, r.integrity, r.keepalive]; })()`,
    ['same-origin', 'omit', 'no-store', 'manual', 'no-referrer', 'sha256-x', true],
  ],
  ["mode 'navigate' cannot be set", `thrown(() => new Request('https://x.test/', { mode: 'navigate' }))`, 'TypeError'],
  [
    "'only-if-cached' needs mode 'same-origin'",
    `[thrown(() => new Request('https://x.test/', { cache: 'only-if-cached' })), thrown(() => new Request('https://x.test/', { cache: 'only-if-cached', mode: 'same-origin' }))]`,
    ['TypeError', 'none'],
  ],
  [
    "mode 'no-cors' allows only GET, HEAD and POST",
    `[thrown(() => new Request('https://x.test/', { mode: 'no-cors', method: 'PUT' })), new Request('https://x.test/', { mode: 'no-cors', method: 'post' }).method]`,
    ['TypeError', 'POST'],
  ],
  [
    'the referrer',
    `['', 'about:client', 'https://r.test/p?q'].map((v) => new Request('https://x.test/', { referrer: v }).referrer)`,
    ['', 'about:client', 'https://r.test/p?q'],
  ],
  ['a relative referrer throws', `thrown(() => new Request('https://x.test/', { referrer: '/from' }))`, 'TypeError'],
  [
    'window may only be null',
    `[thrown(() => new Request('https://x.test/', { window: {} })), thrown(() => new Request('https://x.test/', { window: null }))]`,
    ['TypeError', 'none'],
  ],
  ['init must be an object', `[thrown(() => new Request('https://x.test/', 1)), thrown(() => new Request('https://x.test/', null))]`, ['TypeError', 'none']],
  ['an argument is required', `thrown(() => new Request())`, 'TypeError'],
  [
    'RequestInit members are read in WebIDL order, once',
    `(() => { const seen = []; const init = new Proxy({}, { get(_, k) { if (typeof k === 'string') seen.push(k); return undefined; } }); new Request('https://x.test/', init); return seen; })()`,
    [
      'body',
      'cache',
      'credentials',
      'duplex',
      'headers',
      'integrity',
      'keepalive',
      'method',
      'mode',
      'priority',
      'redirect',
      'referrer',
      'referrerPolicy',
      'signal',
      'window',
    ],
  ],
];

const REQUEST_SIGNAL: Case[] = [
  [
    'a request always has its own signal',
    `(() => { const r = new Request('https://x.test/'); return [r.signal instanceof AbortSignal, r.signal.aborted, r.signal === new Request(r).signal]; })()`,
    [true, false, false],
  ],
  [
    'it follows init.signal',
    `(() => { const c = new AbortController(); const r = new Request('https://x.test/', { signal: c.signal }); const before = r.signal.aborted; c.abort('why'); return [r.signal === c.signal, before, r.signal.aborted, r.signal.reason]; })()`,
    [false, false, true, 'why'],
  ],
  ['an aborted init.signal gives an aborted signal', `new Request('https://x.test/', { signal: AbortSignal.abort('r') }).signal.reason`, 'r'],
  [
    "it follows the input request's signal",
    `(() => { const c = new AbortController(); const r = new Request(new Request('https://x.test/', { signal: c.signal })); c.abort('up'); return r.signal.reason; })()`,
    'up',
  ],
  [
    'init.signal null stops following',
    `(() => { const c = new AbortController(); const r = new Request(new Request('https://x.test/', { signal: c.signal }), { signal: null }); c.abort(); return r.signal.aborted; })()`,
    false,
  ],
  [
    'init.signal must be an AbortSignal',
    `[thrown(() => new Request('https://x.test/', { signal: {} })), thrown(() => new Request('https://x.test/', { signal: new AbortController() }))]`,
    ['TypeError', 'TypeError'],
  ],
  [
    "a clone's signal follows the original's",
    `(() => { const c = new AbortController(); const r = new Request('https://x.test/', { signal: c.signal }).clone(); c.abort('c'); return r.signal.reason; })()`,
    'c',
  ],
];

const REQUEST_COPY: Case[] = [
  [
    'a Request from a Request copies it',
    `(() => { const a = new Request('https://x.test/a', { method: 'PUT', headers: { x: '1' }, redirect: 'manual', mode: 'same-origin', credentials: 'include', cache: 'reload', integrity: 'i', keepalive: true }); const b = new Request(a); return [b.url, b.method, [...b.headers], b.redirect, b.mode, b.credentials, b.cache, b.integrity, b.keepalive]; })()`,
    ['https://x.test/a', 'PUT', [['x', '1']], 'manual', 'same-origin', 'include', 'reload', 'i', true],
  ],
  [
    'its headers are a copy',
    `(() => { const a = new Request('https://x.test/', { headers: { x: '1' } }); const b = new Request(a); b.headers.set('x', '2'); return [a.headers.get('x'), b.headers.get('x')]; })()`,
    ['1', '2'],
  ],
  [
    'init overrides, and init.headers replaces all headers',
    `(() => { const a = new Request('https://x.test/', { method: 'POST', headers: { x: '1' } }); const b = new Request(a, { method: 'DELETE', headers: { y: '2' } }); return [b.method, [...b.headers]]; })()`,
    ['DELETE', [['y', '2']]],
  ],
  [
    'a non-empty init resets the referrer',
    `[new Request(new Request('https://x.test/', { referrer: 'https://r.test/' })).referrer, new Request(new Request('https://x.test/', { referrer: 'https://r.test/' }), { method: 'GET' }).referrer]`,
    ['https://r.test/', 'about:client'],
  ],
  [
    'it takes the body, which leaves the input used',
    `(async () => { const a = new Request('https://x.test/', { method: 'POST', body: 'abc' }); const b = new Request(a); return [a.bodyUsed, b.bodyUsed, b.headers.get('content-type'), await b.text(), await rejected(a.text())]; })()`,
    [true, false, 'text/plain;charset=UTF-8', 'abc', 'TypeError'],
  ],
  [
    'a used input throws',
    `(async () => { const a = new Request('https://x.test/', { method: 'POST', body: 'abc' }); await a.text(); return thrown(() => new Request(a)); })()`,
    'TypeError',
  ],
  [
    'a new body leaves the input alone',
    `(async () => { const a = new Request('https://x.test/', { method: 'POST', body: 'abc' }); const b = new Request(a, { body: 'new' }); return [a.bodyUsed, await b.text(), await a.text()]; })()`,
    [false, 'new', 'abc'],
  ],
  [
    'a stream body taken from an input',
    `(async () => { const a = new Request('https://x.test/', { method: 'POST', body: ${stream(`[new Uint8Array([104, 105])]`)}, duplex: 'half' }); const b = new Request(a); return [a.bodyUsed || a.body.locked, await b.text()]; })()`,
    [true, 'hi'],
  ],
  [
    'GET from an input with a body throws',
    `thrown(() => new Request(new Request('https://x.test/', { method: 'POST', body: 'x' }), { method: 'GET' }))`,
    'TypeError',
  ],
  [
    'clone gives the same request and body',
    `(async () => { const a = new Request('https://x.test/p', { method: 'POST', body: 'abc', headers: { x: '1' } }); const b = a.clone(); b.headers.set('x', '2'); return [b.url, b.method, await a.text(), await b.text(), a.headers.get('x'), b instanceof Request]; })()`,
    ['https://x.test/p', 'POST', 'abc', 'abc', '1', true],
  ],
  [
    'clone of a used request throws',
    `(async () => { const a = new Request('https://x.test/', { method: 'POST', body: 'abc' }); await a.text(); return thrown(() => a.clone()); })()`,
    'TypeError',
  ],
];

const RESPONSE: Case[] = [
  [
    'the defaults',
    `(() => { const r = new Response(); return [r.status, r.ok, r.statusText, r.type, r.url, r.redirected, r.body, r.bodyUsed, [...r.headers]]; })()`,
    [200, true, '', 'default', '', false, null, false, []],
  ],
  [
    'status and statusText',
    `(() => { const r = new Response('x', { status: 404, statusText: 'Not Found' }); return [r.status, r.ok, r.statusText]; })()`,
    [404, false, 'Not Found'],
  ],
  ['ok is 200 to 299', `[200, 299, 300, 199 + 2, 599].map((s) => new Response(null, { status: s }).ok)`, [true, true, false, true, false]],
  [
    'a status outside 200-599 is a RangeError',
    `[0, 100, 199, 600, 999, -1].map((s) => thrown(() => new Response(null, { status: s })))`,
    Array(6).fill('RangeError'),
  ],
  [
    'status is a WebIDL unsigned short',
    `[new Response(null, { status: 200.9 }).status, new Response(null, { status: '404' }).status, new Response(null, { status: 65536 + 201 }).status]`,
    [200, 404, 201],
  ],
  [
    'statusText must be a reason phrase',
    `[thrown(() => new Response(null, { statusText: 'a\\nb' })), thrown(() => new Response(null, { statusText: '\\u0100' })), thrown(() => new Response(null, { statusText: '\\t OK \\u00e9' }))]`,
    ['TypeError', 'TypeError', 'none'],
  ],
  [
    'null-body statuses cannot have a body, even an empty one',
    `[204, 205, 304].map((s) => [thrown(() => new Response('', { status: s })), new Response(null, { status: s }).body])`,
    [
      ['TypeError', null],
      ['TypeError', null],
      ['TypeError', null],
    ],
  ],
  ['headers from init', `[...new Response(null, { headers: [['X-A', '1'], ['x-a', '2']] }).headers]`, [['x-a', '1, 2']]],
  [
    'Response.error()',
    `(() => { const r = Response.error(); return [r.type, r.status, r.ok, r.statusText, r.body, r.url]; })()`,
    ['error', 0, false, '', null, ''],
  ],
  [
    'Response.redirect()',
    `(() => { const r = Response.redirect('https://x.test/a b?q#f'); return [r.status, r.headers.get('location'), r.body, r.type]; })()`,
    [302, 'https://x.test/a%20b?q#f', null, 'default'],
  ],
  [
    'Response.redirect() takes the five redirect statuses only',
    `[301, 302, 303, 307, 308].map((s) => Response.redirect('https://x.test/', s).status).concat([300, 304, 200, 399].map((s) => thrown(() => Response.redirect('https://x.test/', s))))`,
    [301, 302, 303, 307, 308, 'RangeError', 'RangeError', 'RangeError', 'RangeError'],
  ],
  ['Response.redirect() needs an absolute URL', `thrown(() => Response.redirect('/relative'))`, 'TypeError'],
  [
    'Response.json()',
    `(async () => { const r = Response.json({ a: [1, 'é'] }, { status: 201, headers: { 'x-y': 'z' } }); return [r.status, [...r.headers], await r.text()]; })()`,
    [
      201,
      [
        ['content-type', 'application/json'],
        ['x-y', 'z'],
      ],
      '{"a":[1,"é"]}',
    ],
  ],
  [
    'Response.json() keeps a given Content-Type',
    `Response.json(1, { headers: { 'Content-Type': 'application/vnd.api+json' } }).headers.get('content-type')`,
    'application/vnd.api+json',
  ],
  [
    'Response.json() of what JSON cannot serialise throws',
    `[thrown(() => Response.json(undefined)), thrown(() => Response.json(() => 1)), thrown(() => Response.json(1n)), thrown(() => Response.json(Symbol()))]`,
    Array(4).fill('TypeError'),
  ],
  [
    'clone',
    `(async () => { const a = new Response('abc', { status: 201, statusText: 'C', headers: { x: '1' } }); const b = a.clone(); return [b.status, b.statusText, b.headers.get('x'), await a.text(), await b.text(), b.type]; })()`,
    [201, 'C', '1', 'abc', 'abc', 'default'],
  ],
  ['clone of a used response throws', `(async () => { const a = new Response('abc'); await a.arrayBuffer(); return thrown(() => a.clone()); })()`, 'TypeError'],
  ['clone keeps immutable headers immutable', `thrown(() => Response.error().clone().headers.set('a', 'b'))`, 'TypeError'],
];

const BODY_INIT: Case[] = [
  [
    'a string: UTF-8, text/plain',
    `(async () => { const r = new Response('hé€'); return [r.headers.get('content-type'), Array.from(await r.bytes())]; })()`,
    ['text/plain;charset=UTF-8', [104, 195, 169, 226, 130, 172]],
  ],
  ['a lone surrogate becomes U+FFFD', `(async () => Array.from(await new Response('\\ud800').bytes()))()`, [239, 191, 189]],
  [
    'an ArrayBuffer: copied, no Content-Type',
    `(async () => { const b = new Uint8Array([1, 2, 3]); const r = new Response(b.buffer); b[0] = 9; return [r.headers.get('content-type'), Array.from(await r.bytes())]; })()`,
    [null, [1, 2, 3]],
  ],
  [
    'a view: only its bytes, copied',
    `(async () => { const all = new Uint8Array([0, 1, 2, 3, 4]); const r = new Response(all.subarray(1, 3)); all[1] = 9; return Array.from(await r.bytes()); })()`,
    [1, 2],
  ],
  [
    'a DataView and a Uint16Array',
    `(async () => [Array.from(await new Response(new DataView(new Uint8Array([7, 8, 9]).buffer, 1)).bytes()), (await new Response(new Uint16Array([0x6261])).text())])()`,
    [[8, 9], 'ab'],
  ],
  [
    'a Blob: its bytes and its type',
    `(async () => { const r = new Response(new Blob(['<b>'], { type: 'Text/HTML' })); return [r.headers.get('content-type'), await r.text()]; })()`,
    ['text/html', '<b>'],
  ],
  ['an untyped Blob: no Content-Type', `new Response(new Blob(['x'])).headers.get('content-type')`, null],
  [
    'URLSearchParams: urlencoded',
    `(async () => { const r = new Response(new URLSearchParams({ a: 'b c', d: 'é&' })); return [r.headers.get('content-type'), await r.text()]; })()`,
    ['application/x-www-form-urlencoded;charset=UTF-8', 'a=b+c&d=%C3%A9%26'],
  ],
  [
    'FormData: multipart with the boundary',
    `(async () => { const fd = new FormData(); fd.append('k', 'v'); const r = new Response(fd); const type = r.headers.get('content-type'); const boundary = type.split('boundary=')[1]; const text = await r.text(); return [type.startsWith('multipart/form-data; boundary='), text.startsWith('--' + boundary + '\\r\\n'), text.endsWith('--' + boundary + '--\\r\\n')]; })()`,
    [true, true, true],
  ],
  [
    'other values become strings',
    `(async () => [await new Response(42).text(), await new Response({}).text(), await new Response(new Response('inner')).text()])()`,
    ['42', '[object Object]', '[object Response]'],
  ],
  [
    'a Content-Type given in init wins',
    `new Response('x', { headers: { 'content-type': 'application/custom' } }).headers.get('content-type')`,
    'application/custom',
  ],
  [
    'the body is fixed at construction',
    `(async () => { const fd = new FormData(); fd.append('a', '1'); const r = new Response(fd); fd.append('b', '2'); return [...(await r.formData()).keys()]; })()`,
    ['a'],
  ],
];

const BODY_READ: Case[] = [
  ['text() drops a UTF-8 BOM and replaces invalid bytes', `new Response(new Uint8Array([0xef, 0xbb, 0xbf, 0x61, 0xff, 0x62])).text()`, 'a\ufffdb'],
  ['json()', `new Response('{"a":[1,null]}').json()`, { a: [1, null] }],
  ['json() of invalid JSON rejects with a SyntaxError', `rejected(new Response('{').json())`, 'SyntaxError'],
  [
    'arrayBuffer() and bytes() give fresh copies',
    `(async () => { const r = new Response('ab'); const c = r.clone(); const a = await r.arrayBuffer(); const b = await c.bytes(); return [a instanceof ArrayBuffer, a.byteLength, b instanceof Uint8Array, Array.from(b)]; })()`,
    [true, 2, true, [97, 98]],
  ],
  [
    'blob() has the MIME type of Content-Type, serialised',
    `(async () => (await new Response('x', { headers: { 'content-type': 'Text/HTML; Charset="utf-8"; a=b' } }).blob()).type)()`,
    'text/html;charset=utf-8;a=b',
  ],
  [
    'blob() of a response without a valid Content-Type is untyped',
    `(async () => [(await new Response(new Uint8Array(1)).blob()).type, (await new Response('x', { headers: { 'content-type': 'nonsense' } }).blob()).type])()`,
    ['', ''],
  ],
  [
    "Content-Type's last valid value wins, keeping an earlier charset",
    `(async () => (await new Response('x', { headers: [['content-type', 'text/html;charset=gbk'], ['content-type', 'text/html']] }).blob()).type)()`,
    'text/html;charset=gbk',
  ],
  [
    'blob() keeps the bytes',
    `(async () => { const b = await new Response(new Uint8Array([0, 255])).blob(); return [b instanceof Blob, Array.from(await b.bytes())]; })()`,
    [true, [0, 255]],
  ],
  ['formData() of a body that is no form rejects', `rejected(new Response('a=1').formData())`, 'TypeError'],
  [
    'a body can be read once',
    `(async () => { const r = new Response('x'); const first = await r.text(); return [first, r.bodyUsed, await rejected(r.text()), await rejected(r.json()), await rejected(r.arrayBuffer()), await rejected(r.blob())]; })()`,
    ['x', true, 'TypeError', 'TypeError', 'TypeError', 'TypeError'],
  ],
  ['bodyUsed is true as soon as a read starts', `(() => { const r = new Response('x'); r.text(); return r.bodyUsed; })()`, true],
  [
    'no body reads as empty, any number of times',
    `(async () => { const r = new Response(null); return [await r.text(), await r.text(), (await r.arrayBuffer()).byteLength, r.bodyUsed]; })()`,
    ['', '', 0, false],
  ],
  [
    'the body methods check their receiver, by rejecting',
    `(async () => [await rejected(Response.prototype.text.call({})), await rejected(Request.prototype.json.call(new Response('1')))])()`,
    ['TypeError', 'TypeError'],
  ],
];

const BODY_STREAM: Case[] = [
  [
    'body is a ReadableStream of the bytes, the same each time',
    `(async () => { const r = new Response('héllo'); const s = r.body; const reader = s.getReader(); const chunks = []; for (;;) { const { done, value } = await reader.read(); if (done) break; chunks.push(...value); } return [s instanceof ReadableStream, s === r.body, chunks]; })()`,
    [true, true, [104, 195, 169, 108, 108, 111]],
  ],
  [
    'reading the stream uses the body',
    `(async () => { const r = new Response('x'); await r.body.getReader().read(); return [r.bodyUsed, await rejected(r.text())]; })()`,
    [true, 'TypeError'],
  ],
  [
    'a locked stream makes the body unusable but not used',
    `(async () => { const r = new Response('x'); r.body.getReader(); return [r.bodyUsed, await rejected(r.text()), thrown(() => r.clone())]; })()`,
    [false, 'TypeError', 'TypeError'],
  ],
  [
    'asking for the stream does not use the body',
    `(async () => { const r = new Response('abc'); r.body; return [r.bodyUsed, await r.text()]; })()`,
    [false, 'abc'],
  ],
  [
    'after text(), the stream is empty',
    `(async () => { const r = new Response('abc'); await r.text(); const s = r.body; return [s instanceof ReadableStream, (await s.getReader().read()).done]; })()`,
    [true, true],
  ],
  [
    'the body stream takes a BYOB reader',
    `(async () => { const reader = new Response('hello').body.getReader({ mode: 'byob' }); const { value } = await reader.read(new Uint8Array(3)); return Array.from(value); })()`,
    [104, 101, 108],
  ],
  [
    'a large body comes in chunks of at most 64 KiB',
    `(async () => { const reader = new Response(new Uint8Array(200000)).body.getReader(); const sizes = []; for (;;) { const { done, value } = await reader.read(); if (done) break; sizes.push(value.length); } return sizes; })()`,
    [65536, 65536, 65536, 3392],
  ],
  [
    'a ReadableStream body is the body',
    `(() => { const s = ${stream('[]')}; const r = new Response(s); return [r.body === s, r.headers.get('content-type')]; })()`,
    [true, null],
  ],
  ['a stream body is read whole', `new Response(${stream(`[new Uint8Array([104, 105]), new Uint8Array(0), new Uint8Array([33])]`)}).text()`, 'hi!'],
  ['a stream body of other chunks rejects', `rejected(new Response(${stream(`['text']`)}).text())`, 'TypeError'],
  [
    'an erroring stream body rejects with its error',
    `rejected(new Response(new ReadableStream({ pull(c) { c.error(new RangeError('boom')); } })).text())`,
    'RangeError',
  ],
  [
    'a locked or disturbed stream cannot be a body',
    `(async () => { const a = ${stream('[]')}; a.getReader(); const b = ${stream(`[new Uint8Array(1)]`)}; await b.getReader().read().then(() => 0); const c = ${stream('[]')}; await c.cancel(); return [thrown(() => new Response(a)), thrown(() => new Response(c))]; })()`,
    ['TypeError', 'TypeError'],
  ],
  [
    'a stream read by the guest leaves the body used',
    `(async () => { const s = ${stream(`[new Uint8Array([1]), new Uint8Array([2])]`)}; const r = new Response(s); const reader = s.getReader(); await reader.read(); reader.releaseLock(); return [r.bodyUsed, await rejected(r.text())]; })()`,
    [true, 'TypeError'],
  ],
  [
    'clone tees a stream body',
    `(async () => { const a = new Response(${stream(`[new Uint8Array([65]), new Uint8Array([66])]`)}); const b = a.clone(); return [await b.text(), await a.text()]; })()`,
    ['AB', 'AB'],
  ],
  [
    'clone of a body whose stream was asked for',
    `(async () => { const a = new Response('xy'); a.body; const b = a.clone(); return [await a.text(), await b.text()]; })()`,
    ['xy', 'xy'],
  ],
  [
    'a Request stream body needs duplex: half',
    `[thrown(() => new Request('https://x.test/', { method: 'POST', body: ${stream('[]')} })), thrown(() => new Request('https://x.test/', { method: 'POST', body: ${stream('[]')}, duplex: 'half' }))]`,
    ['TypeError', 'none'],
  ],
  [
    'a keepalive request cannot have a stream body',
    `thrown(() => new Request('https://x.test/', { method: 'POST', body: ${stream('[]')}, duplex: 'half', keepalive: true }))`,
    'TypeError',
  ],
  [
    'a Request stream body is read whole',
    `new Request('https://x.test/', { method: 'POST', body: ${stream(`[new Uint8Array([111]), new Uint8Array([107])]`)}, duplex: 'half' }).text()`,
    'ok',
  ],
  [
    'a Request has its body as a stream too',
    `(async () => { const r = new Request('https://x.test/', { method: 'POST', body: 'q' }); return [r.body instanceof ReadableStream, Array.from((await r.body.getReader().read()).value)]; })()`,
    [true, [113]],
  ],
];

const INTERFACES: Case[] = [
  [
    'Request looks like WebIDL',
    `[Object.prototype.toString.call(new Request('https://x.test/')), Request.length, Object.keys(Request.prototype).sort()]`,
    [
      '[object Request]',
      1,
      [
        'arrayBuffer',
        'blob',
        'body',
        'bodyUsed',
        'bytes',
        'cache',
        'clone',
        'credentials',
        'destination',
        'duplex',
        'formData',
        'headers',
        'integrity',
        'isHistoryNavigation',
        'isReloadNavigation',
        'json',
        'keepalive',
        'method',
        'mode',
        'redirect',
        'referrer',
        'referrerPolicy',
        'signal',
        'text',
        'url',
      ],
    ],
  ],
  [
    'Response looks like WebIDL',
    `[Object.prototype.toString.call(new Response()), Response.length, Object.keys(Response.prototype).sort(), Object.keys(Response).sort()]`,
    [
      '[object Response]',
      0,
      [
        'arrayBuffer',
        'blob',
        'body',
        'bodyUsed',
        'bytes',
        'clone',
        'formData',
        'headers',
        'json',
        'ok',
        'redirected',
        'status',
        'statusText',
        'text',
        'type',
        'url',
      ],
      ['error', 'json', 'redirect'],
    ],
  ],
  [
    'each class has its own body methods',
    `Request.prototype.text !== Response.prototype.text && Object.getPrototypeOf(Request.prototype) === Object.prototype`,
    true,
  ],
  [
    'getters check their receiver',
    `[thrown(() => Object.getOwnPropertyDescriptor(Request.prototype, 'url').get.call({})), thrown(() => Object.getOwnPropertyDescriptor(Response.prototype, 'status').get.call(new Request('https://x.test/')))]`,
    ['TypeError', 'TypeError'],
  ],
  [
    'neither is cloneable',
    `[thrown(() => structuredClone(new Request('https://x.test/'))), thrown(() => structuredClone(new Response()))]`,
    ['DataCloneError', 'DataCloneError'],
  ],
  ['the headers object is the same each time', `(() => { const r = new Response(); return r.headers === r.headers && r.headers instanceof Headers; })()`, true],
];

caseSuites({
  'Request: construction': REQUEST,
  'Request: signal': REQUEST_SIGNAL,
  'Request: from a Request, clone': REQUEST_COPY,
  Response: RESPONSE,
  'Body: extracting a body': BODY_INIT,
  'Body: reading': BODY_READ,
  'Body: streams': BODY_STREAM,
  'Request and Response: interfaces': INTERFACES,
});
