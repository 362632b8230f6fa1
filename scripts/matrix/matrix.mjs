#!/usr/bin/env node
// `npm run matrix`: the platform matrix. Boots each configuration of run.mjs in a VM (what the
// kernel says, what doctor reports, what /proc and tried operations show), runs doctor and
// `strata run --sandbox require` on this machine's own kernel and under each simulated platform
// (strata-simulate-platform), checks each simulated platform against its real counterpart
// (platform-table.mjs), and writes it all to bench/matrix-results.json and the README's table.
//
//   node scripts/matrix/matrix.mjs                  the full matrix (builds the kernel without
//                                                   seccomp first: build-kernel.sh); writes the
//                                                   results and README.md
//   node scripts/matrix/matrix.mjs --short --out F  the CI form: 6.1 and the newest as shipped and the
//                                                   configurations that have a simulated
//                                                   counterpart; results to F, README untouched
//   --strict   exit 1 on any mismatch a VM found (the full run reports them and exits 0)
//
// Exit status 1 when a VM gave no report, a simulated platform disagrees with its real
// counterpart, or (with --strict) any mismatch; 0 otherwise.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { release, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { COUNTERPARTS, compareSimulated, platformTable, RESULTS, withTable } from './platform-table.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '../..');
const STRATA = join(repo, 'packages/runtime/dist/src/cli/strata.js');
const SIMULATE = join(repo, 'packages/runtime/build/Release/strata-simulate-platform');
// The CI form: 6.1 as shipped (Landlock ABI 2: require refuses), trixie-backports' newest as
// shipped (7.3 when this was written, ABI 11, newer than this machine's: the stacking on every
// thread at once; require starts), and the configurations with a simulated counterpart that
// need no kernel built here.
const SHORT = ['debian-6.1', 'debian-newest', ...COUNTERPARTS.filter((c) => !c.built).map((c) => c.real)];
// The full run: every configuration of run.mjs, the extra ones (the initramfs root, aarch64) too.
const FULL = [
  'debian-6.1',
  'debian-6.1-uid1000',
  'debian-6.1-no-landlock',
  'debian-6.1-userns-off',
  'debian-6.1-userns-off-uid1000',
  'debian-6.1-unpriv-userns-off-uid1000',
  'debian-6.12',
  'debian-6.12-uid1000',
  'debian-6.18',
  'debian-6.18-uid1000',
  'debian-newest',
  'debian-newest-uid1000',
  'debian-6.1-rootfs',
  'debian-6.1-no-seccomp',
  'debian-6.1-arm64',
];

const args = process.argv.slice(2);
const short = args.includes('--short');
const strict = args.includes('--strict');
const outIndex = args.indexOf('--out');
const out = outIndex >= 0 ? resolve(args[outIndex + 1] ?? '') : RESULTS;
const extra = args.filter((a, i) => !['--short', '--strict', '--out'].includes(a) && i !== outIndex + 1);

const scratch = mkdtempSync(join(tmpdir(), 'strata-matrix-'));
let status = 1;
try {
  status = matrix();
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
process.exit(status);

/** What fetch.sh got, by arch: its versions.txt lines (package version architecture). */
function fetchedVersions() {
  const cache = resolve(process.env.MATRIX_CACHE ?? join(repo, '.matrix-cache'));
  const versions = {};
  for (const [arch, dir] of [
    ['x64', cache],
    ['arm64', join(cache, 'arm64')],
  ]) {
    try {
      versions[arch] = readFileSync(join(dir, 'versions.txt'), 'utf8')
        .split('\n')
        .filter((line) => line !== '' && !line.startsWith('#'));
    } catch {
      // Not fetched for this arch.
    }
    try {
      // The kernel build-kernel.sh made from a source package, when it did.
      versions[arch]?.push(...readFileSync(join(dir, 'versions-built.txt'), 'utf8').split('\n').filter(Boolean));
    } catch {
      // Not built.
    }
  }
  return versions;
}

function matrix() {
  // The VMs.
  const vmJson = join(scratch, 'vm.json');
  const booted = spawnSync(
    process.execPath,
    [join(here, 'run.mjs'), '--build', '--json', vmJson, ...(extra.length > 0 ? [] : short ? SHORT : FULL), ...extra],
    { stdio: 'inherit' },
  );
  let vm;
  try {
    vm = JSON.parse(readFileSync(vmJson, 'utf8'));
  } catch {
    console.error(`matrix: run.mjs wrote no results (exit ${booted.status ?? booted.signal})`);
    return 1;
  }

  // This machine's kernel, and the simulated platforms on it.
  const program = join(scratch, 'one-plus-one.js');
  writeFileSync(program, '1 + 1\n');
  const observe = (prefix) => {
    const doctor = spawnSync(prefix[0], [...prefix.slice(1), STRATA, 'doctor', '--json'], { encoding: 'utf8' });
    const required = spawnSync(prefix[0], [...prefix.slice(1), STRATA, 'run', '--sandbox', 'require', '--json', program], { encoding: 'utf8' });
    let report = null;
    try {
      report = JSON.parse(doctor.stdout);
    } catch {
      console.error(`matrix: doctor printed no JSON (${prefix.join(' ')}): ${doctor.stderr.slice(0, 2000)}`);
    }
    return { doctor: report, doctorExit: doctor.status, requireExit: required.status };
  };
  const host = { kernel: `Linux ${release()} ${process.arch}`, ...observe([process.execPath]) };
  const simulated = {};
  for (const { flag } of COUNTERPARTS) simulated[flag] = observe([SIMULATE, flag, '--', process.execPath]);

  // The serial logs stay in the cache: the results name them relative to it, never by this machine's paths.
  for (const r of vm.results) if (typeof r.log === 'string') r.log = r.log.replace(/^.*\/logs\//, 'logs/');
  const results = {
    kernelRelease: vm.kernelRelease,
    accel: vm.accel,
    date: new Date().toISOString().slice(0, 10),
    versions: fetchedVersions(),
    host,
    simulated,
    vm: vm.results,
  };
  // Doctor on this machine names its files (helpers, node): as <repo>/…, never this machine's paths.
  writeFileSync(out, `${JSON.stringify(results, null, 2).replaceAll(repo, '<repo>')}\n`);

  // The simulator's fake answers against the real kernels.
  const problems = [];
  for (const { flag, layer, real } of COUNTERPARTS) {
    const counterpart = vm.results.find((r) => r.name === real);
    if (counterpart === undefined) continue;
    const diff = compareSimulated(simulated[flag].doctor, counterpart.doctor, layer);
    console.log(`matrix: simulated ${flag} against the real ${real} (${layer}): ${diff.length === 0 ? 'the same verdict' : diff.join('; ')}`);
    if (diff.length > 0) problems.push(`simulated ${flag} differs from the real ${real}: ${diff.join('; ')}`);
  }
  for (const r of vm.results) {
    if (!r.doctor || r.problems.length > 0) problems.push(`${r.name}: ${r.problems.join('; ') || 'no doctor report'}`);
    if (strict && r.checks?.length) problems.push(`${r.name}: ${r.checks.join('; ')}`);
  }
  if (!short) {
    const readme = join(repo, 'README.md');
    const updated = withTable(readFileSync(readme, 'utf8'), platformTable(results));
    if (updated !== undefined) writeFileSync(readme, updated);
    console.log(`matrix: results in ${out.slice(repo.length + 1)}, README.md's platform table updated`);
  }
  console.log(`\n${platformTable(results)}\n`);
  for (const p of problems) console.error(`matrix: PROBLEM: ${p}`);
  return problems.length > 0 ? 1 : 0;
}
