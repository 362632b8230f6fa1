import test from 'ava';
import { InvalidOption, Runtime } from '../src/index.js';
import { DEFAULT_RUNTIME_OPTIONS, resolveRuntimeOptions } from '../src/options.js';

test('defaults are filled in and frozen', (t) => {
  const resolved = resolveRuntimeOptions();
  t.deepEqual(resolved, DEFAULT_RUNTIME_OPTIONS);
  t.is(resolved.maxOutputBytes, 64 * 1024);
  t.is(resolved.maxResultBytes, 1024 * 1024);
  t.true(resolved.redactHostErrors);
  t.false(resolved.strictEval);
  t.true(Object.isFrozen(resolved));
});

test('maxBufferBytes defaults to maxHeapSize', (t) => {
  t.is(resolveRuntimeOptions({ maxHeapSize: 32 * 1024 * 1024 }).maxBufferBytes, 32 * 1024 * 1024);
});

const bad: [string, unknown][] = [
  ['timeout', 0],
  ['timeout', -1],
  ['timeout', 1.5],
  ['timeout', '100'],
  ['timeout', NaN],
  ['maxHeapSize', 1024],
  ['maxBufferBytes', 0],
  ['maxOutputBytes', Infinity],
  ['maxResultBytes', null],
  ['strictEval', 'yes'],
  ['redactHostErrors', 1],
  ['bootstrap', 42],
  ['bootstrap', ['ok', 1]],
  ['allowGlobals', ['process']],
  ['timout', 100],
];
for (const [key, value] of bad) {
  test(`option ${key}=${String(value)} is refused with a clear error`, async (t) => {
    const error = await t.throwsAsync(Runtime.start({ [key]: value } as never), { instanceOf: InvalidOption });
    t.is(error?.code, 'ERR_STRATA_INVALID_OPTION');
    t.regex(error?.message ?? '', new RegExp(key === 'timout' ? 'unknown option "timout"' : key));
  });
}

test('options must be an object', async (t) => {
  await t.throwsAsync(Runtime.start('fast' as never), { instanceOf: InvalidOption, message: /options must be an object/ });
});

test('timeout accepts Infinity', (t) => {
  t.is(resolveRuntimeOptions({ timeout: Infinity }).timeout, Infinity);
});
