import test from 'ava';
import { placeholder } from '../src/index.js';
test('x', (t) => { t.is(placeholder, 1); });
