import test from 'ava';
import { createSandbox, type Sandbox } from './helpers/isolate.js';

let s: Sandbox;
test.before(async () => {
  s = await createSandbox();
});
test.after.always(() => s.dispose());

test('primitives and wrappers', (t) => {
  t.deepEqual(
    s.value(`(() => {
      const prims = [1, -0, NaN, 'x', true, null, undefined, 10n].map((v) => structuredClone(v));
      const wrapped = [new Boolean(false), new Number(-0), new String('s'), Object(5n)].map((v) => {
        const c = structuredClone(v);
        return [typeof c, c !== v, String(c.valueOf()), Object.prototype.toString.call(c)];
      });
      return { prims: prims.map((v) => typeof v === 'bigint' ? 'big' + v : Object.is(v, -0) ? '-0' : Number.isNaN(v) ? 'NaN' : v), wrapped };
    })()`),
    {
      prims: [1, '-0', 'NaN', 'x', true, null, undefined, 'big10'],
      wrapped: [
        ['object', true, 'false', '[object Boolean]'],
        ['object', true, '0', '[object Number]'],
        ['object', true, 's', '[object String]'],
        ['object', true, '5', '[object BigInt]'],
      ],
    },
  );
});

test('objects and arrays: own enumerable keys, holes kept, prototype dropped, getters read', (t) => {
  t.deepEqual(
    s.value(`(() => {
      class Point { constructor() { this.x = 1; } get y() { return 2; } }
      const hidden = Object.defineProperty({ a: 1 }, 'b', { value: 2, enumerable: false });
      const withGetter = { get g() { return 'got'; } };
      const sym = { [Symbol('s')]: 1, k: 2 };
      const arr = [1, , 3]; arr.extra = 'e';
      const proto = JSON.parse('{"__proto__": {"polluted": true}}');
      const p = structuredClone(new Point());
      const a = structuredClone(arr);
      const pc = structuredClone(proto);
      return [JSON.stringify(p), Object.getPrototypeOf(p) === Object.prototype, Object.keys(structuredClone(hidden)),
        Object.getOwnPropertyDescriptor(structuredClone(withGetter), 'g').value, Object.getOwnPropertySymbols(structuredClone(sym)).length,
        a.length, 1 in a, a.extra, Array.isArray(a), Object.getPrototypeOf(pc) === Object.prototype, pc.__proto__.polluted, ({}).polluted];
    })()`),
    ['{"x":1}', true, ['a'], 'got', 0, 3, false, 'e', true, true, true, undefined],
  );
});

test('cycles and shared references are preserved', (t) => {
  t.deepEqual(
    s.value(`(() => {
      const shared = { n: 1 };
      const o = { a: shared, b: shared, list: [shared] };
      o.self = o;
      const m = new Map([[shared, o]]);
      o.map = m;
      const c = structuredClone(o);
      const [[k, v]] = c.map;
      return [c !== o, c.self === c, c.a === c.b, c.list[0] === c.a, c.a !== shared, k === c.a, v === c];
    })()`),
    [true, true, true, true, true, true, true],
  );
});

test('Map, Set, Date and RegExp', (t) => {
  t.deepEqual(
    s.value(`(() => {
      const m = structuredClone(new Map([['k', { v: 1 }], [{ key: true }, 'obj']]));
      const st = structuredClone(new Set([1, 'a', { x: 1 }]));
      const d = new Date(1700000000000);
      const dc = structuredClone(d);
      const r = /a+b/giu; r.lastIndex = 3;
      const rc = structuredClone(r);
      return [m instanceof Map, m.get('k').v, [...m.keys()][1].key, st instanceof Set, st.size, st.has('a'),
        dc instanceof Date, dc !== d, dc.getTime(), String(structuredClone(new Date(NaN)).getTime()),
        rc instanceof RegExp, rc.source, rc.flags, rc.lastIndex];
    })()`),
    [true, 1, true, true, 3, true, true, true, 1700000000000, 'NaN', true, 'a+b', 'giu', 0],
  );
});

test('ArrayBuffers and views: bytes copied, sharing and offsets kept', (t) => {
  t.deepEqual(
    s.value(`(() => {
      const buf = new ArrayBuffer(8);
      const u8 = new Uint8Array(buf, 2, 4); u8.set([1, 2, 3, 4]);
      const f64 = new Float64Array([1.5]);
      const dv = new DataView(buf, 1, 3);
      const c = structuredClone({ u8, dv, buf, f64, big: new BigInt64Array([-1n]), f16: new Float16Array([0.5]) });
      u8[0] = 99;
      const resizable = structuredClone(new ArrayBuffer(2, { maxByteLength: 16 }));
      return [Array.from(c.u8), c.u8.byteOffset, c.u8.buffer === c.buf, c.dv.buffer === c.buf, c.dv.byteOffset, c.dv.byteLength,
        c.buf !== buf, c.buf.byteLength, c.f64[0], c.big[0] === -1n, c.f16[0], c.u8 instanceof Uint8Array,
        resizable.resizable, resizable.maxByteLength];
    })()`),
    [[1, 2, 3, 4], 2, true, true, 1, 3, true, 8, 1.5, true, 0.5, true, true, 16],
  );
});

test('errors keep their type, message, stack and cause', (t) => {
  t.deepEqual(
    s.value(`(() => {
      const e = new RangeError('out', { cause: { why: 'x' } });
      const c = structuredClone(e);
      const custom = new Error('m'); custom.name = 'CustomError';
      const cc = structuredClone(custom);
      const dom = structuredClone(new DOMException('gone', 'NotFoundError'));
      class MyErr extends TypeError {}
      return [c instanceof RangeError, c !== e, c.name, c.message, c.cause.why, typeof c.stack, c.stack === e.stack,
        cc.constructor.name, cc.name, cc.message, 'message' in structuredClone(new Error()) ? structuredClone(new Error()).message : 'none',
        dom instanceof DOMException, dom.name, dom.message, dom.code, structuredClone(new MyErr('z')).constructor.name];
    })()`),
    [true, true, 'RangeError', 'out', 'x', 'string', true, 'Error', 'Error', 'm', '', true, 'NotFoundError', 'gone', 8, 'TypeError'],
  );
});

test('a File clones as a File: name, lastModified, type and bytes kept; shared references too', async (t) => {
  const r = await s.run(`(async () => {
    const f = new File(['h\u00e9'], 'n\u00e4me.txt', { type: 'Text/Plain', lastModified: 1234567 });
    // Own properties that shadow the getters are not what gets cloned.
    const spoofed = new File(['x'], 'real', { lastModified: 1 });
    Object.defineProperty(spoofed, 'name', { value: 'fake' });
    Object.defineProperty(spoofed, 'lastModified', { value: 2 });
    const { a, b, c } = structuredClone({ a: f, b: f, c: spoofed });
    const plain = structuredClone(new Blob(['y']));
    return [a instanceof File, Object.getPrototypeOf(a) === File.prototype, a !== f, a === b, a.name, a.lastModified, a.type, a.size, await a.text(),
      Object.getOwnPropertyDescriptor(File.prototype, 'name').get.call(c), Object.getOwnPropertyDescriptor(File.prototype, 'lastModified').get.call(c),
      plain instanceof File, plain instanceof Blob];
  })()`);
  t.true(r.ok, JSON.stringify(r.error));
  t.deepEqual(r.value, [true, true, true, true, 'näme.txt', 1234567, 'text/plain', 3, 'hé', 'real', 1, false, true]);
});

test('Blob clones; functions, symbols and platform objects throw DataCloneError', async (t) => {
  const r = await s.run(`(async () => {
    const b = structuredClone(new Blob(['abc'], { type: 'text/plain' }));
    return [b instanceof Blob, b.type, await b.text()];
  })()`);
  t.deepEqual(r.value, [true, 'text/plain', 'abc']);
  for (const input of [
    '() => {}',
    '{ f() {} }',
    "Symbol('s')",
    "{ s: Symbol('s') }",
    'Promise.resolve()',
    'new WeakMap()',
    'new WeakSet()',
    'new WeakRef({})',
    'new SharedArrayBuffer(1)',
    'new EventTarget()',
    "new Event('x')",
    'new AbortController()',
    'new AbortController().signal',
    'new FileReader()',
    'new TextEncoder()',
    'Object(Symbol())',
    '[1, () => {}]',
    'new Map([[1, function named() {}]])',
    // Platform objects that are not serializable (HTML): the URL classes, the global scope's own.
    "new URL('http://x/a?b#c')",
    "new URLSearchParams('a=1&b=2')",
    "new URLPattern({ pathname: '/a/:id' })",
    '{ nested: [new URL("http://x/")] }',
    'navigator',
    'performance',
    "new Headers({ a: '1' })",
    "new Request('http://x/')",
    "new Response('x')",
    'new FormData()',
    'new ReadableStream()',
    "new CompressionStream('gzip')",
    'new TextDecoderStream()',
    "new ErrorEvent('error')",
  ]) {
    t.deepEqual(
      s.value(
        `(() => { try { structuredClone(${input}); return 'cloned'; } catch (e) { return [e instanceof DOMException, e.name, e.code, /could not be cloned/.test(e.message)]; } })()`,
      ),
      [true, 'DataCloneError', 25, true],
      input,
    );
  }
});

test('transfer detaches ArrayBuffers and the clone keeps their bytes', (t) => {
  t.deepEqual(
    s.value(`(() => {
      const buf = new Uint8Array([1, 2, 3]).buffer;
      const view = new Uint8Array(buf, 1);
      const c = structuredClone({ buf, view }, { transfer: [buf] });
      return [buf.detached, buf.byteLength, Array.from(new Uint8Array(c.buf)), c.view.buffer === c.buf, Array.from(c.view)];
    })()`),
    [true, 0, [1, 2, 3], true, [2, 3]],
  );
  const error = (code: string): unknown => s.value(`(() => { try { ${code}; return 'ok'; } catch (e) { return e.name; } })()`);
  t.is(error(`const b = new ArrayBuffer(1); structuredClone(b, { transfer: [b, b] })`), 'DataCloneError');
  t.is(error(`structuredClone(1, { transfer: [{}] })`), 'DataCloneError');
  t.is(error(`const b = new ArrayBuffer(1); b.transfer(); structuredClone(1, { transfer: [b] })`), 'DataCloneError');
  t.is(error(`structuredClone(1, { transfer: 5 })`), 'TypeError');
  // A failed clone detaches nothing.
  t.deepEqual(
    s.value(`(() => { const b = new ArrayBuffer(4); try { structuredClone({ b, f() {} }, { transfer: [b] }); } catch {} return b.detached; })()`),
    false,
  );
});

// Built on both sides of the isolate boundary from the same source text.
function sample(): unknown {
  const o: Record<string, unknown> = {
    n: 1,
    s: 'x',
    arr: [1, [2, { deep: true }]],
    date: new Date(0),
    re: /x/g,
    map: new Map([[1, 'a']]),
    set: new Set([1]),
    nil: null,
    u: undefined,
    big: 1n,
    neg: -0,
  };
  o.again = o.arr;
  return o;
}
function describe(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) =>
    x instanceof Map
      ? ['Map', ...x]
      : x instanceof Set
        ? ['Set', ...x]
        : x instanceof RegExp
          ? ['RegExp', String(x)]
          : x === undefined
            ? '<undefined>'
            : typeof x === 'bigint'
              ? `${x}n`
              : x,
  );
}

test("structuredClone agrees with V8's own (Node's) on the same value", (t) => {
  const inIsolate = s.value(`(${describe.toString()})(structuredClone((${sample.toString()})()))`);
  t.is(inIsolate, describe(structuredClone(sample())));
});

test('a tag alone decides nothing: impostors clone as plain objects', (t) => {
  t.deepEqual(
    s.value(`(() => {
      const fake = (tag) => ({ [Symbol.toStringTag]: tag, v: 1 });
      return ['Promise', 'WeakMap', 'Map', 'Date', 'Uint8Array', 'Error', 'Blob'].map((tag) => {
        try { const c = structuredClone(fake(tag)); return Object.getPrototypeOf(c) === Object.prototype && c.v === 1; }
        catch (e) { return e.name; }
      });
    })()`),
    [true, true, true, true, true, true, true],
  );
  // Objects that only inherit from a platform prototype are not platform objects: their getters throw for them.
  t.deepEqual(
    s.value(
      `[URL, URLSearchParams, URLPattern].map((C) => { const o = Object.create(C.prototype); o.v = 1; try { return structuredClone(o).v; } catch (e) { return e.name; } })`,
    ),
    [1, 1, 1],
  );
  t.is(s.value(`(() => { try { structuredClone([].values()); } catch (e) { return e.name; } })()`), 'DataCloneError');
  t.is(s.value(`(() => { try { structuredClone((function* () {})()); } catch (e) { return e.name; } })()`), 'DataCloneError');
});
