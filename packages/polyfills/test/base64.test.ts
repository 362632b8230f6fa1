import test from 'ava';
import { createSandbox, type Sandbox } from './helpers/isolate.js';

let s: Sandbox;
test.before(async () => {
  s = await createSandbox();
});
test.after.always(() => s.dispose());

test('btoa and atob round-trip every byte', (t) => {
  t.is(s.value(`btoa('hello')`), 'aGVsbG8=');
  t.is(s.value(`btoa('')`), '');
  t.is(s.value(`btoa('a')`), 'YQ==');
  t.is(s.value(`btoa('ab')`), 'YWI=');
  t.is(s.value(`atob('aGVsbG8=')`), 'hello');
  t.true(
    s.value(
      `(() => { let all = ''; for (let i = 0; i < 256; i++) all += String.fromCharCode(i); return atob(btoa(all)) === all && btoa(all) === ${JSON.stringify(Buffer.from(Array.from({ length: 256 }, (_, i) => i)).toString('base64'))}; })()`,
    ),
  );
  // Large inputs cross the internal chunking.
  t.true(s.value(`(() => { const big = 'xyz\\u00ff'.repeat(50000); return atob(btoa(big)) === big; })()`));
});

test('atob is forgiving: whitespace and missing padding', (t) => {
  t.is(s.value(`atob(' aG Vs\\nbG\\t8 ')`), 'hello');
  t.is(s.value(`atob('aGVsbG8')`), 'hello');
  t.is(s.value(`atob('YQ')`), 'a');
  t.is(s.value(`atob('YR==')`), 'a'); // non-zero trailing bits are discarded
  t.is(s.value(`atob(null)`), '\x9e\xe9e');
});

test('invalid input throws InvalidCharacterError DOMException', (t) => {
  for (const input of [`'a'`, `'abcde'`, `'ab=c'`, `'a==='`, `'YQ==='`, `'@@@@'`, `'é'`, `undefined`]) {
    t.deepEqual(
      s.value(`(() => { try { atob(${input}); return 'no error'; } catch (e) { return [e instanceof DOMException, e.name, e.code]; } })()`),
      [true, 'InvalidCharacterError', 5],
      input,
    );
  }
  t.deepEqual(s.value(`(() => { try { btoa('€'); } catch (e) { return [e instanceof DOMException, e.name]; } })()`), [true, 'InvalidCharacterError']);
  t.throws(() => s.value(`btoa()`), { message: /1 argument required/ });
  t.throws(() => s.value(`atob()`), { message: /1 argument required/ });
});
