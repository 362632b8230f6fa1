import { createHash, createHmac } from 'node:crypto';
import test from 'ava';
import { ENTROPY_GLOBAL } from '../src/index.js';
import { createSandbox, MODES, type Sandbox, type SandboxOptions } from './helpers/isolate.js';

// crypto, Crypto and SubtleCrypto as the guest sees them. `thrown(fn)` gives the name of what `fn`
// throws (a DOMException's name, or the error class), or 'none'.
const HELPERS = `globalThis.thrown = (fn) => { try { fn(); return 'none'; } catch (e) { return e instanceof DOMException ? e.name : e?.constructor?.name ?? typeof e; } };
globalThis.hex = (U8 => (buffer) => Array.from(new U8(buffer), (b) => b.toString(16).padStart(2, '0')).join(''))(Uint8Array); 0`;

// A fake host entropy source: a counter pattern, continuing across calls, and a log of the sizes asked for.
const ENTROPY = `{
  let next = 0;
  globalThis.entropyCalls = [];
  globalThis.${ENTROPY_GLOBAL} = (n) => { entropyCalls.push(n); const a = new Uint8Array(n); for (let i = 0; i < n; i++) a[i] = next++ & 255; return a; };
}`;

async function sandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const s = await createSandbox(options);
  s.value(HELPERS);
  return s;
}

const withEntropy = (t: { teardown(fn: () => void): void }, before = '') =>
  sandbox({ before: `${before}\n${ENTROPY}` }).then((s) => (t.teardown(() => s.dispose()), s));

test('getRandomValues copies the host entropy in, and the hook is gone from the global', async (t) => {
  const s = await withEntropy(t);
  t.deepEqual(s.value(`[typeof ${ENTROPY_GLOBAL}, '${ENTROPY_GLOBAL}' in globalThis]`), ['undefined', false]);
  t.deepEqual(s.value(`(() => { const a = new Uint8Array(4); const r = crypto.getRandomValues(a); return [r === a, Array.from(a)]; })()`), [
    true,
    [0, 1, 2, 3],
  ]);
  // A view in the middle of a buffer: only its bytes change; wider element types get whole bytes.
  t.deepEqual(
    s.value(`(() => { const b = new Uint8Array(8); crypto.getRandomValues(new Uint16Array(b.buffer, 2, 2)); return Array.from(b); })()`),
    [0, 0, 4, 5, 6, 7, 0, 0],
  );
  t.deepEqual(s.value(`(() => { const a = crypto.getRandomValues(new BigUint64Array(1)); return String(a[0]); })()`), String(0x0f0e0d0c0b0a0908n));
  t.deepEqual(s.value(`entropyCalls`), [4, 4, 8]);
});

test('getRandomValues takes every integer typed array and refuses the rest', async (t) => {
  const s = await withEntropy(t);
  for (const type of [
    'Int8Array',
    'Uint8Array',
    'Uint8ClampedArray',
    'Int16Array',
    'Uint16Array',
    'Int32Array',
    'Uint32Array',
    'BigInt64Array',
    'BigUint64Array',
  ]) {
    t.is(s.value(`thrown(() => crypto.getRandomValues(new ${type}(2)))`), 'none', type);
  }
  for (const value of ['new Float32Array(2)', 'new Float64Array(2)', 'new DataView(new ArrayBuffer(2))']) {
    t.is(s.value(`thrown(() => crypto.getRandomValues(${value}))`), 'TypeMismatchError', value);
  }
  for (const value of ['new ArrayBuffer(2)', '[1, 2]', 'undefined', '"abc"']) {
    t.is(s.value(`thrown(() => crypto.getRandomValues(${value}))`), 'TypeError', value);
  }
});

test('getRandomValues allows 65536 bytes and refuses 65537', async (t) => {
  const s = await withEntropy(t);
  t.is(s.value(`thrown(() => crypto.getRandomValues(new Uint8Array(65536)))`), 'none');
  t.is(s.value(`thrown(() => crypto.getRandomValues(new Uint32Array(16384)))`), 'none');
  t.is(s.value(`thrown(() => crypto.getRandomValues(new Uint8Array(65537)))`), 'QuotaExceededError');
  t.is(s.value(`thrown(() => crypto.getRandomValues(new Uint32Array(16385)))`), 'QuotaExceededError');
  t.deepEqual(s.value(`entropyCalls`), [65536, 65536], 'a refused call never asks the host');
});

test('without a host entropy source, getRandomValues and randomUUID refuse (no Math.random fallback)', async (t) => {
  const s = await sandbox();
  t.teardown(() => s.dispose());
  t.is(s.value(`thrown(() => crypto.getRandomValues(new Uint8Array(4)))`), 'NotSupportedError');
  t.is(s.value(`thrown(() => crypto.randomUUID())`), 'NotSupportedError');
  t.is(
    s.value(`(() => { try { crypto.randomUUID(); } catch (e) { return e.message; } })()`),
    "no entropy source: this isolate's host gave none (Strata's runtimes do)",
  );
  t.is(s.value(`(() => { const a = new Uint8Array(4); try { crypto.getRandomValues(a); } catch {} return Array.from(a).join(); })()`), '0,0,0,0');
});

test('a host entropy source that returns too little is an error, not short randomness', async (t) => {
  const s = await sandbox({ before: `globalThis.${ENTROPY_GLOBAL} = (n) => new Uint8Array(n - 1);` });
  t.teardown(() => s.dispose());
  t.is(s.value(`thrown(() => crypto.getRandomValues(new Uint8Array(4)))`), 'OperationError');
});

test('randomUUID is an RFC 9562 version 4 UUID from the entropy source', async (t) => {
  const s = await withEntropy(t);
  t.is(s.value(`crypto.randomUUID()`), '00010203-0405-4607-8809-0a0b0c0d0e0f');
  const s2 = await sandbox({ before: `globalThis.${ENTROPY_GLOBAL} = (n) => new Uint8Array(n).fill(255);` });
  t.teardown(() => s2.dispose());
  t.is(s2.value(`crypto.randomUUID()`), 'ffffffff-ffff-4fff-bfff-ffffffffffff');
  const format = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
  for (const uuid of s.value<string[]>(`Array.from({ length: 50 }, () => crypto.randomUUID())`)) t.regex(uuid, format);
});

test('crypto, Crypto and SubtleCrypto look like the web interfaces', async (t) => {
  const s = await withEntropy(t);
  t.deepEqual(
    s.value(`[
      Object.prototype.toString.call(crypto), crypto instanceof Crypto, Object.getPrototypeOf(crypto) === Crypto.prototype,
      Object.prototype.toString.call(crypto.subtle), crypto.subtle instanceof SubtleCrypto, crypto.subtle === crypto.subtle,
      thrown(() => new Crypto()), thrown(() => new SubtleCrypto()), typeof CryptoKey,
      Object.keys(Object.getPrototypeOf(crypto.subtle)),
    ]`),
    [
      '[object Crypto]',
      true,
      true,
      '[object SubtleCrypto]',
      true,
      true,
      'TypeError',
      'TypeError',
      'function',
      ['importKey', 'exportKey', 'generateKey', 'sign', 'verify', 'digest'],
    ],
  );
  // Own writable properties, so a later layer (the frozen clock) can put seeded versions in their place.
  t.deepEqual(
    s.value(
      `['getRandomValues', 'randomUUID'].map((k) => { const d = Object.getOwnPropertyDescriptor(crypto, k); return [k, typeof d.value, d.writable, d.configurable]; })`,
    ),
    [
      ['getRandomValues', 'function', true, true],
      ['randomUUID', 'function', true, true],
    ],
  );
  t.is(s.value(`(() => { crypto.randomUUID = () => 'seeded'; return crypto.randomUUID(); })()`), 'seeded');
});

const ALGORITHMS = [
  ['SHA-1', 'sha1'],
  ['SHA-256', 'sha256'],
  ['SHA-384', 'sha384'],
  ['SHA-512', 'sha512'],
] as const;
const nodeDigest = (algorithm: string, data: Uint8Array) => createHash(algorithm).update(data).digest('hex');

async function digest(s: Sandbox, expression: string): Promise<string> {
  const outcome = await s.run<string>(`(${expression}).then(hex)`);
  if (!outcome.ok) throw new Error(`${expression} rejected: ${JSON.stringify(outcome.error)}`);
  return outcome.value!;
}

for (const [mode, { before = '' }] of MODES) {
  test(`digest: FIPS 180 vectors 'abc' and '' for each algorithm${mode}`, async (t) => {
    const s = await withEntropy(t, before);
    for (const [name, node] of ALGORITHMS) {
      t.is(await digest(s, `crypto.subtle.digest('${name}', new TextEncoder().encode('abc'))`), nodeDigest(node, Buffer.from('abc')), `${name} abc`);
      t.is(await digest(s, `crypto.subtle.digest({ name: '${name.toLowerCase()}' }, new ArrayBuffer(0))`), nodeDigest(node, new Uint8Array(0)), `${name} ''`);
    }
    // Published values, as a check on the check.
    t.is(
      await digest(s, `crypto.subtle.digest('SHA-256', new Uint8Array([0x61, 0x62, 0x63]))`),
      'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    );
    t.is(await digest(s, `crypto.subtle.digest('sha-1', new ArrayBuffer(0))`), 'da39a3ee5e6b4b0d3255bfef95601890afd80709');
    t.is(s.value(`typeof crypto.randomUUID()`), 'string');
  });
}

test('digest: 1 MB for SHA-256, views, and a copy taken at the call', async (t) => {
  const s = await withEntropy(t);
  const big = new Uint8Array(1 << 20).map((_, i) => (i * 31 + 7) & 255);
  t.is(await digest(s, `crypto.subtle.digest('SHA-256', new Uint8Array(1 << 20).map((_, i) => (i * 31 + 7) & 255))`), nodeDigest('sha256', big));
  const abc = Buffer.from('xabcx');
  t.is(
    await digest(s, `crypto.subtle.digest('SHA-512', new DataView(new TextEncoder().encode('xabcx').buffer, 1, 3))`),
    nodeDigest('sha512', abc.subarray(1, 4)),
  );
  t.is(
    await digest(s, `crypto.subtle.digest('SHA-384', new Uint16Array(new TextEncoder().encode('xabcx').buffer, 0, 2))`),
    nodeDigest('sha384', abc.subarray(0, 4)),
  );
  t.is(
    await digest(s, `(() => { const d = new TextEncoder().encode('abc'); const p = crypto.subtle.digest('SHA-1', d); d.fill(0); return p; })()`),
    nodeDigest('sha1', Buffer.from('abc')),
  );
  t.deepEqual(s.value(`(() => { const p = crypto.subtle.digest('SHA-256', new Uint8Array(0)); return [p instanceof Promise]; })()`), [true]);
  const outcome = await s.run(`crypto.subtle.digest('SHA-256', new Uint8Array(0)).then((b) => [Object.prototype.toString.call(b), b.byteLength])`);
  t.deepEqual(outcome.value, ['[object ArrayBuffer]', 32]);
});

test('digest rejects unknown algorithms, bad data and bad receivers', async (t) => {
  const s = await withEntropy(t);
  const rejection = async (expression: string) => {
    const outcome = await s.run(`(${expression}).then(() => 'fulfilled', (e) => e instanceof DOMException ? e.name : e.constructor.name)`);
    return outcome.value;
  };
  t.is(await rejection(`crypto.subtle.digest('MD5', new Uint8Array(0))`), 'NotSupportedError');
  t.is(await rejection(`crypto.subtle.digest({ name: 'SHA-3' }, new Uint8Array(0))`), 'NotSupportedError');
  t.is(await rejection(`crypto.subtle.digest({}, new Uint8Array(0))`), 'TypeError');
  t.is(await rejection(`crypto.subtle.digest(256, new Uint8Array(0))`), 'TypeError');
  t.is(await rejection(`crypto.subtle.digest('SHA-256', 'abc')`), 'TypeError');
  t.is(await rejection(`crypto.subtle.digest('SHA-256', [1, 2, 3])`), 'TypeError');
  t.is(await rejection(`crypto.subtle.digest('SHA-256')`), 'TypeError');
  t.is(await rejection(`crypto.subtle.digest.call({}, 'SHA-256', new Uint8Array(0))`), 'TypeError');
  t.is(await rejection(`crypto.subtle.digest('SHA-256', new Uint8Array(0))`), 'fulfilled');
});

test('the hash code, loaded on the first digest, keeps the built-ins of bootstrap time', async (t) => {
  const s = await withEntropy(t);
  s.value(`globalThis.savedU8 = Uint8Array; globalThis.Uint8Array = class {}; globalThis.Object = {}; globalThis.BigInt = () => 0; 0`);
  t.is(await digest(s, `crypto.subtle.digest('SHA-512', new savedU8([0x61, 0x62, 0x63]))`), nodeDigest('sha512', Buffer.from('abc')));
});

// HMAC keys (RFC 2104 over the bundled hashes), checked against node:crypto's createHmac.
const nodeHmac = (algorithm: string, key: Uint8Array, data: Uint8Array) => createHmac(algorithm, key).update(data).digest('hex');

for (const [mode, { before = '' }] of MODES) {
  test(`HMAC: importKey raw, sign and verify match node:crypto for each hash, keys shorter and longer than a block${mode}`, async (t) => {
    const s = await withEntropy(t, before);
    for (const [name, node] of ALGORITHMS) {
      for (const keyLength of [1, 32, 200]) {
        const key = new Uint8Array(keyLength).map((_, i) => (i * 7 + 3) & 255);
        const message = 'the quick brown fox';
        const outcome = await s.run<[string, boolean, boolean]>(`(async () => {
          const key = await crypto.subtle.importKey('raw', new Uint8Array(${keyLength}).map((_, i) => (i * 7 + 3) & 255), { name: 'HMAC', hash: '${name}' }, false, ['sign', 'verify']);
          const data = new TextEncoder().encode('${message}');
          const mac = await crypto.subtle.sign('HMAC', key, data);
          const other = new Uint8Array(mac).slice(); other[0] ^= 1;
          return [hex(mac), await crypto.subtle.verify('HMAC', key, mac, data), await crypto.subtle.verify({ name: 'HMAC' }, key, other, data)];
        })()`);
        t.true(outcome.ok, JSON.stringify(outcome.error));
        t.deepEqual(outcome.value, [nodeHmac(node, key, Buffer.from(message)), true, false], `${name}, ${keyLength}-byte key`);
      }
    }
  });
}

test('HMAC: RFC 4231 test case 2, jwk import and export, generateKey from the entropy source', async (t) => {
  const s = await withEntropy(t);
  const outcome = await s.run(`(async () => {
    const key = await crypto.subtle.importKey('raw', new TextEncoder().encode('Jefe'), { name: 'hmac', hash: { name: 'sha-256' } }, true, ['sign']);
    const mac = hex(await crypto.subtle.sign('HMAC', key, new TextEncoder().encode('what do ya want for nothing?')));
    const jwk = await crypto.subtle.exportKey('jwk', key);
    const again = await crypto.subtle.importKey('jwk', jwk, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    const same = hex(await crypto.subtle.sign('HMAC', again, new TextEncoder().encode('what do ya want for nothing?'))) === mac;
    const generated = await crypto.subtle.generateKey({ name: 'HMAC', hash: 'SHA-512' }, true, ['sign', 'verify']);
    const raw = new Uint8Array(await crypto.subtle.exportKey('raw', generated));
    return {
      mac, jwk, same,
      key: [key.type, key.extractable, key.algorithm, key.usages, Object.prototype.toString.call(key), key instanceof CryptoKey],
      generated: [generated.algorithm.length, raw.length, raw[0], raw[1], entropyCalls.at(-1)],
    };
  })()`);
  t.true(outcome.ok, JSON.stringify(outcome.error));
  t.deepEqual(outcome.value, {
    mac: '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
    jwk: { kty: 'oct', k: 'SmVmZQ', alg: 'HS256', key_ops: ['sign'], ext: true },
    same: true,
    key: ['secret', true, { name: 'HMAC', hash: { name: 'SHA-256' }, length: 32 }, ['sign'], '[object CryptoKey]', true],
    // A SHA-512 key is one block (1024 bits) by default, its bytes the entropy source's (the counter here).
    generated: [1024, 128, 0, 1, 128],
  });
});

test('HMAC keys refuse what WebCrypto refuses', async (t) => {
  const s = await withEntropy(t);
  const rejection = async (expression: string) => {
    const outcome = await s.run(`(${expression}).then(() => 'fulfilled', (e) => e instanceof DOMException ? e.name : e.constructor.name)`);
    return outcome.value;
  };
  const key = (usages: string, extractable = false) =>
    `crypto.subtle.importKey('raw', new Uint8Array([1, 2, 3]), { name: 'HMAC', hash: 'SHA-256' }, ${extractable}, ${usages})`;
  t.is(await rejection(`${key("['sign']")}.then((k) => crypto.subtle.verify('HMAC', k, new Uint8Array(32), new Uint8Array(1)))`), 'InvalidAccessError');
  t.is(await rejection(`${key("['verify']")}.then((k) => crypto.subtle.sign('HMAC', k, new Uint8Array(1)))`), 'InvalidAccessError');
  t.is(await rejection(`${key("['sign']")}.then((k) => crypto.subtle.exportKey('raw', k))`), 'InvalidAccessError');
  t.is(await rejection(key("['encrypt']")), 'SyntaxError');
  t.is(await rejection(key('[]')), 'SyntaxError');
  t.is(await rejection(`crypto.subtle.importKey('raw', new Uint8Array(0), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])`), 'DataError');
  t.is(await rejection(`crypto.subtle.importKey('raw', new Uint8Array(3), { name: 'AES-GCM' }, false, ['encrypt'])`), 'NotSupportedError');
  t.is(await rejection(`crypto.subtle.importKey('raw', new Uint8Array(3), { name: 'HMAC', hash: 'MD5' }, false, ['sign'])`), 'NotSupportedError');
  t.is(await rejection(`crypto.subtle.importKey('raw', new Uint8Array(3), { name: 'HMAC' }, false, ['sign'])`), 'TypeError');
  t.is(await rejection(`crypto.subtle.importKey('spki', new Uint8Array(3), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])`), 'NotSupportedError');
  t.is(await rejection(`crypto.subtle.sign('HMAC', { type: 'secret' }, new Uint8Array(1))`), 'TypeError');
  t.is(s.value(`thrown(() => new CryptoKey())`), 'TypeError');
  t.is(s.value(`thrown(() => structuredClone(Object.create(CryptoKey.prototype)))`), 'none');
});

test('generateKey draws through crypto.getRandomValues as it is at the call (so the frozen clock seeds it)', async (t) => {
  const s = await withEntropy(t);
  const outcome = await s.run(`(async () => {
    crypto.getRandomValues = (array) => array.fill(0xab);
    const key = await crypto.subtle.generateKey({ name: 'HMAC', hash: 'SHA-256', length: 64 }, true, ['sign']);
    return Array.from(new Uint8Array(await crypto.subtle.exportKey('raw', key)));
  })()`);
  t.deepEqual(outcome.value, [0xab, 0xab, 0xab, 0xab, 0xab, 0xab, 0xab, 0xab]);
});
