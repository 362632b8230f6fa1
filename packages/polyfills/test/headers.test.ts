// Conformance of Headers as the guest sees it, written from the Fetch standard (§5.2 Headers
// class, §2.2.2 headers: header name = token, header value normalisation, "sort and combine")
// and WebIDL (ByteString, record and sequence conversion, pair iterators).
import { caseSuites, type Case } from './helpers/fetch-cases.js';

const NAMES_AND_VALUES: Case[] = [
  [
    'names are case-insensitive',
    `(() => { const h = new Headers(); h.append('X-Trace', '1'); return [h.get('x-trace'), h.get('X-TRACE'), h.has('x-TrAcE')]; })()`,
    ['1', '1', true],
  ],
  ['a missing header is null', `new Headers().get('a')`, null],
  ['leading and trailing HTTP whitespace is stripped', `new Headers({ a: ' \\t\\r\\n 1  2 \\t\\n' }).get('a')`, '1  2'],
  ['a value of whitespace only is empty', `new Headers({ a: ' \\t ' }).get('a')`, ''],
  ['other whitespace is kept', `new Headers({ a: '\\u00a0x\\u00a0' }).get('a')`, '\u00a0x\u00a0'],
  ['bytes 0x80-0xFF are valid values', `new Headers({ a: 'caf\\u00e9' }).get('a')`, 'café'],
  ['every token character is a valid name', `new Headers([["!#$%&'*+-.^_\`|~09azAZ", 'v']]).get("!#$%&'*+-.^_\`|~09azAZ")`, 'v'],
  [
    'names that are not tokens throw',
    `['a b', 'a:b', '', 'a\\u00e9', '(a)', 'a/b', 'a"b', 'a\\tb'].map((n) => thrown(() => new Headers([[n, 'v']])))`,
    Array(8).fill('TypeError'),
  ],
  ['a name above U+00FF is not a ByteString', `thrown(() => new Headers().append('\\u0100', 'v'))`, 'TypeError'],
  [
    'values with CR, LF or NUL inside throw',
    `['a\\nb', 'a\\rb', 'a\\u0000b'].map((v) => thrown(() => new Headers().append('a', v)))`,
    ['TypeError', 'TypeError', 'TypeError'],
  ],
  ['a value above U+00FF throws', `thrown(() => new Headers().set('a', '\\u20ac'))`, 'TypeError'],
  [
    'get and has validate the name',
    `[thrown(() => new Headers().get('a b')), thrown(() => new Headers().has('')), thrown(() => new Headers().delete('x y'))]`,
    ['TypeError', 'TypeError', 'TypeError'],
  ],
  [
    'values are converted to strings',
    `(() => { const h = new Headers(); h.append('n', 42); h.append('o', { toString: () => 'x' }); return [h.get('n'), h.get('o')]; })()`,
    ['42', 'x'],
  ],
  [
    'arguments are required',
    `[thrown(() => new Headers().append('a')), thrown(() => new Headers().set('a')), thrown(() => new Headers().get()), thrown(() => new Headers().has()), thrown(() => new Headers().delete())]`,
    Array(5).fill('TypeError'),
  ],
];

const LIST: Case[] = [
  [
    'get combines values with ", " in order',
    `(() => { const h = new Headers(); h.append('a', '1'); h.append('A', '2'); h.append('a', ''); return h.get('a'); })()`,
    '1, 2, ',
  ],
  [
    'set replaces every value',
    `(() => { const h = new Headers([['a', '1'], ['b', 'x'], ['a', '2']]); h.set('A', '3'); return [h.get('a'), [...h]]; })()`,
    [
      '3',
      [
        ['a', '3'],
        ['b', 'x'],
      ],
    ],
  ],
  ['set adds a missing header', `(() => { const h = new Headers(); h.set('a', '1'); return [...h]; })()`, [['a', '1']]],
  [
    'delete removes every value',
    `(() => { const h = new Headers([['a', '1'], ['b', '2'], ['A', '3']]); h.delete('a'); return [h.has('a'), [...h]]; })()`,
    [false, [['b', '2']]],
  ],
  ['deleting a missing header is fine', `(() => { const h = new Headers(); h.delete('a'); return [...h]; })()`, []],
  [
    'getSetCookie keeps each cookie apart, in order',
    `new Headers([['Set-Cookie', 'b=2'], ['x', '1'], ['set-cookie', 'a=1, c=3']]).getSetCookie()`,
    ['b=2', 'a=1, c=3'],
  ],
  ['get still combines Set-Cookie', `new Headers([['set-cookie', 'a=1'], ['set-cookie', 'b=2']]).get('set-cookie')`, 'a=1, b=2'],
  ['getSetCookie without any is empty', `new Headers({ a: '1' }).getSetCookie()`, []],
];

const ITERATION: Case[] = [
  [
    'sorted by lower-case name, values combined, Set-Cookie apart',
    `[...new Headers([['Z', '1'], ['set-cookie', 's1'], ['a', '2'], ['B', '3'], ['Set-Cookie', 's2'], ['a', '4']])]`,
    [
      ['a', '2, 4'],
      ['b', '3'],
      ['set-cookie', 's1'],
      ['set-cookie', 's2'],
      ['z', '1'],
    ],
  ],
  [
    'names sort by code unit: "-" and digits before letters',
    `[...new Headers([['b', '1'], ['a-b', '2'], ['a', '3'], ['a1', '4'], ['ab', '5']]).keys()]`,
    ['a', 'a-b', 'a1', 'ab', 'b'],
  ],
  [
    'keys, values and entries',
    `(() => { const h = new Headers({ b: '2', a: '1' }); return [[...h.keys()], [...h.values()], [...h.entries()]]; })()`,
    [
      ['a', 'b'],
      ['1', '2'],
      [
        ['a', '1'],
        ['b', '2'],
      ],
    ],
  ],
  [
    'forEach gives value, key and the headers',
    `(() => { const h = new Headers({ b: '2', a: '1' }); const out = []; h.forEach(function (v, k, o) { out.push([v, k, o === h, this.t]); }, { t: 'this' }); return out; })()`,
    [
      ['1', 'a', true, 'this'],
      ['2', 'b', true, 'this'],
    ],
  ],
  ['forEach needs a function', `thrown(() => new Headers().forEach(1))`, 'TypeError'],
  [
    'iteration is live: an append shows up at its sorted place',
    `(() => { const h = new Headers({ a: '1', c: '3' }); const it = h.keys(); const first = it.next().value; h.append('b', '2'); return [first, it.next().value, it.next().value, it.next().done]; })()`,
    ['a', 'b', 'c', true],
  ],
  [
    'the iterator is a WebIDL "Headers Iterator"',
    `(() => { const it = new Headers().entries(); const iteratorProto = Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]())); return [Object.prototype.toString.call(it), Object.getPrototypeOf(Object.getPrototypeOf(it)) === iteratorProto, Object.keys(Object.getPrototypeOf(it)), it.next()]; })()`,
    ['[object Headers Iterator]', true, ['next'], { done: true }],
  ],
  ['@@iterator is entries', `Headers.prototype[Symbol.iterator] === Headers.prototype.entries`, true],
  ['an iterator checks its receiver', `thrown(() => new Headers().keys().next.call({}))`, 'TypeError'],
];

const INIT: Case[] = [
  [
    'from a record',
    `[...new Headers({ 'Content-Type': 'text/plain', 'x-a': ' 1 ' })]`,
    [
      ['content-type', 'text/plain'],
      ['x-a', '1'],
    ],
  ],
  ['from a sequence of pairs', `[...new Headers([['x', '1'], ['X', '2']])]`, [['x', '1, 2']]],
  ['from any iterable of iterables', `[...new Headers(new Map([['a', '1']]))]`, [['a', '1']]],
  [
    'from Headers: a copy, not a view',
    `(() => { const a = new Headers({ x: '1' }); const b = new Headers(a); a.set('x', '2'); b.append('y', '3'); return [[...a], [...b]]; })()`,
    [
      [['x', '2']],
      [
        ['x', '1'],
        ['y', '3'],
      ],
    ],
  ],
  ['from Headers: Set-Cookie values stay apart', `new Headers(new Headers([['set-cookie', 'a'], ['set-cookie', 'b']])).getSetCookie()`, ['a', 'b']],
  ['a pair of one or three items throws', `[thrown(() => new Headers([['a']])), thrown(() => new Headers([['a', 'b', 'c']]))]`, ['TypeError', 'TypeError']],
  ['an item that is not an object throws', `[thrown(() => new Headers(['ab'])), thrown(() => new Headers([1]))]`, ['TypeError', 'TypeError']],
  [
    'init must be an object',
    `[thrown(() => new Headers(null)), thrown(() => new Headers('a')), thrown(() => new Headers(1)), thrown(() => new Headers(undefined))]`,
    ['TypeError', 'TypeError', 'TypeError', 'none'],
  ],
  [
    'a record reads own enumerable keys only',
    `(() => { const o = Object.create({ inherited: '1' }); Object.defineProperty(o, 'hidden', { value: '2', enumerable: false }); o.own = '3'; return [...new Headers(o)]; })()`,
    [['own', '3']],
  ],
  ['an enumerable symbol key throws', `thrown(() => new Headers({ [Symbol('s')]: 'v' }))`, 'TypeError'],
  ['a non-callable @@iterator throws', `thrown(() => new Headers({ [Symbol.iterator]: 1 }))`, 'TypeError'],
];

const GUARDS: Case[] = [
  [
    'Response.error() headers are immutable',
    `(() => { const h = Response.error().headers; return [thrown(() => h.append('a', '1')), thrown(() => h.set('a', '1')), thrown(() => h.delete('a')), [...h]]; })()`,
    ['TypeError', 'TypeError', 'TypeError', []],
  ],
  [
    'Response.redirect() headers are immutable but readable',
    `(() => { const h = Response.redirect('https://x.test/next').headers; return [thrown(() => h.set('location', 'https://evil.test/')), h.get('location')]; })()`,
    ['TypeError', 'https://x.test/next'],
  ],
  [
    "a Response's own headers are mutable, Set-Cookie included",
    `(() => { const h = new Response().headers; h.append('Set-Cookie', 'a=1'); h.set('x', '1'); return [...h]; })()`,
    [
      ['set-cookie', 'a=1'],
      ['x', '1'],
    ],
  ],
  [
    'no forbidden request headers in the guest: the host decides',
    `(() => { const r = new Request('https://x.test/', { headers: { host: 'y', cookie: 'c=1', 'content-length': '5', 'user-agent': 'me', origin: 'o' } }); return [...r.headers].map((e) => e[0]); })()`,
    ['content-length', 'cookie', 'host', 'origin', 'user-agent'],
  ],
  ["a Request's headers are mutable", `(() => { const r = new Request('https://x.test/'); r.headers.set('x', '1'); return r.headers.get('x'); })()`, '1'],
];

const INTERFACE: Case[] = [
  [
    'WebIDL looks',
    `[Object.prototype.toString.call(new Headers()), Headers.name, Headers.length, Object.keys(Headers.prototype).sort()]`,
    ['[object Headers]', 'Headers', 0, ['append', 'delete', 'entries', 'forEach', 'get', 'getSetCookie', 'has', 'keys', 'set', 'values']],
  ],
  [
    'a global like the others',
    `(() => { const d = Object.getOwnPropertyDescriptor(globalThis, 'Headers'); return [d.writable, d.enumerable, d.configurable]; })()`,
    [true, false, true],
  ],
  [
    'methods check their receiver',
    `[thrown(() => Headers.prototype.get.call({}, 'a')), thrown(() => Headers.prototype.append.call(new Map(), 'a', 'b')), thrown(() => Headers.prototype.entries.call({}))]`,
    ['TypeError', 'TypeError', 'TypeError'],
  ],
  ['Headers is not cloneable', `thrown(() => structuredClone(new Headers()))`, 'DataCloneError'],
  ['Headers needs new', `thrown(() => Headers())`, 'TypeError'],
];

caseSuites({
  'Headers: names and values': NAMES_AND_VALUES,
  'Headers: the header list': LIST,
  'Headers: iteration': ITERATION,
  'Headers: init': INIT,
  'Headers: guards': GUARDS,
  'Headers: interface': INTERFACE,
});
