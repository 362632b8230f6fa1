import test from 'ava';
import { createSandbox, type Sandbox, withSandbox } from './helpers/isolate.js';

let s: Sandbox;
test.before(async () => {
  s = await createSandbox();
});
test.after.always(() => s.dispose());

const bytes = (code: string): number[] => s.value<number[]>(`Array.from(${code})`);

test('TextEncoder encodes UTF-8, including astral characters', (t) => {
  t.deepEqual(bytes(`new TextEncoder().encode('aé€😀')`), [0x61, 0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0x98, 0x80]);
  t.deepEqual(bytes(`new TextEncoder().encode()`), []);
  t.deepEqual(bytes(`new TextEncoder().encode(123)`), [0x31, 0x32, 0x33]);
  t.is(s.value(`new TextEncoder().encoding`), 'utf-8');
  // The result owns an exactly-sized buffer.
  t.is(s.value(`new TextEncoder().encode('héllo').buffer.byteLength`), 6);
});

test('TextEncoder replaces lone surrogates with U+FFFD', (t) => {
  t.deepEqual(bytes(`new TextEncoder().encode('a\\uD800b')`), [0x61, 0xef, 0xbf, 0xbd, 0x62]);
  t.deepEqual(bytes(`new TextEncoder().encode('\\uDC00\\uD800')`), [0xef, 0xbf, 0xbd, 0xef, 0xbf, 0xbd]);
  t.deepEqual(bytes(`new TextEncoder().encode('\\uD83D')`), [0xef, 0xbf, 0xbd]);
});

test('encodeInto never writes part of a character', (t) => {
  t.deepEqual(
    s.value(`(() => {
      const dest = new Uint8Array(5);
      const r = new TextEncoder().encodeInto('a😀b', dest);
      const r2 = new TextEncoder().encodeInto('€€', new Uint8Array(4));
      const r3 = new TextEncoder().encodeInto('\\uD800x', new Uint8Array(10));
      return [r.read, r.written, Array.from(dest), r2.read, r2.written, r3.read, r3.written];
    })()`),
    [3, 5, [0x61, 0xf0, 0x9f, 0x98, 0x80], 1, 3, 2, 4],
  );
  t.throws(() => s.value(`new TextEncoder().encodeInto('x', [])`), { instanceOf: Error, message: /Uint8Array/ });
});

test('TextDecoder decodes UTF-8 round trips and every BufferSource', (t) => {
  t.is(s.value(`new TextDecoder().decode(new TextEncoder().encode('héllo wörld €😀 中文'))`), 'héllo wörld €😀 中文');
  t.is(s.value(`new TextDecoder().decode(new Uint8Array([104, 105]).buffer)`), 'hi');
  t.is(s.value(`new TextDecoder().decode(new DataView(new Uint8Array([0, 104, 105, 0]).buffer, 1, 2))`), 'hi');
  t.is(s.value(`new TextDecoder().decode(new Uint16Array([0x6968]))`), 'hi');
  t.is(s.value(`new TextDecoder().decode(new Uint8Array(new SharedArrayBuffer(2)).fill(65))`), 'AA');
  t.is(s.value(`new TextDecoder().decode()`), '');
  t.throws(() => s.value(`new TextDecoder().decode('abc')`), { message: /ArrayBuffer or ArrayBufferView/ });
  // Long input crosses the internal chunking.
  t.is(s.value(`new TextDecoder().decode(new TextEncoder().encode('ab€'.repeat(20000))) === 'ab€'.repeat(20000)`), true);
});

test('invalid UTF-8 becomes U+FFFD per maximal subpart', (t) => {
  const decode = (arr: number[]): string => s.value<string>(`new TextDecoder().decode(new Uint8Array(${JSON.stringify(arr)}))`);
  t.is(decode([0x61, 0xff, 0x62]), 'a\ufffdb');
  t.is(decode([0xc3]), '\ufffd'); // truncated at end
  t.is(decode([0xe2, 0x82]), '\ufffd'); // one maximal subpart
  t.is(decode([0xe2, 0x82, 0x41]), '\ufffdA');
  t.is(decode([0xc0, 0x80]), '\ufffd\ufffd'); // overlong
  t.is(decode([0xed, 0xa0, 0x80]), '\ufffd\ufffd\ufffd'); // encoded surrogate
  t.is(decode([0xf4, 0x90, 0x80, 0x80]), '\ufffd\ufffd\ufffd\ufffd'); // > U+10FFFF
  t.is(decode([0xf0, 0x9f, 0x98]), '\ufffd');
  t.is(decode([0x80, 0xbf]), '\ufffd\ufffd');
});

test('fatal decoding throws a TypeError', (t) => {
  t.is(s.value(`new TextDecoder('utf-8', { fatal: true }).fatal`), true);
  t.is(s.value(`new TextDecoder('utf-8', { fatal: true }).decode(new Uint8Array([0x61]))`), 'a');
  const e = s.value<string>(
    `(() => { try { new TextDecoder('utf-8', { fatal: true }).decode(new Uint8Array([0x61, 0xff])); } catch (e) { return e.constructor.name + ': ' + e.message; } })()`,
  );
  t.regex(e, /^TypeError: .*not valid for encoding utf-8/);
  t.regex(
    s.value(`(() => { try { new TextDecoder('utf-8', { fatal: true }).decode(new Uint8Array([0xe2, 0x82])); } catch (e) { return e.name; } })()`),
    /TypeError/,
  );
});

test('a leading BOM is removed unless ignoreBOM', (t) => {
  t.is(s.value(`new TextDecoder().decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x61]))`), 'a');
  t.is(s.value(`new TextDecoder('utf-8', { ignoreBOM: true }).decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x61]))`), '\ufeffa');
  // Only the first one.
  t.is(s.value(`new TextDecoder().decode(new Uint8Array([0xef, 0xbb, 0xbf, 0xef, 0xbb, 0xbf]))`), '\ufeff');
  t.is(s.value(`new TextDecoder().ignoreBOM`), false);
});

test('streaming keeps partial characters and the BOM state across calls', (t) => {
  t.deepEqual(
    s.value(`(() => {
      const d = new TextDecoder();
      const out = [];
      out.push(d.decode(new Uint8Array([0xef, 0xbb]), { stream: true }));
      out.push(d.decode(new Uint8Array([0xbf, 0xf0, 0x9f]), { stream: true }));
      out.push(d.decode(new Uint8Array([0x98, 0x80, 0xe2]), { stream: true }));
      out.push(d.decode(new Uint8Array([0x82, 0xac])));
      // A new stream: the BOM is dropped again; a dangling byte is flushed.
      out.push(d.decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x62, 0xc3])));
      return out;
    })()`),
    ['', '', '😀', '€', 'b\ufffd'],
  );
});

test('labels: UTF-16LE/BE and windows-1252 are decoded, unknown labels throw RangeError', (t) => {
  t.is(s.value(`new TextDecoder(' UTF8 ').encoding`), 'utf-8');
  t.is(s.value(`new TextDecoder('latin1').encoding`), 'windows-1252');
  t.is(s.value(`new TextDecoder('utf-16').encoding`), 'utf-16le');
  t.is(s.value(`new TextDecoder('utf-16le').decode(new Uint8Array([0xff, 0xfe, 0x61, 0, 0x3d, 0xd8, 0, 0xde]))`), 'a😀');
  t.is(s.value(`new TextDecoder('utf-16be').decode(new Uint8Array([0, 0x61, 0xd8, 0x00]))`), 'a\ufffd');
  t.is(s.value(`new TextDecoder('utf-16le').decode(new Uint8Array([0x00, 0xdc, 0x61, 0x00, 0x62]))`), '\ufffda\ufffd');
  t.is(s.value(`new TextDecoder('ascii').decode(new Uint8Array([0x41, 0x80, 0x9f, 0xe9]))`), 'A€Ÿé');
  t.regex(s.value(`(() => { try { new TextDecoder('utf-7'); } catch (e) { return e.constructor.name + e.message; } })()`), /^RangeError.*utf-7/);
});

test('classes look like the web ones', (t) => {
  t.deepEqual(s.value(`[Object.prototype.toString.call(new TextEncoder()), Object.keys(TextDecoder.prototype).sort().join(), TextEncoder.name]`), [
    '[object TextEncoder]',
    'decode,encoding,fatal,ignoreBOM',
    'TextEncoder',
  ]);
});

test('the bytes of a BufferSource are read by the built-ins of bootstrap time, whatever the guest replaced', async (t) => {
  await withSandbox({}, async (g) => {
    const r = await g.run(`(async () => {
      const TypedArray = Object.getPrototypeOf(Uint8Array.prototype);
      const data = new Uint8Array([0, 104, 105, 0]).subarray(1, 3);
      const view = new DataView(data.buffer, 1, 2);
      ArrayBuffer.isView = () => false;
      for (const proto of [TypedArray, DataView.prototype]) {
        for (const key of ['buffer', 'byteOffset', 'byteLength']) {
          Object.defineProperty(proto, key, { get() { throw new Error('the guest ' + key); }, configurable: true });
        }
      }
      return [new TextDecoder().decode(data), new TextDecoder().decode(view), await new Blob([data, view]).text(),
        await new Response(data).text(), await new Response(view).text()];
    })()`);
    t.true(r.ok, JSON.stringify(r.error));
    t.deepEqual(r.value, ['hi', 'hi', 'hihi', 'hi', 'hi']);
  });
});
