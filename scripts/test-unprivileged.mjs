// The second pass of `npm test`: most Strata users are not root, and a worker started by an
// ordinary user keeps that user's identity instead of dropping to nobody. When the first pass ran
// as root (as CI does), the packages that start workers are tested again as uid/gid 65534.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const PACKAGES = [
  'packages/runtime',
  'packages/layer-clock',
  'packages/layer-seccomp',
  'packages/layer-landlock',
  'packages/layer-emptyroot',
  'packages/layer-seatbelt',
  'packages/agent',
  // Its tests' PostgreSQL server then runs as this user (the root pass ran it as uid 65534).
  'packages/store-postgres',
];
const root = fileURLToPath(new URL('..', import.meta.url));

if (process.getuid?.() !== 0) {
  console.log('unprivileged pass: skipped, the main pass already ran as an ordinary user (uid ' + process.getuid?.() + ')');
  process.exit(0);
}
const setpriv = spawnSync('setpriv', ['--version'], { stdio: 'ignore' });
if (setpriv.error) {
  console.error('unprivileged pass: setpriv (util-linux) is missing; install util-linux to run the tests as an ordinary user too');
  process.exit(1);
}
for (const dir of PACKAGES) {
  console.log(`\nunprivileged pass: ${dir} as uid/gid 65534`);
  const run = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', '--', process.execPath, `${root}node_modules/ava/entrypoints/cli.js`], {
    cwd: `${root}${dir}`,
    stdio: 'inherit',
    env: { PATH: process.env.PATH, HOME: '/tmp', CI: process.env.CI ?? '' },
  });
  if (run.status !== 0) process.exit(run.status ?? 1);
}
