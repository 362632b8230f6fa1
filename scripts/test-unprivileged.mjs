// The second pass of `npm test`: most Strata users are not root, and a worker started by an
// ordinary user keeps that user's identity instead of dropping to nobody. When the first pass ran
// as root (as CI does), what depends on the identity is tested again as uid/gid 65534: every test
// of the layers and of the PostgreSQL store (whose server then runs as this user), and elsewhere
// each test file that starts a worker or another process, or keeps a store's files. Those are
// found by what their source names, so a new test of that kind is picked up without a list to
// keep; a file that only runs code in this process (the in-process Runtime, values, options,
// journals in memory), or that starts workers only to test what the guest sees (GUEST_SEMANTICS
// below), behaves the same for every user and runs once.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** A worker (through any of the runtime's entry points) or a child process. */
const STARTS_A_PROCESS = /\b(IsolatedRuntime|SandboxPool|SandboxHost|AgentSandbox\.start|execHelperPath|spawn|spawnSync|execFile|fork)\b/;
// Files that start workers to test what the guest sees (its values, regexps, timers, fetch, the
// V8 flag policy, TypeScript, libraries): the same for every user, so run once. Whatever else
// starts a worker (its launch, layers, supervision, signals, files) runs again.
const GUEST_SEMANTICS = new Set([
  'entropy',
  'fetch-transport',
  'guest-fetch',
  'guest-patches',
  'host-answers',
  'libraries',
  'native-wire-codec',
  'regexp',
  'shared-memory-routes',
  'strict-eval-bootstrap',
  'timer-storm',
  'typescript',
  'v8-flags',
  'value-dag',
]);
const PACKAGES = [
  { dir: 'packages/runtime', select: STARTS_A_PROCESS, skip: GUEST_SEMANTICS },
  { dir: 'packages/layer-clock' },
  { dir: 'packages/layer-seccomp' },
  { dir: 'packages/layer-landlock' },
  { dir: 'packages/layer-emptyroot' },
  { dir: 'packages/layer-seatbelt' },
  // A session's worker is the runtime's (its launch and supervision are tested above); what is
  // the agent's own is the files its stores keep and the processes its tests start (strata mcp, a
  // second holder of a lease).
  { dir: 'packages/agent', select: /\b(SqliteJournalStore|spawn|spawnSync|fork|StdioClientTransport)\b/ },
  { dir: 'packages/store-postgres' },
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
for (const { dir, select, skip } of PACKAGES) {
  const tests = `${root}${dir}/test`;
  const files =
    select === undefined
      ? []
      : readdirSync(tests)
          .filter((name) => name.endsWith('.test.ts') && !skip?.has(name.slice(0, -'.test.ts'.length)))
          .filter((name) => select.test(readFileSync(`${tests}/${name}`, 'utf8')))
          .map((name) => `test/${name}`);
  if (select !== undefined && files.length === 0) continue;
  console.log(`\nunprivileged pass: ${dir} as uid/gid 65534${select === undefined ? '' : `: ${files.length} test files that start a process or keep files`}`);
  const run = spawnSync(
    'setpriv',
    ['--reuid=65534', '--regid=65534', '--clear-groups', '--', process.execPath, `${root}node_modules/ava/entrypoints/cli.js`, ...files],
    {
      cwd: `${root}${dir}`,
      stdio: 'inherit',
      env: { PATH: process.env.PATH, HOME: '/tmp', CI: process.env.CI ?? '' },
    },
  );
  if (run.status !== 0) process.exit(run.status ?? 1);
}
