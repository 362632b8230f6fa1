// Run inside each matrix VM (initramfs.mjs puts it at /matrix/full-chain.mjs): the seccomp layer's
// compromised-worker suite under the whole Linux sandbox, launched through the real chain as
// packages/layer-emptyroot/test/full-sandbox.test.ts does — strata-exec (base hardening, uid
// 65534 when root) → strata-emptyroot → strata-landlock → strata-no-io-uring → Node, which then
// applies the seccomp filter itself and fires every dangerous call. Prints the suite's JSON line,
// or { error } when the chain could not run.
//
//   node full-chain.mjs APP     (APP: where the repository's packages are in the VM)
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const app = process.argv[2];
const load = (pkg, module) => import(pathToFileURL(join(app, 'packages', pkg, 'dist', 'src', module)).href);
try {
  const [
    { EMPTYROOT_HELPER },
    { rootPlanFor },
    { helperArguments },
    { computeReadSet, helperArguments: landlockArguments },
    { LANDLOCK_HELPER },
    { NO_IO_URING_HELPER },
    { nativeArtifactPath },
  ] = await Promise.all([
    load('layer-emptyroot', 'helper.js'),
    load('layer-emptyroot', 'layer.js'),
    load('layer-emptyroot', 'root-plan.js'),
    load('layer-landlock', 'read-set.js'),
    load('layer-landlock', 'helper.js'),
    load('layer-seccomp', 'addon.js'),
    load('runtime', 'native/native-artifact.js'),
  ]);
  const chain = [
    '--drop-privileges',
    '--',
    EMPTYROOT_HELPER,
    ...helperArguments(rootPlanFor({})),
    '--',
    LANDLOCK_HELPER,
    ...landlockArguments(computeReadSet({ execPath: process.execPath, packageRoot: join(app, 'packages', 'layer-landlock'), extra: [] })),
    '--',
    NO_IO_URING_HELPER,
    '--',
    process.execPath,
    join(app, 'packages', 'layer-seccomp', 'dist', 'test', 'fixtures', 'compromised-worker.js'),
  ];
  const child = spawnSync(nativeArtifactPath(join(app, 'packages', 'runtime'), 'strata-exec'), chain, { encoding: 'utf8', timeout: 80_000, env: {}, cwd: '/' });
  if (child.status !== 0) console.log(JSON.stringify({ error: `the chain exited ${child.status ?? child.signal}: ${child.stderr.slice(-2000)}` }));
  else console.log(child.stdout.trim().split('\n').pop());
} catch (error) {
  console.log(JSON.stringify({ error: `the chain could not be set up: ${error.message}` }));
}
