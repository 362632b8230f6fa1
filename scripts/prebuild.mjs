// `npm run prebuilds`: compiles every package's native code for linux-x64 and linux-arm64 into its
// prebuilds/<platform>-<arch>/, which `npm pack` ships and `npm install` then uses instead of
// node-gyp (packages/runtime/native/scripts/build.mjs). Plain gcc/g++, no node-gyp, so the other
// arch is a cross-compile: Debian's gcc-aarch64-linux-gnu and g++-aarch64-linux-gnu on x64
// (gcc-x86-64-linux-gnu and g++-x86-64-linux-gnu on arm64). The targets and their flags are in
// packages/runtime/native/scripts/targets.mjs, mirroring each binding.gyp.
//
//   node scripts/prebuild.mjs [--arch x64|arm64]...   (default: both; an arch whose toolchain is
//   missing is skipped by default and an error when asked for by name)
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { staticPieLinks } from '../packages/runtime/native/scripts/static-pie.mjs';
import { NATIVE_TARGETS } from '../packages/runtime/native/scripts/targets.mjs';
import { compileFlags, elfMachine, nodeHeaders } from './native-flags.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const TOOLCHAIN = { x64: { prefix: 'x86_64-linux-gnu-', elfMachine: 62 }, arm64: { prefix: 'aarch64-linux-gnu-', elfMachine: 183 } };
const arches = process.argv.flatMap((a, i, all) => (all[i - 1] === '--arch' ? [a] : []));
const wanted = arches.length > 0 ? arches : ['x64', 'arm64'];

const headers = nodeHeaders(root);
if (!headers) fail(`no Node headers (include/node) in node_modules/node-linux-${process.arch} nor beside ${process.execPath}: run \`npm ci\``);
// strata-napi.h, shared by every addon (the layers' binding.gyp finds it through @strata/runtime).
const SHARED_HEADERS = join(root, 'packages', 'runtime', 'native');

function fail(message) {
  console.error(`prebuild: ${message}`);
  process.exit(1);
}

/** Debian's package names for a cross toolchain, for the error that says what to install. */
const debianPackages = (toolchain) => {
  const triple = toolchain.prefix.slice(0, -1).replaceAll('_', '-');
  return `gcc-${triple} g++-${triple}`;
};

/** Whether both compilers of an arch's toolchain run (a cross toolchain is often not installed). */
const hasToolchain = (prefix) => ['gcc', 'g++'].every((c) => !spawnSync(prefix + c, ['--version'], { stdio: 'ignore' }).error);

const packages = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).workspaces.map((w) => join(root, w));
for (const arch of wanted) {
  const toolchain = TOOLCHAIN[arch] ?? fail(`unknown arch ${arch} (x64 or arm64)`);
  const prefix = arch === process.arch ? '' : toolchain.prefix;
  if (!hasToolchain(prefix)) {
    const install = `Debian: apt-get install -y ${debianPackages(toolchain)}`;
    // Asked for by name, a missing toolchain is an error; by default the other arch is skipped, and
    // check-prebuilds then names exactly what is missing.
    if (arches.includes(arch)) fail(`no ${prefix}gcc/${prefix}g++ for linux-${arch} (${install})`);
    console.log(`prebuild: skipped linux-${arch}: no ${prefix}gcc/${prefix}g++ (${install})`);
    continue;
  }
  // The launch chain's helpers link static-pie where this toolchain can (a cross toolchain's output is not run here).
  const staticPie = staticPieLinks(`${prefix}gcc`, { run: prefix === '' });
  console.log(`prebuild: linux-${arch}: the launch chain's helpers link ${staticPie ? 'static-pie' : 'dynamically'}`);
  for (const dir of packages) {
    const name = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).name;
    const targets = (NATIVE_TARGETS[name] ?? []).filter((t) => (t.platforms ?? ['linux']).includes('linux'));
    if (targets.length === 0) continue;
    // Built beside, then renamed into place: a failed build leaves the old folder (or none), never
    // an empty or partial one.
    const out = join(dir, 'prebuilds', `linux-${arch}`);
    const building = `${out}.building`;
    rmSync(building, { recursive: true, force: true });
    mkdirSync(building, { recursive: true });
    for (const target of targets) {
      const { compiler, flags } = compileFlags(target, headers, SHARED_HEADERS, { staticPie });
      const output = join(building, target.name);
      const args = [...flags, '-o', output, ...target.sources];
      const result = spawnSync(prefix + compiler, args, { cwd: dir, stdio: 'inherit' });
      const problem = result.error
        ? `${prefix + compiler}: ${result.error.message} (Debian: apt-get install -y ${debianPackages(toolchain)})`
        : result.status !== 0
          ? `${name}: ${prefix + compiler} ${args.join(' ')} exited with ${result.status ?? result.signal}`
          : elfMachine(output) !== toolchain.elfMachine
            ? `${output} is not an ELF file for ${arch}`
            : undefined;
      if (problem) {
        rmSync(building, { recursive: true, force: true });
        fail(problem);
      }
      console.log(`prebuild: ${name} ${join('prebuilds', `linux-${arch}`, target.name)}`);
    }
    rmSync(out, { recursive: true, force: true });
    renameSync(building, out);
  }
}
