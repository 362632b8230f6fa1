import test from 'ava';
import {
  DEFAULT_LIMITS,
  ProtocolError,
  checkEncodable,
  decodeValue,
  encodeFrame,
  encodeValue,
  resolveLimits,
  scanCbor,
  type Limits,
  type WireValue,
} from '../src/index.js';
import { Prng } from '../scripts/prng.js';
import { ValueGenerator } from '../scripts/value-generator.js';

// Values reachable along several paths (DAGs): each distinct container is checked once, but it
// counts toward the limits at every place it appears, because that is what is encoded.

/** `[1]` doubled `levels` times: levels + 1 distinct arrays, 2^levels paths to the innermost. */
function doubling(levels: number): unknown {
  let n: unknown = [1];
  for (let i = 0; i < levels; i++) n = [n, n];
  return n;
}

/** A copy of `value` with every shared container made distinct (what the decoder builds). */
function tree(value: unknown): unknown {
  return decodeValue(encodeValue(value));
}

function refusal(fn: () => unknown): ProtocolError {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  if (!(caught instanceof ProtocolError)) throw new Error(`expected a ProtocolError, got ${String(caught)}`);
  return caught;
}

const NODES_MESSAGE = /more than maxNodes 2000000 items \(at least \d+; a shared object or array counts once for every place it appears\)/;

test('a DAG of 2^40 paths is refused for maxNodes by the check, the encoder and encodeFrame', (t) => {
  const dag = doubling(40);
  for (const attempt of [
    () => checkEncodable(dag, DEFAULT_LIMITS),
    () => encodeValue(dag),
    () => encodeValue({ a: [dag] }, { maxFrameBytes: 0xffff_ffff }),
    () => encodeFrame({ type: 'result', id: 1, value: dag as WireValue }),
    () => encodeFrame({ type: 'call', id: 1, name: 'f', args: [dag as WireValue], sync: true }),
  ]) {
    const error = refusal(attempt);
    t.is(error.code, 'ERR_STRATA_PROTOCOL');
    t.regex(error.message, NODES_MESSAGE);
    t.regex(error.message, /^cannot encode \$(\.value|\.args\[0\]|\.a\[0\])?(\[[01]\])+: /);
  }
});

test('the count of a DAG is its expanded count, the same as the decoder finds', (t) => {
  const dag = doubling(16);
  // 2^17 - 1 arrays and 2^16 leaves
  const expected = 2 ** 17 - 1 + 2 ** 16;
  t.is(checkEncodable(dag, DEFAULT_LIMITS).nodes, expected);
  const bytes = encodeValue(dag);
  t.is(scanCbor(bytes, DEFAULT_LIMITS), expected);
  t.notThrows(() => checkEncodable(dag, resolveLimits({ maxNodes: expected })));
  t.throws(() => checkEncodable(dag, resolveLimits({ maxNodes: expected - 1 })), { instanceOf: ProtocolError, message: /maxNodes/ });
  t.throws(() => scanCbor(bytes, resolveLimits({ maxNodes: expected - 1 })), { instanceOf: ProtocolError, message: /maxNodes/ });
});

test('legitimate sharing is accepted and sent once per place: [a, a], a diamond, Map and Set entries', (t) => {
  const a = { x: 1 };
  const pair = [a, a];
  t.is(checkEncodable(pair, DEFAULT_LIMITS).nodes, 1 + 2 * 3);
  t.deepEqual(tree(pair), [{ x: 1 }, { x: 1 }]);

  const bottom = { n: [1, 2, 3] };
  const diamond = { left: { down: bottom }, right: [bottom], again: bottom };
  const back = tree(diamond);
  t.deepEqual(back, { left: { down: { n: [1, 2, 3] } }, right: [{ n: [1, 2, 3] }], again: { n: [1, 2, 3] } });
  t.is(checkEncodable(diamond, DEFAULT_LIMITS).nodes, scanCbor(encodeValue(diamond), DEFAULT_LIMITS));

  const key = { id: 1 };
  const list = [key, key];
  const map = new Map<unknown, unknown>([
    [key, key],
    [list, key],
    ['k', list],
  ]);
  const set = new Set<unknown>([key, list, map]);
  const value = { map, set, again: [map, set] };
  const info = checkEncodable(value, DEFAULT_LIMITS);
  const bytes = encodeValue(value);
  t.is(info.nodes, scanCbor(bytes, DEFAULT_LIMITS));
  t.deepEqual(encodeValue(decodeValue(bytes)), bytes);
});

test('a long shared array counts at every place it appears', (t) => {
  const long = Array.from({ length: 1000 }, (_, i) => i);
  const value = [long, { a: long, b: [long, long] }, new Map([[long, long]])];
  const info = checkEncodable(value, DEFAULT_LIMITS);
  t.is(info.nodes, scanCbor(encodeValue(value), DEFAULT_LIMITS));
  t.is(info.nodes, 1 + 6 * 1001 + 1 + 2 + 1 + 1);
});

test('Map and Set DAGs of 2^40 paths are refused for maxNodes', (t) => {
  let map: unknown = new Map([[1, 1]]);
  for (let i = 0; i < 40; i++) map = new Map([[map, map]]);
  t.regex(refusal(() => encodeValue(map)).message, NODES_MESSAGE);
  let set: unknown = new Set([1]);
  for (let i = 0; i < 40; i++) set = new Set([set, [set]]);
  t.regex(refusal(() => encodeValue(set)).message, NODES_MESSAGE);
  let object: unknown = { leaf: true };
  for (let i = 0; i < 40; i++) object = { a: object, b: object };
  t.regex(refusal(() => encodeValue(object)).message, NODES_MESSAGE);
});

test('a cycle is refused as a cycle, where it closes, even beside big shared parts', (t) => {
  const big = Array.from({ length: 500 }, () => 0);
  const looped: unknown[] = [big, big, big];
  looped.push([looped]);
  const error = refusal(() => encodeValue(looped, { maxNodes: 2000 }));
  t.is(error.message, 'cannot encode $[3][0]: cycle (the value contains itself)');
  const object: Record<string, unknown> = { list: [1, 2] };
  object['inner'] = { back: object };
  t.is(refusal(() => encodeValue(object)).message, 'cannot encode $.inner.back: cycle (the value contains itself)');
  const map = new Map<unknown, unknown>();
  map.set(map, 1);
  t.is(refusal(() => encodeValue(map)).message, 'cannot encode ${key#0}: cycle (the value contains itself)');
  // a cycle through the 2^40 DAG's innermost array
  const dag = doubling(40) as unknown[];
  let inner = dag;
  while (Array.isArray(inner[0])) inner = inner[0] as unknown[];
  inner.push(dag);
  t.regex(refusal(() => encodeValue(dag)).message, /: cycle \(the value contains itself\)$/);
});

test('maxNodes counts a wide array exactly: maxNodes items pass, one more is refused', (t) => {
  const exact = new Array<number>(DEFAULT_LIMITS.maxNodes - 1).fill(0);
  t.is(checkEncodable(exact, DEFAULT_LIMITS).nodes, DEFAULT_LIMITS.maxNodes);
  exact.push(0);
  const error = refusal(() => checkEncodable(exact, DEFAULT_LIMITS));
  t.is(
    error.message,
    'cannot encode $[1999999]: more than maxNodes 2000000 items (at least 2000001; a shared object or array counts once for every place it appears)',
  );
  // the same with a shared row
  const row = [1, 2, 3, 4];
  const rows = [row, row, row];
  t.notThrows(() => encodeValue(rows, { maxNodes: 16 }));
  t.throws(() => encodeValue(rows, { maxNodes: 15 }), { instanceOf: ProtocolError, message: /more than maxNodes 15 items \(at least 16;/ });
});

test('a shared container counts its depth at every place it appears', (t) => {
  const nest = (n: number, inner: unknown): unknown => (n === 0 ? inner : [nest(n - 1, inner)]);
  const deep = nest(59, 0); // 59 levels
  t.notThrows(() => encodeValue([deep, nest(4, deep)])); // 64 levels at most
  const error = refusal(() => encodeValue([deep, nest(5, deep)]));
  t.regex(error.message, /^cannot encode \$\[1\](\[0\]){5}: nesting deeper than maxDepth 64 \(a shared value nested 59 levels deep, placed at depth 7\)$/);
  // the decoder refuses the same value, written out under a looser limit
  t.throws(() => decodeValue(encodeValue([deep, nest(5, deep)], { maxDepth: 1000 })), {
    instanceOf: ProtocolError,
    message: /nesting deeper than maxDepth 64/,
  });
});

test('a shared container counts its bytes at every place it appears', (t) => {
  const row = { text: 'x'.repeat(1000) };
  const rows = new Array(100).fill(row);
  // refused by the check's lower bound, before cbor-x writes anything
  t.throws(() => encodeValue(rows, { maxFrameBytes: 50_000 }), { instanceOf: ProtocolError, message: /encoded value exceeds maxFrameBytes 50000/ });
  t.notThrows(() => encodeValue(rows, { maxFrameBytes: 200_000 }));
  let blob: unknown = { b: new Uint8Array(1024) };
  for (let i = 0; i < 30; i++) blob = [blob, blob];
  t.throws(() => encodeValue(blob, { maxNodes: 0xffff_ffff }), { instanceOf: ProtocolError, message: /encoded value exceeds maxFrameBytes/ });
});

test('a short shared container is counted from the memo once it turns out to hold a container', (t) => {
  // short containers are looked up only when they hold a container: here after two scalars
  const inner = { deep: [1] };
  const row = { text: 'x'.repeat(1000), n: 1, inner };
  const rows = new Array(10).fill(row);
  const info = checkEncodable(rows, DEFAULT_LIMITS);
  t.is(info.nodes, scanCbor(encodeValue(rows), DEFAULT_LIMITS));
  // per row: the map, 3 keys, 2 scalars, the inner map, its key, the array and its element
  t.is(info.nodes, 1 + 10 * 10);
  t.notThrows(() => encodeValue(rows, { maxNodes: info.nodes }));
  t.throws(() => encodeValue(rows, { maxNodes: info.nodes - 1 }), { instanceOf: ProtocolError, message: /more than maxNodes/ });
  t.throws(() => encodeValue(rows, { maxFrameBytes: 9000 }), { instanceOf: ProtocolError, message: /encoded value exceeds maxFrameBytes 9000/ });
  // a short container that closes a cycle after some scalars
  const looped: Record<string, unknown> = { a: 1, b: 'two' };
  looped['c'] = [3, looped];
  t.is(refusal(() => encodeValue([looped])).message, 'cannot encode $[0].c[1]: cycle (the value contains itself)');
  const selfish: unknown[] = [1, 2];
  selfish.push(selfish);
  t.is(refusal(() => encodeValue({ selfish })).message, 'cannot encode $.selfish[2]: cycle (the value contains itself)');
});

/** A random value with shared parts: containers built from a pool that grows with each of them. */
function randomDag(rng: Prng, generator: ValueGenerator): unknown {
  const pool: unknown[] = Array.from({ length: 4 }, () => generator.value(2));
  const levels = 1 + rng.int(6);
  for (let level = 0; level < levels; level++) {
    const width = rng.int(5);
    const picks = Array.from({ length: width }, () => rng.pick(pool));
    let container: unknown;
    switch (rng.int(4)) {
      case 0:
        container = picks;
        break;
      case 1:
        container = Object.fromEntries(picks.map((pick, i) => [`k${i}`, pick]));
        break;
      case 2:
        container = new Map(picks.map((pick, i) => [i % 2 === 0 ? pick : i, pick]));
        break;
      default:
        container = new Set(picks);
    }
    pool.push(container);
  }
  return pool[pool.length - 1];
}

test('property: on random DAGs the encoder check and the decoder agree on the count and the limits', (t) => {
  const rng = new Prng(0x5a17);
  const generator = new ValueGenerator(rng, 3, 4);
  let checked = 0;
  for (let i = 0; i < 400; i++) {
    const value = randomDag(rng, generator);
    const info = checkEncodable(value, DEFAULT_LIMITS);
    const bytes = encodeValue(value);
    t.is(scanCbor(bytes, DEFAULT_LIMITS), info.nodes);
    t.deepEqual(encodeValue(decodeValue(bytes)), bytes);
    // tight limits: the encoder refuses exactly what the decoder would
    const tight: Partial<Limits>[] = [{ maxNodes: info.nodes }, { maxNodes: Math.max(1, info.nodes - 1) }];
    for (let depth = 1; depth <= 8; depth++) tight.push({ maxDepth: depth });
    for (const limits of tight) {
      const resolved = resolveLimits(limits);
      let encodes = true;
      let decodes = true;
      try {
        checkEncodable(value, resolved);
      } catch {
        encodes = false;
      }
      try {
        scanCbor(bytes, resolved);
      } catch {
        decodes = false;
      }
      t.is(encodes, decodes, `under ${JSON.stringify(limits)}`);
    }
    checked++;
  }
  t.is(checked, 400);
});
