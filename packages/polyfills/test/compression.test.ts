import { crc32, deflateRawSync, deflateSync, gunzipSync, gzipSync, inflateRawSync, inflateSync } from 'node:zlib';
import test, { type ExecutionContext } from 'ava';
import ivm from 'isolated-vm';
import { MODES, type Sandbox, type SandboxOptions, withSandbox } from './helpers/isolate.js';
import { random } from './helpers/random.js';
import { checkCases, STREAM_HELPERS, streamSandbox, type StreamCase } from './helpers/stream-cases.js';

// CompressionStream and DecompressionStream, written from the Compression Streams standard
// (https://compression.spec.whatwg.org/), checked against node:zlib both ways.

type Format = 'gzip' | 'deflate' | 'deflate-raw';
const FORMATS: Format[] = ['gzip', 'deflate', 'deflate-raw'];
const compress = { gzip: gzipSync, deflate: deflateSync, 'deflate-raw': deflateRawSync } as const;
const decompress = { gzip: gunzipSync, deflate: inflateSync, 'deflate-raw': inflateRawSync } as const;

// Guest side: run bytes through a (de)compression stream in chunks of `size` bytes; `drain` keeps
// what came out before an error, and the error's name.
const GUEST = `globalThis.through = async (Stream, format, input, size) => {
  const ts = new Stream(format);
  const w = ts.writable.getWriter();
  for (let i = 0; i < input.length; i += size) w.write(input.subarray(i, i + size)).catch(() => {});
  w.close().catch(() => {});
  return drain(ts.readable);
};
globalThis.drain = async (rs) => {
  const out = [];
  try {
    for await (const c of rs) out.push(c);
    return { ok: true, bytes: concatBytes(out), chunks: out.length, types: [...new Set(out.map((c) => Object.prototype.toString.call(c)))] };
  } catch (e) {
    return { ok: false, bytes: concatBytes(out), error: nameOf(e), isTypeError: e instanceof TypeError };
  }
}; 0`;

interface Drained {
  ok: boolean;
  bytes: Uint8Array;
  chunks?: number;
  types?: string[];
  error?: string;
  isTypeError?: boolean;
}

// Compressible text-like bytes, and incompressible ones.
function text(length: number, seed = 1): Uint8Array {
  const next = random(seed);
  const words = ['stream', 'chunk', 'queue', 'reader', 'writer', 'pipe', 'tee', 'byte', 'zlib', 'gzip', '\n', ' ', 'é€'];
  let s = '';
  while (s.length < length) s += words[Math.floor(next() * words.length)]! + ' ';
  return new TextEncoder().encode(s).subarray(0, length);
}
function noise(length: number, seed = 2): Uint8Array {
  const next = random(seed);
  return Uint8Array.from({ length }, () => Math.floor(next() * 256));
}

const INPUTS: Array<[string, Uint8Array]> = [
  ['empty', new Uint8Array(0)],
  ['one byte', new Uint8Array([65])],
  ['text', text(5000)],
  ['noise', noise(70000)],
  ['long text', text(300000, 3)],
];

// A sandbox with the stream helpers and GUEST, for `fn`.
const withGuest = (options: SandboxOptions, fn: (s: Sandbox) => Promise<void>): Promise<void> =>
  withSandbox(options, (s) => {
    s.value(STREAM_HELPERS);
    s.value(GUEST);
    return fn(s);
  });

function put(s: Sandbox, name: string, bytes: Uint8Array): void {
  s.context.global.setSync(name, new ivm.ExternalCopy(new Uint8Array(bytes)).copyInto());
}

async function through(s: Sandbox, stream: 'CompressionStream' | 'DecompressionStream', format: Format, input: Uint8Array, size: number): Promise<Drained> {
  put(s, '__input', input);
  const r = await s.run<Drained>(`through(${stream}, ${JSON.stringify(format)}, __input, ${size})`);
  if (!r.ok) throw new Error(`the guest failed: ${JSON.stringify(r.error)}`);
  return r.value!;
}

const same = (t: ExecutionContext, actual: Uint8Array, expected: Uint8Array, what: string) =>
  t.true(Buffer.from(actual).equals(Buffer.from(expected)), `${what}: ${actual.length} bytes, expected ${expected.length}`);

for (const [mode, options] of MODES) {
  test(`compresses in every format; node:zlib decompresses it${mode}`, async (t) => {
    await withGuest(options, async (s) => {
      for (const format of FORMATS) {
        for (const [name, input] of INPUTS) {
          for (const size of [65536, 777]) {
            const out = await through(s, 'CompressionStream', format, input, size);
            t.true(out.ok, `${format} ${name}`);
            t.deepEqual(out.types, ['[object Uint8Array]'], `${format} ${name}`);
            same(t, decompress[format](out.bytes), input, `${format} ${name} in chunks of ${size}`);
          }
        }
      }
    });
  });

  test(`decompresses what node:zlib compressed, at every level, in chunks of any size${mode}`, async (t) => {
    await withGuest(options, async (s) => {
      for (const format of FORMATS) {
        for (const [name, input] of INPUTS) {
          for (const level of [0, 1, 6, 9]) {
            const compressed = compress[format](input, { level });
            for (const size of input.length < 10000 ? [1, 3, 1 << 20] : [1000, 1 << 20]) {
              const out = await through(s, 'DecompressionStream', format, compressed, size);
              t.true(out.ok, `${format} ${name} level ${level} chunks of ${size}: ${out.error}`);
              same(t, out.bytes, input, `${format} ${name} level ${level} chunks of ${size}`);
            }
          }
        }
      }
    });
  });
}

// A gzip member with every optional header field (RFC 1952): FEXTRA, FNAME, FCOMMENT, FHCRC.
function gzipWithHeader(input: Uint8Array, flags: number, headerCrc?: number): Uint8Array {
  const header: number[] = [0x1f, 0x8b, 8, flags, 1, 2, 3, 4, 0, 3];
  if (flags & 4) header.push(3, 0, ...Buffer.from('abc'));
  if (flags & 8) header.push(...Buffer.from('file.txt'), 0);
  if (flags & 16) header.push(...Buffer.from('a comment'), 0);
  if (flags & 2) {
    const c = headerCrc ?? crc32(Buffer.from(header)) & 0xffff;
    header.push(c & 0xff, c >> 8);
  }
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(crc32(input), 0);
  trailer.writeUInt32LE(input.length, 4);
  return Buffer.concat([Buffer.from(header), deflateRawSync(input), trailer]);
}

test('gzip headers with FEXTRA, FNAME, FCOMMENT and FHCRC', async (t) => {
  await withGuest({}, async (s) => {
    const input = text(3000);
    for (const flags of [0, 2, 4, 8, 16, 2 | 4 | 8 | 16]) {
      const member = gzipWithHeader(input, flags);
      same(t, gunzipSync(member), input, 'node reads it');
      for (const size of [1, 5, 100000]) {
        const out = await through(s, 'DecompressionStream', 'gzip', member, size);
        t.true(out.ok, `flags ${flags}, chunks of ${size}: ${out.error}`);
        same(t, out.bytes, input, `flags ${flags}, chunks of ${size}`);
      }
    }
    const badHeaderCrc = await through(s, 'DecompressionStream', 'gzip', gzipWithHeader(input, 2 | 8, 0x1234), 7);
    t.deepEqual([badHeaderCrc.ok, badHeaderCrc.error], [false, 'TypeError'], 'a wrong header CRC');
  });
});

// Each: [what, format, bytes]. All must error the stream with a TypeError.
function invalidInputs(): Array<[string, Format, Uint8Array]> {
  const input = text(20000);
  const cases: Array<[string, Format, Uint8Array]> = [];
  for (const format of FORMATS) {
    const good = new Uint8Array(compress[format](input));
    cases.push([`${format}: empty`, format, new Uint8Array(0)]);
    for (const cut of [1, 2, 5, 10, 100, good.length - 8, good.length - 4, good.length - 1]) {
      cases.push([`${format}: truncated to ${cut} of ${good.length} bytes`, format, good.subarray(0, cut)]);
    }
    cases.push([`${format}: a byte after the end`, format, Buffer.concat([good, Buffer.from([0])])]);
    cases.push([`${format}: two streams back to back`, format, Buffer.concat([good, good])]);
    if (format !== 'deflate-raw') {
      // Raw deflate has no check value: a changed byte may well decode to other bytes.
      const flipped = good.slice();
      flipped[Math.floor(good.length / 2)]! ^= 0x55;
      cases.push([`${format}: a corrupt byte in the middle`, format, flipped]);
    }
  }
  const gz = new Uint8Array(gzipSync(input));
  const crc = gz.slice();
  crc[gz.length - 8]! ^= 1;
  cases.push(['gzip: a wrong CRC-32', 'gzip', crc]);
  const size = gz.slice();
  size[gz.length - 1]! ^= 1;
  cases.push(['gzip: a wrong length', 'gzip', size]);
  const magic = gz.slice();
  magic[1] = 0x8c;
  cases.push(['gzip: a wrong magic number', 'gzip', magic]);
  const method = gz.slice();
  method[2] = 7;
  cases.push(['gzip: an unknown compression method', 'gzip', method]);
  const reserved = gz.slice();
  reserved[3] = 0x20;
  cases.push(['gzip: a reserved flag', 'gzip', reserved]);
  const zl = new Uint8Array(deflateSync(input));
  const adler = zl.slice();
  adler[zl.length - 1]! ^= 1;
  cases.push(['deflate: a wrong Adler-32', 'deflate', adler]);
  cases.push(['deflate: a header check that fails', 'deflate', Buffer.concat([Buffer.from([0x78, 0x9d]), zl.subarray(2)])]);
  cases.push(['deflate: a preset dictionary', 'deflate', Buffer.concat([Buffer.from([0x78, 0xbb, 0, 0, 0, 1]), zl.subarray(2)])]);
  cases.push(['deflate: gzip data', 'deflate', gz]);
  cases.push(['deflate-raw: an invalid block type', 'deflate-raw', new Uint8Array([0x07, 0, 0, 0])]);
  cases.push(['deflate-raw: a stored block whose length runs past the end', 'deflate-raw', new Uint8Array([0x01, 0x05, 0x00, 0xfa, 0xff, 0x41])]);
  return cases;
}

for (const [mode, options] of MODES) {
  test(`truncated, corrupt or trailing input errors the stream with a TypeError${mode}`, async (t) => {
    await withGuest(options, async (s) => {
      for (const [what, format, bytes] of invalidInputs()) {
        // Node agrees that it is not one valid stream (zlib tolerates some trailing data, the standard does not).
        if (!what.includes('after the end') && !what.includes('back to back')) {
          t.throws(() => decompress[format](bytes), undefined, `node:zlib accepts ${what}`);
        }
        for (const size of [1 << 20, 3]) {
          const out = await through(s, 'DecompressionStream', format, bytes, size);
          t.deepEqual([out.ok, out.error, out.isTypeError], [false, 'TypeError', true], `${what} (chunks of ${size})`);
        }
      }
    });
  });
}

test('what came before the end is output before the error about trailing data', async (t) => {
  await withGuest({}, async (s) => {
    const input = text(1000);
    for (const format of FORMATS) {
      const out = await through(s, 'DecompressionStream', format, Buffer.concat([compress[format](input), Buffer.from('junk')]), 1 << 20);
      t.deepEqual([out.ok, out.error], [false, 'TypeError'], format);
      same(t, out.bytes, input, format);
    }
  });
});

const CASES: StreamCase[] = [
  [
    'formats are the three of the standard, case-sensitive; anything else is a TypeError',
    `
    const out = [];
    for (const Stream of [CompressionStream, DecompressionStream]) {
      out.push(['gzip', 'deflate', 'deflate-raw'].map((f) => thrown(() => new Stream(f))));
      out.push(['GZIP', 'br', 'zlib', '', 'gzip '].map((f) => thrown(() => new Stream(f))));
      out.push(thrown(() => new Stream()), thrown(() => Stream('gzip')));
    }
    return out;`,
    [
      ['none', 'none', 'none'],
      Array(5).fill('TypeError'),
      'TypeError',
      'TypeError',
      ['none', 'none', 'none'],
      Array(5).fill('TypeError'),
      'TypeError',
      'TypeError',
    ],
  ],
  [
    'chunks must be BufferSources: any view or ArrayBuffer, nothing else',
    `
    const results = [];
    for (const chunk of ['text', 42, null, undefined, [1, 2], { byteLength: 1 }]) {
      for (const Stream of [CompressionStream, DecompressionStream]) {
        const ts = new Stream('deflate');
        const read = rejected(ts.readable.getReader().read());
        results.push(await rejected(ts.writable.getWriter().write(chunk)), await read);
      }
    }
    const bytes = new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]);
    const cs = new CompressionStream('gzip');
    const w = cs.writable.getWriter();
    for (const chunk of [bytes.buffer, new DataView(bytes.buffer, 2, 2), new Uint16Array(bytes.buffer, 4, 1), new Float64Array(bytes.buffer)]) w.write(chunk);
    w.close();
    const round = await collect(cs.readable.pipeThrough(new DecompressionStream('gzip')));
    return [results.every((r) => r === 'TypeError'), results.length, arr(concatBytes(round))];`,
    [true, 24, [1, 2, 3, 4, 5, 6, 7, 8, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6, 7, 8]],
  ],
  [
    'a round trip in the guest, in every format',
    `
    const text = 'Compression Streams '.repeat(500) + '\\u{1F600}';
    const out = [];
    for (const format of ['gzip', 'deflate', 'deflate-raw']) {
      const rs = new Blob([text]).stream().pipeThrough(new CompressionStream(format)).pipeThrough(new DecompressionStream(format)).pipeThrough(new TextDecoderStream());
      out.push((await collect(rs)).join('') === text);
    }
    return out;`,
    [true, true, true],
  ],
  [
    'the output is deterministic: a gzip header has no time, XFL and OS as zlib writes them',
    `
    const gz = async () => concatBytes(await collect(new Blob(['same input']).stream().pipeThrough(new CompressionStream('gzip'))));
    const a = await gz();
    const b = await gz();
    return [arr(a).join() === arr(b).join(), arr(a.subarray(0, 10))];`,
    [true, [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]],
  ],
  [
    'WebIDL looks: class strings, members, brand checks; a readable/writable pair, not a TransformStream',
    `
    const c = new CompressionStream('gzip');
    const d = new DecompressionStream('gzip');
    const getter = (C, k) => Object.getOwnPropertyDescriptor(C.prototype, k).get;
    return [Object.prototype.toString.call(c), Object.prototype.toString.call(d), CompressionStream.name, DecompressionStream.name,
      c.readable instanceof ReadableStream, c.writable instanceof WritableStream, d.readable instanceof ReadableStream, d.writable instanceof WritableStream,
      c.readable === c.readable, c instanceof TransformStream,
      Object.keys(CompressionStream.prototype).sort(), Object.keys(DecompressionStream.prototype).sort(),
      thrown(() => getter(CompressionStream, 'readable').call({})), thrown(() => getter(DecompressionStream, 'writable').call(c)),
      thrown(() => structuredClone(c))];`,
    [
      '[object CompressionStream]',
      '[object DecompressionStream]',
      'CompressionStream',
      'DecompressionStream',
      true,
      true,
      true,
      true,
      true,
      false,
      ['readable', 'writable'],
      ['readable', 'writable'],
      'TypeError',
      'TypeError',
      'DataCloneError',
    ],
  ],
];

for (const [mode, options] of MODES) {
  test(`formats, chunks, round trips, classes${mode}`, async (t) => {
    await withGuest(options, async (s) => {
      await checkCases(t, s, CASES);
    });
  });
}

test('a megabyte each way', async (t) => {
  await withGuest({}, async (s) => {
    const input = Buffer.concat([text(600000, 7), noise(400000, 8)]);
    for (const format of FORMATS) {
      const out = await through(s, 'CompressionStream', format, input, 65536);
      same(t, decompress[format](out.bytes), input, `${format} compressed in the guest`);
      t.true(out.chunks! > 1, `${format}: output in ${out.chunks} chunks`);
      const back = await through(s, 'DecompressionStream', format, compress[format](input), 65536);
      same(t, back.bytes, input, `${format} decompressed in the guest`);
    }
  });
});

test('the compression streams are plain globals; constructing one loads the bundles', async (t) => {
  const s = await streamSandbox();
  try {
    const shape = `JSON.stringify(['CompressionStream', 'DecompressionStream', 'TransformStream'].map((k) => { const d = Object.getOwnPropertyDescriptor(globalThis, k); return ['value' in d, d.writable, d.enumerable, d.configurable]; }))`;
    t.deepEqual(JSON.parse(s.value(shape)), [
      [true, true, false, true],
      [true, true, false, true],
      [false, null, false, true],
    ]);
    s.value(`new DecompressionStream('deflate-raw'); 0`);
    t.deepEqual(JSON.parse(s.value(shape))[2], [true, true, false, true]);
  } finally {
    s.dispose();
  }
});
