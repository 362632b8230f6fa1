// The platform matrix in CI (node --test, in npm test after the build): the short form boots
// Debian 12's 6.1 kernel in qemu (TCG) as shipped and in the configurations that have a simulated
// counterpart, and trixie-backports' newest kernel (7.3 when this was written) as shipped, and fails on any report a VM did not give, any mismatch between what doctor
// reports and what the kernel and the worker's /proc show, and any simulated platform whose
// verdict differs from its real counterpart's. Where this machine cannot boot the VMs (not
// Debian-based, no archive, no qemu) it skips saying why, unless STRATA_TEST_PLATFORM declares
// `vm` (as .ci/run does): then that is a failure. The README's table is checked to be the one
// the committed results make.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { isDeclared } from '../../packages/runtime/dist/src/testing/platform.js';
import { BEGIN, compareSimulated, END, platformTable, RESULTS, verdictOf, withTable } from '../matrix/platform-table.mjs';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const MATRIX = path.join(REPO, 'scripts', 'matrix');

/** The cache filled, or why it cannot be here (one `apt-get update` first when root and the lists know nothing). */
function fetched() {
  if (process.platform !== 'linux' || process.arch !== 'x64') return `the VMs are x86_64 Linux ones (this is ${process.platform} ${process.arch})`;
  const fetch = () => spawnSync('sh', [path.join(MATRIX, 'fetch.sh')], { encoding: 'utf8' });
  let run = fetch();
  if (run.status !== 0 && /apt-get update/.test(run.stderr) && process.getuid?.() === 0) {
    spawnSync('apt-get', ['update', '-qq'], { stdio: 'ignore' });
    run = fetch();
  }
  return run.status === 0 ? undefined : `scripts/matrix/fetch.sh failed: ${(run.stderr || run.stdout).trim().split('\n').slice(-3).join(' ')}`;
}

test('the short matrix: Debian 6.1 and the newest kernel in VMs report what their kernels have, and each simulated platform gives its real counterpart’s verdict', (t) => {
  const missing = fetched();
  if (missing !== undefined) {
    if (isDeclared('vm')) assert.fail(`STRATA_TEST_PLATFORM declares vm, but ${missing}`);
    t.skip(missing);
    console.log(`# matrix: skipped: ${missing}`);
    return;
  }
  const scratch = mkdtempSync(path.join(tmpdir(), 'strata-matrix-test-'));
  t.after(() => rmSync(scratch, { recursive: true, force: true }));
  const out = path.join(scratch, 'results.json');
  const run = spawnSync(process.execPath, [path.join(MATRIX, 'matrix.mjs'), '--short', '--strict', '--out', out], { encoding: 'utf8' });
  console.log(
    run.stdout
      .split('\n')
      .filter((line) => /^(configuration|debian|matrix:|\| )/.test(line))
      .join('\n'),
  );
  assert.equal(run.status, 0, `the matrix failed:\n${run.stderr.slice(-4000)}\n${run.stdout.slice(-4000)}`);
  const results = JSON.parse(readFileSync(out, 'utf8'));
  assert.deepEqual(
    results.vm.map((r) => r.name),
    ['debian-6.1', 'debian-newest', 'debian-6.1-no-landlock', 'debian-6.1-unpriv-userns-off-uid1000'],
  );
  for (const r of results.vm) {
    assert.ok(r.doctor, `${r.name} gave a report`);
    assert.deepEqual(r.checks, [], `${r.name}: no mismatch`);
    if (r.name === 'debian-newest') {
      // Landlock ABI 8 or newer: every layer in force, the deny-all stack sealed on every thread
      // at once, require starts, and the worker's /proc agrees.
      const landlock = r.doctor.report.layers.find((l) => l.name === 'landlock');
      assert.ok(landlock.capability.detail.abi >= 8, `${r.name}: Landlock ABI ${landlock.capability.detail.abi}`);
      assert.ok(landlock.capability.provides.includes('tsync-stack'), `${r.name}: the stack after load is provided`);
      assert.equal(r.doctor.status, 'ok', r.name);
      assert.equal(r.require.exit, 0, `${r.name}: strata run --sandbox require ran`);
      assert.equal(r.require.result, 2, `${r.name}: 1 + 1`);
      assert.deepEqual(r.outside.observed.seccomp, ['2'], `${r.name}: every thread filtered`);
      assert.ok(r.chainSuite.results.length > 0 && r.chainSuite.results.every((c) => c.ok), `${r.name}: the whole chain held`);
    } else {
      // Landlock ABI 2 (or none, or no user namespaces): never the full sandbox, and require refuses.
      assert.equal(r.doctor.status, 'degraded', r.name);
      assert.equal(r.require.exit, 3, `${r.name}: strata run --sandbox require refused`);
    }
  }
});

test('compareSimulated: the taken layer’s verdict, the status and require must agree; anything else may differ', () => {
  const doctor = (status, layers) => ({ status, report: { layers } });
  const layer = (name, enforcement, missing = [], detail = undefined) => ({
    name,
    enforcement,
    selfTest: enforcement === 'none' ? 'skipped' : 'passed',
    capability: { missing, detail },
  });
  const simulated = doctor('degraded', [layer('emptyroot', 'full'), layer('landlock', 'none', ['not built in']), layer('seccomp', 'full')]);
  const real = doctor('degraded', [layer('emptyroot', 'full'), layer('landlock', 'none', ['disabled at boot']), layer('seccomp', 'partial', ['x'])]);
  assert.deepEqual(compareSimulated(simulated, real, 'landlock'), []);
  assert.deepEqual(compareSimulated(simulated, doctor('ok', [layer('landlock', 'full')]), 'landlock'), [
    'status: simulated "degraded", real "ok"',
    'enforcement: simulated "none", real "full"',
    'selfTest: simulated "skipped", real "passed"',
    'missing: simulated true, real false',
  ]);
  const forbidden = doctor('degraded', [layer('emptyroot', 'none', ['EPERM'], { userNamespaces: 'forbidden' })]);
  const exhausted = doctor('degraded', [layer('emptyroot', 'none', ['ENOSPC'], { userNamespaces: 'exhausted' })]);
  assert.deepEqual(compareSimulated(forbidden, exhausted, 'emptyroot'), ['userNamespaces: simulated "forbidden", real "exhausted"']);
  assert.equal(verdictOf(undefined, 'seccomp').enforcement, null);
});

test("the README's platform table is the one the committed matrix results make", () => {
  const results = JSON.parse(readFileSync(RESULTS, 'utf8'));
  const readme = readFileSync(path.join(REPO, 'README.md'), 'utf8');
  assert.ok(readme.includes(BEGIN) && readme.includes(END), 'README.md has the platform table block');
  assert.equal(withTable(readme, platformTable(results)), readme, 'README.md is up to date: run node scripts/matrix/platform-table.mjs --write');
});
