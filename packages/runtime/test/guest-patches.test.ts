// A guest that patches every built-in the prelude could touch (the iterator protocol, Array,
// Map, Set, Object, Reflect, Function, String, JSON, Promise methods, descriptor fields on
// Object.prototype) must not get its code run inside a host operation: binding, revoking,
// settling host calls, checking values, reading module namespaces, running timers. Each patch
// records a call whose immediate caller is Strata's own code (a `strata:` script) and, for the
// iterator protocol, hands such a caller an iterator that never ends.
import test from 'ava';
import { WEB_POLYFILLS } from '@strata/polyfills';
import { IsolatedRuntime, Runtime } from '../src/index.js';

const PATCH_EVERYTHING = String.raw`(() => {
  const apply = Reflect.apply, defineProperty = Object.defineProperty, getDescriptor = Object.getOwnPropertyDescriptor;
  const split = String.prototype.split, includes = String.prototype.includes, push = Array.prototype.push;
  const ErrorCtor = Error, ownKeys = Reflect.ownKeys, SymbolIterator = Symbol.iterator;
  const hits = [];
  defineProperty(globalThis, '__hits', { __proto__: null, value: hits });
  // Frame 0 is "Error", 1 this function, 2 the patch, 3 whoever called the patched built-in.
  const caller = () => { const lines = apply(split, String(new ErrorCtor().stack), ['\n']); return lines[3] ?? ''; };
  const fromStrata = () => apply(includes, caller(), ['strata:']);
  const record = (name) => apply(push, hits, [name + ' <- ' + caller().trim()]);
  const endless = { next() { return { done: false, value: 0 }; } };
  endless[SymbolIterator] = function () { return this; };
  const patchMethod = (target, key, label) => {
    const desc = getDescriptor(target, key);
    if (desc === undefined || typeof desc.value !== 'function' || !desc.configurable) return;
    const original = desc.value;
    const isIterator = key === SymbolIterator || key === 'entries' || key === 'values' || key === 'keys' || key === 'next';
    defineProperty(target, key, { __proto__: null, ...desc, value: function (...args) {
      if (fromStrata()) { record(label); if (isIterator) return key === 'next' ? { done: false, value: [0, 0, 0] } : endless; }
      return new.target ? Reflect.construct(original, args, new.target) : apply(original, this, args);
    } });
  };
  const patchAll = (target, label) => { for (const key of ownKeys(target)) if (key !== 'constructor') patchMethod(target, key, label + '.' + String(key)); };
  patchAll(Array.prototype, 'Array.prototype');
  patchAll(Object.getPrototypeOf([][SymbolIterator]()), 'ArrayIterator');
  patchAll(Map.prototype, 'Map.prototype');
  patchAll(Set.prototype, 'Set.prototype');
  patchAll(Object.getPrototypeOf(new Map()[SymbolIterator]()), 'MapIterator');
  patchAll(Object.getPrototypeOf(new Set()[SymbolIterator]()), 'SetIterator');
  patchAll(Object, 'Object');
  patchAll(Reflect, 'Reflect');
  patchAll(Function.prototype, 'Function.prototype');
  patchAll(String.prototype, 'String.prototype');
  patchAll(JSON, 'JSON');
  patchAll(Promise.prototype, 'Promise.prototype');
  patchAll(Promise, 'Promise');
  // A descriptor literal inherits these: ToPropertyDescriptor would read them.
  for (const key of ['get', 'set', 'value', 'writable', 'enumerable', 'configurable']) {
    defineProperty(Object.prototype, key, { __proto__: null, configurable: true, get() { if (fromStrata()) record('Object.prototype.' + key + ' getter'); return undefined; } });
  }
  return 'patched';
})()`;

async function hostOperations(rt: Runtime | IsolatedRuntime): Promise<unknown[]> {
  const results: unknown[] = [];
  rt.bindFunction('f', (a: unknown, b: unknown) => ({ got: [a, b] }));
  rt.bindObject('o', { nested: { fn: () => 1, deeper: { fn2: () => 2 } }, data: [1, { x: 2 }] });
  rt.bindFunction('later', async (x: unknown) => ({ x, list: [1, 2, 3] }));
  rt.bindFunction('bad', () => {
    throw new TypeError('x');
  });
  rt.bindFunction('odd', () => {
    const error = new Error('y');
    error.name = 'constructor';
    throw error;
  });
  results.push(await rt.eval('[f({ a: [1, 2] }, [3, { y: new Map([[1, new Set([2])]]) }]).got.length, o.nested.fn(), o.nested.deeper.fn2(), o.data[1].x]'));
  rt.bindFunction('f', () => 'rebound');
  results.push(await rt.eval('f()'));
  rt.revoke('o');
  results.push(await rt.eval('typeof o'));
  results.push(await rt.eval('({ a: [1, { b: new Map([[1, { c: 2 }]]) }], s: new Set([1, "x"]), d: new Date(0), u: new Uint8Array([1]) })'));
  results.push(await rt.eval('(async () => (await later({ k: [1] })).list.length)()'));
  results.push(await rt.eval('Promise.resolve({ a: [1, 2] })'));
  results.push(await rt.eval('(() => { try { bad() } catch (e) { return [e instanceof TypeError, e.message] } })()'));
  results.push(await rt.eval('(() => { try { odd() } catch (e) { return [e.name, typeof e] } })()'));
  results.push(await rt.evalModule('export const a = [1, 2]; export default { b: new Map([[1, 2]]) };'));
  results.push(await rt.eval('new Promise((resolve) => setTimeout(() => resolve("timer"), 5))'));
  results.push(await rt.eval('(async () => { for (let i = 0; i < 3; i++) await new Promise((r) => setTimeout(r, 1)); return "timers"; })()'));
  return results;
}

const EXPECTED = [
  [2, 1, 2, 2],
  'rebound',
  'undefined',
  { a: [1, { b: new Map([[1, { c: 2 }]]) }], s: new Set([1, 'x']), d: new Date(0), u: new Uint8Array([1]) },
  3,
  { a: [1, 2] },
  [true, 'host function failed'],
  ['constructor', 'object'],
  { a: [1, 2], default: { b: new Map([[1, 2]]) } },
  'timer',
  'timers',
];

const RUNTIMES = {
  Runtime: () => Runtime.start({ bootstrap: WEB_POLYFILLS, timeout: 10_000 }),
  IsolatedRuntime: () => IsolatedRuntime.start({ bootstrap: WEB_POLYFILLS, timeout: 10_000 }),
};

for (const [kind, start] of Object.entries(RUNTIMES)) {
  test(`${kind}: host operations run no guest code when the guest patched every built-in`, async (t) => {
    await using rt = await start();
    // The control: the same operations with nothing patched.
    t.deepEqual(await hostOperations(rt), EXPECTED);
    t.is(await rt.eval(PATCH_EVERYTHING), 'patched');
    t.deepEqual(await hostOperations(rt), EXPECTED, 'the same results with every built-in patched');
    t.deepEqual(await rt.eval('[...__hits]'), [], 'no patched built-in was called from Strata code');
  });
}

test('Runtime: binding over a global the guest made non-configurable is a clear InvalidOption', async (t) => {
  await using rt = await Runtime.start();
  await rt.eval("Object.defineProperty(globalThis, 'tool', { value: 1, configurable: false }); 0");
  t.throws(() => rt.bindFunction('tool', () => 2), { message: /globalThis\.tool was made non-configurable by guest code/ });
  rt.bindFunction('other', () => 3);
  t.is(await rt.eval('other()'), 3, 'the runtime goes on');
});

test('IsolatedRuntime: binding over a global the guest made non-configurable closes the runtime, saying why', async (t) => {
  await using rt = await IsolatedRuntime.start();
  await rt.eval("Object.defineProperty(globalThis, 'tool', { value: 1, configurable: false }); 0");
  rt.bindFunction('tool', () => 2);
  await t.throwsAsync(rt.eval('tool'), { message: /binding "tool" failed in the worker .*non-configurable/ });
  t.true(rt.closed);
});
