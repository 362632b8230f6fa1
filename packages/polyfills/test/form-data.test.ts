// FormData (XHR standard), File (File API), the HTML multipart/form-data encoding and Fetch's
// multipart/form-data and urlencoded parsers, as the guest sees them. The encoding is checked
// against another implementation both ways: Node's undici parses what the guest serialises, and
// the guest parses what undici serialises.
import test from 'ava';
import { caseSuites, GUEST_HELPERS, type Case } from './helpers/fetch-cases.js';
import { createSandbox, type Sandbox } from './helpers/isolate.js';

const FORM_DATA: Case[] = [
  [
    'append, get, getAll, has',
    `(() => { const fd = new FormData(); fd.append('a', '1'); fd.append('b', '2'); fd.append('a', '3'); return [fd.get('a'), fd.getAll('a'), fd.has('b'), fd.has('c'), fd.get('c'), fd.getAll('c')]; })()`,
    ['1', ['1', '3'], true, false, null, []],
  ],
  ['names are case-sensitive', `(() => { const fd = new FormData(); fd.append('A', '1'); return [fd.has('a'), fd.get('A')]; })()`, [false, '1']],
  [
    'set replaces the first entry in place and drops the others',
    `(() => { const fd = new FormData(); fd.append('a', '1'); fd.append('b', '2'); fd.append('a', '3'); fd.set('a', '4'); return [...fd]; })()`,
    [
      ['a', '4'],
      ['b', '2'],
    ],
  ],
  [
    'set appends a new name',
    `(() => { const fd = new FormData(); fd.append('a', '1'); fd.set('b', '2'); return [...fd]; })()`,
    [
      ['a', '1'],
      ['b', '2'],
    ],
  ],
  [
    'delete removes every entry of the name',
    `(() => { const fd = new FormData(); fd.append('a', '1'); fd.append('b', '2'); fd.append('a', '3'); fd.delete('a'); return [...fd]; })()`,
    [['b', '2']],
  ],
  [
    'values are converted to strings; no newline normalisation yet',
    `(() => { const fd = new FormData(); fd.append('n', 1); fd.append('o', { toString: () => 'x' }); fd.append('l', 'a\\nb\\rc'); return [...fd]; })()`,
    [
      ['n', '1'],
      ['o', 'x'],
      ['l', 'a\nb\rc'],
    ],
  ],
  [
    'names and values are USVStrings',
    `(() => { const fd = new FormData(); fd.append('\\ud800', '\\udc00x'); return [...fd.keys()][0] === '\\ufffd' && fd.get('\\ufffd') === '\\ufffdx'; })()`,
    true,
  ],
  [
    'a Blob becomes a File named "blob", keeping its type and bytes',
    `(async () => { const fd = new FormData(); fd.append('f', new Blob(['abc'], { type: 'text/x' })); const f = fd.get('f'); return [f instanceof File, f.name, f.type, await f.text()]; })()`,
    [true, 'blob', 'text/x', 'abc'],
  ],
  [
    'a filename names it',
    `(() => { const fd = new FormData(); fd.append('f', new Blob(['abc']), 'a.txt'); fd.set('g', new File(['x'], 'old.bin', { lastModified: 7 }), 'new.bin'); return [fd.get('f').name, fd.get('g').name, fd.get('g').lastModified]; })()`,
    ['a.txt', 'new.bin', 7],
  ],
  [
    'a File without a filename is kept as it is',
    `(() => { const f = new File(['x'], 'k.txt'); const fd = new FormData(); fd.append('f', f); return fd.get('f') === f; })()`,
    true,
  ],
  ['a filename with a string value throws', `thrown(() => new FormData().append('a', 'b', 'c.txt'))`, 'TypeError'],
  [
    'arguments are required',
    `[thrown(() => new FormData().append('a')), thrown(() => new FormData().set('a')), thrown(() => new FormData().get()), thrown(() => new FormData().getAll()), thrown(() => new FormData().has()), thrown(() => new FormData().delete())]`,
    Array(6).fill('TypeError'),
  ],
  [
    'no form element: only undefined is a valid argument',
    `[thrown(() => new FormData(undefined)), thrown(() => new FormData({})), thrown(() => new FormData(null))]`,
    ['none', 'TypeError', 'TypeError'],
  ],
  [
    'iteration in insertion order: keys, values, entries, forEach',
    `(() => { const fd = new FormData(); fd.append('b', '1'); fd.append('a', '2'); const each = []; fd.forEach((v, k, o) => each.push([k, v, o === fd])); return [[...fd.keys()], [...fd.values()], [...fd.entries()], each]; })()`,
    [
      ['b', 'a'],
      ['1', '2'],
      [
        ['b', '1'],
        ['a', '2'],
      ],
      [
        ['b', '1', true],
        ['a', '2', true],
      ],
    ],
  ],
  [
    'iteration is live',
    `(() => { const fd = new FormData(); fd.append('a', '1'); const it = fd.keys(); it.next(); fd.append('b', '2'); return [it.next().value, it.next().done]; })()`,
    ['b', true],
  ],
  [
    'WebIDL looks',
    `[Object.prototype.toString.call(new FormData()), Object.prototype.toString.call(new FormData().entries()), FormData.prototype[Symbol.iterator] === FormData.prototype.entries, FormData.length, Object.keys(FormData.prototype).sort()]`,
    ['[object FormData]', '[object FormData Iterator]', true, 0, ['append', 'delete', 'entries', 'forEach', 'get', 'getAll', 'has', 'keys', 'set', 'values']],
  ],
  [
    'methods check their receiver',
    `[thrown(() => FormData.prototype.get.call({}, 'a')), thrown(() => FormData.prototype.keys.call(new Headers()))]`,
    ['TypeError', 'TypeError'],
  ],
  ['FormData is not cloneable', `thrown(() => structuredClone(new FormData()))`, 'DataCloneError'],
];

const FILE: Case[] = [
  [
    'a Blob with a name',
    `(async () => { const f = new File(['a', new Uint8Array([98])], 'n.txt', { type: 'Text/Plain', lastModified: 1234.9 }); return [f instanceof Blob, f.name, f.type, f.size, f.lastModified, await f.text()]; })()`,
    [true, 'n.txt', 'text/plain', 2, 1234, 'ab'],
  ],
  [
    'lastModified defaults to Date.now()',
    `(() => { const before = Date.now(); const m = new File([], 'x').lastModified; return Number.isInteger(m) && m >= before && m <= Date.now(); })()`,
    true,
  ],
  [
    'lastModified is looked up on Date when the file is made',
    `(() => { const now = Date.now; Date.now = () => 42; try { return new File([], 'x').lastModified; } finally { Date.now = now; } })()`,
    42,
  ],
  ['the name is a USVString', `[new File([], 'a\\ud800').name === 'a\\ufffd', new File([], 5).name]`, [true, '5']],
  ['two arguments are required', `[thrown(() => new File(['a'])), thrown(() => new File())]`, ['TypeError', 'TypeError']],
  [
    'WebIDL looks',
    `[Object.prototype.toString.call(new File([], 'x')), File.length, Object.keys(File.prototype).sort(), Object.getPrototypeOf(File.prototype) === Blob.prototype]`,
    ['[object File]', 2, ['lastModified', 'name'], true],
  ],
  [
    'a slice of a File is a Blob',
    `(() => { const s = new File(['abc'], 'x').slice(1); return [s instanceof File, s instanceof Blob, s.size]; })()`,
    [false, true, 2],
  ],
  ['getters check their receiver', `thrown(() => Object.getOwnPropertyDescriptor(File.prototype, 'name').get.call(new Blob()))`, 'TypeError'],
];

const multipart = (boundary: string, body: string): string =>
  `new Response(${JSON.stringify(body)}, { headers: { 'content-type': ${JSON.stringify(`multipart/form-data; boundary=${boundary}`)} } }).formData()`;
const entries = (expression: string): string =>
  `(async () => { const fd = await ${expression}; const out = []; for (const [k, v] of fd) out.push(typeof v === 'string' ? [k, v] : [k, { name: v.name, type: v.type, text: await v.text(), file: v instanceof File }]); return out; })()`;

const PARSE: Case[] = [
  [
    'fields and files',
    entries(
      multipart(
        'XyZ',
        '--XyZ\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--XyZ\r\nContent-Disposition: form-data; name="f"; filename="n.txt"\r\nContent-Type: text/csv\r\n\r\nx,y\r\n--XyZ--\r\n',
      ),
    ),
    [
      ['a', '1'],
      ['f', { name: 'n.txt', type: 'text/csv', text: 'x,y', file: true }],
    ],
  ],
  [
    '%22, %0D and %0A are decoded in names and filenames',
    entries(multipart('b', '--b\r\nContent-Disposition: form-data; name="q%22x%0D%0Ay"; filename="f%22.txt"\r\n\r\nv\r\n--b--\r\n')),
    [['q"x\r\ny', { name: 'f".txt', type: 'text/plain', text: 'v', file: true }]],
  ],
  [
    'a file part without Content-Type is text/plain',
    entries(multipart('b', '--b\r\nContent-Disposition: form-data; name="f"; filename=""\r\n\r\n\r\n--b--\r\n')),
    [['f', { name: '', type: 'text/plain', text: '', file: true }]],
  ],
  // The body is the UTF-8 of this string.
  [
    'names and values are UTF-8; a BOM is kept',
    entries(multipart('b', '--b\r\nContent-Disposition: form-data; name="é"\r\n\r\n\ufeff€\r\n--b--\r\n')),
    [['é', '\ufeff€']],
  ],
  [
    'a value may hold CRLF, and "--b" where no line starts',
    entries(multipart('b', '--b\r\nContent-Disposition: form-data; name="a"\r\n\r\nline1\r\nx--b\r\n-b\r\n\r\n--b--\r\n')),
    [['a', 'line1\r\nx--b\r\n-b\r\n']],
  ],
  [
    'CRLF "--" boundary inside a value ends the part there',
    `rejected(${multipart('b', '--b\r\nContent-Disposition: form-data; name="a"\r\n\r\nline1\r\n--bx\r\n--b--\r\n')})`,
    'TypeError',
  ],
  [
    'header names are case-insensitive; other headers are ignored',
    entries(multipart('b', '--b\r\ncontent-DISPOSITION: form-data; name="a"\r\nX-Other: 1\r\n\r\nv\r\n--b--\r\n')),
    [['a', 'v']],
  ],
  [
    'a preamble and an epilogue are tolerated',
    entries(multipart('b', 'preamble\r\n--b\r\nContent-Disposition: form-data; name="a"\r\n\r\nv\r\n--b--\r\nepilogue')),
    [['a', 'v']],
  ],
  [
    'a quoted boundary parameter',
    entries(
      `new Response('--a b\\r\\nContent-Disposition: form-data; name="k"\\r\\n\\r\\nv\\r\\n--a b--\\r\\n', { headers: { 'content-type': 'multipart/form-data; boundary="a b"' } }).formData()`,
    ),
    [['k', 'v']],
  ],
  ['an empty form', entries(multipart('b', '--b--\r\n')), []],
  ['no boundary parameter rejects', `rejected(new Response('--b--', { headers: { 'content-type': 'multipart/form-data' } }).formData())`, 'TypeError'],
  ['a part without a name rejects', `rejected(${multipart('b', '--b\r\nContent-Type: text/plain\r\n\r\nv\r\n--b--\r\n')})`, 'TypeError'],
  [
    'a Content-Disposition that is not form-data rejects',
    `rejected(${multipart('b', '--b\r\nContent-Disposition: attachment; name="a"\r\n\r\nv\r\n--b--\r\n')})`,
    'TypeError',
  ],
  ['an unclosed part rejects', `rejected(${multipart('b', '--b\r\nContent-Disposition: form-data; name="a"\r\n\r\nv')})`, 'TypeError'],
  ['another boundary rejects', `rejected(${multipart('c', '--b\r\nContent-Disposition: form-data; name="a"\r\n\r\nv\r\n--b--\r\n')})`, 'TypeError'],
  ['an unclosed name rejects', `rejected(${multipart('b', '--b\r\nContent-Disposition: form-data; name="a\r\n\r\nv\r\n--b--\r\n')})`, 'TypeError'],
  [
    'urlencoded: +, percent-decoding, empty parts, missing =',
    entries(`new Response('a=1&b=%zz+c&&=x&d&e=%C3%A9%2B', { headers: { 'content-type': 'application/x-www-form-urlencoded;charset=UTF-8' } }).formData()`),
    [
      ['a', '1'],
      ['b', '%zz c'],
      ['', 'x'],
      ['d', ''],
      ['e', 'é+'],
    ],
  ],
  [
    'a URLSearchParams body round-trips',
    entries(`new Response(new URLSearchParams([['k', 'a b&c=d'], ['é', '']])).formData()`),
    [
      ['k', 'a b&c=d'],
      ['é', ''],
    ],
  ],
  [
    'a FormData body round-trips in the guest',
    entries(
      `(() => { const fd = new FormData(); fd.append('s', 'x\\ny'); fd.append('f', new File([new Uint8Array([0, 1, 255])], 'b.bin', { type: 'application/x-b' })); fd.append('u', new Blob(['q'])); return new Response(fd).formData(); })()`,
    ),
    [
      ['s', 'x\r\ny'],
      ['f', { name: 'b.bin', type: 'application/x-b', text: '\u0000\u0001\ufffd', file: true }],
      ['u', { name: 'blob', type: 'application/octet-stream', text: 'q', file: true }],
    ],
  ],
];

caseSuites({ FormData: FORM_DATA, File: FILE, 'body.formData()': PARSE });

// ---------------------------------------------------------------- against undici, both ways

let s: Sandbox;
test.before(async () => {
  s = await createSandbox();
  s.value(GUEST_HELPERS);
});
test.after.always(() => s.dispose());

test('the serialisation follows HTML: escapes, CRLF normalisation, file parts', async (t) => {
  const r = await s.run<{ type: string; text: string }>(`(async () => {
    const fd = new FormData();
    fd.append('a"b\\r\\nc\\nd\\re', 'v\\nw\\rx\\r\\ny');
    fd.append('f', new Blob(['hi'], { type: 'text/plain' }), 'n"a\\nme\\r.txt');
    fd.append('g', new Blob(['x']));
    fd.append('h', new File([], ''));
    const r = new Response(fd);
    return { type: r.headers.get('content-type'), text: await r.text() };
  })()`);
  const { type, text } = r.value!;
  const boundary = /^multipart\/form-data; boundary=(.+)$/.exec(type)![1]!;
  t.regex(boundary, /^[-0-9A-Za-z]{27,70}$/);
  t.is(
    text,
    [
      `--${boundary}`,
      'Content-Disposition: form-data; name="a%22b%0D%0Ac%0D%0Ad%0D%0Ae"',
      '',
      'v\r\nw\r\nx\r\ny',
      `--${boundary}`,
      'Content-Disposition: form-data; name="f"; filename="n%22a%0Ame%0D.txt"',
      'Content-Type: text/plain',
      '',
      'hi',
      `--${boundary}`,
      'Content-Disposition: form-data; name="g"; filename="blob"',
      'Content-Type: application/octet-stream',
      '',
      'x',
      `--${boundary}`,
      'Content-Disposition: form-data; name="h"; filename=""',
      'Content-Type: application/octet-stream',
      '',
      '',
      `--${boundary}--`,
      '',
    ].join('\r\n'),
  );
  // Each serialisation has its own boundary.
  const again = s.value<string>(`new Response(new FormData()).headers.get('content-type')`);
  t.not(again, type);
});

test('undici parses what the guest serialises', async (t) => {
  const r = await s.run<{ type: string; bytes: number[] }>(`(async () => {
    const fd = new FormData();
    fd.append('plain', 'value');
    fd.append('multi\\nline "name"', 'one\\ntwo\\r\\nthree');
    fd.append('unicode', 'é€😀');
    const all = new Uint8Array(256); for (let i = 0; i < 256; i++) all[i] = i;
    fd.append('binary', new Blob([all], { type: 'application/octet-stream' }), 'bytes.bin');
    fd.append('text', new File(['--not a boundary\\r\\n'], 'ümlaut "q".txt', { type: 'text/plain;charset=utf-8' }));
    fd.append('untyped', new Blob(['u']));
    const r = new Response(fd);
    return { type: r.headers.get('content-type'), bytes: Array.from(await r.bytes()) };
  })()`);
  const { type, bytes } = r.value!;
  const parsed = await new Response(new Uint8Array(bytes), { headers: { 'content-type': type } }).formData();
  const out: unknown[] = [];
  for (const [name, value] of parsed) {
    out.push(typeof value === 'string' ? [name, value] : [name, value.name, value.type, [...new Uint8Array(await value.arrayBuffer())]]);
  }
  const all = Array.from({ length: 256 }, (_, i) => i);
  t.deepEqual(out, [
    ['plain', 'value'],
    ['multi\r\nline "name"', 'one\r\ntwo\r\nthree'],
    ['unicode', 'é€😀'],
    ['binary', 'bytes.bin', 'application/octet-stream', all],
    ['text', 'ümlaut "q".txt', 'text/plain;charset=utf-8', [...Buffer.from('--not a boundary\r\n')]],
    ['untyped', 'blob', 'application/octet-stream', [117]],
  ]);
});

test('the guest parses what undici serialises', async (t) => {
  const fd = new FormData();
  fd.append('plain', 'value');
  fd.append('multi\nline "name"', 'one\ntwo');
  fd.append('unicode', 'é€😀');
  fd.append('binary', new Blob([new Uint8Array([0, 13, 10, 45, 45, 255])], { type: 'application/x-bin' }), 'b "1".bin');
  fd.append('untyped', new Blob(['u']));
  const response = new Response(fd);
  const type = response.headers.get('content-type')!;
  const bytes = [...new Uint8Array(await response.arrayBuffer())];
  const r = await s.run(`(async () => {
    const fd = await new Response(new Uint8Array(${JSON.stringify(bytes)}), { headers: { 'content-type': ${JSON.stringify(type)} } }).formData();
    const out = [];
    for (const [name, value] of fd) out.push(typeof value === 'string' ? [name, value] : [name, value.name, value.type, Array.from(await value.bytes())]);
    return out;
  })()`);
  t.true(r.ok, JSON.stringify(r.error));
  t.deepEqual(r.value, [
    ['plain', 'value'],
    ['multi\r\nline "name"', 'one\r\ntwo'],
    ['unicode', 'é€😀'],
    ['binary', 'b "1".bin', 'application/x-bin', [0, 13, 10, 45, 45, 255]],
    ['untyped', 'blob', 'application/octet-stream', [117]],
  ]);
});
