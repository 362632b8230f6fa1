// A worker on the parent's own Node loads the engine (isolated-vm's native addon) from the file
// the parent found for it, instead of resolving isolated-vm through node-gyp-build, which a
// --jitless worker compiles and runs interpreted (about 5 ms of every cold start). The file must be
// the one isolated-vm itself loads, loaded once; another Node (another ABI) gets no path and the
// worker resolves isolated-vm itself (node22-host.test.ts starts such a worker).
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ENGINE_ADDON_ARGUMENT } from '../src/engine.js';
import { IsolatedRuntime } from '../src/index.js';
import { engineAddonFor } from '../src/isolated/worker-node.js';
import { launchArguments, type LaunchPlan } from '../src/isolated/worker-process.js';
import { platformTest } from '../src/testing/platform.js';

const linux = platformTest(test, { feature: 'linux', available: process.platform === 'linux', reason: 'reads /proc of the worker (Linux)' });
const engineModule = new URL('../src/engine.js', import.meta.url).href;
const nativePaths = new URL('../src/native/native-paths.js', import.meta.url).href;
const PACKAGE_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The isolated-vm addon a process maps, from its /proc/<pid>/maps (each file once). */
function mappedEngines(maps: string): string[] {
  return [...new Set(maps.split('\n').flatMap((line) => /\s(\/\S*isolated[-_]vm\S*\.node)$/.exec(line)?.[1] ?? []))];
}

linux('the parent finds the file isolated-vm itself loads for this Node, and none for a Node of another version', (t) => {
  const found = engineAddonFor(process.execPath);
  t.truthy(found);
  // what a plain require of isolated-vm maps, in a process of its own
  const ran = spawnSync(process.execPath, ['-e', "require('isolated-vm'); process.stdout.write(require('fs').readFileSync('/proc/self/maps', 'utf8'))"], {
    cwd: PACKAGE_ROOT,
    encoding: 'utf8',
  });
  t.is(ran.status, 0, ran.stderr);
  t.deepEqual(mappedEngines(ran.stdout), [found]);
  const dir = mkdtempSync(join(tmpdir(), 'strata-engine-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const otherNode = join(dir, 'node');
  writeFileSync(otherNode, '#!/bin/sh\necho v99.0.0\n');
  chmodSync(otherNode, 0o755);
  t.is(engineAddonFor(otherNode), undefined, 'a Node of another version may have another ABI: its worker resolves isolated-vm itself');
});

test('the worker is told the addon after its entry, and nothing when the parent found none', (t) => {
  const plan: LaunchPlan = { workerNode: '/n/node', nodeArgs: ['--jitless'], cpuSeconds: undefined, entry: '/w/entry.cjs', launch: [] };
  t.deepEqual(launchArguments(plan).slice(-3), ['/n/node', '--jitless', '/w/entry.cjs']);
  t.false(launchArguments(plan).includes(ENGINE_ADDON_ARGUMENT));
  t.deepEqual(launchArguments({ ...plan, engineAddon: '/e/ivm.node' }).slice(-3), ['/w/entry.cjs', ENGINE_ADDON_ARGUMENT, '/e/ivm.node']);
});

linux('a sandboxed worker loads that file, and only that copy of the engine, and runs its guests', async (t) => {
  const rt = await IsolatedRuntime.start({ sandbox: 'require', prewarm: false });
  t.teardown(() => rt.close());
  const argv = readFileSync(`/proc/${rt.pid}/cmdline`, 'utf8').split('\0');
  const at = argv.indexOf(ENGINE_ADDON_ARGUMENT);
  t.true(at > 0, argv.join(' '));
  t.is(argv[at + 1], engineAddonFor(process.execPath));
  t.deepEqual(mappedEngines(readFileSync(`/proc/${rt.pid}/maps`, 'utf8')), [argv[at + 1]]);
  t.is(await rt.eval('[1, 2, 3].map((x) => x * 2).join()'), '2,4,6');
});

test("loadEngineFrom() takes only isolated-vm's addon, and only before the engine is loaded", (t) => {
  const ran = spawnSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `import { loadEngineFrom } from ${JSON.stringify(engineModule)};
       import { deadlineAddonPath } from ${JSON.stringify(nativePaths)};
       import { engineAddonFor } from ${JSON.stringify(new URL('../src/isolated/worker-node.js', import.meta.url).href)};
       const out = {};
       try { loadEngineFrom(deadlineAddonPath()); out.other = 'loaded'; } catch (e) { out.other = e.message; }
       const engine = loadEngineFrom(engineAddonFor(process.execPath));
       const isolate = new engine.Isolate({ memoryLimit: 16 });
       out.eval = isolate.createContextSync().evalSync('6 * 7');
       try { loadEngineFrom(engineAddonFor(process.execPath)); out.again = 'loaded'; } catch (e) { out.again = e.message; }
       console.log(JSON.stringify(out));`,
    ],
    { cwd: PACKAGE_ROOT, encoding: 'utf8' },
  );
  t.is(ran.status, 0, ran.stderr);
  const out = JSON.parse(ran.stdout) as Record<string, unknown>;
  t.regex(out['other'] as string, /strata_deadline\.node is not isolated-vm's addon/);
  t.is(out['eval'], 42);
  t.is(out['again'], 'the engine is loaded already');
});
