// deeperThan counts nesting as the guest boundary does (arrays, objects, Map keys and values,
// Set members; typed arrays and dates are leaves). Pure: no worker.
import test from 'ava';
import { deeperThan } from '../src/value-depth.js';

/** `levels` objects, one inside the other. */
function nested(levels: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < levels; i++) value = { o: value };
  return value;
}

const ROWS: readonly [string, unknown, number, boolean][] = [
  ['a primitive is no level', 'text', 0, false],
  ['null is no level', null, 0, false],
  ['an empty object is one level', {}, 1, false],
  ['an empty object past a limit of 0', {}, 0, true],
  ['3 objects within 3', nested(3), 3, false],
  ['3 objects past 2', nested(3), 2, true],
  ['arrays count as objects do', [[[1]]], 2, true],
  ['a Map value counts', new Map([['k', { a: {} }]]), 2, true],
  ['a Map key counts', new Map([[{ a: {} }, 1]]), 2, true],
  ['a Set member counts', new Set([[[]]]), 2, true],
  ['a typed array is a leaf', { bytes: new Uint8Array([1, 2]) }, 2, false],
  ['a Date is a leaf', [new Date(0)], 2, false],
  ['63 levels past 62 (the answer limit)', nested(63), 62, true],
  ['62 levels within 62', nested(62), 62, false],
];

for (const [name, value, limit, expected] of ROWS) {
  test(`deeperThan: ${name}`, (t) => {
    t.is(deeperThan(value, limit), expected);
  });
}

test('deeperThan answers for nesting far past the call stack, and for a value that contains itself', (t) => {
  t.true(deeperThan(nested(200_000), 62));
  t.false(deeperThan(nested(200_000), 200_000));
  const looped: Record<string, unknown> = { a: 1 };
  looped['self'] = looped;
  t.true(deeperThan(looped, 62));
});

test('deeperThan counts a shared part at every place it appears', (t) => {
  const part = nested(30);
  t.false(deeperThan([part, part], 31));
  t.true(deeperThan([part, { again: part }], 31));
});
