/**
 * Catastrophic regular expressions: which ones the worker's linear-time fallback rescues, and
 * what stops the rest.
 *
 * Every worker runs with `--enable-experimental-regexp-engine-on-excessive-backtracks
 * --regexp-backtracks-before-fallback=50000` (see src/isolated/v8-flags.ts): after 50 000
 * backtracks V8 re-runs the match on its breadth-first engine, but only when that engine can
 * handle the pattern. Each pattern below backtracks exponentially in the length of its input
 * (`(a+)+$` on 28 a's and a '!' takes about 75 s under plain `node --jitless` here; each case
 * below uses 32 or more), so without the fallback it would run for far longer than any timeout
 * in this file. The covered cases assert the answer, never the elapsed time; the uncovered ones
 * assert that the soft `timeout` ends them in RuntimeTimeout and leaves the runtime usable.
 */
import test from 'ava';
import { IsolatedRuntime, RuntimeTimeout } from '../src/index.js';
import { checkNoLeaks } from './helpers/leaks.js';
import { runtimeFor } from './helpers/runtime.js';

checkNoLeaks(test);

/** What a match returns across the boundary (an exec result carries extra properties). */
const SHOW = 'const show = (m) => m && { match: [...m], index: m.index };';
/** Guest code with `show` in scope, in a block of its own (its completion value is the result). */
const withShow = (code: string) => `{ ${SHOW} ${code} }`;
/** The input every uncovered case fails on, after exponential backtracking. */
const FAILING = "'a'.repeat(32) + '!'";

/** A generous soft timeout for the covered cases: the fallback answers in milliseconds. */
const GENEROUS = 20_000;
/** A short soft timeout for the uncovered cases. */
const SHORT = 300;

// --- covered: the fallback answers --------------------------------------------------------

const covered: [name: string, code: string, expected: unknown][] = [
  ['nested quantifiers (a+)+$', `show(/(a+)+$/.exec('a'.repeat(32) + '!a'))`, { match: ['a', 'a'], index: 33 }],
  ['nested stars (a*)*b', `show(/(a*)*b/.exec('a'.repeat(32)))`, null],
  ['overlapping alternation (a|aa)+$', `show(/(a|aa)+$/.exec('a'.repeat(60) + '!a'))`, { match: ['a', 'a'], index: 61 }],
  [
    'classes, dot and lazy quantifiers',
    `[show(/([a-z]+)+$/.exec('a'.repeat(32) + '!a')), show(/(.+)+!$/.exec('a'.repeat(32))), show(/(a+?)+?$/.exec('a'.repeat(32) + '!a'))]`,
    [{ match: ['a', 'a'], index: 33 }, null, { match: ['a', 'a'], index: 33 }],
  ],
  ['flag g (exec sets lastIndex)', `const re = /(a+)+$/g; [show(re.exec('a'.repeat(32) + '!a')), re.lastIndex]`, [{ match: ['a', 'a'], index: 33 }, 34]],
  ['flag m ($ before a line break)', `show(/(a+)+$/m.exec('a'.repeat(32) + '!a\\nb'))`, { match: ['a', 'a'], index: 33 }],
  ['flag s (. matches a line break)', `show(/(a+)+$|a.b/s.exec('a'.repeat(32) + '!a\\nb'))`, { match: ['a\nb', undefined], index: 33 }],
  [
    'flag y (sticky)',
    `const re = /(a+)+$|a+!/y; [show(re.exec('a'.repeat(32) + '!')), re.lastIndex]`,
    [{ match: ['a'.repeat(32) + '!', undefined], index: 0 }, 33],
  ],
  ['named groups without a backreference', `const m = /(?<run>a+)+$/.exec('a'.repeat(32) + '!a'); [m.index, m.groups.run]`, [33, 'a']],
  ['captureless lookbehind (?<=…)', `show(/(?<=^|!)(a+)+$/.exec('a'.repeat(32) + '!a'))`, { match: ['a', 'a'], index: 33 }],
  ['captureless negative lookbehind (?<!…)', `show(/(?<!a)(a+)+$/.exec('a'.repeat(32) + '!a'))`, { match: ['a', 'a'], index: 33 }],
  ['word boundary \\b', `show(/\\b(a+)+$/.exec('a'.repeat(32) + '!a'))`, { match: ['a', 'a'], index: 33 }],
  ['non-boundary \\B', `show(/\\B(a+)+$/.exec('a'.repeat(32) + '!aa'))`, { match: ['a', 'a'], index: 34 }],
  ['counted repetition up to 16 (a{1,16})+$', `show(/(a{1,16})+$/.exec('a'.repeat(32) + '!a'))`, { match: ['a', 'a'], index: 33 }],
  [
    'nested counted repetitions multiplying to 16 ((a+){1,4}){1,4}$',
    `show(/((a+){1,4}){1,4}$/.exec('a'.repeat(32) + '!a'))`,
    { match: ['a', 'a', 'a'], index: 33 },
  ],
  [
    'replace, split and matchAll',
    `const s = 'a'.repeat(32) + '!a'; [s.replace(/(a+)+$/, 'X'), s.split(/(a+)+$/).length, [...s.matchAll(/(a+)+$/g)].length]`,
    ['a'.repeat(32) + '!X', 3, 1],
  ],
];

for (const [name, code, expected] of covered) {
  test.serial(`IsolatedRuntime, covered by the linear-time fallback: ${name}`, async (t) => {
    await using rt = await IsolatedRuntime.start({ timeout: GENEROUS });
    t.deepEqual(await rt.eval(withShow(code)), expected);
  });
}

// --- not covered: the soft timeout stops them, and the runtime stays usable ---------------

const uncovered: [name: string, regexp: string][] = [
  ['backreference \\1', String.raw`/(a+)+\1$/`],
  ['named backreference \\k<x>', String.raw`/(?<x>a+)+\k<x>$/`],
  ['lookahead (?=…)', String.raw`/^(?=a)(a+)+$/`],
  ['negative lookahead (?!…)', String.raw`/^(?!b)(a+)+$/`],
  ['lookbehind with flag g', String.raw`/(?<=^|!)(a+)+$/g`],
  ['negative lookbehind with flag y', String.raw`/(?<!b)(a+)+$/y`],
  ['capturing lookbehind (?<=(…))', String.raw`/(?<=(^))(a+)+$/`],
  ['flag i', String.raw`/(a+)+$/i`],
  ['inline modifier (?i:…)', String.raw`/((?i:a)+)+$/`],
  ['flag u', String.raw`/(a+)+$/u`],
  ['flag u with a property escape \\p{L}', String.raw`/(\p{L}+)+$/u`],
  ['flag v', String.raw`/(a+)+$/v`],
  ['flag d', String.raw`/(a+)+$/d`],
  ['counted repetition past 16 (a{1,17})+$', String.raw`/(a{1,17})+$/`],
  ['nested counted repetitions multiplying past 16', String.raw`/((a+){1,4}){1,5}$/`],
];

for (const [name, regexp] of uncovered) {
  test.serial(`IsolatedRuntime, not covered: ${name} ends in RuntimeTimeout; the runtime stays usable`, async (t) => {
    await using rt = await IsolatedRuntime.start({ timeout: SHORT });
    const error = await t.throwsAsync(rt.eval(`${regexp}.exec(${FAILING})`), { instanceOf: RuntimeTimeout });
    t.is(error?.code, 'ERR_STRATA_TIMEOUT');
    t.false(rt.closed);
    t.is(await rt.eval('1+1'), 2);
  });
}

test.serial('IsolatedRuntime without a soft timeout: the hard requestTimeout kills a backreference pattern (RuntimeTimeout, runtime closed)', async (t) => {
  await using rt = await IsolatedRuntime.start({ timeout: Infinity, requestTimeout: 1_000 });
  const error = await t.throwsAsync(rt.eval(String.raw`/(a+)+\1$/.exec(${FAILING})`), { instanceOf: RuntimeTimeout });
  t.is(error?.code, 'ERR_STRATA_TIMEOUT');
  t.true(rt.closed);
  await using next = await IsolatedRuntime.start();
  t.is(await next.eval('1+1'), 2);
});

test.serial('opt-in v8Flags --experimental-regexp-engine-capture-group-opt: lookaheads are covered, backreferences still are not', async (t) => {
  await using rt = await IsolatedRuntime.start({ timeout: SHORT, v8Flags: ['--experimental-regexp-engine-capture-group-opt'] });
  t.deepEqual(await rt.eval(withShow(`show(/(?=a)(a+)+$/.exec('a'.repeat(32) + '!a'))`)), { match: ['a', 'a'], index: 33 });
  t.deepEqual(await rt.eval(withShow(`show(/(?<=(!))(a+)+$/.exec('a'.repeat(32) + '!a'))`)), { match: ['a', '!', 'a'], index: 33 });
  await t.throwsAsync(rt.eval(String.raw`/(a+)+\1$/.exec(${FAILING})`), { instanceOf: RuntimeTimeout });
  await t.throwsAsync(rt.eval(`/(?=a)(a+)+$/g.exec(${FAILING})`), { instanceOf: RuntimeTimeout });
  t.is(await rt.eval('1+1'), 2);
});

// --- in process: no fallback (the host's V8 flags) ----------------------------------------

test('Runtime (in process): a backreference pattern ends in RuntimeTimeout; the runtime stays usable', async (t) => {
  const rt = await runtimeFor(t, { timeout: SHORT });
  const error = await t.throwsAsync(rt.eval(String.raw`/(a+)+\1$/.exec(${FAILING})`), { instanceOf: RuntimeTimeout });
  t.is(error?.code, 'ERR_STRATA_TIMEOUT');
  t.false(rt.closed);
  t.is(await rt.eval('1+1'), 2);
});

const hostHasFallback = process.execArgv.some((flag) => /^--enable[-_]experimental[-_]regexp[-_]engine[-_]on[-_]excessive[-_]backtracks$/.test(flag));

(hostHasFallback ? test.skip : test)(
  'Runtime (in process): no fallback without the flag, so even (a+)+$ ends in RuntimeTimeout; the runtime stays usable',
  async (t) => {
    const rt = await runtimeFor(t, { timeout: SHORT });
    const error = await t.throwsAsync(rt.eval(`/(a+)+$/.exec(${FAILING})`), { instanceOf: RuntimeTimeout });
    t.is(error?.code, 'ERR_STRATA_TIMEOUT');
    t.is(await rt.eval('1+1'), 2);
  },
);
