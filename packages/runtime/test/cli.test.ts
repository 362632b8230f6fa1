/**
 * The `strata` CLI, run as a user runs it (`node dist/src/cli/strata.js …` from the package
 * directory, real worker processes), plus its pure parts (arguments, tagged JSON, terminal
 * escaping, the doctor's verdict and table) without spawning.
 */
import test from 'ava';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseBytes, parseCliArgs, UsageError, type CliArgs } from '../src/cli/args.js';
import { ConsoleStream, MAX_PENDING_OUTPUT_BYTES } from '../src/cli/console-stream.js';
import { assess, layersOf, type DoctorFacts } from '../src/cli/doctor-report.js';
import { ExitStatus, exitStatusForStartError } from '../src/cli/exit-status.js';
import { formatDoctorReport, LAYER_COLUMNS, renderTable } from '../src/cli/format-report.js';
import { formatResult, guestFrames, type RunJsonOutput } from '../src/cli/run-command.js';
import { fromTaggedJson, toTaggedJson } from '@strata/wire';
import { startRuntime } from '../src/cli/start-runtime.js';
import { escapeForTerminal } from '../src/cli/terminal-text.js';
import { JsError, SandboxUnavailable, WorkerCrashed } from '../src/errors.js';
import type { SandboxReport } from '../src/isolated/isolated-runtime.js';
import type { LayerReport } from '../src/layers/layer.js';
import { childPids } from './helpers/leaks.js';

// This file runs as dist/test/cli.test.js: the package directory is two levels up.
const PACKAGE_DIR = fileURLToPath(new URL('../../', import.meta.url));
const CLI = 'dist/src/cli/strata.js';
const FIXTURES = 'test/fixtures/cli';

// --- running strata as a user does ------------------------------------------------------------

interface Ran {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

// Each run is a CLI process and a worker; more at once than there are cores only makes the
// timing-sensitive ones (timeouts) slower, not the file faster.
let running = 0;
const waiting: (() => void)[] = [];
const MAX_RUNNING = Math.max(2, availableParallelism());

/**
 * Runs `node dist/src/cli/strata.js ...args` in the package directory. A run past `killAfterMs`
 * is SIGKILLed and rejected, so a hang fails its test instead of hanging the suite (generous: a
 * loaded machine starts a CLI process and a worker in seconds, not the usual fraction of one).
 */
async function strata(args: readonly string[], killAfterMs = 60_000): Promise<Ran> {
  if (running >= MAX_RUNNING) await new Promise<void>((resolve) => waiting.push(resolve));
  running++;
  try {
    return await new Promise<Ran>((resolve, reject) => {
      const started = performance.now();
      const child = spawn(process.execPath, [CLI, ...args], { cwd: PACKAGE_DIR, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`strata ${args.join(' ')} did not exit within ${killAfterMs} ms; stdout: ${stdout.slice(0, 500)} stderr: ${stderr.slice(0, 500)}`));
      }, killAfterMs);
      child.on('error', reject);
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr, ms: performance.now() - started });
      });
    });
  } finally {
    running--;
    waiting.shift()?.();
  }
}

const fixture = (name: string) => `${FIXTURES}/${name}`;
const RUN_JSON_FIELDS = ['status', 'result', 'error', 'errorType', 'stdout', 'stderr', 'truncated', 'sandbox', 'sandboxExtras', 'report'];

test('run: a program that logs and returns a value prints its console, then its result; exit 0', async (t) => {
  const ran = await strata(['run', fixture('hello.js')]);
  t.is(ran.code, 0, ran.stderr);
  t.is(ran.stdout, 'hello from the guest\n{ answer: 42, bytes: 2 }\n');
  t.is(ran.stderr, 'a warning from the guest\n', 'every default layer is here: no degraded-sandbox warning');
});

test('run: a program that throws prints "errorType: message" and the guest frames on stderr; exit 1', async (t) => {
  const ran = await strata(['run', fixture('throws.js'), '--sandbox', 'off']);
  t.is(ran.code, 1);
  t.is(ran.stdout, 'checking\n');
  t.is(ran.stderr.split('\n')[0], 'RangeError: bad quantity: 0');
  t.regex(ran.stderr, /^ {4}at check \(test\/fixtures\/cli\/throws\.js:3:\d+\)$/m);
  t.notRegex(ran.stderr, /isolated-vm boundary|dist\/src/, 'no host frames');
});

test('run: --memory below what a worker needs says so, names the smallest value that works here, and that value works', async (t) => {
  const ran = await strata(['run', fixture('hello.js'), '--memory', '10M']);
  t.is(ran.code, 2, ran.stderr);
  const named =
    /^strata: --memory 10M \(10485760 bytes\) is below what a worker needs to start here: an idle worker uses \d+ MiB\. Use --memory (\d+)M or more/m.exec(
      ran.stderr,
    );
  t.truthy(named, ran.stderr);
  const enough = await strata(['run', fixture('hello.js'), '--memory', `${named![1]}M`]);
  t.is(enough.code, 0, enough.stderr);
});

test('run: an endless loop with --timeout 300 ends in RuntimeTimeout; exit 1', async (t) => {
  const ran = await strata(['run', fixture('loops-forever.js'), '--timeout', '300', '--sandbox', 'off']);
  t.is(ran.code, 1);
  t.is(ran.stdout, 'looping\n');
  t.regex(ran.stderr, /^RuntimeTimeout: /m);
  // The loop never ends on its own: any bound proves the timeout ended it; this one leaves a loaded machine room.
  t.true(ran.ms < 30_000, `took ${ran.ms} ms`);
});

test('run: a V8 abort (new Array(2 ** 32 - 1).fill(0)) with --timeout 1000 is contained: WorkerCrashed or RuntimeTimeout; exit 1', async (t) => {
  const ran = await strata(['run', fixture('aborts-v8.js'), '--timeout', '1000', '--sandbox', 'off']);
  t.is(ran.code, 1);
  t.regex(ran.stderr, /^(WorkerCrashed|RuntimeTimeout): /m);
  t.true(ran.ms < 30_000, `took ${ran.ms} ms`);
});

test('run --json: one JSON object on stdout, console collected into it, nothing on stderr', async (t) => {
  const ran = await strata(['run', fixture('hello.js'), '--json']);
  t.is(ran.code, 0);
  t.is(ran.stderr, '', 'the sandbox news is in the JSON, not a warning');
  t.is(ran.stdout.trimEnd().split('\n').length, 1, 'one line');
  const out = JSON.parse(ran.stdout) as RunJsonOutput;
  for (const field of RUN_JSON_FIELDS) t.true(field in out, `has ${field}`);
  t.like(out, {
    status: 'ok',
    result: { answer: 42, bytes: 2 },
    error: null,
    errorType: null,
    stdout: 'hello from the guest\n',
    stderr: 'a warning from the guest\n',
    truncated: false,
  });
  t.is(typeof out.sandbox, 'string');
  t.true(Array.isArray(out.sandboxExtras));
  t.is(out.report?.sandbox, out.sandbox ?? undefined);
  t.is(out.report?.base.jitless, true);
  t.true(Array.isArray(out.report?.layers));
});

test('run --json: values JSON cannot express are tagged, and decode back exactly', async (t) => {
  const ran = await strata(['run', fixture('values.js'), '--json', '--sandbox', 'off']);
  t.is(ran.code, 0, ran.stderr);
  const out = JSON.parse(ran.stdout) as RunJsonOutput;
  t.like(out.result as object, {
    big: { $bigint: '12345678901234567890' },
    nothing: { $undefined: true },
    notANumber: { $number: 'NaN' },
    negativeZero: { $number: '-0' },
    infinite: { $number: '-Infinity' },
    when: { $date: '2024-01-02T03:04:05.000Z' },
    bytes: { $bytes: 'AAH+/w==' },
    map: {
      $map: [
        ['a', { $bigint: '1' }],
        [2, [{ $undefined: true }]],
      ],
    },
    set: { $set: ['x', 1] },
    looksLikeATag: { $object: { $bigint: 'not a bigint' } },
    nested: [null, true, 'text', 1.5],
  });
  t.true(Object.hasOwn(out.result as object, '__proto__'), 'a guest "__proto__" key stays an own key');
  const decoded = fromTaggedJson(out.result) as Record<string, unknown>;
  t.is(decoded['big'], 12345678901234567890n);
  t.true(Object.is(decoded['negativeZero'], -0));
  t.deepEqual(
    decoded['map'],
    new Map<unknown, unknown>([
      ['a', 1n],
      [2, [undefined]],
    ]),
  );
  t.deepEqual(decoded['bytes'], new Uint8Array([0, 1, 254, 255]));
  t.deepEqual({ ...(decoded['looksLikeATag'] as object) }, { $bigint: 'not a bigint' });
});

test('run --json: a failure has status, error, errorType and the guest stack; result null; exit 1', async (t) => {
  const ran = await strata(['run', fixture('throws.js'), '--json', '--sandbox', 'off']);
  t.is(ran.code, 1);
  t.is(ran.stderr, '');
  const out = JSON.parse(ran.stdout) as RunJsonOutput;
  t.like(out, { status: 'error', result: null, error: 'bad quantity: 0', errorType: 'RangeError', stdout: 'checking\n' });
  t.regex(out.stack?.[0] ?? '', /^at check \(test\/fixtures\/cli\/throws\.js:3:\d+\)$/);
});

test('run --sandbox require: refused with what to do (exit 3) while the OS layers are missing, or runs (exit 0) once they are in force', async (t) => {
  const ran = await strata(['run', fixture('hello.js'), '--sandbox', 'require']);
  t.true(ran.code === 0 || ran.code === 3, `exit ${ran.code}: ${ran.stderr}`);
  if (ran.code === 3) {
    t.is(ran.stdout, '', 'the program did not run');
    t.regex(ran.stderr, /^SandboxUnavailable: .*sandbox: 'require' cannot be met/m);
    t.regex(ran.stderr, /strata doctor/);
    t.regex(ran.stderr, /--sandbox auto/);
  } else {
    t.is(ran.stdout, 'hello from the guest\n{ answer: 42, bytes: 2 }\n');
    t.notRegex(ran.stderr, /SandboxUnavailable|strata: warning/);
  }
});

test('run --sandbox require --json: the refusal (exit 3) or the run (exit 0) as one JSON object', async (t) => {
  const ran = await strata(['run', fixture('hello.js'), '--sandbox', 'require', '--json']);
  t.true(ran.code === 0 || ran.code === 3, `exit ${ran.code}`);
  const out = JSON.parse(ran.stdout) as RunJsonOutput;
  for (const field of RUN_JSON_FIELDS) t.true(field in out, `has ${field}`);
  if (ran.code === 3) {
    t.like(out, { status: 'error', errorType: 'SandboxUnavailable', result: null, sandbox: null, report: null });
  } else {
    t.like(out, { status: 'ok', result: { answer: 42, bytes: 2 } });
    t.not(out.sandbox, 'none');
  }
});

test('run: an unknown option is a usage error: exit 2, the usage on stderr, nothing run', async (t) => {
  const ran = await strata(['run', fixture('hello.js'), '--bogus']);
  t.is(ran.code, 2);
  t.is(ran.stdout, '');
  t.regex(ran.stderr, /^strata: unknown option '--bogus'$/m);
  t.regex(ran.stderr, /^Usage: strata run FILE \[options\]$/m);
});

test('run: a missing file is exit 2 with the path and the reason', async (t) => {
  const ran = await strata(['run', fixture('no-such-file.js')]);
  t.is(ran.code, 2);
  t.is(ran.stdout, '');
  t.is(ran.stderr, 'strata: cannot read test/fixtures/cli/no-such-file.js: no such file\n');
});

test('run: top-level await is a SyntaxError with a hint to wrap the program; exit 1', async (t) => {
  const ran = await strata(['run', fixture('top-level-await.js'), '--sandbox', 'off']);
  t.is(ran.code, 1);
  t.regex(ran.stderr, /^SyntaxError: await is only valid/m);
  t.regex(ran.stderr, /wrap the program in \(async \(\) => \{ \.\.\. \}\)\(\)/);
});

test('run: long output streams in full; --json keeps the capped capture and says it was truncated', async (t) => {
  const [streamed, json] = await Promise.all([
    strata(['run', fixture('many-lines.js'), '--sandbox', 'off']),
    strata(['run', fixture('many-lines.js'), '--sandbox', 'off', '--json']),
  ]);
  t.is(streamed.code, 0);
  const lines = streamed.stdout.split('\n');
  t.is(lines.length, 4002, '4000 lines, the result, and the final newline');
  t.is(lines[3999], `line 3999 ${'x'.repeat(40)}`);
  t.is(lines[4000], 'done');
  const out = JSON.parse(json.stdout) as RunJsonOutput;
  t.like(out, { status: 'ok', result: 'done', truncated: true });
  t.true(out.stdout.length < 70 * 1024);
});

test('run: web polyfills are on by default and off with --no-polyfills; Node APIs are never there, and fetch reaches no network', async (t) => {
  const [on, off] = await Promise.all([
    strata(['run', fixture('globals.js'), '--sandbox', 'off']),
    strata(['run', fixture('globals.js'), '--sandbox', 'off', '--no-polyfills']),
  ]);
  t.is(on.stdout, 'function function undefined undefined function TypeError\n');
  t.is(off.stdout, 'undefined undefined undefined undefined undefined none\n');
});

test('doctor --json: the report as JSON, exit 0 when all is in force and 1 when degraded', async (t) => {
  const ran = await strata(['doctor', '--json']);
  t.true(ran.code === 0 || ran.code === 1, `exit ${ran.code}: ${ran.stderr}`);
  t.is(ran.stderr, '');
  const report = JSON.parse(ran.stdout) as ReturnType<typeof assess>;
  t.is(report.status, ran.code === 0 ? 'ok' : 'degraded');
  t.is(typeof report.sandbox, 'string');
  t.is(report.report?.sandbox, report.sandbox ?? undefined);
  t.is(report.report?.base.jitless, true);
  t.true(Array.isArray(report.report?.layers));
  t.is(report.node.version, process.version);
  t.true(report.nativeHelpers.built);
  // On Linux with pidfd_open (this kernel) the worker is started without forking this process.
  if (process.platform === 'linux') t.deepEqual(report.workerSpawn, { method: 'posix_spawn', reason: null });
  t.is(report.error, null);
  t.regex(report.summary, /^(ok|degraded): /);
  if (report.sandbox === 'none') t.is(ran.code, 1, 'no OS sandbox is degraded');
  if (process.getuid?.() === 0) t.not(report.privileges.workerUid, 0, 'a root user gets an unprivileged worker');
});

test('doctor: a table with the facts, the layer columns and a one-line verdict', async (t) => {
  const ran = await strata(['doctor']);
  t.true(ran.code === 0 || ran.code === 1, `exit ${ran.code}: ${ran.stderr}`);
  t.regex(ran.stdout, /^name +version +requirement +enforcement +selfTest +provides +missing$/m);
  for (const fact of ['node', 'platform', 'native helpers', 'privileges', 'base hardening', 'sandbox', 'sandbox extras']) {
    t.regex(ran.stdout, new RegExp(`^${fact}  +\\S`, 'm'), fact);
  }
  t.regex(ran.stdout, ran.code === 0 ? /^ok: /m : /^degraded: .+$/m);
});

test('--help, --version and no command', async (t) => {
  const [help, version, none] = await Promise.all([strata(['--help']), strata(['--version']), strata([])]);
  t.is(help.code, 0);
  t.regex(help.stdout, /^Exit status:\n {2}0 .*\n {2}1 .*\n {2}2 .*\n {2}3 .*\n {2}4 /m);
  t.is(version.code, 0);
  t.is(version.stdout, `${(JSON.parse(readFileSync(`${PACKAGE_DIR}package.json`, 'utf8')) as { version: string }).version}\n`);
  t.is(none.code, 2);
  t.regex(none.stderr, /^Usage: strata <command>/m);
});

test('the built bin starts with its shebang', (t) => {
  t.is(readFileSync(`${PACKAGE_DIR}${CLI}`, 'utf8').split('\n')[0], '#!/usr/bin/env node');
});

// Serial: it counts this process's children, and the tests above spawn theirs concurrently.
test.serial('start deadline: a worker that does not start in time is a WorkerCrashed (start), and is closed when it does start', async (t) => {
  const error = await t.throwsAsync(startRuntime({ sandbox: 'off' }, 1), { instanceOf: WorkerCrashed, message: /did not start within 1 ms/ });
  t.is(error?.reason, 'start');
  // The late worker still starts (seconds on a loaded machine) and is then closed: up to 30 s.
  let children = childPids();
  for (let i = 0; i < 600 && children.length > 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    children = childPids();
  }
  t.deepEqual(children, [], 'the late worker was closed');
});

// --- arguments -------------------------------------------------------------------------------

const RUN_DEFAULTS = { command: 'run', file: 'p.js', sandbox: 'auto', timeout: undefined, memory: undefined, strictEval: false, polyfills: true, json: false };

const valid: [string[], CliArgs][] = [
  [['run', 'p.js'], RUN_DEFAULTS as CliArgs],
  [['run', '--json', 'p.js', '--timeout', '300', '--sandbox', 'require'], { ...RUN_DEFAULTS, json: true, timeout: 300, sandbox: 'require' } as CliArgs],
  [
    ['run', 'p.js', '--memory', '512M', '--strict-eval', '--no-polyfills'],
    { ...RUN_DEFAULTS, memory: 512 * 1024 ** 2, strictEval: true, polyfills: false } as CliArgs,
  ],
  [['run', 'p.js', '--polyfills'], RUN_DEFAULTS as CliArgs],
  [['run', '--', '-dash.js'], { ...RUN_DEFAULTS, file: '-dash.js' } as CliArgs],
  [['doctor'], { command: 'doctor', json: false }],
  [['doctor', '--json'], { command: 'doctor', json: true }],
  [['--help'], { command: 'help', topic: undefined }],
  [['help', 'run'], { command: 'help', topic: 'run' }],
  [['run', '-h'], { command: 'help', topic: 'run' }],
  [['doctor', '--help'], { command: 'help', topic: 'doctor' }],
  [['--version'], { command: 'version' }],
];

const invalid: [string[], RegExp][] = [
  [[], /a command is required/],
  [['launch'], /unknown command "launch"/],
  [['--verbose'], /unknown option "--verbose"/],
  [['run'], /run needs the FILE/],
  [['run', 'a.js', 'b.js'], /run takes one FILE/],
  [['run', 'p.js', '--bogus'], /unknown option '--bogus'/],
  [['run', 'p.js', '--sandbox', 'maybe'], /--sandbox must be require, auto or off/],
  [['run', 'p.js', '--sandbox'], /argument missing/],
  [['run', 'p.js', '--timeout', '0'], /--timeout must be a positive whole number/],
  [['run', 'p.js', '--timeout', '1.5'], /--timeout must be a positive whole number/],
  [['run', 'p.js', '--memory', 'lots'], /--memory must be a positive number of bytes/],
  [['run', 'p.js', '--memory', '512'], /did you mean 512M\?/],
  [['run', 'p.js', '--no-timeout'], /--no-timeout/],
  [['doctor', 'now'], /doctor takes no arguments/],
  [['help', 'me'], /help takes a command name/],
];

test('arguments: valid command lines', (t) => {
  for (const [argv, expected] of valid) t.deepEqual(parseCliArgs(argv), expected, argv.join(' '));
});

test('arguments: invalid command lines are usage errors that say what is wrong', (t) => {
  for (const [argv, message] of invalid) {
    const error = t.throws(() => parseCliArgs(argv), { instanceOf: UsageError }, argv.join(' '));
    t.regex(error?.message ?? '', message, argv.join(' '));
  }
});

test('arguments: byte sizes', (t) => {
  t.is(parseBytes('1073741824'), 1024 ** 3);
  t.is(parseBytes('512M'), 512 * 1024 ** 2);
  t.is(parseBytes('512MiB'), 512 * 1024 ** 2);
  t.is(parseBytes('2g'), 2 * 1024 ** 3);
  t.is(parseBytes('4096K'), 4 * 1024 ** 2);
  for (const bad of ['', '-1', '1.5G', '1T', 'M', '0']) t.throws(() => parseBytes(bad), { instanceOf: UsageError }, bad);
});

// --- tagged JSON, terminal text, streaming -----------------------------------------------------

test('tagged JSON: every value that crosses the boundary round-trips', (t) => {
  const values: unknown[] = [
    undefined,
    null,
    true,
    0,
    -0,
    1.5,
    NaN,
    Infinity,
    -Infinity,
    10n ** 30n,
    -5n,
    '',
    'text',
    new Date(0),
    new Date(NaN),
    new Uint8Array([1, 2, 3]),
    new Uint8Array(0),
    new Map<unknown, unknown>([
      [1n, new Set([undefined])],
      ['k', { a: [1, undefined] }],
    ]),
    [undefined, [new Date(1)]],
    { $only: 1 },
    { $a: 1, $b: 2 },
    { $object: { x: 1 } },
  ];
  for (const value of values) {
    const json = JSON.parse(JSON.stringify(toTaggedJson(value))) as unknown;
    const back = fromTaggedJson(json);
    if (value instanceof Date) t.is((back as Date).getTime(), value.getTime());
    else if (typeof value === 'object' && value !== null && !(value instanceof Map) && !(value instanceof Uint8Array) && !Array.isArray(value)) {
      t.deepEqual({ ...(back as object) }, value);
    } else t.deepEqual(back, value);
  }
});

test('tagged JSON: a "__proto__" key stays data, and anything outside the closed set is refused', (t) => {
  const guest = JSON.parse('{"__proto__": {"polluted": true}}') as object;
  const json = toTaggedJson(guest) as Record<string, unknown>;
  t.true(Object.hasOwn(json, '__proto__'));
  t.is(JSON.stringify(json), '{"__proto__":{"polluted":true}}');
  t.is(({} as Record<string, unknown>)['polluted'], undefined);
  t.throws(() => toTaggedJson(() => 1), { instanceOf: TypeError });
  t.throws(() => toTaggedJson(Symbol('s')), { instanceOf: TypeError });
  t.throws(() => toTaggedJson(new (class Point {})()), { instanceOf: TypeError });
});

test('terminal text: control characters and bidi overrides are shown escaped; tab and newline kept', (t) => {
  t.is(escapeForTerminal('\x1b]0;owned\x07red\r\n\tok'), '\\x1b]0;owned\\x07red\\x0d\n\tok');
  t.is(escapeForTerminal('abc\u202edef\u2066'), 'abc\\u202edef\\u2066');
  t.is(escapeForTerminal('\x9b2J plain ünïcode'), '\\x9b2J plain ünïcode');
});

test('console stream: escapes on a terminal, writes raw into a pipe, drops lines past the pending-bytes bound', (t) => {
  const written: string[] = [];
  const tty = { isTTY: true, writableLength: 0, write: (s: string) => written.push(`tty:${s}`) };
  const pipe = { writableLength: 0, write: (s: string) => written.push(`pipe:${s}`) };
  const stream = new ConsoleStream(pipe, tty);
  stream.write({ level: 'log', stream: 'stdout', text: 'a\x1bb' });
  stream.write({ level: 'error', stream: 'stderr', text: 'a\x1bb' });
  pipe.writableLength = MAX_PENDING_OUTPUT_BYTES + 1;
  stream.write({ level: 'log', stream: 'stdout', text: 'dropped' });
  t.deepEqual(written, ['pipe:a\x1bb\n', 'tty:a\\x1bb\n']);
  t.is(stream.dropped, 1);
});

test('result format: undefined prints nothing, a string as it is, anything else as util.inspect shows it in full', (t) => {
  t.is(formatResult(undefined), undefined);
  t.is(formatResult('plain'), 'plain');
  t.is(formatResult(12n), '12n');
  t.is(formatResult(null), 'null');
  const deep = formatResult({ deep: { er: { still: { here: [1] } } } })!;
  t.regex(deep, /still: \{ here: \[ 1 \] \}/);
  t.notRegex(deep, /\[Object\]/);
  t.regex(formatResult(Array.from({ length: 150 }, (_, i) => i))!, /148, 149\n\]$/, 'no "... more items"');
});

test('guest frames: the guest part of a stack, without the host frames past the isolate boundary', (t) => {
  const error = new JsError(
    'TypeError',
    'boom',
    'TypeError: boom\n    at f (p.js:1:22)\n    at p.js:2:1\n    at (<isolated-vm boundary>)\n    at file:///host/runtime.js:1:1',
  );
  t.deepEqual(guestFrames(error), ['at f (p.js:1:22)', 'at p.js:2:1']);
  t.deepEqual(guestFrames(new Error('host')), []);
});

test('exit status of a failed start, by error code', (t) => {
  t.is(exitStatusForStartError(new SandboxUnavailable('no')), ExitStatus.sandboxUnavailable);
  t.is(exitStatusForStartError(Object.assign(new Error('x'), { code: 'ERR_STRATA_LAYER_FAILED' })), ExitStatus.sandboxUnavailable);
  t.is(exitStatusForStartError(Object.assign(new Error('x'), { code: 'ERR_STRATA_INVALID_OPTION' })), ExitStatus.usage);
  t.is(exitStatusForStartError(new WorkerCrashed('no helper', 'start')), ExitStatus.strataFailed);
});

// --- the doctor's verdict and table ---------------------------------------------------------------

function layer(name: string, overrides: Partial<LayerReport> = {}): LayerReport {
  return {
    name,
    version: '1.0.0',
    requirement: 'auto',
    capability: { available: true, provides: [`${name}-on`], missing: [] },
    enforcement: 'full',
    selfTest: 'passed',
    detail: {},
    ...overrides,
  };
}

function facts(sandbox: string, layers: LayerReport[], overrides: Partial<DoctorFacts> = {}): DoctorFacts {
  const report: SandboxReport = {
    sandbox,
    sandboxExtras: [],
    layers: layers as never,
    base: { jitless: true, strictEval: false, flags: ['--jitless'], privilegesDropped: false, workerNode: '/opt/node/bin/node' },
  };
  return {
    strata: '0.1.0',
    node: { version: 'v24.0.0', platform: 'linux', arch: 'x64' },
    nativeHelpers: { built: true, directory: '/pkg/build/Release', strataExec: true, watchdog: true },
    privileges: { root: false, uid: 1000, workerUid: 1000 },
    worker: { pid: 42, startMs: 120 },
    sandbox,
    sandboxExtras: [],
    report,
    error: null,
    ...overrides,
  };
}

test('doctor verdict: no layers is degraded, with what it means and what to do', (t) => {
  const report = assess(facts('none', []));
  t.is(report.status, 'degraded');
  t.regex(report.summary, /^degraded: no OS sandbox layer is in force/);
  t.regex(report.summary, /worker's authority \(uid 1000\)/);
  t.regex(report.summary, /--sandbox require' refuses/);
  t.false(report.summary.includes('\n'));
});

test('doctor verdict: every layer in force and self-tested is ok', (t) => {
  const report = assess(facts('landlock+seccomp', [layer('landlock'), layer('seccomp'), layer('clock', { requirement: 'off', enforcement: 'none' })]));
  t.is(report.status, 'ok');
  t.is(report.summary, 'ok: sandbox landlock+seccomp in force, and every layer passed its self-test');
});

test("doctor text: a layer's notes are printed under the table, and change no verdict", (t) => {
  const noted = layer('landlock', {
    capability: { available: true, provides: ['fs-no-write'], missing: [], notes: ["the kernel's Landlock ABI 11 is newer than this package knows (9)"] },
  });
  const report = assess(facts('landlock+seccomp', [noted, layer('seccomp')]));
  t.is(report.status, 'ok');
  const text = formatDoctorReport(report);
  t.regex(text, /\n\nnote \(landlock\): the kernel's Landlock ABI 11 is newer than this package knows \(9\)\n\nok: /);
  t.false(formatDoctorReport(assess(facts('landlock+seccomp', [layer('landlock'), layer('seccomp')]))).includes('note ('), 'no notes, no line');
});

test('doctor verdict: a partial layer or a failed self-test is degraded and named', (t) => {
  const partial = layer('landlock', { enforcement: 'partial', capability: { available: true, provides: ['fs-read-deny'], missing: ['net-deny'] } });
  const report = assess(facts('none', [partial, layer('seccomp', { selfTest: 'failed' })]));
  t.is(report.status, 'degraded');
  t.regex(report.summary, /landlock is only partly in force \(missing net-deny\)/);
  t.regex(report.summary, /seccomp failed its self-test/);
});

test("doctor verdict: sandbox 'none' with seccomp full and Landlock partial says what is in force, in the summary, the table and the JSON", (t) => {
  const partialLandlock = layer('landlock', {
    enforcement: 'partial',
    capability: { available: true, provides: ['fs-read-deny'], missing: ['tcp-deny', 'fs-truncate'] },
  });
  const deniedEmptyroot = layer('emptyroot', {
    enforcement: 'none',
    selfTest: 'skipped',
    capability: { available: false, provides: [], missing: ['user namespaces are switched off: user.max_user_namespaces is 0'] },
  });
  const table: [string, LayerReport[], RegExp, RegExp][] = [
    // Debian's 6.1 as shipped: Landlock ABI 2.
    [
      'emptyroot and seccomp full, landlock partial',
      [layer('emptyroot'), partialLandlock, layer('seccomp')],
      /^degraded: emptyroot and seccomp are in force, but not the whole OS sandbox \(sandbox 'none': it names only landlock\+seccomp, or seatbelt, fully in force\); landlock is only partly in force \(missing tcp-deny, fs-truncate\)\. .*--sandbox require' refuses here\.$/,
      /^sandbox +none \(not the whole OS sandbox; in force: emptyroot, seccomp; partly: landlock\)$/m,
    ],
    // user.max_user_namespaces=0.
    [
      'seccomp full, landlock partial, emptyroot none',
      [deniedEmptyroot, partialLandlock, layer('seccomp')],
      /^degraded: seccomp is in force, but not the whole OS sandbox \(sandbox 'none'.*\); emptyroot is not in force \(missing user namespaces are switched off: .*\); landlock is only partly in force \(missing tcp-deny, fs-truncate\)\./,
      /^sandbox +none \(not the whole OS sandbox; in force: seccomp; partly: landlock\)$/m,
    ],
    [
      'landlock partial only',
      [partialLandlock, layer('seccomp', { enforcement: 'none' })],
      /^degraded: no layer is fully in force, but not the whole OS sandbox .*; landlock is only partly in force .*; seccomp is not in force/,
      /^sandbox +none \(not the whole OS sandbox; no layer fully in force; partly: landlock\)$/m,
    ],
    [
      'nothing in force',
      [layer('landlock', { enforcement: 'none' }), layer('seccomp', { enforcement: 'none' })],
      /^degraded: no OS sandbox is in force \(sandbox off\): no layer is in force; landlock is not in force/,
      /^sandbox +none$/m,
    ],
  ];
  for (const [name, layers, summary, row] of table) {
    const report = assess(facts('none', layers));
    t.is(report.status, 'degraded', name);
    t.regex(report.summary, summary, name);
    t.false(report.summary.includes('\n'), name);
    if (layers.some((l) => l.enforcement !== 'none')) t.false(/no OS sandbox is in force/.test(report.summary), `${name}: ${report.summary}`);
    t.regex(formatDoctorReport(report), row, name);
    t.true(formatDoctorReport(report).includes(`\n${report.summary}\n`), `${name}: the text ends with the summary`);
    // --json prints the report as it is: the same summary, and each layer's enforcement.
    const json = JSON.parse(JSON.stringify(report)) as typeof report;
    t.is(json.summary, report.summary, name);
    t.is(json.sandbox, 'none', name);
    t.deepEqual(
      layersOf(json.report).map((l) => [l.name, l.enforcement]),
      layers.map((l) => [l.name, l.enforcement]),
      name,
    );
  }
  // Landlock and seccomp full: the sandbox has its name, and the row is just that.
  const whole = assess(facts('landlock+seccomp', [layer('emptyroot', { enforcement: 'none' }), layer('landlock'), layer('seccomp')]));
  t.regex(whole.summary, /^degraded: emptyroot is not in force\. /);
  t.regex(formatDoctorReport(whole), /^sandbox +landlock\+seccomp$/m);
});

test('doctor verdict: no worker is unavailable, with how to build the helpers', (t) => {
  const report = assess(
    facts('none', [], {
      nativeHelpers: { built: false, directory: '/pkg/build/Release', strataExec: false, watchdog: true },
      worker: null,
      sandbox: null,
      sandboxExtras: null,
      report: null,
      error: { errorType: 'WorkerCrashed', message: 'the worker could not be started' },
    }),
  );
  t.is(report.status, 'unavailable');
  t.regex(report.summary, /npm rebuild @strata\/runtime/);
  t.regex(formatDoctorReport(report), /^native helpers +NOT built: strata-exec missing from \/pkg\/build\/Release$/m);
});

test('doctor text: how a worker is started, and why a fork when it is', (t) => {
  const text = (workerSpawn: DoctorFacts['workerSpawn']) =>
    formatDoctorReport(assess(facts('landlock+seccomp', [layer('landlock'), layer('seccomp')], { workerSpawn })));
  t.regex(text({ method: 'posix_spawn', reason: null }), /^worker spawn +posix_spawn \(this process is not forked to start a worker\)$/m);
  t.regex(
    text({ method: 'child_process', reason: 'pidfd_open: Function not implemented (Linux 5.3 or newer has it)' }),
    /^worker spawn +child_process: this process is forked to start each worker \(pidfd_open: Function not implemented \(Linux 5\.3 or newer has it\)\)$/m,
  );
  t.regex(text({ method: null, reason: 'strata_spawn.node is missing' }), /^worker spawn +unknown: strata_spawn\.node is missing$/m);
  t.regex(text(undefined), /^worker spawn +unknown$/m);
});

test('doctor table: one row per layer under the column headers; an empty list says so', (t) => {
  const partial = layer('landlock', {
    enforcement: 'partial',
    capability: { available: true, provides: ['fs-read-deny', 'fs-write-deny'], missing: ['net-deny'] },
  });
  const text = formatDoctorReport(assess(facts('none', [partial])));
  const lines = text.split('\n');
  const header = lines.findIndex((line) => line.startsWith('name'));
  t.deepEqual(lines[header]!.split(/ {2,}/), [...LAYER_COLUMNS]);
  t.deepEqual(lines[header + 1]!.split(/ {2,}/), ['landlock', '1.0.0', 'auto', 'partial', 'passed', 'fs-read-deny, fs-write-deny', 'net-deny']);
  t.regex(formatDoctorReport(assess(facts('none', []))), /^name .*missing\n\(no layers: /m);
  t.deepEqual(renderTable(['a', 'bb'], [['xxx', 'y']]), ['a    bb', 'xxx  y']);
});

test('doctor verdict: a default layer that is not available makes the machine degraded, named', async (t) => {
  const { assess } = await import('../src/cli/doctor-report.js');
  const layer = (name: string) => ({
    name,
    version: '1',
    requirement: 'auto' as const,
    capability: { available: true, provides: [], missing: [] },
    enforcement: 'full' as const,
    selfTest: 'passed' as const,
    detail: {},
  });
  const facts = {
    strata: '0.1.0',
    node: { version: 'v24', platform: 'linux', arch: 'x64' },
    nativeHelpers: { built: true, directory: '/x', strataExec: true, watchdog: true },
    privileges: { root: true, uid: 0, workerUid: 65534 },
    worker: { pid: 1, startMs: 1 },
    sandbox: 'landlock+seccomp',
    sandboxExtras: [],
    report: {
      sandbox: 'landlock+seccomp',
      sandboxExtras: [],
      layers: [layer('landlock'), layer('seccomp')],
      base: { jitless: true, strictEval: false, flags: [], privilegesDropped: true, workerNode: '/opt/node/bin/node' },
    },
    error: null,
  };
  t.is(assess(facts).status, 'ok');
  const degraded = assess({ ...facts, missingDefaultLayers: ['emptyroot'] });
  t.is(degraded.status, 'degraded');
  t.regex(degraded.summary, /the default layer emptyroot is not installed \(install @strata\/layer-emptyroot\)/);
  t.regex(degraded.summary, /--sandbox require' refuses with the default layers until they are/);
});
