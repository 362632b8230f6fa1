// The self-test's attempts, run here without any sandbox: every one must be reported as having
// gone through, so that under a broken profile the worker would refuse to start. Each attempt is
// harmless (a file created in the temporary directory and removed, /bin/echo, a connect to the
// discard port, signal 0). Also the probe's dry-run plumbing, which fails loudly off macOS.
import test from 'ava';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tryForbidden } from '../src/attempts.js';
import { dryRun } from '../src/dry-run.js';
import { PACKAGE_ROOT } from '../src/read-set.js';
import seatbeltLayer from '../src/layer.js';
import { offMac, when } from './when.js';

const unix = process.platform !== 'win32' && existsSync('/bin/echo') && existsSync('/etc/passwd');

when(unix, 'needs /bin/echo and /etc/passwd')(
  'without a sandbox, tryForbidden names every attempt as let through, and the positive control as fine',
  async (t) => {
    const { results, problems } = await tryForbidden({ processArgsErrno: () => 0 }, join(PACKAGE_ROOT, 'package.json'));
    t.like(results, { readOutside: 'none', write: 'none', spawn: 'none', signalParent: 'none', parentArgs: 'none', readOwn: 'none' });
    t.not(results.tcpConnect, 'EPERM');
    t.false(existsSync(join(tmpdir(), `strata-seatbelt-probe-${process.pid}`)), 'the probe file was removed');
    t.deepEqual(
      problems.map((p) => p.replace(/ gave .*| \(kill.*| \(sysctl.*/, '')),
      [
        'reading /etc/passwd',
        `creating ${join(tmpdir(), `strata-seatbelt-probe-${process.pid}`)}`,
        'spawning /bin/echo',
        'a TCP connect to 127.0.0.1',
        'signalling the parent',
        "the parent's arguments and environment",
      ],
    );
  },
);

test('tryForbidden reports a broken positive control and a refused argument read correctly', async (t) => {
  const { results, problems } = await tryForbidden({ processArgsErrno: () => 1 }, '/does/not/exist/strata-seatbelt');
  t.is(results.parentArgs, 'errno 1');
  t.is(results.readOwn, 'ENOENT');
  t.true(problems.includes('reading /does/not/exist/strata-seatbelt gave ENOENT: the read rules are broken'));
  t.false(problems.some((p) => p.startsWith("the parent's arguments")));
});

offMac('off macOS the dry-run child fails loudly and the probe would report its reason', (t) => {
  t.is(
    dryRun('(version 1)\n(deny default)\n'),
    `the seatbelt dry run failed: strata-seatbelt: dry run failed: @strata/layer-seatbelt: Seatbelt is macOS only (this is ${process.platform})`,
  );
});

offMac('off macOS the self-test hook refuses to run (it needs the addon)', async (t) => {
  const context = {
    platform: process.platform,
    options: {},
    capability: { available: false, provides: [], missing: ['not macOS'] },
    evalInGuest: async () => undefined,
    report: () => t.fail(),
  };
  await t.throwsAsync(async () => seatbeltLayer({}).selfTest(context), {
    message: `@strata/layer-seatbelt: Seatbelt is macOS only (this is ${process.platform})`,
  });
});
