import vm from 'node:vm';
import test from 'ava';
import { DEFAULT_LIMITS, checkEncodable, decodeValue, encodeValue, resolveLimits } from '@strata/wire';
import { ValueNotTransferable } from '../src/index.js';
import { splitFunctions } from '../src/bound-functions.js';
import { preludeSource } from '../src/runtime-snapshot.js';
import { encodedSize } from '../src/encoded-size.js';
import { MAX_VALUE_NODES, assertTransferable } from '../src/values.js';
import { runtimeFor } from './helpers/runtime.js';

// Every walk over a value is memoized per distinct object: a value whose parts are shared (a
// DAG) is walked in time linear in its distinct objects, and it counts toward the limits as it
// would be written out, a shared part at every place it appears.

/** `[1]` doubled `levels` times: levels + 1 distinct arrays, 2^levels paths to the innermost. */
function doubling(levels: number): unknown {
  let n: unknown = [1];
  for (let i = 0; i < levels; i++) n = [n, n];
  return n;
}

const SIZE_MESSAGE = /is past the limit of 2000000 nodes for one value \(at least \d+, counting a shared object or array once for every place it appears\)$/;

function refusal(fn: () => unknown): ValueNotTransferable {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  if (!(caught instanceof ValueNotTransferable)) throw new Error(`expected ValueNotTransferable, got ${String(caught)}`);
  return caught;
}

test('MAX_VALUE_NODES is the wire default maxNodes', (t) => {
  t.is(MAX_VALUE_NODES, DEFAULT_LIMITS.maxNodes);
  t.is(MAX_VALUE_NODES, 2_000_000);
});

// --- assertTransferable ------------------------------------------------------------------------

test('assertTransferable refuses the 2^40 DAG for its size, naming path, count and limit', (t) => {
  const error = refusal(() => assertTransferable(doubling(40), '$', 64));
  t.is(error.code, 'ERR_STRATA_NOT_TRANSFERABLE');
  t.regex(error.message, /^\$(\[[01]\])+ /);
  t.regex(error.message, SIZE_MESSAGE);
  // the host-side wording keeps its prefix
  const fromHost = refusal(() => assertTransferable({ rows: doubling(40) }, 'the host function returned a value that', 64));
  t.regex(fromHost.message, /^the host function returned a value that\.rows(\[[01]\])+ is past the limit/);
});

test('assertTransferable refuses Map, Set and object DAGs of 2^40 paths', (t) => {
  let map: unknown = new Map([[1, 1]]);
  for (let i = 0; i < 40; i++) map = new Map([[map, map]]);
  t.regex(refusal(() => assertTransferable(map, '$', 64)).message, /^\$(\.<(key|value) 0>)+ is past the limit of 2000000 nodes/);
  let set: unknown = new Set([1]);
  for (let i = 0; i < 40; i++) set = new Set([set, [set]]);
  t.regex(refusal(() => assertTransferable(set, '$', 64)).message, SIZE_MESSAGE);
  let object: unknown = { leaf: true };
  for (let i = 0; i < 40; i++) object = { a: object, b: object };
  t.regex(refusal(() => assertTransferable(object, '$', 64)).message, /^\$(\.[ab])+ is past the limit of 2000000 nodes/);
});

test('assertTransferable accepts legitimate sharing: [a, a], a diamond, shared Map/Set keys and values', (t) => {
  const a = { x: 1 };
  t.notThrows(() => assertTransferable([a, a], '$', 64));
  const bottom = { n: [1, 2, 3], when: new Date(0), bytes: new Uint8Array(2) };
  t.notThrows(() => assertTransferable({ left: { down: bottom }, right: [bottom], again: bottom }, '$', 64));
  const key = { id: 1 };
  const list = [key, key];
  const map = new Map<unknown, unknown>([
    [key, key],
    [list, key],
    ['k', list],
  ]);
  const set = new Set<unknown>([key, list, map]);
  t.notThrows(() => assertTransferable({ map, set, again: [map, set, new Map([[set, map]])] }, '$', 64));
});

test('assertTransferable refuses a cycle as a cycle, not as a size', (t) => {
  const big = Array.from({ length: 500 }, () => 0);
  const looped: unknown[] = [big, big, big];
  looped.push([looped]);
  t.is(refusal(() => assertTransferable(looped, '$', 64, 2000)).message, '$[3][0] refers back to an enclosing value (a cycle)');
  const map = new Map<unknown, unknown>([['self', undefined]]);
  map.set('self', map);
  t.is(refusal(() => assertTransferable({ map }, '$', 64)).message, '$.map.<value 0> refers back to an enclosing value (a cycle)');
  const set = new Set<unknown>();
  set.add(set);
  t.is(refusal(() => assertTransferable(set, '$', 64)).message, '$.<element 0> refers back to an enclosing value (a cycle)');
  // a cycle hidden in the 2^40 DAG
  const dag = doubling(40) as unknown[];
  let inner = dag;
  while (Array.isArray(inner[0])) inner = inner[0] as unknown[];
  inner.push({ back: dag });
  t.regex(refusal(() => assertTransferable(dag, '$', 64)).message, /^\$(\[0\]){40}\[1\]\.back refers back to an enclosing value \(a cycle\)$/);
});

test('assertTransferable counts a wide array exactly: MAX_VALUE_NODES nodes pass, one more is refused', (t) => {
  const exact = new Array<number>(MAX_VALUE_NODES - 1).fill(0);
  t.notThrows(() => assertTransferable(exact, '$', 64));
  exact.push(0);
  t.is(
    refusal(() => assertTransferable(exact, '$', 64)).message,
    '$[1999999] is past the limit of 2000000 nodes for one value (at least 2000001, counting a shared object or array once for every place it appears)',
  );
});

test('assertTransferable counts nodes exactly as the wire counts CBOR items', (t) => {
  const key = { k: 'v', n: [1, 2n, new Date(1), new Uint8Array(3)] };
  const long = Array.from({ length: 40 }, (_, i) => ({ i }));
  const values: unknown[] = [
    0,
    'text',
    [key, key],
    { a: key, b: { c: key }, d: new Map([[key, key]]) },
    new Set([key, [key], long]),
    [long, long, { again: long }],
    doubling(10),
    { '': null, __proto__x: undefined, nested: { deeper: { deepest: [] } } },
  ];
  for (const value of values) {
    const nodes = checkEncodable(value, DEFAULT_LIMITS).nodes;
    t.notThrows(() => assertTransferable(value, '$', 64, nodes));
    if (nodes === 1) continue;
    t.throws(() => assertTransferable(value, '$', 64, nodes - 1), { instanceOf: ValueNotTransferable, message: /past the limit/ });
    t.throws(() => checkEncodable(value, resolveLimits({ maxNodes: nodes - 1 })), { message: /maxNodes/ });
  }
});

test('assertTransferable counts the depth of a shared value at every place it appears', (t) => {
  let deep: unknown = 0;
  for (let i = 0; i < 60; i++) deep = [deep];
  // deep's innermost array sits 59 levels below it
  t.notThrows(() => assertTransferable([deep, [[[[deep]]]]], '$', 64));
  t.is(
    refusal(() => assertTransferable([deep, [[[[[deep]]]]]], '$', 64)).message,
    '$[1][0][0][0][0][0] is nested deeper than 64 levels (a shared value whose objects reach depth 65)',
  );
  // a Date counts as an object for depth
  const dated = [[new Date(0)]];
  t.notThrows(() => assertTransferable([dated], '$', 3));
  t.regex(refusal(() => assertTransferable([dated, [[dated]]], '$', 3)).message, /^\$\[1\]\[0\]\[0\] is nested deeper than 3 levels/);
});

test('assertTransferable still names the path of every other refusal', (t) => {
  const shared = { ok: 1 };
  const cases: [unknown, string][] = [
    [[shared, shared, { f: () => 1 }], '$[2].f is a function; only data can cross (bind functions with bindFunction)'],
    [{ a: [shared, [1, , 2]] }, '$.a[1][1] is a hole (sparse arrays cannot cross)'],
    [new Map([[shared, Symbol('s')]]), '$.<value 0> is a symbol'],
    [new Set([shared, new Proxy({}, {})]), '$.<element 1> is a Proxy'],
    [{ a: Object.assign([1], { extra: true }) }, '$.a is an array with extra (non-index) properties'],
    [{ a: { b: new URL('https://example.com') } }, '$.a.b is an instance of URL, not a plain object'],
    [{ a: Object.defineProperty({}, 'g', { get: () => 1, enumerable: true }) }, '$.a.g is an accessor (getter/setter)'],
    [{ a: Object.defineProperty({}, 'h', { value: 1, enumerable: false }) }, '$.a.h is not enumerable'],
    [{ a: { [Symbol('s')]: 1 } }, '$.a has a symbol-keyed property'],
  ];
  for (const [value, message] of cases) t.is(refusal(() => assertTransferable(value, '$', 64)).message, message);
});

// --- encodedSize ------------------------------------------------------------------------------

test('encodedSize stops past the cap on the 2^40 DAG and counts shared parts at every place', (t) => {
  t.true(encodedSize(doubling(40), 1 << 20) > 1 << 20);
  t.true(encodedSize(doubling(40), Number.MAX_SAFE_INTEGER) > 2 ** 40);
  const a = { x: 1, s: 'é' };
  const long = Array.from({ length: 100 }, (_, i) => i * 1000);
  // no floats, tags or bigints: the estimate is the exact CBOR length
  for (const value of [[a, a], { left: { down: a }, right: [a], again: a }, [long, { l: long }, [long, [long]]], doubling(12)]) {
    t.is(encodedSize(value, 1 << 30), encodeValue(value).length);
  }
  const key = { k: 1 };
  const map = new Map<unknown, unknown>([
    [key, key],
    ['x', [key, key]],
  ]);
  const withTags = { map, set: new Set([key, map]), again: map };
  const tree = {
    map: new Map<unknown, unknown>([
      [{ k: 1 }, { k: 1 }],
      ['x', [{ k: 1 }, { k: 1 }]],
    ]),
  };
  t.is(encodedSize(withTags, 1 << 30), encodedSize({ ...tree, set: new Set([{ k: 1 }, tree.map]), again: tree.map }, 1 << 30));
});

test('encodedSize of a value that contains itself is Infinity', (t) => {
  const looped: unknown[] = [1];
  looped.push([looped]);
  t.is(encodedSize(looped, 1 << 30), Infinity);
  const map = new Map<unknown, unknown>();
  map.set('m', { map });
  t.is(encodedSize(map, 1 << 30), Infinity);
});

// --- splitFunctions ---------------------------------------------------------------------------

test('splitFunctions refuses a 2^40 DAG of plain objects for its size', (t) => {
  let object: unknown = { leaf: 1, fn: () => 1 };
  for (let i = 0; i < 40; i++) object = { a: object, b: object };
  const error = refusal(() => splitFunctions(object, 'tools', 64));
  t.regex(error.message, /^tools(\.[ab])+ is past the limit of 2000000 nodes for one value/);
});

test('splitFunctions copies a shared object once per place and finds its functions at every place', (t) => {
  let reads = 0;
  const shared = {
    get n() {
      reads++;
      return 1;
    },
    fn: () => 2,
  };
  const list = [1];
  const { data, sites } = splitFunctions({ a: shared, b: { c: shared }, list, again: list, top: () => 3 }, 'tools', 64);
  t.deepEqual(data, { a: { n: 1, fn: null }, b: { c: { n: 1, fn: null } }, list: [1], again: [1], top: null });
  const copy = data as { a: object; b: { c: object }; list: unknown; again: unknown };
  t.not(copy.a, copy.b.c);
  t.is(copy.list, list);
  t.is(reads, 1);
  t.deepEqual(
    sites.map(({ path, label, fn }) => [path, label, fn()]),
    [
      [['a', 'fn'], 'tools.a.fn', 2],
      [['b', 'c', 'fn'], 'tools.b.c.fn', 2],
      [['top'], 'tools.top', 3],
    ],
  );
  t.notThrows(() => assertTransferable(data, 'tools', 64));
  const single = splitFunctions(() => 1, 'f', 64);
  t.is(single.data, null);
  t.deepEqual(
    single.sites.map((site) => [site.path, site.label]),
    [[[], 'f']],
  );
});

test('splitFunctions refuses a cycle as a cycle and counts depth at every place', (t) => {
  const looped: Record<string, unknown> = { big: Array.from({ length: 100 }, () => 0) };
  looped['inner'] = { back: looped };
  t.is(refusal(() => splitFunctions(looped, 'tools', 64)).message, 'tools.inner.back refers back to an enclosing value (a cycle)');
  let deep: Record<string, unknown> = { end: () => 1 };
  for (let i = 0; i < 60; i++) deep = { d: deep };
  t.notThrows(() => splitFunctions({ a: deep, b: { c: { d: { e: deep } } } }, 'tools', 64));
  t.is(refusal(() => splitFunctions({ a: deep, b: { c: { d: { e: { f: deep } } } } }, 'tools', 64)).message, 'tools.b.c.d.e.f is nested deeper than 64 levels');
});

// --- all walks on random DAGs ----------------------------------------------------------------

/** A small seeded generator (mulberry32). */
function random(seed: number): (n: number) => number {
  let a = seed >>> 0;
  return (n) => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), a | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return (((x ^ (x >>> 14)) >>> 0) % n) | 0;
  };
}

/** A random value whose containers share parts: each new container picks from the ones before. */
function randomDag(next: (n: number) => number): unknown {
  const scalars = () => [
    next(1000),
    -next(70000),
    2.5,
    `s${next(100)}`,
    'é😀',
    2n ** BigInt(next(100)),
    null,
    undefined,
    true,
    new Date(next(1e9)),
    new Uint8Array(next(30)),
  ];
  const pool: unknown[] = scalars();
  const levels = 1 + next(12);
  for (let level = 0; level < levels; level++) {
    const width = next(level % 4 === 3 ? 40 : 6);
    const picks = Array.from({ length: width }, () => pool[pool.length - 1 - next(Math.min(pool.length, 8))]);
    switch (next(4)) {
      case 0:
        pool.push(picks);
        break;
      case 1:
        pool.push(Object.fromEntries(picks.map((pick, i) => [`k${i}`, pick])));
        break;
      case 2:
        pool.push(new Map(picks.map((pick, i) => [i % 2 === 0 ? pick : i, pick])));
        break;
      default:
        pool.push(new Set(picks));
    }
  }
  return pool[pool.length - 1];
}

test('property: on random DAGs every walk agrees with the same value written out as a tree', (t) => {
  const next = random(0x77a1);
  for (let i = 0; i < 300; i++) {
    const dag = randomDag(next);
    const nodes = checkEncodable(dag, DEFAULT_LIMITS).nodes;
    // the wire decodes a DAG as a tree: every shared part copied at every place
    const tree = decodeValue(encodeValue(dag));
    t.is(checkEncodable(tree, DEFAULT_LIMITS).nodes, nodes);
    t.notThrows(() => assertTransferable(dag, '$', 64, nodes));
    t.notThrows(() => assertTransferable(tree, '$', 64, nodes));
    if (nodes > 1) {
      t.throws(() => assertTransferable(dag, '$', 64, nodes - 1), { message: /past the limit/ });
      t.throws(() => assertTransferable(tree, '$', 64, nodes - 1), { message: /past the limit/ });
    }
    const size = encodedSize(tree, Number.MAX_SAFE_INTEGER);
    t.is(encodedSize(dag, Number.MAX_SAFE_INTEGER), size);
    const cap = next(size + 1);
    t.true(encodedSize(dag, cap) > cap === size > cap);
    const object = { data: dag, fn: () => 1 };
    const split = splitFunctions(object, 'v', 64);
    t.is(split.sites.length, 1);
    t.deepEqual((split.data as { data: unknown }).data, tree);
  }
});

// --- through the in-process Runtime -------------------------------------------------------------

test('a host function returning the 2^40 DAG is refused quickly, and [a, a] crosses', async (t) => {
  const rt = await runtimeFor(t);
  rt.bindFunction('dag', () => doubling(40));
  rt.bindFunction('pair', () => {
    const a = { x: 1 };
    return [a, a];
  });
  const message = await rt.eval('try { dag(); "no error" } catch (e) { e.message }');
  t.regex(message as string, /dag\(\) returned a value that(\[[01]\])+ is past the limit of 2000000 nodes/);
  t.deepEqual(await rt.eval('pair()'), [{ x: 1 }, { x: 1 }]);
  let object: unknown = { fn: () => 1 };
  for (let i = 0; i < 40; i++) object = { a: object, b: object };
  t.throws(() => rt.bindObject('tools', object as Record<string, unknown>), { instanceOf: ValueNotTransferable, message: /past the limit/ });
});

test('a walk stopped by a termination leaves nothing behind for the next: the same array crosses afterwards', (t) => {
  // The prelude in a context of this process (node:vm), whose `timeout` stops a script with V8's
  // TerminateExecution, as the deadline addon stops a guest. The walk keeps one map of the
  // objects it met for every walk; stopped halfway, that map must not make the next walk see the
  // array as open (a cycle). In a runtime the deadline rarely lands in the walk rather than the copy.
  const context = vm.createContext({});
  vm.runInContext(
    preludeSource({
      strictEval: false,
      eventLoopGlobal: '__el',
      attachGlobal: '__attach',
      entropyGlobal: '__ent',
      fetchGlobals: undefined,
      maxBufferBytesBeforeAttach: 1e6,
    }),
    context,
  );
  const attach = vm.runInContext('__attach', context) as (...args: unknown[]) => { exportValue: unknown };
  const limits = { maxBufferBytes: 1e8, maxDepth: 64, maxNodes: MAX_VALUE_NODES, maxConsoleChars: 1e6 };
  context.exportValue = attach(
    () => 0,
    () => 0,
    () => 0,
    () => 0,
    () => [[], 0],
    () => 0,
    limits,
  ).exportValue;
  vm.runInContext('globalThis.big = Array.from({ length: 600000 }, (_, i) => ({ i }))', context);
  t.throws(() => vm.runInContext('exportValue(big)', context, { timeout: 5 }), { code: 'ERR_SCRIPT_EXECUTION_TIMEOUT' });
  t.deepEqual(JSON.parse(JSON.stringify(vm.runInContext('big.length = 2; exportValue(big)', context))), [0, [{ i: 0 }, { i: 1 }]]);
});
