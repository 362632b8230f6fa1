import test from 'ava';
import { isAsciiIdentifier } from '../src/index.js';

test('an ASCII identifier: a letter, _ or $ first, then letters, digits, _ or $', (t) => {
  for (const name of ['a', 'lookup', '_private', '$', '$el', 'x1', 'camelCase', 'UPPER_CASE', 'class']) t.true(isAsciiIdentifier(name), name);
});

test('anything else is not: empty, a leading digit, punctuation, spaces, non-ASCII letters', (t) => {
  for (const name of ['', '1x', '2fa', 'a-b', 'a.b', 'a b', ' a', 'a\n', 'café', 'π', 'a\u200d', '\\u0061'])
    t.false(isAsciiIdentifier(name), JSON.stringify(name));
});
