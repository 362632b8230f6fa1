import { readFileSync } from 'node:fs';
import test from 'ava';
import { LAZY_GLOBALS } from '../src/index.js';
import { createSandbox, MODES, type Sandbox, type SandboxOptions } from './helpers/isolate.js';

// Conformance of URL, URLSearchParams and URLPattern as the guest sees them, written from the
// WHATWG URL and URLPattern standards. Each case is [what, guest expression, expected value];
// `thrown(fn)` gives the name of the error `fn` throws, or 'none'.
type Case = readonly [what: string, expression: string, expected: unknown];

const HELPERS = `globalThis.thrown = (fn) => { try { fn(); return 'none'; } catch (e) { return e?.constructor?.name ?? typeof e; } }; 0`;

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

const RELATIVE: Case[] = [
  ['dot-dot segment', `new URL('../a', 'http://x/b/c').href`, 'http://x/a'],
  ['sibling', `new URL('d', 'http://x/b/c').href`, 'http://x/b/d'],
  ['query only keeps the path', `new URL('?q', 'http://x/b/c?z#f').href`, 'http://x/b/c?q'],
  ['fragment only keeps the query', `new URL('#h', 'http://x/b?z').href`, 'http://x/b?z#h'],
  ['scheme-relative', `new URL('//y/z', 'https://x/a').href`, 'https://y/z'],
  ['absolute path', `new URL('/p/./q/../r', 'http://x/a/b').pathname`, '/p/r'],
  ['RFC 3986 example', `new URL('g;x?y#s', 'http://a/b/c/d;p?q').href`, 'http://a/b/c/g;x?y#s'],
  ['too many dot-dots stop at the root', `new URL('../../../g', 'http://a/b/c/d').href`, 'http://a/g'],
  ['encoded dot segments count', `new URL('http://x/a/%2e%2E/b').pathname`, '/b'],
  ['an absolute input ignores the base', `new URL('https://y/', 'http://x/').href`, 'https://y/'],
  ['base given as a URL object', `new URL('c', new URL('http://x/a/b')).href`, 'http://x/a/c'],
];

const HOSTS: Case[] = [
  ['IDNA to punycode', `new URL('http://münchen.de').host`, 'xn--mnchen-3ya.de'],
  ['punycode stays', `new URL('http://xn--mnchen-3ya.de/').hostname`, 'xn--mnchen-3ya.de'],
  ['hosts are lower-cased', `new URL('http://EXAMPLE.com/').host`, 'example.com'],
  ['full-width letters and dots map', `new URL('http://\\uFF25\\uFF38\\uFF21\\uFF2D\\uFF30\\uFF2C\\uFF25\\u3002com/').host`, 'example.com'],
  [
    'IDNA in the hostname setter',
    `(() => { const u = new URL('http://x/'); u.hostname = 'bücher.example'; return u.href; })()`,
    'http://xn--bcher-kva.example/',
  ],
  ['a space in the host throws', `thrown(() => new URL('http://a b/'))`, 'TypeError'],
  ['a forbidden code point throws', `thrown(() => new URL('http://a<b/'))`, 'TypeError'],
  ['IPv6 with port', `(() => { const u = new URL('http://[::1]:8080/'); return [u.host, u.hostname, u.port]; })()`, ['[::1]:8080', '[::1]', '8080']],
  ['IPv6 compressed', `new URL('http://[0:0::1]/').hostname`, '[::1]'],
  ['IPv6 longest zero run compressed', `new URL('http://[2001:db8:0:0:1:0:0:1]/').hostname`, '[2001:db8::1:0:0:1]'],
  ['IPv6 upper case lowered', `new URL('http://[ABCD::EF]/').hostname`, '[abcd::ef]'],
  ['IPv4-mapped IPv6 in hex', `new URL('http://[::ffff:192.168.0.1]/').hostname`, '[::ffff:c0a8:1]'],
  ['unclosed IPv6 throws', `thrown(() => new URL('http://[::1/'))`, 'TypeError'],
  ['invalid IPv6 throws', `thrown(() => new URL('http://[1:2:3:4:5:6:7:8:9]/'))`, 'TypeError'],
  ['IPv4 hex and short forms', `new URL('http://0x7f.1/').host`, '127.0.0.1'],
  ['IPv4 as one number', `new URL('http://2130706433/').host`, '127.0.0.1'],
  ['IPv4 octal parts', `new URL('http://0300.0250.0.1/').host`, '192.168.0.1'],
  ['IPv4 out of range throws', `thrown(() => new URL('http://256.256.256.256/'))`, 'TypeError'],
  ['IPv4 with five parts throws', `thrown(() => new URL('http://1.2.3.4.5/'))`, 'TypeError'],
  ['not a number: a domain', `new URL('http://1.2.3.a/').host`, '1.2.3.a'],
];

const ENCODING: Case[] = [
  ['spaces in path, query and fragment', `new URL('http://x/a b?c d#e f').href`, 'http://x/a%20b?c%20d#e%20f'],
  ['non-ASCII path as UTF-8', `new URL('http://x/é').pathname`, '/%C3%A9'],
  ['non-ASCII query as UTF-8', `new URL('http://x/?q=€').search`, '?q=%E2%82%AC'],
  ['path percent-encode set', `new URL('http://x/<a>"{b}"').pathname`, '/%3Ca%3E%22%7Bb%7D%22'],
  ['a special query encodes the apostrophe', `new URL("http://x/?'").search`, '?%27'],
  ['a non-special query does not', `new URL("foo://x/?'").search`, "?'"],
  ['fragment encode set', `new URL('http://x/#a\`b<c').hash`, '#a%60b%3Cc'],
  ['existing escapes are not decoded', `new URL('http://x/%41%2f').pathname`, '/%41%2f'],
  ['userinfo encoded', `(() => { const u = new URL('http://x/'); u.username = 'a@b'; u.password = 'c:d'; return u.href; })()`, 'http://a%40b:c%3Ad@x/'],
  ['tab and newline are removed', `new URL('http://x/a\\tb\\nc').pathname`, '/abc'],
  ['surrounding spaces are trimmed', `new URL('  http://x/  ').href`, 'http://x/'],
  ['lone surrogate becomes U+FFFD', `new URL('http://x/\\uD800').pathname`, '/%EF%BF%BD'],
];

const SCHEMES: Case[] = [
  ['scheme lower-cased', `new URL('HTTP://X/').protocol`, 'http:'],
  ['default port dropped', `[new URL('http://x:80/').port, new URL('https://x:443/').host, new URL('ws://x:80/').host]`, ['', 'x', 'x']],
  ['other ports kept', `new URL('http://x:8080/').port`, '8080'],
  ['a special URL gets a path', `new URL('http://x').pathname`, '/'],
  ['backslash is a slash in special URLs', `new URL('http://x\\\\a\\\\b').pathname`, '/a/b'],
  ['not in non-special ones', `new URL('foo://x/a\\\\b').pathname`, '/a\\b'],
  ['a non-special host is opaque (case kept)', `new URL('foo://Host/a').host`, 'Host'],
  [
    'opaque path',
    `(() => { const u = new URL('mailto:Someone@Example.com'); return [u.protocol, u.pathname, u.host]; })()`,
    ['mailto:', 'Someone@Example.com', ''],
  ],
  ['origin of a special URL', `new URL('https://x:8443/p?q').origin`, 'https://x:8443'],
  ['origin of a non-special URL', `new URL('foo://x/').origin`, 'null'],
  ['file URL', `(() => { const u = new URL('file:///C:/a/../b'); return [u.host, u.pathname]; })()`, ['', '/C:/b']],
  ['port setter ignores a default port', `(() => { const u = new URL('http://x:81/'); u.port = '80'; return u.host; })()`, 'x'],
  ['protocol setter cannot leave special schemes', `(() => { const u = new URL('http://x/'); u.protocol = 'foo'; return u.protocol; })()`, 'http:'],
  ['protocol setter between special schemes', `(() => { const u = new URL('http://x/'); u.protocol = 'https'; return u.href; })()`, 'https://x/'],
  [
    'toString, toJSON and String()',
    `[String(new URL('http://x')), JSON.stringify({ u: new URL('http://x') }), new URL('http://x').toJSON()]`,
    ['http://x/', '{"u":"http://x/"}', 'http://x/'],
  ],
];

const INVALID: Case[] = [
  ['no scheme', `thrown(() => new URL('no scheme'))`, 'TypeError'],
  ['empty', `thrown(() => new URL(''))`, 'TypeError'],
  ['relative without a base', `thrown(() => new URL('/relative'))`, 'TypeError'],
  ['special scheme without a host', `thrown(() => new URL('http://'))`, 'TypeError'],
  ['an invalid base', `thrown(() => new URL('a', 'not a url'))`, 'TypeError'],
  ['no argument', `thrown(() => new URL())`, 'TypeError'],
  ['a bad port', `thrown(() => new URL('http://x:99999/'))`, 'TypeError'],
  ['canParse', `[URL.canParse('http://x'), URL.canParse('x'), URL.canParse('x', 'http://y'), URL.canParse('x', 'bad')]`, [true, false, true, false]],
  ['URL.parse', `[URL.parse('x'), URL.parse('b', 'http://y/a')?.href]`, [null, 'http://y/b']],
  ['called without new', `thrown(() => URL('http://x'))`, 'TypeError'],
];

const SEARCH_PARAMS: Case[] = [
  ['searchParams writes through', `(() => { const u = new URL('http://x/?a=1'); u.searchParams.append('b', '2 3'); return u.href; })()`, 'http://x/?a=1&b=2+3'],
  [
    'search writes back',
    `(() => { const u = new URL('http://x/?a=1'); const p = u.searchParams; u.search = '?c=3'; return [p.get('c'), p.has('a'), p === u.searchParams]; })()`,
    ['3', false, true],
  ],
  [
    'emptied params clear the query',
    `(() => { const u = new URL('http://x/?a=1#f'); u.searchParams.delete('a'); return [u.search, u.href]; })()`,
    ['', 'http://x/#f'],
  ],
  [
    'href setter updates the params',
    `(() => { const u = new URL('http://x/'); const p = u.searchParams; u.href = 'http://y/?k=v'; return p.get('k'); })()`,
    'v',
  ],
  [
    'sort is stable, by code units',
    `(() => { const p = new URLSearchParams('z=1&a=2&a=1&\\u00e9=3&b=0&\\uD83D\\uDE00=4&\\uFFFD=5'); p.sort(); return [...p.keys()]; })()`,
    ['a', 'a', 'b', 'z', '\u00e9', '\uD83D\uDE00', '\uFFFD'],
  ],
  ['sort keeps values in order', `(() => { const p = new URLSearchParams('b=1&a=2&a=1'); p.sort(); return p.toString(); })()`, 'a=2&a=1&b=1'],
  ['application/x-www-form-urlencoded serialising', `new URLSearchParams({ q: 'a b&c=d/é*~-._' }).toString()`, 'q=a+b%26c%3Dd%2F%C3%A9*%7E-._'],
  ['parsing + and escapes', `new URLSearchParams('a=b+c%20d&e%3D=%zz').get('a') + '|' + new URLSearchParams('e%3D=%zz').get('e=')`, 'b c d|%zz'],
  ['leading ? is ignored', `new URLSearchParams('?x=1').get('x')`, '1'],
  [
    'iteration in order',
    `[...new URLSearchParams('a=1&b=2&a=3')]`,
    [
      ['a', '1'],
      ['b', '2'],
      ['a', '3'],
    ],
  ],
  [
    'entries, values, forEach',
    `(() => { const p = new URLSearchParams([['a', '1'], ['b', '2']]); const seen = []; p.forEach((v, k) => seen.push(k + v)); return [[...p.values()], [...p.entries()].length, seen]; })()`,
    [['1', '2'], 2, ['a1', 'b2']],
  ],
  [
    'getAll, get of a missing key, size',
    `(() => { const p = new URLSearchParams('a=1&a=2&b='); return [p.getAll('a'), p.get('c'), p.get('b'), p.size]; })()`,
    [['1', '2'], null, '', 3],
  ],
  ['set replaces the first and drops the rest', `(() => { const p = new URLSearchParams('a=1&b=2&a=3'); p.set('a', '9'); return p.toString(); })()`, 'a=9&b=2'],
  [
    'has and delete with a value',
    `(() => { const p = new URLSearchParams('a=1&a=2'); p.delete('a', '1'); return [p.has('a', '2'), p.has('a', '1'), p.toString()]; })()`,
    [true, false, 'a=2'],
  ],
  ['from a record', `new URLSearchParams({ x: 1, y: true }).toString()`, 'x=1&y=true'],
  ['from another URLSearchParams', `new URLSearchParams(new URLSearchParams('a=1')).toString()`, 'a=1'],
  ['a pair that is not a pair throws', `thrown(() => new URLSearchParams([['a']]))`, 'TypeError'],
  [
    'iterators are iterators',
    `(() => { const it = new URLSearchParams('a=1').keys(); return [typeof it.next, it[Symbol.iterator]() === it, Object.prototype.toString.call(it)]; })()`,
    ['function', true, '[object URLSearchParams Iterator]'],
  ],
];

const PATTERN: Case[] = [
  ['named group', `new URLPattern({ pathname: '/books/:id' }).exec('https://example.com/books/123').pathname.groups`, { id: '123' }],
  [
    'test',
    `[new URLPattern({ pathname: '/books/:id' }).test('https://e.com/books/1'), new URLPattern({ pathname: '/books/:id' }).test('https://e.com/films/1')]`,
    [true, false],
  ],
  [
    'string pattern with a base and a regexp group',
    `new URLPattern('/users/:user/posts/:post(\\\\d+)', 'https://x.com').exec('https://x.com/users/ann/posts/42').pathname.groups`,
    { user: 'ann', post: '42' },
  ],
  ['regexp group refuses', `new URLPattern('/posts/:post(\\\\d+)', 'https://x.com').test('https://x.com/posts/abc')`, false],
  ['wildcard in the hostname', `new URLPattern({ hostname: '*.example.com' }).exec({ hostname: 'a.b.example.com' }).hostname.groups`, { 0: 'a.b' }],
  [
    'optional group',
    `[new URLPattern({ pathname: '/a/:x?' }).test({ pathname: '/a' }), new URLPattern({ pathname: '/a/:x?' }).test({ pathname: '/a/b' })]`,
    [true, true],
  ],
  ['exec of a mismatch is null', `new URLPattern({ pathname: '/a' }).exec({ pathname: '/b' })`, null],
  [
    'components of the pattern',
    `(() => { const p = new URLPattern('https://:sub.example.com/x/*\\\\?q=:q'); return [p.protocol, p.hostname, p.pathname, p.search]; })()`,
    ['https', ':sub.example.com', '/x/*', 'q=:q'],
  ],
  ['a ? after * is a modifier, not the search', `new URLPattern('https://x.com/*?q').pathname`, '/*?q'],
  ['an invalid pattern throws TypeError', `thrown(() => new URLPattern({ pathname: '/((' }))`, 'TypeError'],
  ['input is matched after URL parsing', `new URLPattern({ pathname: '/caf%C3%A9' }).test('https://x/café')`, true],
  // Ports and hostnames are canonicalised by the URL parser, as the standard says: digits up to the
  // first other code point (tab and newline dropped), a host up to the first / ? # or \.
  [
    'an input port is read as the URL parser reads it',
    `['80', '8\\t0', '80x', '80/x', '080'].map((port) => new URLPattern({ port: '80' }).exec({ port })?.port.input ?? null)`,
    ['80', '80', '80', '80', '80'],
  ],
  [
    'a port pattern never matches another port',
    `['8080', '8', 'x80', ' 80', '100000', '', '\\t'].map((port) => new URLPattern({ port: '80' }).test({ port }))`,
    [false, false, false, false, false, false, false],
  ],
  [
    'a port pattern is canonicalised too',
    `[new URLPattern({ port: '80 ' }).port, new URLPattern({ port: '8\\t0' }).port, thrown(() => new URLPattern({ port: ' 80' })), thrown(() => new URLPattern({ port: '65536' }))]`,
    ['80', '80', 'TypeError', 'TypeError'],
  ],
  [
    'the default port of the protocol is empty',
    `[new URLPattern({ protocol: 'http', port: '' }).test({ protocol: 'http', port: '8\\t0' }), new URLPattern({ protocol: 'http', port: '80' }).port]`,
    [true, ''],
  ],
  [
    'a hostname ends where a URL host ends',
    `[new URLPattern({ hostname: 'example.com/path' }).hostname, new URLPattern({ hostname: 'bad#x' }).hostname, new URLPattern({ hostname: 'a\\nb' }).hostname, new URLPattern({ hostname: 'x.com' }).test({ hostname: 'x.com/evil' })]`,
    ['example.com', 'bad', 'ab', true],
  ],
  [
    'a hostname the URL parser refuses matches nothing',
    `['a:b', 'a b', 'a%b', '[::1]x'].map((hostname) => new URLPattern({ hostname: '*' }).test({ hostname }))`,
    [false, false, false, false],
  ],
  [
    'a group name is read by code point',
    `[new URLPattern({ pathname: '/:\\u{20000}' }).exec({ pathname: '/foo' })?.pathname.groups, new URLPattern({ pathname: '/:a\\u{10450}b' }).pathname]`,
    [{ '\u{20000}': 'foo' }, '/:a\u{10450}b'],
  ],
  [
    'a ? or # in an input pathname is part of the path, not its end',
    `[new URLPattern({ pathname: '/admin' }).test({ pathname: '/admin?x' }), new URLPattern({ pathname: '/admin' }).test({ pathname: '/admin#x' }), new URLPattern({ pathname: '/admin*' }).exec({ pathname: '/admin?x' })?.pathname.input]`,
    [false, false, '/admin%3Fx'],
  ],
  [
    'a backslash in a pathname is a character, not a separator',
    `[new URLPattern({ pathname: '/a\\\\\\\\b' }).pathname, new URLPattern({ pathname: '/a\\\\\\\\b' }).test({ pathname: '/a\\\\b' }), new URLPattern({ pathname: '/a/b' }).test({ pathname: '/a\\\\b' })]`,
    ['/a\\\\b', true, false],
  ],
  [
    'a search or hash of a URL loses only its separator',
    `[new URLPattern({ search: 'a' }).test('https://x/??a'), new URLPattern({ hash: 'a' }).test('https://x/##a'), new URLPattern({ search: '\\\\?a' }).test('https://x/??a')]`,
    [false, false, true],
  ],
  [
    'a protocol starts with a letter',
    `[thrown(() => new URLPattern({ protocol: '-' })), thrown(() => new URLPattern({ protocol: '1http' })), new URLPattern({ protocol: 'HTTP' }).protocol]`,
    ['TypeError', 'TypeError', 'http'],
  ],
  [
    'a pattern ending in a lone backslash is a TypeError',
    `[thrown(() => new URLPattern({ pathname: '/a\\\\' })), thrown(() => new URLPattern({ port: '80\\\\' })), thrown(() => new URLPattern({ pathname: '/a\\\\\\\\' }))]`,
    ['TypeError', 'TypeError', 'none'],
  ],
  [
    'a regexp group has the v flag (class set operations)',
    `[new URLPattern({ pathname: '/([\\\\d&&[0-1]])' }).test({ pathname: '/1' }), new URLPattern({ pathname: '/([\\\\d&&[0-1]])' }).test({ pathname: '/3' })]`,
    [true, false],
  ],
];

const GLOBALS: Case[] = [
  ['self is the global object', `self === globalThis`, true],
  ['no window, no document', `[typeof window, typeof document, 'window' in globalThis]`, ['undefined', 'undefined', false]],
  ['navigator.userAgent', `navigator.userAgent`, `Strata/${VERSION}`],
  [
    'navigator has nothing else',
    `[Object.keys(Object.getPrototypeOf(navigator)), Object.keys(navigator), String(navigator), typeof Navigator]`,
    [['userAgent'], [], '[object Navigator]', 'undefined'],
  ],
  [
    'URL classes look like WebIDL interfaces',
    `[Object.prototype.toString.call(new URL('http://x')), new URL('http://x') instanceof URL, URL.name, Object.prototype.toString.call(new URLSearchParams())]`,
    ['[object URL]', true, 'URL', '[object URLSearchParams]'],
  ],
];

const SUITES: Record<string, Case[]> = {
  'relative resolution': RELATIVE,
  hosts: HOSTS,
  'percent-encoding': ENCODING,
  'special and non-special schemes': SCHEMES,
  'invalid input': INVALID,
  URLSearchParams: SEARCH_PARAMS,
  URLPattern: PATTERN,
  'global scope': GLOBALS,
};

async function sandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const s = await createSandbox(options);
  s.value(HELPERS);
  return s;
}

for (const [mode, options] of MODES) {
  for (const [suite, cases] of Object.entries(SUITES)) {
    test(`${suite}${mode}`, async (t) => {
      const s = await sandbox(options);
      try {
        for (const [what, expression, expected] of cases) {
          t.deepEqual(s.value(`JSON.parse(JSON.stringify(${expression}))`), expected, `${what}: ${expression}`);
        }
      } finally {
        s.dispose();
      }
    });
  }
}

test('the URL globals are accessors until first used, then data properties', async (t) => {
  const s = await sandbox();
  try {
    // The URL group of the lazy globals (the streams group is test/streams.test.ts's).
    const lazy = LAZY_GLOBALS.filter((k) => k.startsWith('URL'));
    t.deepEqual(lazy, ['URL', 'URLSearchParams', 'URLPattern']);
    const shape = `JSON.stringify(${JSON.stringify(lazy)}.map((k) => { const d = Object.getOwnPropertyDescriptor(globalThis, k); return [k, 'value' in d, d.writable, d.enumerable, d.configurable]; }))`;
    t.deepEqual(
      JSON.parse(s.value(shape)),
      lazy.map((k) => [k, false, null, false, true]),
    );
    t.is(s.value(`typeof URLPattern`), 'function');
    t.deepEqual(
      JSON.parse(s.value(shape)),
      lazy.map((k) => [k, true, true, false, true]),
    );
  } finally {
    s.dispose();
  }
});

test('a guest may replace or delete a URL global before using another one', async (t) => {
  const s = await sandbox();
  try {
    t.deepEqual(
      s.value(`(() => {
        globalThis.URL = 'mine';
        delete globalThis.URLPattern;
        const params = new URLSearchParams('a=1').get('a');
        return [URL, typeof URLPattern, 'URLPattern' in globalThis, params, Object.getOwnPropertyDescriptor(globalThis, 'URL').writable];
      })()`),
      ['mine', 'undefined', false, '1', true],
    );
  } finally {
    s.dispose();
  }
});

test('the URL code keeps the bootstrap encoders whatever the guest does to the globals', async (t) => {
  const s = await sandbox();
  try {
    t.deepEqual(
      s.value(`(() => {
        globalThis.TextEncoder = class { encode() { return new Uint8Array(0); } };
        delete globalThis.TextDecoder;
        globalThis.Buffer = { from() { throw new Error('not Node'); } };
        const u = new URL('http://x/é?q=ü');
        return [u.pathname, u.search, u.searchParams.get('q')];
      })()`),
      ['/%C3%A9', '?q=%C3%BC', 'ü'],
    );
  } finally {
    s.dispose();
  }
});

test('URL works when the host removed SharedArrayBuffer, before or after the bootstrap', async (t) => {
  const remove = `delete globalThis.SharedArrayBuffer;`;
  for (const options of [{}, { before: remove }]) {
    const s = await sandbox(options);
    try {
      s.value(`${remove} 0`);
      t.is(s.value(`new URL('http://münchen.de/?a=1').href`), 'http://xn--mnchen-3ya.de/?a=1');
    } finally {
      s.dispose();
    }
  }
});

test('contexts load their own URL classes', async (t) => {
  const a = await sandbox();
  const b = await sandbox();
  try {
    a.value(`URL.prototype.marked = true; 0`);
    t.is(b.value(`new URL('http://x').marked`), undefined);
    t.is(a.value(`new URL('http://x').marked`), true);
  } finally {
    a.dispose();
    b.dispose();
  }
});
