import test from 'ava';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DENY_GROUPS, ENOSYS_CALLS, IO_URING_RING_CALLS, ARG_RULES, policyNames } from '../src/policy.js';
import { HIGHEST_REVIEWED, SYSCALLS, type Arch } from '../src/syscall-table.js';

// dist/test/ → the package root
const root = new URL('../../', import.meta.url);
const tsv = readFileSync(new URL('data/linux-syscalls.tsv', root), 'utf8');
const generator = (await import(new URL('scripts/generate-syscall-table.mjs', root).href)) as { parse(text: string): unknown; render(table: unknown): string };

test('the checked-in src/syscall-table.ts equals a fresh generation from data/linux-syscalls.tsv', (t) => {
  t.is(readFileSync(fileURLToPath(new URL('src/syscall-table.ts', root)), 'utf8'), generator.render(generator.parse(tsv)));
});

test('the TSV copy keeps its header comment (the source of the numbers)', (t) => {
  const lines = tsv.split('\n');
  t.regex(lines[0]!, /^# Linux system call numbers for x86_64, x32 and aarch64, as published in the kernel's own tables/);
  t.is(lines[2], 'name\tx86_64\tx32\taarch64');
});

test('the table matches an independent parse of the TSV, row by row', (t) => {
  const rows = tsv.split('\n').filter((l) => l && !l.startsWith('#') && !l.startsWith('name\t'));
  t.is(Object.keys(SYSCALLS).length, rows.length);
  for (const row of rows) {
    const [name, x86, , arm] = row.split('\t') as [string, string, string, string];
    const cell = (s: string) => (s === '-' ? null : Number(s));
    t.deepEqual(SYSCALLS[name], { x86_64: cell(x86), aarch64: cell(arm) }, name);
  }
});

test('well-known numbers (sanity against the kernel headers)', (t) => {
  const known: [string, number | null, number | null][] = [
    ['read', 0, 63],
    ['write', 1, 64],
    ['clone', 56, 220],
    ['fork', 57, null],
    ['execve', 59, 221],
    ['kill', 62, 129],
    ['ptrace', 101, 117],
    ['socket', 41, 198],
    ['ioctl', 16, 29],
    ['clone3', 435, 435],
    ['io_uring_setup', 425, 425],
    ['bpf', 321, 280],
    ['tgkill', 234, 131],
    ['getpid', 39, 172],
    ['seccomp', 317, 277],
    ['open', 2, null],
    ['openat', 257, 56],
    ['openat2', 437, 437],
    ['creat', 85, null],
    ['truncate', 76, 45],
    ['ftruncate', 77, 46],
  ];
  for (const [name, x86, arm] of known) t.deepEqual(SYSCALLS[name], { x86_64: x86, aarch64: arm }, name);
});

test('the highest reviewed number per architecture is the highest in the tables', (t) => {
  t.deepEqual(HIGHEST_REVIEWED, { x86_64: 471, aarch64: 471 });
  for (const arch of ['x86_64', 'aarch64'] as Arch[]) {
    t.is(Math.max(...Object.values(SYSCALLS).map((n) => n[arch] ?? -1)), HIGHEST_REVIEWED[arch]);
  }
});

test('every name in the policy exists for x86_64 and aarch64, or is marked absent where it does not', (t) => {
  const all = [...DENY_GROUPS.flatMap((g) => g.calls), ...ENOSYS_CALLS, ...IO_URING_RING_CALLS];
  for (const call of all) {
    const numbers = SYSCALLS[call.name];
    t.truthy(numbers, `${call.name} is not in the kernel's tables`);
    for (const arch of ['x86_64', 'aarch64'] as Arch[]) {
      const absent = call.absentOn?.includes(arch) ?? false;
      t.is(numbers![arch] === null, absent, `${call.name} on ${arch}: number ${numbers![arch]}, marked absent: ${absent}`);
    }
  }
  for (const rule of ARG_RULES) {
    t.truthy(SYSCALLS[rule.name], `${rule.name} is not in the kernel's tables`);
    for (const arch of ['x86_64', 'aarch64'] as Arch[]) {
      const absent = rule.absentOn?.includes(arch) ?? false;
      t.is(SYSCALLS[rule.name]![arch] === null, absent, `${rule.name} (argument rule) on ${arch}: marked absent: ${absent}`);
    }
  }
});

test('no name appears twice in the policy, and every denied call has a one-line reason', (t) => {
  const names = policyNames();
  t.is(new Set(names).size, names.length, `duplicates: ${names.filter((n, i) => names.indexOf(n) !== i).join(', ')}`);
  for (const call of [...DENY_GROUPS.flatMap((g) => g.calls), ...ENOSYS_CALLS, ...IO_URING_RING_CALLS]) {
    t.true(call.reason.length > 5 && !call.reason.includes('\n'), call.name);
  }
});

test('the DESIGN §3 additions are all in the deny list', (t) => {
  const denied = new Set(DENY_GROUPS.flatMap((g) => g.calls.map((c) => c.name)));
  for (const name of [
    'fchmodat2',
    'setxattrat',
    'getxattrat',
    'listxattrat',
    'removexattrat',
    'open_tree',
    'move_mount',
    'fsopen',
    'fsconfig',
    'fsmount',
    'fspick',
    'mount_setattr',
    'pidfd_getfd',
    'process_madvise',
  ]) {
    t.true(denied.has(name), name);
  }
});
