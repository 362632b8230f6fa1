import test from 'ava';
import type { WireValue } from '@strata/wire';
import { ValueNotTransferable, type Transferable } from '../src/index.js';
import { assertTransferable } from '../src/values.js';
import { runtimeFor } from './helpers/runtime.js';

test('every transferable kind crosses out of the guest', async (t) => {
  const rt = await runtimeFor(t);
  const value = await rt.eval(`({
    n: null, u: undefined, b: true, num: -0, nan: NaN, inf: -Infinity, big: 2n ** 70n, s: "ünï ☃",
    bytes: new Uint8Array([0, 255]), list: [1, [2, [3]]], nested: { deep: { er: 1 } },
    set: new Set([1, "a"]), map: new Map([[{ k: 1 }, [2]]]), date: new Date(86400000), empty: Object.create(null),
  })`);
  t.deepEqual(value, {
    n: null,
    u: undefined,
    b: true,
    num: -0,
    nan: NaN,
    inf: -Infinity,
    big: 2n ** 70n,
    s: 'ünï ☃',
    bytes: new Uint8Array([0, 255]),
    list: [1, [2, [3]]],
    nested: { deep: { er: 1 } },
    set: new Set([1, 'a']),
    map: new Map([[{ k: 1 }, [2]]]),
    date: new Date(86400000),
    empty: {},
  });
  t.true(Object.is((value as { num: number }).num, -0));
});

const refused: [string, string, RegExp][] = [
  ['a function', '() => 1', /function/],
  ['a nested function', '({ a: [1, () => 1] })', /function|cannot cross/],
  ['a symbol', 'Symbol("s")', /symbol/],
  ['a class instance', 'class Point { constructor() { this.x = 1 } }; new Point()', /instance of Point/],
  ['a nested class instance', 'class Q {}; ({ a: { b: new Q() } })', /\$\.a\.b is an instance of Q/],
  ['an Error', 'new Error("x")', /instance of Error/],
  ['a RegExp', '/x/', /instance of RegExp/],
  ['a Float32Array', 'new Float32Array(2)', /instance of Float32Array/],
  ['an ArrayBuffer', 'new ArrayBuffer(2)', /instance of ArrayBuffer/],
  ['a boxed primitive', 'new String("s")', /instance of String/],
  ['a cycle', 'const o = {}; o.self = o; o', /cycle|cannot cross/],
  ['a sparse array', '[1, , 3]', /hole/],
  ['an array with extra properties', 'const a = [1]; a.extra = 2; a', /extra/],
  ['a symbol-keyed property', '({ [Symbol("k")]: 1 })', /symbol-keyed/],
  ['a non-enumerable property', 'Object.defineProperty({}, "hidden", { value: 1, enumerable: false })', /not enumerable/],
  ['a Map subclass', 'class M extends Map {}; new M()', /instance of M/],
  ['a promise inside an object', '({ p: Promise.resolve(1) })', /cannot cross/],
];
for (const [label, code, message] of refused) {
  test(`${label} is refused with ValueNotTransferable`, async (t) => {
    const rt = await runtimeFor(t);
    const error = await t.throwsAsync(rt.eval(code), { instanceOf: ValueNotTransferable });
    t.is(error?.code, 'ERR_STRATA_NOT_TRANSFERABLE');
    t.regex(error?.message ?? '', message);
    t.is(await rt.eval('1'), 1, 'the runtime stays usable');
  });
}

test('copying a getter runs no guest code', async (t) => {
  const rt = await runtimeFor(t);
  await t.throwsAsync(rt.eval('globalThis.getterRuns = 0; ({ get x() { getterRuns++; return 1 } })'), { instanceOf: ValueNotTransferable });
  t.is(await rt.eval('getterRuns'), 0);
});

test('copying a Proxy runs none of its traps', async (t) => {
  const rt = await runtimeFor(t);
  const handler = `{ get() { trapRuns++; return 1 }, ownKeys() { trapRuns++; return [] }, getOwnPropertyDescriptor() { trapRuns++ }, getPrototypeOf() { trapRuns++; return Object.prototype }, has() { trapRuns++; return false } }`;
  await t.throwsAsync(rt.eval(`globalThis.trapRuns = 0; new Proxy({ a: 1 }, ${handler})`), { instanceOf: ValueNotTransferable });
  await t.throwsAsync(rt.eval(`({ inner: [new Proxy([], ${handler})] })`), { instanceOf: ValueNotTransferable });
  t.is(await rt.eval('trapRuns'), 0);
});

test('host function arguments: Proxies and getters are refused without running guest code', async (t) => {
  const rt = await runtimeFor(t);
  let calls = 0;
  rt.bindFunction('tool', () => calls++);
  const out = await rt.eval(`
    globalThis.runs = 0;
    const p = new Proxy({}, { ownKeys() { runs++; return [] }, get() { runs++ } });
    const g = { get x() { runs++; return 1 } };
    const r = [];
    for (const arg of [p, g, { nested: p }, () => 1, Symbol('s'), new (class C {})()]) {
      try { tool(arg); r.push('passed') } catch (e) { r.push(e.name) }
    }
    [r, runs]
  `);
  t.deepEqual(out, [['TypeError', 'TypeError', 'TypeError', 'TypeError', 'TypeError', 'TypeError'], 0]);
  t.is(calls, 0);
});

test('patched built-ins in the guest do not change what crosses', async (t) => {
  const rt = await runtimeFor(t);
  const out = await rt.eval(`
    const value = { list: [1, 2], map: new Map([[1, 2]]) };
    Map.prototype.forEach = () => { throw new Error('patched') };
    Array.prototype[Symbol.iterator] = function* () { yield 'patched' };
    Object.getOwnPropertyDescriptor = () => ({ value: 'patched' });
    Reflect.ownKeys = () => [];
    Promise.prototype.then = () => { throw new Error('patched') };
    value
  `);
  t.deepEqual(out, { list: [1, 2], map: new Map([[1, 2]]) });
});

test('assertTransferable refuses host values outside the set, naming the path', (t) => {
  const cases: [unknown, RegExp][] = [
    [{ a: () => 1 }, /\$\.a is a function/],
    [{ a: Symbol('x') }, /symbol/],
    [new URL('https://example.com'), /instance of URL/],
    [{ p: new Proxy({}, {}) }, /Proxy/],
    [new Float64Array(1), /instance of Float64Array/],
    [Object.defineProperty({}, 'g', { get: () => 1, enumerable: true }), /accessor/],
    [[1, , 2], /hole/],
  ];
  for (const [value, message] of cases) {
    t.throws(() => assertTransferable(value, '$', 64), { instanceOf: ValueNotTransferable, message });
  }
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  t.throws(() => assertTransferable(cyclic, '$', 64), { message: /cycle/ });
  let deep: unknown = 1;
  for (let i = 0; i < 70; i++) deep = [deep];
  t.throws(() => assertTransferable(deep, '$', 64), { message: /deeper than 64/ });
  t.notThrows(() => assertTransferable({ b: Buffer.from('x'), shared: [[1], [1]] }, '$', 64));
});

test('host values: a kind is its brand, not its prototype, both ways round', async (t) => {
  const fakes: [unknown, RegExp][] = [
    [{ d: Object.create(Date.prototype) }, /^\$\.d inherits from Date\.prototype but is not a Date/],
    [[Object.create(Uint8Array.prototype)], /^\$\[0\] inherits from Uint8Array\.prototype but is not a Uint8Array/],
    [Object.create(Buffer.prototype), /inherits from Uint8Array\.prototype but is not a Uint8Array/],
    [Object.create(Map.prototype), /inherits from Map\.prototype but is not a Map/],
    [Object.create(Set.prototype), /inherits from Set\.prototype but is not a Set/],
    [{ b: Object.setPrototypeOf(new ArrayBuffer(8), null) }, /^\$\.b is a built-in ArrayBuffer behind a replaced prototype/],
    [Object.setPrototypeOf(Object(1), Object.prototype), /boxed primitive behind a replaced prototype/],
    [Object.setPrototypeOf(new Int32Array(2), null), /typed array behind a replaced prototype/],
    [Object.setPrototypeOf(new Date(0), null), /Date behind a replaced prototype/],
  ];
  // and a real one with own properties, which the copy would drop
  fakes.push(
    [{ d: Object.assign(new Date(0), { note: 'x' }) }, /^\$\.d has extra own properties/],
    [Object.assign(new Map(), { note: 'x' }), /has extra own properties/],
  );
  for (const [value, message] of fakes) t.throws(() => assertTransferable(value, '$', 64), { instanceOf: ValueNotTransferable, message });
  // a tool that returns one: the guest gets a TypeError, not {} or an ArrayBuffer
  const rt = await runtimeFor(t);
  rt.bindFunction('tool', (i: number) => fakes[i]![0]);
  for (let i = 0; i < fakes.length; i++) {
    t.regex(String(await rt.eval(`try { tool(${i}); 'crossed' } catch (e) { e.name }`)), /^TypeError$/);
  }
});

test('a getter on a host value is never invoked by the check', (t) => {
  let runs = 0;
  const value = Object.defineProperty({}, 'x', { get: () => runs++, enumerable: true });
  t.throws(() => assertTransferable(value, '$', 64));
  t.is(runs, 0);
});

test('a guest value the copy refuses is refused naming the path of the part that stopped it', async (t) => {
  const rt = await runtimeFor(t);
  const cases: [string, string][] = [
    ['({ items: [1, 2, 3, { fn() {} }] })', '$.items[3].fn is a function'],
    ['({ items: [1, 2, 3, { s: Symbol() }] })', '$.items[3].s is a symbol'],
    ['({ a: { get b() { return 1 } } })', '$.a.b is an accessor (getter/setter)'],
    ['({ inner: [new Proxy({}, {})] })', '$.inner[0] is a Proxy'],
    ['({ inner: [Proxy.revocable({}, {}).proxy] })', '$.inner[0] is a Proxy'],
    ['new Map([[1, { f: () => 1 }]])', '$.<value 0>.f is a function'],
    ['Promise.resolve({ items: [{ fn() {} }] })', '$.items[0].fn is a function'],
    ['(() => 1)', '$ is a function'],
    ['Symbol()', '$ is a symbol'],
  ];
  for (const [code, path] of cases) {
    const error = await t.throwsAsync(rt.eval(code), { instanceOf: ValueNotTransferable });
    t.true(error.message.startsWith(path), `${code}: ${error.message}`);
  }
});

test('host function arguments the copy refuses are refused naming the path', async (t) => {
  const rt = await runtimeFor(t);
  rt.bindFunction('tool', () => 1);
  t.regex(String(await rt.eval('try { tool(1, { x() {} }) } catch (e) { e.message }')), /^tool: arguments\[1\]\.x is a function/);
  t.regex(String(await rt.eval('try { tool([new Proxy({}, {})]) } catch (e) { e.message }')), /^tool: arguments\[0\]\[0\] is a Proxy/);
});

test('a prototype does not make a kind: an object made from Date, Uint8Array, Map or Set.prototype is refused, not copied as {}', async (t) => {
  const rt = await runtimeFor(t);
  rt.bindFunction('tool', () => 1);
  const dated = await t.throwsAsync(rt.eval(`({ d: Object.assign(new Date(0), { note: 'x' }) })`), { instanceOf: ValueNotTransferable });
  t.true(dated.message.startsWith('$.d has extra own properties'), dated.message);
  for (const kind of ['Date', 'Uint8Array', 'Map', 'Set']) {
    const error = await t.throwsAsync(rt.eval(`({ a: Object.create(${kind}.prototype) })`), { instanceOf: ValueNotTransferable });
    t.true(error.message.startsWith(`$.a inherits from ${kind}.prototype but is not a ${kind}`), error.message);
    t.regex(
      String(await rt.eval(`try { tool([Object.create(${kind}.prototype)]) } catch (e) { e.message }`)),
      new RegExp(`^tool: arguments\\[0\\]\\[0\\] inherits from ${kind}.prototype`),
    );
  }
});

test('a kind outside the set hidden behind a plain prototype is refused, as a result and as an argument', async (t) => {
  const rt = await runtimeFor(t);
  let calls = 0;
  rt.bindFunction('tool', () => calls++);
  const hidden: [string, string][] = [
    ['Object.setPrototypeOf(new ArrayBuffer(8), Object.prototype)', 'ArrayBuffer'],
    ['Object.setPrototypeOf(new Number(1), null)', 'boxed primitive'],
    ['Object.setPrototypeOf(new Int32Array(2), null)', 'typed array'],
  ];
  for (const [code, kind] of hidden) {
    const error = await t.throwsAsync(rt.eval(`({ inner: [${code}] })`), { instanceOf: ValueNotTransferable });
    t.true(error.message.includes(`of the kind ${kind} behind a replaced prototype`), error.message);
    t.regex(
      String(await rt.eval(`try { tool({ x: ${code} }) } catch (e) { e.name + ': ' + e.message }`)),
      new RegExp(`^TypeError: tool: arguments holds an object of the kind ${kind}`),
    );
  }
  t.is(calls, 0);
  // A promise behind a plain prototype is not awaited (nor would `await` unwrap it) and cannot be copied.
  await t.throwsAsync(rt.eval('Object.setPrototypeOf(Promise.resolve(1), Object.prototype)'), { instanceOf: ValueNotTransferable });
  t.is(await rt.eval('Promise.resolve(1)'), 1);
  // A real Date, Map or Uint8Array behind another prototype is still that data, and crosses as it.
  t.deepEqual(await rt.eval('[Object.setPrototypeOf(new Date(0), null), Object.setPrototypeOf(new Map([[1, 2]]), null)]'), [new Date(0), new Map([[1, 2]])]);
});

test('the guest keeps the built-in Proxy: its name, length, revocable and behaviour', async (t) => {
  const rt = await runtimeFor(t);
  t.deepEqual(
    await rt.eval(
      `[Proxy.name, Proxy.length, typeof Proxy.revocable, Proxy.prototype === undefined, new Proxy({ a: 1 }, { get: () => 7 }).a, (() => { try { Proxy({}, {}); return 'called' } catch (e) { return e instanceof TypeError } })()]`,
    ),
    ['Proxy', 2, 'function', true, 7, true],
  );
});

test("every WireValue is a Transferable (the type is the read-only view of the wire's)", (t) => {
  const wire: WireValue = { list: [1, new Date(0), new Uint8Array(1)], map: new Map([[1n, new Set(['a'])]]) };
  const transferable: Transferable = wire;
  t.notThrows(() => assertTransferable(transferable, '$', 64));
});
