// Builds a Strata package's native code (its binding.gyp) with node-gyp, at install time. Every
// Strata package with native code runs this same script from its own directory (the current
// directory of an npm install script): @strata/runtime as `node native/scripts/build.mjs`, the
// others through the `@strata/runtime/native-build` export.
//
// Plain JavaScript on purpose: it runs during `npm ci`, before anything is compiled, and possibly
// on npm's own Node (npm runs scripts with node_modules/.bin first on PATH, but npm itself may be
// older). The helpers must be built against Node 24's headers, never whatever `nodedir` a user's
// .npmrc names, and without a download: the headers come from the node-<os>-<cpu> package npm
// installed beside Node 24 (root optionalDependencies), else from the running Node's prefix.
//
// A package that ships a prebuild of every artifact it needs here (prebuilds/<platform>-<arch>/,
// written by `npm run prebuilds` at the repository root; targets.mjs lists the artifacts) is not
// built: it needs no compiler then. In the repository there are none unless that script ran.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { prebuildKey, targetsFor } from './targets.mjs';
import { staticPieLinks } from './static-pie.mjs';

const MIN_NODE_MAJOR = 24;
const packageRoot = process.cwd();
const packageName = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')).name;

function fail(message) {
  console.error(`${packageName}: cannot build its native code: ${message}`);
  process.exit(1);
}

/** The NODE_MAJOR_VERSION of the headers under `nodedir`, or undefined when there are none. */
function headersMajor(nodedir) {
  const versionHeader = join(nodedir, 'include', 'node', 'node_version.h');
  if (!existsSync(versionHeader) || !existsSync(join(nodedir, 'include', 'node', 'node_api.h'))) return undefined;
  const match = /^#define NODE_MAJOR_VERSION (\d+)$/m.exec(readFileSync(versionHeader, 'utf8'));
  return match ? Number(match[1]) : undefined;
}

/** node_modules/node-<os>-<cpu> in this package or any directory above it (npm hoists it to the root). */
function platformPackageDirs() {
  const name = `node-${process.platform}-${process.arch}`;
  const dirs = [];
  for (let dir = packageRoot; ; dir = dirname(dir)) {
    dirs.push(join(dir, 'node_modules', name));
    if (dirname(dir) === dir) return dirs;
  }
}

function findNodedir() {
  // An official Node build keeps its headers in <prefix>/include/node, beside <prefix>/bin/node.
  const candidates = [...platformPackageDirs(), resolve(dirname(process.execPath), '..')];
  const found = candidates.map((dir) => ({ dir, major: headersMajor(dir) })).filter((c) => c.major !== undefined);
  const usable = found.find((c) => c.major >= MIN_NODE_MAJOR);
  if (usable) return usable.dir;
  const seen = found.map((c) => `${c.dir} (Node ${c.major})`).join(', ') || 'none';
  fail(
    `no Node.js >= ${MIN_NODE_MAJOR} headers found (found: ${seen}). ` +
      `Run \`npm ci\` at the repository root so node-${process.platform}-${process.arch} is installed, ` +
      `or run this with a Node ${MIN_NODE_MAJOR} whose prefix has include/node.`,
  );
}

/** node-gyp's entry script: the one npm bundles (npm names it in npm_config_node_gyp for scripts). */
function findNodeGyp() {
  const candidates = [process.env.npm_config_node_gyp];
  if (process.env.npm_execpath) {
    candidates.push(resolve(dirname(process.env.npm_execpath), '..', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'));
  }
  const found = candidates.find((path) => path && existsSync(path));
  if (!found) fail(`node-gyp not found. Run this through npm (\`npm rebuild ${packageName}\`), which bundles it.`);
  return found;
}

if (process.platform !== 'linux' && process.platform !== 'darwin') {
  // Every binding.gyp here has Linux targets (and @strata/layer-seatbelt a macOS one) only.
  console.log(`${packageName}: its native code is for Linux and macOS only; nothing to build on ${process.platform}.`);
  process.exit(0);
}

const needed = targetsFor(packageName, process.platform);
if (needed?.length === 0) {
  console.log(`${packageName}: it has no native code for ${process.platform}; nothing to build.`);
  process.exit(0);
}
const prebuilds = join('prebuilds', prebuildKey());
if (needed?.every((t) => existsSync(join(packageRoot, prebuilds, t.name)))) {
  console.log(`${packageName}: using the prebuilt native code in ${prebuilds} (${needed.map((t) => t.name).join(', ')}); not building from source.`);
  process.exit(0);
}

const nodedir = findNodedir();
const nodeGyp = findNodeGyp();
console.log(`${packageName}: building its native code against ${nodedir}`);
// node-gyp lets npm_config_* variables (npm exports every .npmrc setting, e.g. `nodedir=/usr`)
// override its command line, so the settings that choose the headers are removed first.
const env = Object.fromEntries(
  Object.entries(process.env).filter(
    ([key]) => !/^npm_config_(nodedir|target|target_arch|arch|runtime|dist_?url|devdir|tarball)$/i.test(key) && !/^npm_package_config_node_gyp_/i.test(key),
  ),
);
// The launch chain's helpers link statically where the compiler can (static-pie.mjs says why);
// node-gyp passes an option it does not know to gyp as a variable (binding.gyp's strata_static_pie).
const staticPie = process.platform === 'linux' && staticPieLinks();
console.log(
  `${packageName}: its launch-chain helpers link ${staticPie ? 'statically (static-pie)' : 'dynamically (the compiler cannot link static-pie here)'}`,
);
// With --nodedir, node-gyp compiles against these headers and never downloads any.
const result = spawnSync(process.execPath, [nodeGyp, 'rebuild', `--nodedir=${nodedir}`, `--strata_static_pie=${staticPie ? 1 : 0}`], {
  cwd: packageRoot,
  env,
  stdio: 'inherit',
});
if (result.error) fail(result.error.message);
if (result.status !== 0) {
  fail(
    `node-gyp exited with ${result.status ?? result.signal}. It needs python3, make and a C compiler ` +
      '(Debian/Ubuntu: `apt-get install python3 make gcc`); the output above says which step failed.',
  );
}
