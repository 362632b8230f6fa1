// The platform-skip switch (STRATA_TEST_PLATFORM): a skip where the machine lacks a feature, a
// failure where the machine declares it. Pure: the environment is a parameter.
import test from 'ava';
import { declaredFeatures, isDeclared, platformTest, platformVerdict } from '../src/testing/platform.js';

const env = (value?: string) => (value === undefined ? {} : { STRATA_TEST_PLATFORM: value });

test('the declared features are a list separated by spaces or commas', (t) => {
  t.deepEqual([...declaredFeatures(env('linux, landlock-abi=7  root'))], ['linux', 'landlock-abi=7', 'root']);
  t.deepEqual([...declaredFeatures(env())], []);
});

test('a numbered feature is declared by the same name with that number or a higher one', (t) => {
  const declared = env('landlock-abi=7');
  t.true(isDeclared('landlock-abi=1', declared));
  t.true(isDeclared('landlock-abi=7', declared));
  t.false(isDeclared('landlock-abi=8', declared));
  t.false(isDeclared('linux', declared));
});

const rows: [string, { feature: string; available: boolean }, string | undefined, string][] = [
  ['available: runs', { feature: 'linux', available: true }, 'linux', 'run'],
  ['missing, not declared: skips', { feature: 'linux', available: false }, undefined, 'skip'],
  ['missing, declared: fails', { feature: 'linux', available: false }, 'linux root', 'fail'],
  ['missing, a higher number declared: fails', { feature: 'landlock-abi=1', available: false }, 'landlock-abi=7', 'fail'],
  ['missing, only a lower number declared: skips', { feature: 'landlock-abi=8', available: false }, 'landlock-abi=7', 'skip'],
];
for (const [title, need, declared, expected] of rows) {
  test(`platformVerdict: ${title}`, (t) => {
    const verdict = platformVerdict({ ...need, reason: 'the reason' }, env(declared));
    t.true(expected in verdict);
    if ('skip' in verdict) t.is(verdict.skip, 'the reason');
    if ('fail' in verdict) t.is(verdict.fail, `STRATA_TEST_PLATFORM declares ${need.feature}, but this machine lacks it: the reason`);
  });
}

/** A stand-in runner that records what platformTest registers, and runs it against a recording context. */
function recorder() {
  const registered: { kind: 'test' | 'skip'; title: string; failed?: string }[] = [];
  const context = (entry: { failed?: string }) => ({ fail: (message: string) => void (entry.failed = message) });
  const run = (kind: 'test' | 'skip') => (title: string, body: (t: unknown) => unknown) => {
    const entry: (typeof registered)[number] = { kind, title };
    registered.push(entry);
    if (kind === 'test') body(context(entry));
  };
  return { registered, test: Object.assign(run('test'), { skip: run('skip') }) };
}

test('platformTest registers the test, a titled skip, or a failing test', (t) => {
  const need = { feature: 'linux', available: false, reason: 'Linux only' };
  const skipped = recorder();
  platformTest(skipped.test, need, env())('a case', () => t.fail('a skipped test must not run'));
  t.deepEqual(skipped.registered, [{ kind: 'skip', title: 'a case (skipped: Linux only)' }]);

  const failing = recorder();
  platformTest(failing.test, need, env('linux'))('a case', () => t.fail('the body of a failing platform test must not run'));
  t.deepEqual(failing.registered, [{ kind: 'test', title: 'a case', failed: 'STRATA_TEST_PLATFORM declares linux, but this machine lacks it: Linux only' }]);

  const ran = recorder();
  let bodyRan = false;
  platformTest(ran.test, { ...need, available: true }, env())('a case', () => void (bodyRan = true));
  t.true(bodyRan);
  t.deepEqual(ran.registered, [{ kind: 'test', title: 'a case' }]);
});
