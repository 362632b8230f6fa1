// Checks that `npm pack` of every package with native code carries its prebuilds for linux-x64
// and linux-arm64 (run after `node scripts/prebuild.mjs`; `npm run prebuilds` runs both), with
// the executable bit, and prints each tarball's size. Without any prebuilds it says so and exits 0;
// with an arch missing (no cross compiler) it names each package and arch that lacks them; a
// prebuild that is there but wrong (absent from the tarball, not executable) exits 1.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NATIVE_TARGETS } from '../packages/runtime/native/scripts/targets.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const ARCHES = ['linux-x64', 'linux-arm64'];
const dirs = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).workspaces.map((w) => join(root, w));
const packages = dirs
  .map((dir) => ({ dir, name: JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).name }))
  .map((p) => ({ ...p, targets: (NATIVE_TARGETS[p.name] ?? []).filter((t) => (t.platforms ?? ['linux']).includes('linux')) }))
  .filter((p) => p.targets.length > 0);

// Which arches have no prebuild folder, per package: named exactly, so a machine without the cross
// compiler sees "linux-arm64 in @strata/runtime, ..." rather than a list of packages.
const missing = ARCHES.map((arch) => ({ arch, names: packages.filter((p) => !existsSync(join(p.dir, 'prebuilds', arch))).map((p) => p.name) })).filter(
  (m) => m.names.length > 0,
);
if (missing.length === ARCHES.length && missing.every((m) => m.names.length === packages.length)) {
  console.log(`check-prebuilds: skipped: no prebuilds at all; run \`npm run prebuilds\` first.`);
  process.exit(0);
}
const present = ARCHES.filter((arch) => !missing.some((m) => m.arch === arch));
const args = ['pack', '--dry-run', '--json', '--ignore-scripts', ...packages.flatMap((p) => ['-w', p.name])];
const packed = JSON.parse(execFileSync('npm', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
const problems = [];
for (const p of packages) {
  const tarball = packed.find((t) => t.name === p.name);
  if (!tarball) {
    problems.push(`${p.name}: npm pack listed no tarball`);
    continue;
  }
  const files = new Map(tarball.files.map((f) => [f.path, f]));
  for (const arch of present) {
    for (const t of p.targets) {
      const file = files.get(`prebuilds/${arch}/${t.name}`);
      if (!file) problems.push(`${p.name}: the tarball lacks prebuilds/${arch}/${t.name}`);
      else if ((file.mode & 0o111) === 0)
        problems.push(`${p.name}: prebuilds/${arch}/${t.name} is not executable in the tarball (mode ${file.mode.toString(8)})`);
    }
  }
  console.log(`check-prebuilds: ${p.name}: ${tarball.filename} ${tarball.size} bytes packed, ${tarball.unpackedSize} unpacked, ${tarball.entryCount} files`);
}
if (problems.length > 0) {
  for (const problem of problems) console.error(`check-prebuilds: ${problem}`);
  process.exit(1);
}
if (missing.length > 0) {
  // What is there is right; what is not is named, with what an install on that arch then needs.
  for (const { arch, names } of missing) {
    console.log(
      `check-prebuilds: no prebuilds/${arch} in ${names.join(', ')}: on ${arch} an install of these tarballs builds from source (python3, make, a C/C++ compiler). \`npm run prebuilds\` skipped ${arch} because its cross compiler is not installed; it printed which to install.`,
    );
  }
  console.log(`check-prebuilds: the tarballs carry their prebuilds for ${present.join(' and ')} only.`);
} else {
  console.log(`check-prebuilds: every tarball carries its prebuilds for ${ARCHES.join(' and ')}.`);
}
