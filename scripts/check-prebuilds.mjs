// Checks that `npm pack` of every package with native code carries its prebuilds for linux-x64
// and linux-arm64 (run after `node scripts/prebuild.mjs`; `npm run prebuilds` runs both), with
// the executable bit, and prints each tarball's size. Without prebuilds it says so and exits 0.
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

const absent = packages.filter((p) => ARCHES.some((a) => !existsSync(join(p.dir, 'prebuilds', a))));
if (absent.length > 0) {
  console.log(`check-prebuilds: skipped: no prebuilds in ${absent.map((p) => p.name).join(', ')}; run \`npm run prebuilds\` first.`);
  process.exit(0);
}

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
  for (const arch of ARCHES) {
    for (const t of p.targets) {
      const file = files.get(`prebuilds/${arch}/${t.name}`);
      if (!file) problems.push(`${p.name}: the tarball lacks prebuilds/${arch}/${t.name}`);
      else if ((file.mode & 0o111) === 0) problems.push(`${p.name}: prebuilds/${arch}/${t.name} is not executable in the tarball (mode ${file.mode.toString(8)})`);
    }
  }
  console.log(`check-prebuilds: ${p.name}: ${tarball.filename} ${tarball.size} bytes packed, ${tarball.unpackedSize} unpacked, ${tarball.entryCount} files`);
}
if (problems.length > 0) {
  for (const problem of problems) console.error(`check-prebuilds: ${problem}`);
  process.exit(1);
}
console.log(`check-prebuilds: every tarball carries its prebuilds for ${ARCHES.join(' and ')}.`);
