import test from 'ava';
import { ProtocolError, encodeFrame, encodeValue, type Message } from '../src/index.js';

/** Assert that encoding refuses `value` with a ProtocolError whose message matches `pattern`. */
function refuses(t: import('ava').ExecutionContext, value: unknown, pattern: RegExp): void {
  const error = t.throws(() => encodeValue(value), { instanceOf: ProtocolError });
  t.regex(error?.message ?? '', pattern);
  t.is(error?.code, 'ERR_STRATA_PROTOCOL');
}

class Point {
  x = 1;
}

test('refuses functions, symbols and class instances, naming the path', (t) => {
  refuses(t, () => 1, /^cannot encode \$: function$/);
  refuses(t, { a: [1, 2, 3, Symbol('s')] }, /\$\.a\[3\]: symbol/);
  refuses(t, { result: { a: [0, 1, 2, new Point()] } }, /\$\.result\.a\[3\]: .*class instance/);
  refuses(t, { 'odd key': { f() {} } }, /\$\["odd key"\]\.f: function/);
});

test('refuses a built-in behind a plain prototype, and a plain object made from a built-in prototype', (t) => {
  const hidden: [object, RegExp][] = [
    [new ArrayBuffer(8), /ArrayBuffer behind a replaced prototype/],
    [new Int32Array(2), /typed array behind a replaced prototype/],
    [new DataView(new ArrayBuffer(2)), /DataView behind a replaced prototype/],
    [new Uint8Array(2), /Uint8Array behind a replaced prototype/],
    [Object(1), /boxed primitive behind a replaced prototype/],
    [new Date(0), /Date behind a replaced prototype/],
    [new Map([[1, 2]]), /Map behind a replaced prototype/],
    [/re/, /RegExp behind a replaced prototype/],
    [new Error('x'), /Error behind a replaced prototype/],
  ];
  for (const [value, pattern] of hidden) {
    refuses(t, { inner: [Object.setPrototypeOf(value, null)] }, pattern);
    refuses(t, Object.setPrototypeOf(value, Object.prototype), pattern);
  }
  // the prototype alone does not make the kind either
  for (const proto of [Date.prototype, Map.prototype, Set.prototype, Uint8Array.prototype, Buffer.prototype])
    refuses(t, Object.create(proto), /subclass|not|built-in/);
});

test('refuses other built-ins with a reason that says what they are', (t) => {
  refuses(t, new Uint16Array(2), /typed array other than Uint8Array/);
  refuses(t, new Int8Array(2), /typed array other than Uint8Array/);
  refuses(t, new Float64Array(2), /typed array other than Uint8Array/);
  refuses(t, new ArrayBuffer(2), /ArrayBuffer/);
  refuses(t, new SharedArrayBuffer(2), /ArrayBuffer/);
  refuses(t, new DataView(new ArrayBuffer(2)), /DataView/);
  refuses(t, new Error('x'), /Error object/);
  refuses(t, new TypeError('x'), /Error object/);
  refuses(t, /re/, /RegExp/);
  refuses(t, Object(1), /boxed primitive/);
  refuses(t, Object('s'), /boxed primitive/);
  refuses(t, Promise.resolve(), /Promise/);
  refuses(t, new WeakMap(), /WeakMap/);
  refuses(t, new (class extends Map {})(), /subclass/);
  refuses(t, new (class extends Set {})(), /subclass/);
  refuses(t, new (class extends Date {})(), /subclass/);
  refuses(t, new (class extends Uint8Array {})(1), /subclass/);
  refuses(t, new (class extends Array {})(), /array subclass/);
  refuses(t, Object.create({ inherited: 1 }), /prototype other than/);
});

test('refuses a Proxy without running any of its traps', (t) => {
  let trapped = 0;
  const handler: ProxyHandler<object> = new Proxy(
    {},
    {
      get: () => () => {
        trapped++;
        return undefined;
      },
    },
  );
  refuses(t, new Proxy({ a: 1 }, handler), /^cannot encode \$: Proxy$/);
  refuses(t, { list: [new Proxy([], handler)] }, /\$\.list\[0\]: Proxy/);
  refuses(t, new Map([[1, new Proxy(new Map(), handler)]]), /\$\{value#0\}: Proxy/);
  t.is(trapped, 0);
});

test('refuses accessors without calling them', (t) => {
  let called = 0;
  const getter = {
    get x() {
      called++;
      return 1;
    },
  };
  refuses(t, getter, /\$\.x: accessor property/);
  const setterOnly = Object.defineProperty({}, 'y', { set() {}, enumerable: true });
  refuses(t, setterOnly, /\$\.y: accessor property/);
  const array = [1, 2, 3];
  Object.defineProperty(array, 1, {
    get() {
      called++;
      return 2;
    },
  });
  refuses(t, { array }, /\$\.array\[1\]: accessor property/);
  const setterIndex: unknown[] = [1];
  Object.defineProperty(setterIndex, 0, { set() {} });
  refuses(t, setterIndex, /\$\[0\]: accessor property/);
  t.is(called, 0);
});

test('refuses an inherited index getter reached through a hole without calling it', (t) => {
  let called = 0;
  Object.defineProperty(Array.prototype, '7', {
    get() {
      called++;
      return 1;
    },
    configurable: true,
  });
  try {
    const sparse: unknown[] = [0, 1, 2, 3, 4, 5, 6];
    sparse.length = 8;
    refuses(t, sparse, /\$\[7\]: accessor property/);
  } finally {
    delete (Array.prototype as unknown as Record<string, unknown>)['7'];
  }
  t.is(called, 0);
});

test('refuses sparse arrays and holes', (t) => {
  refuses(t, [1, , 3], /\$\[1\]: array hole/);
  refuses(t, { a: new Array(3) }, /\$\.a\[0\]: array hole/);
  t.notThrows(() => encodeValue([1, undefined, 3]));
});

test('refuses non-enumerable properties and symbol keys', (t) => {
  refuses(t, Object.defineProperty({}, 'hidden', { value: 1, enumerable: false }), /\$\.hidden: non-enumerable/);
  refuses(t, { [Symbol('k')]: 1 }, /symbol key/);
});

test('refuses own properties on built-ins that cbor-x would read through', (t) => {
  const map = new Map();
  Object.defineProperty(map, 'size', { value: 3 });
  refuses(t, map, /Map with own properties/);
  const date = new Date(0);
  (date as unknown as Record<string, unknown>)['getTime'] = () => 5;
  refuses(t, date, /Date with own properties/);
  const set = new Set([1]);
  (set as unknown as Record<symbol, unknown>)[Symbol.iterator] = function* () {};
  refuses(t, set, /Set with own properties/);
  const array = [1];
  (array as unknown as Record<string, unknown>)['constructor'] = Map;
  refuses(t, array, /own "constructor"/);
  const bytes = new Uint8Array(2);
  Object.defineProperty(bytes, 'byteLength', { value: 100 });
  refuses(t, bytes, /own "byteLength"/);
});

test('refuses cycles, through objects, arrays, Maps and Sets', (t) => {
  const object: Record<string, unknown> = {};
  object['self'] = object;
  refuses(t, object, /cycle/);
  const array: unknown[] = [];
  array.push([array]);
  refuses(t, array, /cycle/);
  const map = new Map<unknown, unknown>();
  map.set('m', map);
  refuses(t, { map }, /cycle/);
  const set = new Set<unknown>();
  set.add(set);
  refuses(t, set, /cycle/);
});

test('refuses strings with lone surrogates, as values and as keys', (t) => {
  refuses(t, { text: 'a\uD800b' }, /\$\.text: string contains a lone surrogate/);
  refuses(t, ['\uDC00'], /lone surrogate/);
  refuses(t, { ['\uD83D']: 1 }, /object key contains a lone surrogate/);
  t.notThrows(() => encodeValue('😀'));
});

test('refuses what breaks a limit, naming the limit', (t) => {
  const deep = (n: number): unknown => (n === 0 ? 0 : [deep(n - 1)]);
  t.notThrows(() => encodeValue(deep(64)));
  refuses(t, deep(65), /nesting deeper than maxDepth 64/);
  t.throws(() => encodeValue(new Array(11).fill(0), { maxNodes: 11 }), { message: /more than maxNodes 11/ });
  t.notThrows(() => encodeValue(new Array(10).fill(0), { maxNodes: 11 }));
  t.throws(() => encodeValue({ a: 1, b: 2 }, { maxNodes: 4 }), { message: /maxNodes/ });
  t.notThrows(() => encodeValue({ a: 1, b: 2 }, { maxNodes: 5 }));
  t.throws(() => encodeValue('ééé', { maxStringBytes: 5 }), { message: /string of 6 UTF-8 bytes exceeds maxStringBytes 5/ });
  t.notThrows(() => encodeValue('éé', { maxStringBytes: 5 }));
  t.throws(() => encodeValue(new Uint8Array(6), { maxStringBytes: 5 }), { message: /Uint8Array of 6 bytes/ });
  t.throws(() => encodeValue(2n ** 100n, { maxBigIntBytes: 12 }), { message: /bigint of 13 bytes exceeds maxBigIntBytes 12/ });
  t.notThrows(() => encodeValue(2n ** 95n, { maxBigIntBytes: 12 }));
  t.throws(() => encodeValue('x'.repeat(100), { maxFrameBytes: 50 }), { message: /exceeds maxFrameBytes 50/ });
  t.throws(
    () =>
      encodeValue(
        Array.from({ length: 20 }, () => 1.5),
        { maxFrameBytes: 50 },
      ),
    { message: /bytes exceeds maxFrameBytes 50/ },
  );
});

test('a refused deep value names its full path', (t) => {
  const value = { a: [{ b: new Map<unknown, unknown>([['k', new Set([1, () => 0])]]) }] };
  refuses(t, value, /^cannot encode \$\.a\[0\]\.b\{value#0\}\{#1\}: function$/);
  refuses(t, new Map([[Symbol.iterator, 1]]), /\$\{key#0\}: symbol/);
});

test('a huge key in a path is quoted and cut', (t) => {
  const error = t.throws(() => encodeValue({ ['k'.repeat(100000)]: () => 0 }), { instanceOf: ProtocolError });
  t.true((error?.message.length ?? Infinity) < 200);
});

test('encodeFrame refuses messages the decoder would refuse', (t) => {
  const bad = (message: unknown, pattern: RegExp) => {
    t.throws(() => encodeFrame(message as Message), { instanceOf: ProtocolError, message: pattern });
  };
  bad({ type: 'nope' }, /unknown message type "nope"/);
  bad({ type: 'eval', id: 1 }, /missing \$\.code/);
  bad({ type: 'eval', id: 1, code: 'x', extra: 1 }, /unexpected field "extra"/);
  bad({ type: 'eval', id: -1, code: 'x' }, /\$\.id must be a non-negative safe integer/);
  bad({ type: 'eval', id: 1, code: 5 }, /\$\.code must be a string/);
  bad({ type: 'error', error: { class: 'Nope', message: 'x' } }, /not a known exception class/);
  bad({ type: 'error', error: { class: 'JsError', message: 'x'.repeat(5000) } }, /longer than 4096/);
  bad({ type: 'result', id: 1, value: () => 1 }, /\$\.value: function/);
  bad([], /message must be a plain object/);
});

test('encodeFrame checks value kinds before reading message fields, so getters never run', (t) => {
  let called = 0;
  const message = {
    get type() {
      called++;
      return 'hello';
    },
    version: 1,
  };
  t.throws(() => encodeFrame(message as unknown as Message), { message: /\$\.type: accessor property/ });
  t.is(called, 0);
});
