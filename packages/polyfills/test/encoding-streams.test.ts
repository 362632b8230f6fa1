import test from 'ava';
import { MODES } from './helpers/isolate.js';
import { random } from './helpers/random.js';
import { checkCases, streamSandbox, type StreamCase } from './helpers/stream-cases.js';

// TextEncoderStream and TextDecoderStream as the guest sees them, written from the Encoding
// standard (https://encoding.spec.whatwg.org/#interface-textencoderstream).

const ENCODE = `globalThis.enc = async (parts) => {
  const es = new TextEncoderStream();
  const w = es.writable.getWriter();
  for (const p of parts) w.write(p);
  w.close();
  return (await collect(es.readable)).map(arr);
};
globalThis.dec = async (chunks, label, options) => {
  const ds = new TextDecoderStream(label, options);
  const w = ds.writable.getWriter();
  for (const c of chunks) w.write(c);
  w.close();
  return collect(ds.readable);
};
globalThis.decUntilError = async (chunks, options) => {
  const ds = new TextDecoderStream('utf-8', options);
  const w = ds.writable.getWriter();
  const r = ds.readable.getReader();
  for (const c of chunks) w.write(c).catch(() => {});
  w.close().catch(() => {});
  const out = [];
  try {
    for (;;) {
      const { value, done } = await r.read();
      if (done) return [out, 'closed'];
      out.push(value);
    }
  } catch (e) {
    return [out, nameOf(e)];
  }
}; 0`;

const bytes = (...b: number[][]) => b.map((x) => `new Uint8Array(${JSON.stringify(x)})`).join(', ');

const ENCODER: StreamCase[] = [
  [
    'encodes each chunk as UTF-8, converting to a string; an empty chunk gives nothing',
    `
    const es = new TextEncoderStream();
    const w = es.writable.getWriter();
    w.write('a€'); w.write(''); w.write(42); w.close();
    const chunks = await collect(es.readable);
    return [chunks.map(arr), chunks.map((c) => Object.prototype.toString.call(c)), es.encoding];`,
    [
      [
        [97, 226, 130, 172],
        [52, 50],
      ],
      ['[object Uint8Array]', '[object Uint8Array]'],
      'utf-8',
    ],
  ],
  [
    'a surrogate pair split across chunks is encoded whole',
    `
    return [await enc(['\\uD83D', '\\uDE00']), await enc(['a\\uD83D', '\\uDE00b']), await enc(['\\uD83D', '', '\\uDE00'])];`,
    [[[0xf0, 0x9f, 0x98, 0x80]], [[97], [0xf0, 0x9f, 0x98, 0x80, 98]], [[0xf0, 0x9f, 0x98, 0x80]]],
  ],
  [
    'lone surrogates become U+FFFD, a lead left at the end is flushed as one',
    `
    return [await enc(['\\uD83D']), await enc(['\\uD83D', 'x']), await enc(['\\uDE00']), await enc(['\\uD83D\\uD83D', '\\uDE00']), await enc(['x\\uDE00\\uD83D'])];`,
    [
      [[0xef, 0xbf, 0xbd]],
      [[0xef, 0xbf, 0xbd, 0x78]],
      [[0xef, 0xbf, 0xbd]],
      [
        [0xef, 0xbf, 0xbd],
        [0xf0, 0x9f, 0x98, 0x80],
      ],
      [
        [0x78, 0xef, 0xbf, 0xbd],
        [0xef, 0xbf, 0xbd],
      ],
    ],
  ],
  [
    'a chunk that is not convertible to a string errors the stream',
    `
    const es = new TextEncoderStream();
    const read = rejected(es.readable.getReader().read());
    return [await rejected(es.writable.getWriter().write(Symbol('s'))), await read];`,
    ['TypeError', 'TypeError'],
  ],
];

const DECODER: StreamCase[] = [
  [
    'multi-byte sequences split across chunks come out whole',
    `
    return [await dec([${bytes([0xe2], [0x82, 0xac])}]), await dec([${bytes([0xf0], [0x9f], [0x98], [0x80, 0x21])}]),
      await dec([${bytes([0x61, 0xe2, 0x82])}])];`,
    [['€'], ['\u{1F600}!'], ['a', '\ufffd']],
  ],
  [
    'the BOM is dropped once, even split, unless ignoreBOM',
    `
    return [await dec([${bytes([0xef, 0xbb, 0xbf, 0x68, 0x69])}]), await dec([${bytes([0xef, 0xbb], [0xbf, 0x68], [0xef, 0xbb, 0xbf])}]),
      await dec([${bytes([0xef, 0xbb, 0xbf, 0x68])}], 'utf-8', { ignoreBOM: true })];`,
    [['hi'], ['h', '\ufeff'], ['\ufeffh']],
  ],
  [
    'other encodings, and every kind of BufferSource',
    `
    return [await dec([${bytes([0x68, 0x00, 0x69], [0x00])}], 'utf-16le'), await dec([${bytes([0x00, 0x68, 0xd8, 0x3d], [0xde, 0x00])}], 'utf-16be'),
      await dec([new Uint8Array([0x80]).buffer, new DataView(new Uint8Array([0x41, 0xe9]).buffer, 1), new Uint16Array([0x4142])], 'latin1')];`,
    [
      ['h', 'i'],
      ['h', '\u{1F600}'],
      ['€', 'é', 'BA'],
    ],
  ],
  [
    'fatal: invalid or truncated input errors the stream with a TypeError',
    `
    return [await decUntilError([${bytes([0x61], [0xff])}], { fatal: true }), await decUntilError([${bytes([0x61, 0xe2, 0x82])}], { fatal: true }),
      await decUntilError([${bytes([0xe2], [0x82, 0xac])}], { fatal: true }), await decUntilError([${bytes([0x61], [0xff])}])];`,
    [
      [['a'], 'TypeError'],
      [['a'], 'TypeError'],
      [['€'], 'closed'],
      [['a', '\ufffd'], 'closed'],
    ],
  ],
  [
    'chunks must be BufferSources',
    `
    const results = [];
    for (const chunk of ['text', 42, null, undefined, [1, 2]]) {
      const ds = new TextDecoderStream();
      const read = rejected(ds.readable.getReader().read());
      results.push(await rejected(ds.writable.getWriter().write(chunk)), await read);
    }
    return results;`,
    Array(10).fill('TypeError'),
  ],
  [
    'encoding, fatal and ignoreBOM reflect the options; bad labels and options throw',
    `
    const d = new TextDecoderStream('  UTF8 ', { fatal: 1, ignoreBOM: 'yes' });
    const d2 = new TextDecoderStream('utf-16');
    return [d.encoding, d.fatal, d.ignoreBOM, d2.encoding, d2.fatal, d2.ignoreBOM, new TextDecoderStream().encoding,
      thrown(() => new TextDecoderStream('nope')), thrown(() => new TextDecoderStream('utf-8', 5))];`,
    ['utf-8', true, true, 'utf-16le', false, false, 'utf-8', 'RangeError', 'TypeError'],
  ],
];

const CLASSES: StreamCase[] = [
  [
    'WebIDL looks: class strings, members, brand checks; a readable/writable pair, not a TransformStream',
    `
    const e = new TextEncoderStream();
    const d = new TextDecoderStream();
    const getter = (C, k) => Object.getOwnPropertyDescriptor(C.prototype, k).get;
    return [Object.prototype.toString.call(e), Object.prototype.toString.call(d), TextEncoderStream.name, TextDecoderStream.name,
      e.readable instanceof ReadableStream, e.writable instanceof WritableStream, d.readable instanceof ReadableStream, d.writable instanceof WritableStream,
      e.readable === e.readable, e instanceof TransformStream,
      Object.keys(TextEncoderStream.prototype).sort(), Object.keys(TextDecoderStream.prototype).sort(),
      thrown(() => getter(TextEncoderStream, 'readable').call({})), thrown(() => getter(TextDecoderStream, 'encoding').call(e)),
      thrown(() => TextEncoderStream()), thrown(() => structuredClone(e)), thrown(() => structuredClone(d))];`,
    [
      '[object TextEncoderStream]',
      '[object TextDecoderStream]',
      'TextEncoderStream',
      'TextDecoderStream',
      true,
      true,
      true,
      true,
      true,
      false,
      ['encoding', 'readable', 'writable'],
      ['encoding', 'fatal', 'ignoreBOM', 'readable', 'writable'],
      'TypeError',
      'TypeError',
      'TypeError',
      'DataCloneError',
      'DataCloneError',
    ],
  ],
  [
    'text through an encoder and a decoder comes back the same',
    `
    const out = ReadableStream.from(['h\\u00e9', '\\uD83D', '\\uDE00!', '']).pipeThrough(new TextEncoderStream()).pipeThrough(new TextDecoderStream());
    return (await collect(out)).join('');`,
    'hé\u{1F600}!',
  ],
];

const SUITES: Record<string, StreamCase[]> = { TextEncoderStream: ENCODER, TextDecoderStream: DECODER, classes: CLASSES };

for (const [mode, options] of MODES) {
  for (const [suite, cases] of Object.entries(SUITES)) {
    test(`${suite}${mode}`, async (t) => {
      const s = await streamSandbox(options);
      try {
        s.value(ENCODE);
        await checkCases(t, s, cases);
      } finally {
        s.dispose();
      }
    });
  }
}

test('the encoder streams are plain globals; constructing one loads the streams bundle', async (t) => {
  const s = await streamSandbox();
  try {
    const shape = `JSON.stringify(['TextEncoderStream', 'TextDecoderStream', 'ReadableStream'].map((k) => { const d = Object.getOwnPropertyDescriptor(globalThis, k); return ['value' in d, d.writable, d.enumerable, d.configurable]; }))`;
    t.deepEqual(JSON.parse(s.value(shape)), [
      [true, true, false, true],
      [true, true, false, true],
      [false, null, false, true],
    ]);
    s.value(`new TextDecoderStream(); 0`);
    t.deepEqual(JSON.parse(s.value(shape))[2], [true, true, false, true]);
  } finally {
    s.dispose();
  }
});

// Pieces of text that stress the encoder: ASCII, 2-, 3- and 4-byte characters, lone surrogates.
const PIECES = ['a', 'Z', ' ', 'é', 'ß', '€', '中', '\u{1F600}', '\u{10FFFF}', '\uD800', '\uDFFF', '\uFEFF', '\u0000'];

function splitAt<T extends { length: number; slice(a: number, b?: number): T }>(value: T, next: () => number, parts: number): T[] {
  const cuts = [...new Set(Array.from({ length: parts }, () => Math.floor(next() * (value.length + 1))))].sort((a, b) => a - b);
  const out: T[] = [];
  let from = 0;
  for (const cut of cuts) {
    out.push(value.slice(from, cut));
    from = cut;
  }
  out.push(value.slice(from));
  return out;
}

test('differential: random text split anywhere encodes and decodes as Node does', async (t) => {
  const next = random(0x5eed);
  const s = await streamSandbox();
  try {
    s.value(ENCODE);
    for (let round = 0; round < 40; round++) {
      let text = '';
      const length = Math.floor(next() * 60);
      for (let i = 0; i < length; i++) text += PIECES[Math.floor(next() * PIECES.length)]!;
      const strings = splitAt(text, next, 1 + Math.floor(next() * 6));
      const expected = Array.from(new TextEncoder().encode(text));
      const encoded = await s.run<number[][]>(`enc(${JSON.stringify(strings)})`);
      t.deepEqual(encoded.value!.flat(), expected, `encode ${JSON.stringify(strings)}`);

      // Random bytes (valid and invalid UTF-8 mixed), split anywhere, decoded without and with fatal.
      const raw = [...expected, ...Array.from({ length: Math.floor(next() * 8) }, () => Math.floor(next() * 256))];
      const chunks = splitAt(raw, next, 1 + Math.floor(next() * 8));
      const source = `[${chunks.map((c) => `new Uint8Array(${JSON.stringify(c)})`).join(', ')}]`;
      const decoded = await s.run<string[]>(`dec(${source})`);
      t.is(decoded.value!.join(''), new TextDecoder().decode(new Uint8Array(raw)), `decode ${JSON.stringify(chunks)}`);
      let valid = true;
      try {
        new TextDecoder('utf-8', { fatal: true }).decode(new Uint8Array(raw));
      } catch {
        valid = false;
      }
      const fatal = await s.run<[string[], string]>(`decUntilError(${source}, { fatal: true })`);
      t.is(fatal.value![1], valid ? 'closed' : 'TypeError', `fatal ${JSON.stringify(chunks)}`);
    }
  } finally {
    s.dispose();
  }
});
