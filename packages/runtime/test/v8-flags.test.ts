import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { InvalidOption } from '../src/errors.js';
import { IsolatedRuntime } from '../src/index.js';
import { V8_FLAG_CATALOG, V8_FLAG_CATALOG_SOURCE } from '../src/isolated/v8-flag-catalog.js';
import {
  ALWAYS_ON_V8_FLAGS,
  DEFAULT_HARDENING_V8_FLAGS,
  JITLESS_V8_FLAG,
  REGEXP_BACKTRACKS_BEFORE_FALLBACK,
  STRICT_EVAL_V8_FLAG,
  V8_FLAG_POLICY,
  WORKER_NODE_OPTIONS,
  buildWorkerFlags,
  validateV8Flags,
} from '../src/isolated/v8-flags.js';
import { childPids } from './helpers/leaks.js';

// Compiled to dist/test/v8-flags.test.js: the package root is two levels up.
const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CATALOG_SCRIPT = fileURLToPath(new URL('../../scripts/update-v8-flag-catalog.mjs', import.meta.url));
const IVM = createRequire(import.meta.url).resolve('isolated-vm');

// --- running a real node ------------------------------------------------------------------------

interface Run {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** The process was still running at the deadline and was killed. */
  timedOut: boolean;
}

/** Runs this node (Node 24) with `args`, an empty environment, and SIGKILL at the deadline (a hang guard, generous for a loaded machine). */
function runNode(args: readonly string[], deadlineMs = 60_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { env: {}, cwd: PACKAGE_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, deadlineMs);
    child.on('error', reject);
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      resolve({ status, signal, stdout, stderr, timedOut });
    });
  });
}

/** `node <worker flags> -e <code>`: the worker's command line with a script of ours. */
function runWorker(flags: { v8: readonly string[]; node: readonly string[] }, code: string, deadlineMs?: number): Promise<Run> {
  return runNode([...flags.node, ...flags.v8, '-e', code], deadlineMs);
}

type Probe = readonly [name: string, kind: 'expr' | 'module', source: string];

/**
 * Node code that evaluates probes inside an isolated-vm isolate (where the guest runs) and prints
 * `{ name: result }` as JSON. An `expr` probe's result is its value (or `threw ...`); a `module`
 * probe's is whether the source compiles as a module.
 */
function inIsolate(probes: readonly Probe[]): string {
  return `
    const ivm = require(${JSON.stringify(IVM)});
    const isolate = new ivm.Isolate({ memoryLimit: 128 });
    const context = isolate.createContextSync();
    const out = {};
    for (const [name, kind, source] of ${JSON.stringify(probes)}) {
      try {
        out[name] = kind === 'module' ? (isolate.compileModuleSync(source), true) : context.evalSync(source, { copy: true });
      } catch (error) {
        out[name] = kind === 'module' ? false : 'threw ' + error.message;
      }
    }
    process.stdout.write(JSON.stringify(out));`;
}

function parseOutput(t: { log: (...values: unknown[]) => void }, run: Run): Record<string, unknown> {
  if (run.status !== 0) t.log(run);
  return JSON.parse(run.stdout) as Record<string, unknown>;
}

const DEFAULT_FLAGS = buildWorkerFlags();
const NOT_JITLESS = buildWorkerFlags({ jitless: false });

// --- the flags themselves -----------------------------------------------------------------------

test('the default hardening flags, exactly', (t) => {
  t.deepEqual(DEFAULT_HARDENING_V8_FLAGS, [
    '--jitless',
    '--enable-experimental-regexp-engine-on-excessive-backtracks',
    '--regexp-backtracks-before-fallback=50000',
    '--freeze-flags-after-init',
  ]);
  t.deepEqual(ALWAYS_ON_V8_FLAGS, DEFAULT_HARDENING_V8_FLAGS.slice(1));
  t.is(JITLESS_V8_FLAG, '--jitless');
  t.is(STRICT_EVAL_V8_FLAG, '--disallow-code-generation-from-strings');
  t.deepEqual(WORKER_NODE_OPTIONS, ['--disable-sigusr1']);
  for (const list of [DEFAULT_HARDENING_V8_FLAGS, ALWAYS_ON_V8_FLAGS, WORKER_NODE_OPTIONS, V8_FLAG_POLICY]) t.true(Object.isFrozen(list));
  t.true(V8_FLAG_POLICY.every((rule) => Object.isFrozen(rule)));
});

test('buildWorkerFlags: defaults are jitless with the hardening, and --disable-sigusr1 for node', (t) => {
  t.deepEqual(buildWorkerFlags(), { v8: [...DEFAULT_HARDENING_V8_FLAGS], node: ['--disable-sigusr1'] });
  t.deepEqual(buildWorkerFlags({}), buildWorkerFlags());
  t.deepEqual(buildWorkerFlags({ jitless: true, strictEval: false, v8Flags: [] }), buildWorkerFlags());
});

test('buildWorkerFlags: jitless: false drops only --jitless', (t) => {
  t.deepEqual(buildWorkerFlags({ jitless: false }).v8, [...ALWAYS_ON_V8_FLAGS]);
});

test('buildWorkerFlags: hardening first, the host flags normalised after it, the strict-eval flag last', (t) => {
  const flags = buildWorkerFlags({ strictEval: true, v8Flags: ['--stack_trace_limit=5', '--nojs-float16array', '--single-threaded'] });
  t.deepEqual(flags.v8, [
    '--jitless',
    '--enable-experimental-regexp-engine-on-excessive-backtracks',
    '--regexp-backtracks-before-fallback=50000',
    '--freeze-flags-after-init',
    '--stack-trace-limit=5',
    '--no-js-float16array',
    '--single-threaded',
    '--disallow-code-generation-from-strings',
  ]);
  t.deepEqual(flags.node, ['--disable-sigusr1']);
  t.deepEqual(buildWorkerFlags({ jitless: false, strictEval: true }).v8, [...ALWAYS_ON_V8_FLAGS, STRICT_EVAL_V8_FLAG]);
});

test('buildWorkerFlags returns fresh arrays: changing them does not change the constants', (t) => {
  const flags = buildWorkerFlags();
  flags.v8.pop();
  flags.node.pop();
  t.is(buildWorkerFlags().v8.length, 4);
  t.is(buildWorkerFlags().node.length, 1);
});

const badOptions: [string, unknown, RegExp][] = [
  ['jitless: "yes"', { jitless: 'yes' }, /jitless must be true or false \(got "yes"\)/],
  ['strictEval: 1', { strictEval: 1 }, /strictEval must be true or false \(got 1\)/],
  ['v8Flags as a string', { v8Flags: '--max-lazy' }, /v8Flags must be an array of strings \(got "--max-lazy"\)/],
  ['v8Flags with a number', { v8Flags: ['--max-lazy', 42] }, /v8Flags\[1\] must be a string \(got 42\)/],
  ['an unknown key', { jitles: false }, /unknown option "jitles"; known options: jitless, strictEval, v8Flags/],
  ['options that are not an object', ['--max-lazy'], /must be an object \(got an array\)/],
];
for (const [label, options, message] of badOptions) {
  test(`buildWorkerFlags refuses ${label}`, (t) => {
    const error = t.throws(() => buildWorkerFlags(options as never), { instanceOf: InvalidOption, message });
    t.is(error?.code, 'ERR_STRATA_INVALID_OPTION');
  });
}

test('validateV8Flags refuses a non-boolean strictEval', (t) => {
  t.throws(() => validateV8Flags([], { strictEval: 'yes' as never }), { instanceOf: InvalidOption, message: /strictEval must be true or false/ });
});

// --- acceptance ---------------------------------------------------------------------------------

const accepted: [input: string, normalised: string][] = [
  ['--stack-trace-limit=5', '--stack-trace-limit=5'],
  ['--stack_trace_limit=5', '--stack-trace-limit=5'],
  ['--stack-trace-limit=-1', '--stack-trace-limit=-1'],
  ['--rehash-snapshot', '--rehash-snapshot'],
  ['--max-lazy', '--max-lazy'],
  ['--no-lazy', '--no-lazy'],
  ['--no_lazy', '--no-lazy'],
  ['--nolazy', '--no-lazy'],
  ['--lite-mode', '--lite-mode'],
  ['--use-strict', '--use-strict'],
  ['--single-threaded', '--single-threaded'],
  ['--no-js-shipping', '--no-js-shipping'],
  ['--no-harmony-shipping', '--no-harmony-shipping'],
  ['--no-js-float16array', '--no-js-float16array'],
  ['--no_js_float16array', '--no-js-float16array'],
  ['--nojs-float16array', '--no-js-float16array'],
  ['--no-harmony-import-attributes', '--no-harmony-import-attributes'],
  ['--no-harmony-temporal', '--no-harmony-temporal'],
  ['--efficiency-mode', '--efficiency-mode'],
  ['--no-efficiency-mode', '--no-efficiency-mode'],
  ['--min-inlining-frequency=0.5', '--min-inlining-frequency=0.5'],
  ['--min-inlining-frequency=1e-2', '--min-inlining-frequency=1e-2'],
  ['--maglev-filter=*', '--maglev-filter=*'],
  ['--wasm-max-mem-pages=100', '--wasm-max-mem-pages=100'],
  [
    '--experimental-regexp-engine-capture-group-opt-max-memory-usage=18446744073709551615',
    '--experimental-regexp-engine-capture-group-opt-max-memory-usage=18446744073709551615',
  ],
  ['--enable-experimental-regexp-engine', '--enable-experimental-regexp-engine'],
  ['--freeze-flags-after-init', '--freeze-flags-after-init'],
  ['--cet-compatible', '--cet-compatible'],
];
for (const [input, normalised] of accepted) {
  test(`accepted: ${input} -> ${normalised}`, (t) => {
    t.deepEqual(validateV8Flags([input]), [normalised]);
    t.deepEqual(validateV8Flags([input], { strictEval: true }), [normalised]);
  });
}

test('validateV8Flags keeps order and duplicates (V8: the last mention wins)', (t) => {
  t.deepEqual(validateV8Flags(['--stack-trace-limit=5', '--max-lazy', '--stack-trace-limit=6']), [
    '--stack-trace-limit=5',
    '--max-lazy',
    '--stack-trace-limit=6',
  ]);
  t.deepEqual(validateV8Flags([]), []);
});

// --- refusal ------------------------------------------------------------------------------------

const ON_SHIPPING = /not shipped.*--no-js-shipping, --no-harmony-shipping and --no-js-<feature>/;
const INTERNALS = /V8 internals within the guest's reach.*remove it/;
const DIAGNOSTICS = /diagnostic output.*debug with the in-process Runtime instead/;
const TEST_MODE = /a V8 test, debug or fuzzing mode.*remove it/;
const SEED =
  /it fixes a seed V8 randomises with, or makes V8 predictable, so that every worker is the same: .*hash flooding.*\(ASLR\); remove it\. For a reproducible Math\.random, use the `clock: \{ seed \}` option/;
const HEAP = /`maxHeapSize` \(guest heap\) and `maxMemory` \(worker process\) options.*use those options instead/;

const refused: [input: string, message: RegExp, strictEval?: boolean][] = [
  // Spelling: each refused, never ignored.
  ['jitless', /not written as a V8 flag: write it with two leading dashes, --jitless/],
  ['-max-lazy', /not written as a V8 flag: write it with two leading dashes, --max-lazy/],
  ['--jitles', /is not a V8 flag of Node 24\.[0-9.]+ \(V8 [^)]+\); did you mean --jitless\?/],
  ['--max-lazzy', /did you mean --max-lazy\?/],
  ['--no-max-lazzy', /did you mean --no-max-lazy\?/],
  ['--JITLESS', /V8 flag names are lower case \(--jitless\)/],
  ['--Stack-Trace-Limit=5', /V8 flag names are lower case \(--stack-trace-limit\)/],
  [' --max-lazy', /contains whitespace: pass each flag as its own array element/],
  ['--max-lazy ', /contains whitespace/],
  ['--stack-trace-limit= 5', /contains whitespace/],
  ['--stack-trace-limit 5', /contains whitespace/],
  ['--max-lazy\t', /contains whitespace/],
  ['--max.lazy', /a name has only a-z, 0-9, - and _/],
  ['--max-lazy\u0000', /a name has only a-z, 0-9, - and _/],
  ['--', /is not a flag: write --name or --name=value/],
  ['--=5', /is not a flag/],
  ['--no-no-jitless', /is not a V8 flag of Node/],
  ['--max-lazy=false', /gives a value to a boolean flag: write --max-lazy to switch it on or --no-max-lazy to switch it off/],
  ['--max-lazy=true', /gives a value to a boolean flag/],
  ['--max-lazy=', /gives a value to a boolean flag/],
  ['--no-max-lazy=1', /gives a value to a boolean flag/],
  ['--efficiency-mode=true', /gives a value to a boolean flag: write --efficiency-mode/],
  ['--stack-trace-limit', /needs a value: write --stack-trace-limit=<integer>/],
  ['--maglev-filter', /needs a value: write --maglev-filter=<text>/],
  ['--no-stack-trace-limit', /only boolean flags have a --no- form, and --stack-trace-limit takes a value \(integer\)/],
  ['--stack-trace-limit=abc', /invalid value: --stack-trace-limit takes an integer from -2147483648 to 2147483647 \(got "abc"\)/],
  ['--stack-trace-limit=5x', /takes an integer from -2147483648 to 2147483647/],
  ['--stack-trace-limit=1.5', /takes an integer/],
  ['--stack-trace-limit=007', /takes an integer/],
  ['--stack-trace-limit=99999999999', /takes an integer from -2147483648 to 2147483647 \(got 99999999999\)/],
  ['--wasm-max-table-size=-1', /takes an integer from 0 to 4294967295 \(got -1\)/],
  ['--wasm-inlining-budget=18446744073709551616', /takes an integer from 0 to 18446744073709551615/],
  ['--min-inlining-frequency=abc', /takes a finite decimal number \(got "abc"\)/],
  ['--min-inlining-frequency=1e999', /takes a finite decimal number/],
  ['--maglev-filter=', /takes a non-empty value of printable ASCII/],
  ['--maglev-filter=é', /takes a non-empty value of printable ASCII/],
  // Node options are not V8 flags.
  ['--inspect', /is not a V8 flag of Node.*not Node options/],
  ['--inspect-brk=0', /is not a V8 flag of Node.*not Node options/],
  ['--disable-sigusr1', /is not a V8 flag of Node.*not Node options/],
  // Strata's own switches.
  ['--jitless', /the JIT is governed by the `jitless` option \(default true\): pass `jitless: false` instead/],
  ['--no-jitless', /governed by the `jitless` option.*pass `jitless: false` instead/],
  ['--nojitless', /governed by the `jitless` option/],
  ['--no_jitless', /governed by the `jitless` option/],
  [
    '--disallow-code-generation-from-strings',
    /strict eval is the `strictEval` option: isolated-vm's contexts ignore this V8 flag.*pass `strictEval: true` instead/,
  ],
  ['--no-disallow-code-generation-from-strings', /contradicts strictEval: true; strict eval is the `strictEval` option/, true],
  ['--no-disallow-code-generation-from-strings', /^(?!.*contradicts).*strict eval is the `strictEval` option/],
  ['--no-freeze-flags-after-init', /it would switch off hardening every worker runs with; remove it/],
  ['--nofreeze_flags_after_init', /it would switch off hardening every worker runs with/],
  ['--no-enable-experimental-regexp-engine-on-excessive-backtracks', /it would switch off hardening/],
  ['--regexp-backtracks-before-fallback=1000000', /Strata pins the linear-time regexp fallback at 50000 backtracks; remove it/],
  // Limits owned by Strata.
  ['--max-old-space-size=4096', HEAP],
  ['--max_old_space_size=64', HEAP],
  ['--max-semi-space-size=64', HEAP],
  ['--max-heap-size=16', HEAP],
  ['--initial-heap-size=8', HEAP],
  ['--stack-size=4000', /crashes the worker with SIGSEGV instead of throwing RangeError.*remove it/],
  // Code V8 does not ship.
  ['--harmony-temporal', ON_SHIPPING],
  ['--harmony-shadow-realm', ON_SHIPPING],
  ['--harmony-struct', ON_SHIPPING],
  ['--js-decorators', ON_SHIPPING],
  ['--js-base-64', ON_SHIPPING],
  ['--js-float16array', ON_SHIPPING],
  ['--harmony', ON_SHIPPING],
  ['--js-staging', ON_SHIPPING],
  ['--js-shipping', ON_SHIPPING],
  ['--future', ON_SHIPPING],
  ['--turbolev', ON_SHIPPING],
  ['--json-stringify-fast-path', ON_SHIPPING],
  ['--wasm-jitless', /the Wasm interpreter that would bring WebAssembly back under jitless.*remove it/],
  ['--wasm-staging', /unshipped WebAssembly features/],
  ['--experimental-wasm-skip-bounds-checks', /unshipped WebAssembly features/],
  // V8 internals within the guest's reach; safety checks off.
  ['--expose-gc', INTERNALS],
  ['--no-expose-gc', INTERNALS],
  ['--expose-gc-as=collect', INTERNALS],
  ['--expose-externalize-string', INTERNALS],
  ['--expose-memory-corruption-api', INTERNALS],
  ['--expose-trigger-failure', INTERNALS],
  ['--allow-natives-syntax', INTERNALS],
  ['--allow_natives_syntax', INTERNALS],
  ['--allow-unsafe-function-constructor', INTERNALS],
  ['--no-wasm-bounds-checks', /switches off a safety check V8 ships on/],
  ['--no-fixed-array-bounds-checks', /switches off a safety check V8 ships on/],
  ['--no-memory-protection-keys', /switches off a safety check V8 ships on/],
  ['--shared-heap', /shares it between isolates/],
  ['--mock-arraybuffer-allocator', /makes memory unsafe/],
  ['--v8-os-page-size=4', /makes memory unsafe/],
  // Output and files belong to the supervisor.
  ['--prof', DIAGNOSTICS],
  ['--logfile=/tmp/v8.log', DIAGNOSTICS],
  ['--log-all', DIAGNOSTICS],
  ['--perf-basic-prof', DIAGNOSTICS],
  ['--trace-gc', DIAGNOSTICS],
  ['--no-trace-gc', DIAGNOSTICS],
  ['--no-prof', DIAGNOSTICS],
  ['--trace-opt', DIAGNOSTICS],
  ['--print-bytecode', DIAGNOSTICS],
  ['--print-flag-values', DIAGNOSTICS],
  ['--redirect-code-traces-to=/tmp/x', DIAGNOSTICS],
  ['--dump-wasm-module-path=/tmp', DIAGNOSTICS],
  ['--heap-snapshot-on-oom', DIAGNOSTICS],
  ['--interpreted-frames-native-stack', DIAGNOSTICS],
  ['--gdbjit', DIAGNOSTICS],
  ['--runtime-call-stats', DIAGNOSTICS],
  ['--help', DIAGNOSTICS],
  // Flag machinery, test modes, build tools.
  ['--exit-on-contradictory-flags', /V8's flag machinery.*exit with status 0.*remove it/],
  ['--abort-on-contradictory-flags', /V8's flag machinery/],
  ['--allow-overwriting-for-next-flag', /V8's flag machinery/],
  ['--experimental', /V8's flag machinery/],
  ['--no-experimental', /V8's flag machinery/],
  ['--abort-on-uncaught-exception', TEST_MODE],
  ['--no-abort-on-uncaught-exception', TEST_MODE],
  ['--stress-compaction', TEST_MODE],
  ['--always-turbofan', TEST_MODE],
  ['--fuzzing', TEST_MODE],
  ['--sandbox-testing', TEST_MODE],
  ['--verify-heap', TEST_MODE],
  ['--random-gc-interval=10', TEST_MODE],
  ['--testing-bool-flag', TEST_MODE],
  ['--maglev-break-on-entry', TEST_MODE],
  ['--parse-only', TEST_MODE],
  ['--startup-blob=snapshot.bin', /a flag of V8's build tools \(mksnapshot\); remove it/],
  ['--target-os=linux', /a flag of V8's build tools/],
  // Seeds and predictability: refused in every spelling V8 takes, whatever the value.
  ['--random-seed=1', SEED],
  ['--random-seed=42', SEED],
  ['--random-seed=-1', SEED],
  ['--random-seed=0', SEED],
  ['--random_seed=1', SEED],
  ['-random-seed=1', SEED],
  ['-random_seed=1', SEED],
  ['--random-seed', SEED], // `--random-seed 1` as two elements: refused at the first
  ['--random-seed=abc', SEED],
  ['--random-seed=99999999999', SEED],
  ['--no-random-seed', SEED],
  ['--norandom-seed', SEED],
  ['--random-seed=1', SEED, true],
  ['--hash-seed=1', SEED],
  ['--hash-seed=0', SEED],
  ['--hash_seed=1', SEED],
  ['-hash-seed=1', SEED],
  ['--hash-seed', SEED],
  ['--hash-seed=18446744073709551616', SEED],
  ['--fuzzer-random-seed=1', SEED],
  ['--fuzzer_random_seed=1', SEED],
  ['--testing-prng-seed=1', SEED],
  ['--predictable', SEED],
  ['--predictable=true', SEED],
  ['-predictable', SEED],
  ['--no-predictable', SEED],
  ['--nopredictable', SEED],
  ['--no_predictable', SEED],
  ['--predictable-and-random-seed-is-0', SEED],
  ['--predictable_and_random_seed_is_0', SEED],
  ['--no-predictable-and-random-seed-is-0', SEED],
  ['--verify-predictable', SEED],
  ['--verify_predictable', SEED],
  ['--predictable-gc-schedule', SEED],
  ['--predictable_gc_schedule', SEED],
  ['--no-rehash-snapshot', SEED],
  ['--no_rehash_snapshot', SEED],
  ['--norehash-snapshot', SEED],
  ['--norehash_snapshot', SEED],
  ['-no-rehash-snapshot', SEED],
  ['--no-rehash-snapshot=1', SEED],
  ['--no-randomize-all-allocations', SEED],
  ['--norandomize_all_allocations', SEED],
  ['--sampling-heap-profiler-suppress-randomness', SEED],
  ['--no-sampling-heap-profiler-suppress-randomness', SEED],
  ['--randomize-all-allocations', TEST_MODE], // more randomness, but a test mode
  ['--random-seed 1', /contains whitespace: pass each flag as its own array element/],
  // Flags of older V8s: not V8 flags of this Node, so refused too.
  ['--no-randomize-hashes', /is not a V8 flag of Node 24/],
  ['--randomize-hashes', /is not a V8 flag of Node 24/],
];
for (const [input, message, strictEval = false] of refused) {
  test(`refused${strictEval ? ' (strictEval)' : ''}: ${JSON.stringify(input)}`, (t) => {
    const error = t.throws(() => validateV8Flags(['--max-lazy', input], { strictEval }), { instanceOf: InvalidOption });
    t.is(error?.code, 'ERR_STRATA_INVALID_OPTION');
    // The message names the flag as it was written, and where it was.
    t.true(error?.message.startsWith(`v8Flags[1] ${JSON.stringify(input)} `), error?.message);
    t.regex(error?.message ?? '', message);
    // The same refusal through buildWorkerFlags.
    t.throws(() => buildWorkerFlags({ strictEval, v8Flags: [input] }), { instanceOf: InvalidOption, message });
  });
}

test('a refused flag names its policy row', (t) => {
  t.throws(() => validateV8Flags(['--expose-gc']), { message: /is refused \(--\[no-\]\{expose-\*,allow-natives-\*,allow-unsafe-function-constructor\}\): / });
});

// --- randomisation: no flag may make two workers alike ------------------------------------------

/**
 * Every catalog flag whose name is about seeds, hashing or randomness, reviewed: `seed` ones are
 * refused for randomness in every form, `no-seed` ones in their `--no-` form (the other form is
 * V8's default or adds randomness), `other` ones for another reason (they add randomness, for
 * stress tests, or name build hashes).
 */
const RANDOMNESS_REVIEW: Readonly<Record<string, 'seed' | 'no-seed' | 'other'>> = {
  'random-seed': 'seed', // the isolate's generator: Math.random, the hash seed, V8's mmap hints
  'hash-seed': 'seed',
  'fuzzer-random-seed': 'seed',
  'testing-prng-seed': 'seed',
  predictable: 'seed', // sets random_seed=12347 through predictable-and-random-seed-is-0
  'predictable-and-random-seed-is-0': 'seed',
  'predictable-gc-schedule': 'seed',
  'verify-predictable': 'seed', // implies --predictable
  'sampling-heap-profiler-suppress-randomness': 'seed',
  'rehash-snapshot': 'no-seed', // off, the hash seed is the one baked into the snapshot
  'randomize-all-allocations': 'no-seed',
  'random-gc-interval': 'other',
  'cppgc-random-gc-interval': 'other',
  'stress-compaction-random': 'other',
  'stress-scavenger-conservative-object-pinning-random': 'other',
  'dump-builtins-hashes-to-file': 'other',
};
const ABOUT_RANDOMNESS = /seed|predictab|random|hash|determinis|aslr/;

/** Every spelling V8 takes of a catalog flag: one or two dashes, `_` for `-`, `--no-`/`--no_`/`--no`, with or without a value. */
function everySpelling(name: string, type: string): { spelling: string; negated: boolean }[] {
  const names = [name, name.replaceAll('-', '_')];
  const boolean = type === 'bool' || type === 'maybe_bool';
  const forms = boolean
    ? names.flatMap((n) => [{ form: n, negated: false }, ...['no-', 'no_', 'no'].map((no) => ({ form: `${no}${n}`, negated: true }))])
    : names.flatMap((n) => [`${n}=1`, `${n}=0`, n].map((form) => ({ form, negated: false })));
  return forms.flatMap(({ form, negated }) => ['--', '-'].map((dashes) => ({ spelling: `${dashes}${form}`, negated })));
}

test('every catalog flag about seeds, hashing or randomness is reviewed (a new one fails this test until it is)', (t) => {
  const found = V8_FLAG_CATALOG.map(([name]) => name).filter((name) => ABOUT_RANDOMNESS.test(name));
  t.deepEqual(found.sort(), Object.keys(RANDOMNESS_REVIEW).sort());
});

test('every flag that fixes or removes randomisation is refused for it, in every spelling V8 takes', (t) => {
  const wrong: string[] = [];
  for (const [name, type] of V8_FLAG_CATALOG) {
    const review = RANDOMNESS_REVIEW[name];
    if (review === undefined) continue;
    for (const { spelling, negated } of everySpelling(name, type)) {
      let message = 'accepted';
      try {
        validateV8Flags([spelling]);
      } catch (error) {
        message = (error as Error).message;
      }
      const forRandomness = SEED.test(message);
      const expected = review === 'seed' || (review === 'no-seed' && negated);
      if (forRandomness !== expected) wrong.push(`${spelling}: ${message}`);
      if (review === 'other' && message === 'accepted') wrong.push(`${spelling}: accepted`);
    }
  }
  t.deepEqual(wrong, []);
});

/** Node code printing its Math.random(), where V8 mapped its anonymous memory, then an isolate's Math.random(). */
const RANDOMNESS_PROBE =
  `const maps = require('node:fs').readFileSync('/proc/self/maps', 'utf8').split('\\n')
    .filter((line) => line !== '' && !line.includes('/') && !line.includes('[')).map((line) => line.split('-')[0]);
  process.stdout.write(JSON.stringify({ main: [Math.random(), Math.random()], maps }) + '\\n');` +
  inIsolate([['guest', 'expr', '[Math.random(), Math.random()]']]);

interface Draw {
  main: number[];
  maps: string[];
  guest: number[];
}

/** Two workers started with `v8` after the hardening, each running {@link RANDOMNESS_PROBE}. */
async function drawTwice(t: { log: (...values: unknown[]) => void }, v8: readonly string[]): Promise<[Draw, Draw]> {
  const flags = { v8: [...DEFAULT_FLAGS.v8, ...v8], node: DEFAULT_FLAGS.node };
  const runs = await Promise.all([runWorker(flags, RANDOMNESS_PROBE), runWorker(flags, RANDOMNESS_PROBE)]);
  const draws = runs.map((run) => {
    if (run.status !== 0) t.log(run);
    const [worker = '', isolate = ''] = run.stdout.split('\n');
    return { ...(JSON.parse(worker) as Omit<Draw, 'guest'>), guest: (JSON.parse(isolate) as { guest: number[] }).guest };
  });
  return [draws[0] as Draw, draws[1] as Draw];
}

const sharedAddresses = (a: Draw, b: Draw): number => a.maps.filter((address) => b.maps.includes(address)).length;

test('evidence for refusing --random-seed and --predictable: two workers draw the same Math.random(), in an isolate too, and map V8 memory at the same addresses', async (t) => {
  t.plan(17);
  for (const v8 of [['--random-seed=1'], ['--random-seed=42'], ['--predictable'], ['--random-seed=0', '--predictable']]) {
    const [a, b] = await drawTwice(t, v8);
    t.deepEqual(a.main, b.main, `${v8.join(' ')}: the same Math.random() in the worker`);
    t.deepEqual(a.guest, b.guest, `${v8.join(' ')}: the same Math.random() in an isolate`);
    t.deepEqual(a.guest, a.main, `${v8.join(' ')}: each new context starts from the same seed`);
    t.true(sharedAddresses(a, b) >= 10, `${v8.join(' ')}: ${sharedAddresses(a, b)} of ${a.maps.length} anonymous mappings at the same address`);
  }
  // Control: the default worker draws afresh at every start.
  const [a, b] = await drawTwice(t, []);
  t.true(
    a.main[0] !== b.main[0] && a.guest[0] !== b.guest[0] && a.guest[0] !== a.main[0] && sharedAddresses(a, b) <= 2,
    `default flags: ${JSON.stringify({ a: a.main, b: b.main, shared: sharedAddresses(a, b) })}`,
  );
  t.log(`default: ${sharedAddresses(a, b)} of ${a.maps.length} anonymous mappings shared (the node binary's own)`);
});

test.serial('IsolatedRuntime.start({ v8Flags: ["--random-seed=1"] }) rejects with InvalidOption before any worker starts', async (t) => {
  // Serial tests run before this file's concurrent ones: any child process would be a worker.
  t.deepEqual(childPids(), []);
  const error = await t.throwsAsync(IsolatedRuntime.start({ v8Flags: ['--random-seed=1'] }), { instanceOf: InvalidOption, message: SEED });
  t.is(error?.code, 'ERR_STRATA_INVALID_OPTION');
  t.true(error?.message.startsWith('v8Flags[0] "--random-seed=1" is refused'), error?.message);
  t.deepEqual(childPids(), [], 'no worker and no prewarmed spare was started');
});

test('two default workers draw different Math.random() sequences; clock: { seed } (the suggested alternative) makes them the same', async (t) => {
  const draw = 'Array.from({ length: 4 }, () => Math.random())';
  {
    await using a = await IsolatedRuntime.start({ prewarm: false });
    await using b = await IsolatedRuntime.start({ prewarm: false });
    t.not(a.pid, b.pid);
    const [fromA, fromB] = (await Promise.all([a.eval(draw), b.eval(draw)])) as [number[], number[]];
    t.is(new Set([...fromA, ...fromB]).size, 8, JSON.stringify({ fromA, fromB }));
  }
  await using c = await IsolatedRuntime.start({ prewarm: false, clock: { seed: 1 } });
  await using d = await IsolatedRuntime.start({ prewarm: false, clock: { seed: 1 } });
  t.deepEqual(await c.eval(draw), await d.eval(draw));
});

// --- the catalog and the policy against this node -------------------------------------------

test('this is the Node 24 the catalog describes', (t) => {
  t.is(Number(process.versions.node.split('.')[0]), 24, `ran on Node ${process.versions.node}`);
  t.is(V8_FLAG_CATALOG_SOURCE.v8.split('.').slice(0, 2).join('.'), process.versions.v8.split('.').slice(0, 2).join('.'));
});

test('the catalog matches this node: scripts/update-v8-flag-catalog.mjs --check', async (t) => {
  const run = await runNode([CATALOG_SCRIPT, '--check'], 60_000);
  t.is(run.status, 0, `${run.stdout}${run.stderr}`);
});

test("the catalog's names and types match this node's --v8-options (parsed independently)", async (t) => {
  const run = await runNode(['--v8-options']);
  t.is(run.status, 0);
  const listed = new Map<string, string>();
  const options = run.stdout.slice(run.stdout.indexOf('\nOptions:\n'));
  for (const match of options.matchAll(/^ {2}--([a-z0-9-]+) \(.*\n {8}type: ([a-z0-9_]+) /gm)) listed.set(match[1] ?? '', match[2] ?? '');
  t.true(listed.size > 800);
  t.deepEqual(new Map(V8_FLAG_CATALOG.map(([name, type]) => [name, type])), listed);
});

test('the hardening flags exist in the catalog with the types Strata writes them with', (t) => {
  const types = new Map(V8_FLAG_CATALOG.map(([name, type, value]) => [name, { type, value }]));
  for (const flag of [...DEFAULT_HARDENING_V8_FLAGS, STRICT_EVAL_V8_FLAG]) {
    const [name = '', value] = flag.slice(2).split('=');
    t.is(types.get(name)?.type, value === undefined ? 'bool' : 'uint', flag);
  }
  // The pinned fallback threshold is V8's own default: pinning changes nothing today.
  t.is(types.get('regexp-backtracks-before-fallback')?.value, String(REGEXP_BACKTRACKS_BEFORE_FALLBACK));
});

/** Every flag of the catalog in each spelling V8 would take, with a sample value where one is needed. */
function everyFlagForm(): string[] {
  const sample: Record<string, string> = { int: '1', uint: '1', uint64: '1', size_t: '1', float: '1.5', string: 'x' };
  return V8_FLAG_CATALOG.flatMap(([name, type]) =>
    type === 'bool' || type === 'maybe_bool' ? [`--${name}`, `--no-${name}`] : [`--${name}=${sample[type] ?? ''}`],
  );
}

test('every policy row refuses at least one flag of the catalog (no dead rows after a V8 update)', (t) => {
  const hits = new Map<string, number>();
  let acceptedCount = 0;
  for (const flag of everyFlagForm()) {
    try {
      validateV8Flags([flag]);
      acceptedCount++;
    } catch (error) {
      const row = V8_FLAG_POLICY.find((rule) => (error as Error).message.includes(`is refused (${rule.pattern}): `));
      if (row === undefined) t.fail(`${flag} was refused without a policy row: ${(error as Error).message}`);
      else hits.set(row.pattern, (hits.get(row.pattern) ?? 0) + 1);
    }
  }
  for (const rule of V8_FLAG_POLICY) t.true((hits.get(rule.pattern) ?? 0) > 0, `no flag matches ${rule.pattern}`);
  t.log(`${acceptedCount} flag forms accepted, ${[...hits.values()].reduce((a, b) => a + b, 0)} refused by the policy`);
});

test('no accepted flag is also a Node option (Node would take it instead of V8)', async (t) => {
  const help = await runNode(['--help']);
  const nodeOptions = new Set([...help.stdout.matchAll(/^ {2}(--[a-z0-9-]+)/gm)].map((m) => m[1]));
  t.true(nodeOptions.has('--disable-sigusr1'), 'the node option Strata uses exists on this node');
  t.true(nodeOptions.has('--jitless'), 'sanity: some V8 flags are listed as Node options');
  const clashes = everyFlagForm()
    .filter((flag) => {
      try {
        validateV8Flags([flag]);
        return true;
      } catch {
        return false;
      }
    })
    .map((flag) => flag.replace(/=.*/, ''))
    .filter((flag) => nodeOptions.has(flag) || nodeOptions.has(flag.replace(/^--no-/, '--')));
  t.deepEqual(clashes, []);
});

// --- the flags work: experiments on a real Node 24 ---------------------------------------------

const TINY_WASM = 'new WebAssembly.Module(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0])) instanceof WebAssembly.Module';

test('jitless: no WebAssembly, in the worker and in an isolate; jitless: false compiles a module', async (t) => {
  const probes: Probe[] = [
    ['typeof WebAssembly', 'expr', 'typeof WebAssembly'],
    ['compile', 'expr', TINY_WASM],
  ];
  const code =
    `const main = { 'typeof WebAssembly': typeof WebAssembly }; try { main.compile = ${TINY_WASM} } catch (e) { main.compile = 'threw ' + e.message }
    process.stdout.write(JSON.stringify(main) + '\\n');` + inIsolate(probes);
  const [jitless, jit] = await Promise.all([runWorker(DEFAULT_FLAGS, code), runWorker(NOT_JITLESS, code)]);
  t.is(jitless.status, 0, jitless.stderr);
  t.is(jit.status, 0, jit.stderr);
  const [jitlessMain = '', jitlessIsolate = ''] = jitless.stdout.split('\n');
  const [jitMain = '', jitIsolate = ''] = jit.stdout.split('\n');
  t.deepEqual(JSON.parse(jitlessMain), { 'typeof WebAssembly': 'undefined', compile: 'threw WebAssembly is not defined' });
  t.deepEqual(JSON.parse(jitlessIsolate), { 'typeof WebAssembly': 'undefined', compile: 'threw WebAssembly is not defined' });
  t.deepEqual(JSON.parse(jitMain), { 'typeof WebAssembly': 'object', compile: true });
  t.deepEqual(JSON.parse(jitIsolate), { 'typeof WebAssembly': 'object', compile: true });
});

const CATASTROPHIC = `/(a*)*b/.test('a'.repeat(40))`;

test('the regexp fallback: a catastrophic regexp returns, in the worker and in an isolate', async (t) => {
  const code = `process.stdout.write(JSON.stringify(${CATASTROPHIC}) + '\\n');` + inIsolate([['regexp', 'expr', CATASTROPHIC]]);
  for (const flags of [DEFAULT_FLAGS, NOT_JITLESS]) {
    // Milliseconds with the fallback, hours without: a minute only guards a loaded machine.
    const run = await runWorker(flags, code, 60_000);
    t.false(run.timedOut, 'still running after 60 s');
    t.is(run.status, 0, run.stderr);
    t.is(run.stdout, 'false\n{"regexp":false}');
  }
});

test('the regexp fallback is what makes it return: without it the same regexp is still running after 3 s', async (t) => {
  // Control. 2^40 backtracking steps take hours on any machine; 3 s only keeps the test short.
  const withoutFallback = DEFAULT_FLAGS.v8.filter((flag) => !flag.includes('regexp'));
  t.deepEqual(withoutFallback, ['--jitless', '--freeze-flags-after-init']);
  const run = await runNode([...withoutFallback, '-e', `process.stdout.write(String(${CATASTROPHIC}))`], 3_000);
  t.true(run.timedOut);
  t.is(run.stdout, '');
});

const SET_FLAG = `
  const v8 = require('node:v8');
  v8.setFlagsFromString('--allow-natives-syntax');
  process.stdout.write('set;');
  try { new Function('return %IsSmi(1)'); process.stdout.write('natives on'); } catch (e) { process.stdout.write('natives off: ' + e.name); }`;

test('--freeze-flags-after-init: changing a flag after start-up is fatal, so it never takes effect', async (t) => {
  const frozen = await runWorker(DEFAULT_FLAGS, SET_FLAG);
  t.not(frozen.status, 0);
  t.is(frozen.stdout, '', 'nothing ran after setFlagsFromString');
  t.regex(frozen.stderr, /Check failed: !IsFrozen\(\)/);
  t.log(`the worker died with ${frozen.signal ?? `status ${frozen.status}`}`);
  // Control: the same script without the freeze switches natives syntax on.
  const thawed = await runNode([...DEFAULT_FLAGS.v8.filter((flag) => flag !== '--freeze-flags-after-init'), '-e', SET_FLAG]);
  t.is(thawed.status, 0, thawed.stderr);
  t.is(thawed.stdout, 'set;natives on');
});

test('--disable-sigusr1: SIGUSR1 does not open the inspector (control: without it, it does)', async (t) => {
  // Polls for the inspector: up to 1 s with the option, up to 15 s for the control.
  const code = (limitMs: number) => `
    process.kill(process.pid, 'SIGUSR1');
    const inspector = require('node:inspector');
    const start = Date.now();
    const poll = () => {
      if (inspector.url()) { process.stdout.write('inspector open'); process.exit(0); }
      if (Date.now() - start > ${limitMs}) return process.stdout.write('inspector closed');
      setTimeout(poll, 20);
    };
    poll();`;
  const [hardened, control] = await Promise.all([
    runNode([...WORKER_NODE_OPTIONS, '--inspect-port=0', ...DEFAULT_FLAGS.v8, '-e', code(1_000)]),
    runNode(['--inspect-port=0', ...DEFAULT_FLAGS.v8, '-e', code(15_000)]),
  ]);
  t.is(hardened.status, 0, hardened.stderr);
  t.is(hardened.stdout, 'inspector closed');
  t.notRegex(hardened.stderr, /Debugger listening/);
  t.is(control.stdout, 'inspector open');
  t.regex(control.stderr, /Debugger listening on ws:/);
});

test("strictEval's V8 flag binds the worker's own context but not isolated-vm's (why Strata also tames eval)", async (t) => {
  const code =
    `let main; try { main = eval('1 + 1'); } catch (e) { main = e.name; } process.stdout.write(JSON.stringify(main) + '\\n');` +
    inIsolate([
      ['eval', 'expr', `eval('1 + 1')`],
      ['Function', 'expr', `new Function('return 2')()`],
    ]);
  const run = await runWorker(buildWorkerFlags({ strictEval: true }), code);
  t.is(run.status, 0, run.stderr);
  const [main = '', isolate = ''] = run.stdout.split('\n');
  t.is(JSON.parse(main), 'EvalError');
  t.deepEqual(JSON.parse(isolate), { eval: 2, Function: 2 });
});

// Every feature V8 ships behind its own flag, with a probe that is true when it is there.
const FEATURE_PROBES: Readonly<Record<string, Probe>> = {
  'js-promise-try': ['js-promise-try', 'expr', `typeof Promise.try === 'function'`],
  'js-atomics-pause': ['js-atomics-pause', 'expr', `typeof Atomics.pause === 'function'`],
  'js-error-iserror': ['js-error-iserror', 'expr', `typeof Error.isError === 'function'`],
  'js-regexp-escape': ['js-regexp-escape', 'expr', `typeof RegExp.escape === 'function'`],
  'js-explicit-resource-management': ['js-explicit-resource-management', 'expr', `typeof DisposableStack === 'function'`],
  'js-float16array': ['js-float16array', 'expr', `typeof Float16Array === 'function'`],
  'js-regexp-modifiers': ['js-regexp-modifiers', 'expr', `(() => { try { return new RegExp('(?i:a)b').test('Ab'); } catch { return false; } })()`],
  'js-regexp-duplicate-named-groups': [
    'js-regexp-duplicate-named-groups',
    'expr',
    `(() => { try { return new RegExp('(?<a>x)|(?<a>y)').test('y'); } catch { return false; } })()`,
  ],
  'harmony-import-attributes': ['harmony-import-attributes', 'module', `import data from 'strata:data' with { type: 'json' };`],
  'js-source-phase-imports': ['js-source-phase-imports', 'module', `import source wasm from 'strata:wasm';`],
};

/** The individual feature flags this V8 ships on (default true), without the two umbrella flags. */
const SHIPPED_FEATURE_FLAGS = V8_FLAG_CATALOG.filter(
  ([name, type, value]) => /^(js|harmony)-/.test(name) && !name.endsWith('-shipping') && type === 'bool' && value === 'true',
).map(([name]) => name);

test('every shipped feature flag of the catalog has a probe (add one when V8 ships a new feature)', (t) => {
  t.deepEqual([...SHIPPED_FEATURE_FLAGS].sort(), Object.keys(FEATURE_PROBES).sort());
});

test('--no-js-shipping really switches shipped features off (Error.isError, Float16Array, DisposableStack, ...)', async (t) => {
  const probes = Object.values(FEATURE_PROBES);
  const [base, noShipping, noHarmonyShipping] = await Promise.all([
    runWorker(DEFAULT_FLAGS, inIsolate(probes)),
    runWorker(buildWorkerFlags({ v8Flags: ['--no-js-shipping'] }), inIsolate(probes)),
    runWorker(buildWorkerFlags({ v8Flags: ['--no-harmony-shipping'] }), inIsolate(probes)),
  ]);
  const all = Object.fromEntries(probes.map(([name]) => [name, true]));
  t.deepEqual(parseOutput(t, base), all, 'with the hardening alone, every shipped feature is there');
  // Node sets --js-source-phase-imports itself, so the umbrella flag does not reach that one.
  const off = Object.fromEntries(probes.map(([name]) => [name, name === 'js-source-phase-imports']));
  t.deepEqual(parseOutput(t, noShipping), off);
  t.deepEqual(parseOutput(t, noHarmonyShipping), off);
});

// The reference library refuses the individual --no-js-<feature> flags because its engine turns
// the features back on at start-up. On Node 24 with isolated-vm they do work, so Strata accepts
// them; this test is the evidence, and fails if that ever stops being true.
for (const flag of Object.keys(FEATURE_PROBES)) {
  test(`--no-${flag} really switches its feature off in an isolate (so it is accepted)`, async (t) => {
    const probes = Object.values(FEATURE_PROBES);
    const flags = buildWorkerFlags({ v8Flags: [`--no-${flag}`] });
    const result = parseOutput(t, await runWorker(flags, inIsolate(probes)));
    t.deepEqual(result, Object.fromEntries(probes.map(([name]) => [name, name !== flag])));
  });
}

test('an unshipped feature flag does work (--harmony-shadow-realm adds ShadowRealm): it is refused for what it adds', async (t) => {
  const probe: Probe = ['ShadowRealm', 'expr', 'typeof ShadowRealm'];
  const withFlag = { v8: [...DEFAULT_FLAGS.v8, '--harmony-shadow-realm'], node: DEFAULT_FLAGS.node };
  t.deepEqual(parseOutput(t, await runWorker(withFlag, inIsolate([probe]))), { ShadowRealm: 'function' });
  t.deepEqual(parseOutput(t, await runWorker(DEFAULT_FLAGS, inIsolate([probe]))), { ShadowRealm: 'undefined' });
  t.throws(() => validateV8Flags(['--harmony-shadow-realm']), { message: /ShadowRealm brings fresh intrinsics/ });
});

test('evidence for refusing heap flags: --max-heap-size=16 silently lowers an isolate limit of 128 MiB', async (t) => {
  const allocate = `(() => { const keep = []; for (let i = 0; i < 80; i++) keep.push(new Array(100000).fill(i + 0.5)); return 'allocated'; })()`;
  const probes: Probe[] = [['allocate ~61 MiB', 'expr', allocate]];
  const base = parseOutput(t, await runWorker(DEFAULT_FLAGS, inIsolate(probes)));
  const lowered = parseOutput(t, await runWorker({ v8: [...DEFAULT_FLAGS.v8, '--max-heap-size=16'], node: DEFAULT_FLAGS.node }, inIsolate(probes)));
  t.deepEqual(base, { 'allocate ~61 MiB': 'allocated' });
  t.regex(String(lowered['allocate ~61 MiB']), /disposed.*memory limit/);
});

test('evidence for refusing --stack-size: raised, deep recursion segfaults the worker instead of throwing RangeError', async (t) => {
  const recurse = `(() => { function f(n) { try { return f(n + 1); } catch { return n; } } return f(0) > 1000; })()`;
  // isolated-vm runs a synchronous call on the calling thread (V8 applies --stack-size there) and
  // an asynchronous one on its own threads, whose stack limit it sets itself.
  const code = (call: 'evalSync' | 'eval') => `
    const ivm = require(${JSON.stringify(IVM)});
    const context = new ivm.Isolate({ memoryLimit: 128 }).createContextSync();
    Promise.resolve(context.${call}(${JSON.stringify(recurse)})).then((ok) => process.stdout.write(String(ok)));`;
  const raised = { v8: [...DEFAULT_FLAGS.v8, '--stack-size=65500'], node: DEFAULT_FLAGS.node };
  const runs = await Promise.all([
    runWorker(raised, `process.stdout.write(String(${recurse}))`),
    runWorker(raised, code('evalSync')),
    runWorker(raised, code('eval')),
    runWorker(DEFAULT_FLAGS, `process.stdout.write(String(${recurse}))`),
    runWorker(DEFAULT_FLAGS, code('evalSync')),
  ]);
  const [main, guestSync, guestAsync, controlMain, controlSync] = runs.map((run) => run.signal ?? run.stdout);
  t.deepEqual(
    { main, guestSync, guestAsync, controlMain, controlSync },
    { main: 'SIGSEGV', guestSync: 'SIGSEGV', guestAsync: 'true', controlMain: 'true', controlSync: 'true' },
  );
});

test('evidence for accepting --single-threaded: guest timeouts and the heap limit still hold', async (t) => {
  const code = `
    const ivm = require(${JSON.stringify(IVM)});
    const isolate = new ivm.Isolate({ memoryLimit: 32 });
    const context = isolate.createContextSync();
    const out = [];
    try { context.evalSync('for (;;) {}', { timeout: 200 }); } catch (e) { out.push(e.message); }
    try { context.evalSync('const keep = []; for (;;) keep.push(new Array(100000).fill(0.5));'); } catch (e) { out.push(e.message); }
    process.stdout.write(JSON.stringify(out));`;
  const run = await runWorker(buildWorkerFlags({ v8Flags: ['--single-threaded'] }), code, 60_000);
  t.is(run.status, 0, run.stderr);
  const [timeout, memory] = JSON.parse(run.stdout) as string[];
  t.regex(timeout ?? '', /timed out/);
  t.regex(memory ?? '', /memory limit/);
});
