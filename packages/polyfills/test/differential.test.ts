import test from 'ava';
import { createSandbox, type Sandbox } from './helpers/isolate.js';
import { random } from './helpers/random.js';

// Node's TextEncoder / TextDecoder / atob / btoa / structuredClone follow the
// same standards; on random input the polyfills must agree with them.

let s: Sandbox;
test.before(async () => {
  s = await createSandbox();
});
test.after.always(() => s.dispose());

function randomBytes(next: () => number, length: number): number[] {
  // Biased towards the interesting UTF-8 / UTF-16 boundary bytes.
  const interesting = [0x00, 0x7f, 0x80, 0xbf, 0xc0, 0xc2, 0xdf, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff, 0xd8, 0xdc, 0xfe, 0xbb];
  return Array.from({ length }, () => (next() < 0.5 ? interesting[Math.floor(next() * interesting.length)]! : Math.floor(next() * 256)));
}

test('TextDecoder agrees with Node on random bytes (utf-8, utf-16le/be, windows-1252, streaming)', (t) => {
  const next = random(42);
  const cases: Array<{ label: string; chunks: number[][] }> = [];
  for (let i = 0; i < 300; i++) {
    const label = ['utf-8', 'utf-16le', 'utf-16be', 'windows-1252'][i % 4]!;
    const chunks = Array.from({ length: 1 + Math.floor(next() * 3) }, () => randomBytes(next, Math.floor(next() * 12)));
    cases.push({ label, chunks });
  }
  const expected = cases.map(({ label, chunks }) => {
    const d = new TextDecoder(label);
    return chunks.map((c, i) => d.decode(new Uint8Array(c), { stream: i < chunks.length - 1 })).join('|');
  });
  const actual = s.value<string[]>(`${JSON.stringify(cases)}.map(({ label, chunks }) => {
    const d = new TextDecoder(label);
    return chunks.map((c, i) => d.decode(new Uint8Array(c), { stream: i < chunks.length - 1 })).join('|');
  })`);
  for (let i = 0; i < cases.length; i++) t.is(actual[i], expected[i], JSON.stringify(cases[i]));
});

test('fatal TextDecoder throws exactly when Node does', (t) => {
  const next = random(7);
  const inputs = Array.from({ length: 300 }, () => randomBytes(next, Math.floor(next() * 8)));
  const expected = inputs.map((b) => {
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(new Uint8Array(b));
    } catch (e) {
      return `throws ${(e as Error).name}`;
    }
  });
  const actual = s.value<string[]>(`${JSON.stringify(inputs)}.map((b) => {
    try { return new TextDecoder('utf-8', { fatal: true }).decode(new Uint8Array(b)); }
    catch (e) { return 'throws ' + e.name; }
  })`);
  t.deepEqual(actual, expected);
});

test('TextEncoder and encodeInto agree with Node on random strings with lone surrogates', (t) => {
  const next = random(99);
  const pool = ['a', 'é', '€', '😀', '\ud800', '\udc00', '\udbff', '\udfff', '\u0000', '\uffff', 'z'];
  const strings = Array.from({ length: 300 }, () => Array.from({ length: Math.floor(next() * 10) }, () => pool[Math.floor(next() * pool.length)]).join(''));
  const sizes = strings.map(() => Math.floor(next() * 12));
  const expected = strings.map((str, i) => {
    const dest = new Uint8Array(sizes[i]!);
    const r = new TextEncoder().encodeInto(str, dest);
    return [Array.from(new TextEncoder().encode(str)), r.read, r.written, Array.from(dest)];
  });
  const actual = s.value(`${JSON.stringify(strings)}.map((str, i) => {
    const dest = new Uint8Array(${JSON.stringify(sizes)}[i]);
    const r = new TextEncoder().encodeInto(str, dest);
    return [Array.from(new TextEncoder().encode(str)), r.read, r.written, Array.from(dest)];
  })`);
  t.deepEqual(actual, expected);
});

test('atob and btoa agree with Node on random input', (t) => {
  const next = random(5);
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/= \n-_*';
  const inputs = Array.from({ length: 400 }, () =>
    Array.from({ length: Math.floor(next() * 10) }, () => alphabet[Math.floor(next() * alphabet.length)]).join(''),
  );
  const expected = inputs.map((x) => {
    try {
      return atob(x);
    } catch (e) {
      return `throws ${(e as Error).name}`;
    }
  });
  const actual = s.value<string[]>(`${JSON.stringify(inputs)}.map((x) => {
    try { return atob(x); } catch (e) { return 'throws ' + e.name; }
  })`);
  t.deepEqual(actual, expected);
  const binaries = inputs.map((x) => x.replace(/-/g, '\u00ff'));
  t.deepEqual(
    s.value(`${JSON.stringify(binaries)}.map(btoa)`),
    binaries.map((x) => btoa(x)),
  );
});
