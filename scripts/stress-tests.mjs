// Runs the test suite N times beside CPU burners (one per core unless told), to find the tests
// that only pass on an idle machine (timing, or which of two racing mechanisms wins).
//
//   node scripts/stress-tests.mjs [RUNS] [PACKAGE_DIR] [--burners N] [-- EXTRA_ARGS...]
//
// RUNS defaults to 3. --burners N starts N spinning processes instead of one per core: more
// burners than cores is how a loaded machine looks (load average 15 on 2 cores is ~7 per core),
// e.g. `node scripts/stress-tests.mjs 2 packages/agent --burners 8 -- test/crash.test.ts`. Without PACKAGE_DIR each run is `npx turbo run test --concurrency=1
// --continue` at the repository root (every package's tests, even after one fails); with it
// (e.g. packages/layer-landlock) each run is `npx ava` in that directory.
// Arguments after `--` are added to that command (e.g. `-- test/seal-order.test.ts` for ava).
// Everything is built once first. Each run's output goes to a log file; this prints each run's
// pass/fail, its time and the tests that failed, and exits 1 if any run failed.
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync, statSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const usage = 'usage: node scripts/stress-tests.mjs [RUNS] [PACKAGE_DIR] [--burners N] [-- EXTRA_ARGS...]';
// More would only fight the tests for memory and pids; 64 is already ~30 per core on a laptop.
const MAX_BURNERS = 64;

let runs = 3;
let packageDir;
let burnerCount = availableParallelism();
const argv = process.argv.slice(2);
const dashes = argv.indexOf('--');
const extra = dashes < 0 ? [] : argv.slice(dashes + 1);
const own = dashes < 0 ? argv : argv.slice(0, dashes);
for (let i = 0; i < own.length; i++) {
  const arg = own[i];
  if (arg === '-h' || arg === '--help') {
    console.log(usage);
    process.exit(0);
  } else if (arg === '--burners' || arg.startsWith('--burners=')) {
    const value = arg === '--burners' ? own[++i] : arg.slice('--burners='.length);
    if (value === undefined || !/^\d+$/.test(value) || Number(value) > MAX_BURNERS) {
      console.error(
        `stress-tests: --burners takes a whole number from 0 to ${MAX_BURNERS} (got ${value === undefined ? 'nothing' : JSON.stringify(value)})\n${usage}`,
      );
      process.exit(2);
    }
    burnerCount = Number(value);
  } else if (arg.startsWith('-')) {
    console.error(`stress-tests: unknown option ${arg}\n${usage}`);
    process.exit(2);
  } else if (/^\d+$/.test(arg)) {
    runs = Number(arg);
  } else {
    const dir = resolve(arg);
    if (!existsSync(dir) || !statSync(dir).isDirectory() || !existsSync(join(dir, 'package.json'))) {
      console.error(`stress-tests: ${arg} is not a package directory\n${usage}`);
      process.exit(2);
    }
    packageDir = dir;
  }
}
if (runs < 1) {
  console.error(`stress-tests: RUNS must be at least 1\n${usage}`);
  process.exit(2);
}

// node_modules/.bin first on PATH, as npm scripts have it: npx, turbo and ava run on the Node 24 installed there.
const binDir = join(root, 'node_modules', '.bin');
const env = { ...process.env, PATH: `${binDir}:${process.env.PATH ?? ''}`, FORCE_COLOR: '0', NO_COLOR: '1' };
const command = packageDir === undefined ? ['npx', ['turbo', 'run', 'test', '--concurrency=1', '--continue', ...extra]] : ['npx', ['ava', ...extra]];
const cwd = packageDir ?? root;

console.log('stress-tests: building first (npx turbo run build --output-logs=errors-only)');
const build = spawnSync('npx', ['turbo', 'run', 'build', '--output-logs=errors-only'], { cwd: root, env, stdio: 'inherit' });
if (build.status !== 0) {
  console.error('stress-tests: the build failed; nothing was run');
  process.exit(1);
}

// --- the burners: spinning children (one per core by default), killed by pid whatever happens -
// Each also ends itself once this process is gone (its parent pid changes), should it be SIGKILLed.
const BURN = 'const parent = process.ppid; for (let i = 1; ; i++) if (i % 0x4000000 === 0 && process.ppid !== parent) process.exit(0);';
const burners = [];
function startBurners() {
  for (let i = 0; i < burnerCount; i++) {
    const child = spawn(process.execPath, ['-e', BURN], { stdio: 'ignore' });
    child.on('error', () => {});
    burners.push(child);
  }
}
function stopBurners() {
  for (const child of burners.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}
let current;
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    stopBurners();
    if (current !== undefined && current.exitCode === null) current.kill('SIGTERM');
    process.exit(130);
  });
}
process.on('exit', stopBurners);

// --- what failed, from ava's output (turbo prefixes each line with "<package>:test: ") -------
// eslint-disable-next-line no-control-regex
const ANSI = /\x1b\[[0-9;?]*[A-Za-z]/g;
const FAILURE =
  /✘|Uncaught exception|Unhandled rejection|Timed out while running tests|\d+ (?:tests? failed|uncaught exceptions?|unhandled rejections?)|error TS\d+|Failed:\s|command .* exited \(\d+\)/;

function failuresIn(output) {
  const seen = new Set();
  const lines = [];
  for (const raw of output.split('\n')) {
    const line = raw.replace(ANSI, '').trimEnd();
    if (!FAILURE.test(line) || /✔/.test(line)) continue;
    const key = line.trim();
    if (seen.has(key)) continue; // ava prints each failure twice: as it happens and in the summary
    seen.add(key);
    lines.push(key);
  }
  return lines;
}

function runOnce(logPath) {
  return new Promise((resolvePromise) => {
    const log = createWriteStream(logPath);
    let output = '';
    const started = performance.now();
    const child = spawn(command[0], command[1], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    current = child;
    const take = (chunk) => {
      log.write(chunk);
      output += chunk.toString('utf8');
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('error', (error) => take(Buffer.from(`stress-tests: could not start ${command[0]}: ${error.message}\n`)));
    child.on('close', (code, signal) => {
      current = undefined;
      log.end();
      resolvePromise({ ok: code === 0, code, signal, seconds: (performance.now() - started) / 1000, failures: failuresIn(output) });
    });
  });
}

const logs = mkdtempSync(join(tmpdir(), 'strata-stress-'));
const what = `${command[0]} ${command[1].join(' ')}${packageDir === undefined ? '' : ` (in ${packageDir})`}`;
console.log(`stress-tests: ${runs} run(s) of \`${what}\` beside ${burnerCount} CPU burner(s) on ${availableParallelism()} core(s); logs in ${logs}`);
startBurners();
const results = [];
for (let i = 1; i <= runs; i++) {
  const logPath = join(logs, `run-${i}.log`);
  const result = await runOnce(logPath);
  results.push(result);
  const status = result.ok ? 'pass' : `FAIL (${result.signal ?? `exit ${result.code}`})`;
  console.log(`run ${i}/${runs}: ${status} in ${result.seconds.toFixed(0)} s — ${logPath}`);
  if (!result.ok) {
    if (result.failures.length === 0) console.log('  (no failing test named in the output; see the log)');
    for (const line of result.failures) console.log(`  ${line}`);
  }
}
stopBurners();
const failed = results.filter((r) => !r.ok).length;
console.log(`stress-tests: ${runs - failed} of ${runs} run(s) passed under load`);
process.exit(failed === 0 ? 0 : 1);
