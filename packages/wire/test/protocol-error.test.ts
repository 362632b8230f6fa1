import test from 'ava';
import { ProtocolError } from '../src/index.js';

test('ProtocolError has a stable name and code and caps its reason', (t) => {
  const error = new ProtocolError('bad frame');
  t.true(error instanceof Error);
  t.is(error.name, 'ProtocolError');
  t.is(error.code, 'ERR_STRATA_PROTOCOL');
  t.is(error.message, 'bad frame');
  t.is(error.reason, 'bad frame');
  t.regex(String(error), /^ProtocolError: bad frame/);
  const long = new ProtocolError('x'.repeat(10000));
  t.is(long.message.length, 512);
  t.is(long.reason, long.message);
  const cause = new Error('inner');
  t.is(new ProtocolError('outer', { cause }).cause, cause);
});
