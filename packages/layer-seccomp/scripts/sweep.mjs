// A sweep of every system call number 0 .. highest reviewed + 10, in a child process with the
// seccomp filter on, each called with all-zero arguments. Prints which numbers are reachable
// (answered something other than EPERM/ENOSYS) and whether that matches the policy. A script,
// not a test: run it after `npm run build` (and the install build of the addon).
//
//   node scripts/sweep.mjs                 plain Node (libuv has its io_uring rings)
//   node scripts/sweep.mjs --no-io-uring   under strata-no-io-uring (no rings: io_uring fully denied)
//   node scripts/sweep.mjs --json          the full per-number table as JSON
//
// Skipped, because with zero arguments they would end, block, or derail the sweeper itself:
export const SKIPPED = {
  exit: 'ends the calling thread',
  exit_group: 'ends the process',
  pause: 'blocks until a signal',
  rt_sigreturn: 'restores a signal frame that is not there (the process dies)',
  vfork: 'would suspend the sweeper until a child exits (denied by the policy anyway)',
  seccomp: 'seccomp(0, 0, NULL) is SECCOMP_SET_MODE_STRICT: the next call would kill the sweeper',
  select: 'blocks forever with a NULL timeout',
  pselect6: 'blocks forever with a NULL timeout',
  ppoll: 'blocks forever with a NULL timeout',
  uretprobe: 'the kernel answers a call from outside a uretprobe trampoline with SIGILL',
};
import { nativeArtifactPath } from '@strata/runtime/native';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const dist = new URL('../dist/src/', import.meta.url);

async function child() {
  const { loadAddon } = await import(new URL('addon.js', dist).href);
  const { archOf, compileFilter, serializeFilter } = await import(new URL('compile-filter.js', dist).href);
  const { ioUringMayBeInUse } = await import(new URL('io-uring.js', dist).href);
  const { SYSCALLS, HIGHEST_REVIEWED } = await import(new URL('syscall-table.js', dist).href);
  const { DENY_GROUPS, ENOSYS_CALLS, IO_URING_RING_CALLS, ARG_RULES } = await import(new URL('policy.js', dist).href);
  const addon = loadAddon();
  const arch = archOf(process.arch);
  const allowIoUringEnter = ioUringMayBeInUse(addon, arch);
  addon.install(serializeFilter(compileFilter(arch, process.pid, { allowIoUringEnter }).instructions));
  const names = new Map(
    Object.entries(SYSCALLS)
      .filter(([, n]) => n[arch] !== null)
      .map(([name, n]) => [n[arch], name]),
  );
  const denied = new Set([...DENY_GROUPS.flatMap((g) => g.calls), ...(allowIoUringEnter ? [] : IO_URING_RING_CALLS)].map((c) => c.name));
  const enosys = new Set(ENOSYS_CALLS.map((c) => c.name));
  const ruled = new Set(ARG_RULES.map((r) => r.name));
  const exitGroup = SYSCALLS.exit_group[arch];
  const rows = [];
  for (let nr = 0; nr <= HIGHEST_REVIEWED[arch] + 10; nr++) {
    const name = names.get(nr) ?? null;
    if (name && SKIPPED[name]) {
      rows.push({ nr, name, skipped: SKIPPED[name] });
      continue;
    }
    const result = addon.rawSyscall(nr, 0, 0, 0, 0, 0, 0);
    if (result === 0 && (name === 'fork' || name === 'clone')) addon.rawSyscall(exitGroup, 99); // a child that got through
    const policy =
      name === null
        ? nr > HIGHEST_REVIEWED[arch]
          ? 'ENOSYS (above the highest reviewed)'
          : 'no such call'
        : denied.has(name)
          ? 'EPERM'
          : enosys.has(name)
            ? 'ENOSYS'
            : ruled.has(name)
              ? 'argument rule'
              : 'allowed';
    rows.push({ nr, name, result, reachable: result !== -1 && result !== -38, policy });
  }
  process.stdout.write(JSON.stringify({ arch, ioUringEnterAllowed: allowIoUringEnter, rows }));
}

function parent() {
  const helper = nativeArtifactPath(fileURLToPath(new URL('..', import.meta.url)), 'strata-no-io-uring');
  const self = fileURLToPath(import.meta.url);
  const noIoUring = process.argv.includes('--no-io-uring');
  const [command, args] = noIoUring ? [helper, ['--', process.execPath, self, '--child']] : [process.execPath, [self, '--child']];
  const run = spawnSync(command, args, { encoding: 'utf8', timeout: 120_000, env: {}, stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 26 });
  if (run.status !== 0) {
    console.error(`the sweeper died (${run.status ?? run.signal}): ${run.stderr}`);
    process.exit(1);
  }
  const { arch, ioUringEnterAllowed, rows } = JSON.parse(run.stdout);
  if (process.argv.includes('--json')) {
    console.log(JSON.stringify(rows, null, 1));
    return;
  }
  const called = rows.filter((r) => !r.skipped);
  const reachable = called.filter((r) => r.reachable);
  const blocked = called.filter((r) => !r.reachable);
  const leaks = reachable.filter((r) => r.policy === 'EPERM' || r.policy === 'ENOSYS' || r.policy.startsWith('ENOSYS'));
  const kernelRefused = blocked.filter((r) => r.policy === 'allowed');
  console.log(
    `seccomp sweep on ${arch}, numbers 0..${rows.at(-1).nr}${noIoUring ? ' under strata-no-io-uring' : ''} (io_uring_enter ${ioUringEnterAllowed ? 'allowed for libuv rings' : 'denied'})`,
  );
  console.log(
    `  called ${called.length}, skipped ${rows.length - called.length}: ${rows
      .filter((r) => r.skipped)
      .map((r) => r.name)
      .join(', ')}`,
  );
  console.log(`  reachable (answered neither EPERM nor ENOSYS): ${reachable.length}`);
  console.log(`  answered EPERM/ENOSYS: ${blocked.length}`);
  console.log(`    of them denied by the policy: ${blocked.filter((r) => r.policy !== 'allowed' && r.policy !== 'argument rule').length}`);
  console.log(
    `    argument rules refusing zero arguments: ${
      blocked
        .filter((r) => r.policy === 'argument rule')
        .map((r) => r.name)
        .join(', ') || 'none'
    }`,
  );
  console.log(
    `    allowed by the policy but refused by the kernel itself (EPERM/ENOSYS with zero arguments): ${kernelRefused.map((r) => `${r.name}=${r.result}`).join(', ') || 'none'}`,
  );
  console.log(`  denied by the policy yet reachable (must be none): ${leaks.map((r) => `${r.nr} ${r.name}=${r.result}`).join(', ') || 'none'}`);
  console.log(`  reachable: ${reachable.map((r) => r.name ?? r.nr).join(' ')}`);
  if (leaks.length > 0) process.exit(1);
}

if (process.argv.includes('--child')) await child();
else parent();
