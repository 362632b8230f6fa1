// The strata-landlock helper as a program: its argument errors, --print-abi (ABI and errata),
// the environment passed on unchanged, and a Landlock domain in a child (never in ava's own process).
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HELPER_EXIT, LANDLOCK_HELPER, landlockAbi, parsePrintAbi } from '../src/helper.js';
import { ERRATA_FROM_OLD_HELPER, errataFromKernel, errnoName } from '../src/errata.js';
import { computeReadSet, helperArguments, PACKAGE_ROOT } from '../src/read-set.js';
import { platformTest } from '@strata/runtime/testing';

const linux = process.platform === 'linux';
const maybe = platformTest(test, { feature: 'linux', available: linux, reason: 'Linux only (x64 or arm64)' });

function run(args: string[]) {
  return spawnSync(LANDLOCK_HELPER, args, { encoding: 'utf8', env: {}, timeout: 30_000 });
}

maybe('--print-abi prints the kernel ABI and errata (this kernel: 7 7)', (t) => {
  const child = run(['--print-abi']);
  t.is(child.status, 0, child.stderr);
  const match = /^(\d+) (\d+|unknown:\d+)\n$/.exec(child.stdout);
  t.truthy(match, child.stdout);
  const abi = Number(match![1]);
  t.true(abi >= 1);
  const errata = match![2]!.startsWith('unknown:') ? errataFromKernel(-Number(match![2]!.slice(8))) : Number(match![2]);
  t.deepEqual(landlockAbi(), { abi, errata });
});

test('parsePrintAbi: ABI and errata, an unknown errata with the errno, and the older ABI-only output', (t) => {
  t.deepEqual(parsePrintAbi('7 7\n'), { abi: 7, errata: 7 });
  t.deepEqual(parsePrintAbi('6 0\n'), { abi: 6, errata: 0 });
  t.deepEqual(parsePrintAbi('6 unknown:22\n'), { abi: 6, errata: 'unknown (EINVAL: the kernel predates LANDLOCK_CREATE_RULESET_ERRATA, Linux 6.15)' });
  t.deepEqual(parsePrintAbi('6 unknown:1\n'), { abi: 6, errata: 'unknown (EPERM)' });
  // a helper built before errata were reported prints the ABI alone
  t.deepEqual(parsePrintAbi('5\n'), { abi: 5, errata: ERRATA_FROM_OLD_HELPER });
  t.regex(String(ERRATA_FROM_OLD_HELPER), /^unknown \(.*npm rebuild @strata\/layer-landlock/);
  for (const bad of ['', '0 1', 'seven', '7 x', '7 1 2', '7 unknown', '-1 0']) t.true('gap' in parsePrintAbi(bad), JSON.stringify(bad));
  t.is(errnoName(22), 'EINVAL');
  t.is(errnoName(99999), 'errno 99999');
  t.is(errataFromKernel(3), 3);
});

maybe('argument errors exit 120 with one usage line', (t) => {
  const cases: string[][] = [
    [],
    ['--'],
    ['--read'],
    ['--read', 'relative', '--', '/bin/true'],
    ['--bogus', '--', '/bin/true'],
    ['--', 'true'],
    ['--read', '/usr'],
    ['--print-abi', 'x'],
    ['--read-file'],
    ['--stack-after-load'],
    ['--stack-after-load', '--read'],
  ];
  for (const args of cases) {
    const child = run(args);
    t.is(child.status, HELPER_EXIT.usage, `${JSON.stringify(args)}: ${child.stderr}`);
    t.regex(child.stderr, /^strata-landlock: usage: .+\n$/, JSON.stringify(args));
  }
});

maybe('bad paths exit 123 naming the path; a failed exec exits 126', (t) => {
  let child = run(['--read', '/does/not/exist', '--', '/bin/true']);
  t.is(child.status, HELPER_EXIT.rule);
  t.regex(child.stderr, /^strata-landlock: open: '\/does\/not\/exist': No such file or directory\n$/);
  child = run(['--read', '/etc/hostname', '--', '/bin/true']);
  t.is(child.status, HELPER_EXIT.rule);
  t.regex(child.stderr, /not a directory/);
  child = run(['--read-file', '/etc', '--', '/bin/true']);
  t.is(child.status, HELPER_EXIT.rule);
  t.regex(child.stderr, /a directory/);
  // the program itself is outside the read set: execv is refused by the domain
  child = run(['--read', realpathSync(tmpdir()), '--', '/bin/true']);
  t.is(child.status, HELPER_EXIT.exec);
  t.regex(child.stderr, /^strata-landlock: execv: '\/bin\/true': Permission denied\n$/);
});

maybe('the helper passes the environment on unchanged and knows no --stack-after-load (the worker stacks in seal, told by its capability)', (t) => {
  const readSet = computeReadSet({ execPath: process.execPath, packageRoot: PACKAGE_ROOT, extra: [] });
  const script = 'console.log(JSON.stringify([process.env.STRATA_LANDLOCK_STACK ?? null, process.env.TZ ?? null]))';
  const child = spawnSync(LANDLOCK_HELPER, [...helperArguments(readSet), '--', process.execPath, '-e', script], {
    encoding: 'utf8',
    env: { STRATA_LANDLOCK_STACK: '1', TZ: 'UTC' },
    timeout: 30_000,
  });
  t.is(child.status, 0, child.stderr);
  t.is(child.stdout.trim(), '["1","UTC"]');
  const flag = spawnSync(LANDLOCK_HELPER, [...helperArguments(readSet), '--stack-after-load', '--', process.execPath, '-e', script], {
    encoding: 'utf8',
    env: {},
    timeout: 30_000,
  });
  t.is(flag.status, HELPER_EXIT.usage);
  t.regex(flag.stderr, /^strata-landlock: usage: unknown option '--stack-after-load' — usage: /);
});

maybe('a child under the domain: reads inside only, no writes, no TCP, no signals to its parent', (t) => {
  const inside = mkdtempSync(join(tmpdir(), 'strata-landlock-test-'));
  try {
    writeFileSync(join(inside, 'ok.txt'), 'inside');
    const readSet = computeReadSet({ execPath: process.execPath, packageRoot: PACKAGE_ROOT, extra: [inside] });
    const script = `
      const fs = require('node:fs'), net = require('node:net');
      const code = (f) => { try { f(); return 'ok'; } catch (e) { return e.code; } };
      const out = {
        readInside: code(() => fs.readFileSync(${JSON.stringify(join(inside, 'ok.txt'))}, 'utf8')),
        listInside: code(() => fs.readdirSync(${JSON.stringify(inside)})),
        readOutside: code(() => fs.readFileSync('/etc/passwd')),
        listRoot: code(() => fs.readdirSync('/')),
        writeInside: code(() => fs.writeFileSync(${JSON.stringify(join(inside, 'new.txt'))}, 'x')),
        appendInside: code(() => fs.appendFileSync(${JSON.stringify(join(inside, 'ok.txt'))}, 'x')),
        removeInside: code(() => fs.unlinkSync(${JSON.stringify(join(inside, 'ok.txt'))})),
        mkdirTmp: code(() => fs.mkdirSync('/tmp/strata-landlock-mkdir-' + process.pid)),
        signalParent: code(() => process.kill(process.ppid, 0)),
        signalSelf: code(() => process.kill(process.pid, 0)),
      };
      const s = net.connect({ host: '127.0.0.1', port: 9 });
      s.on('error', (e) => { out.tcpConnect = e.code; console.log(JSON.stringify(out)); });
      s.on('connect', () => { out.tcpConnect = 'ok'; console.log(JSON.stringify(out)); s.destroy(); });
    `;
    const child = spawnSync(LANDLOCK_HELPER, [...helperArguments(readSet), '--', process.execPath, '-e', script], {
      encoding: 'utf8',
      env: {},
      timeout: 30_000,
    });
    t.is(child.status, 0, child.stderr);
    const out = JSON.parse(child.stdout) as Record<string, string>;
    t.deepEqual(out, {
      readInside: 'ok',
      listInside: 'ok',
      readOutside: 'EACCES',
      listRoot: 'EACCES',
      writeInside: 'EACCES',
      appendInside: 'EACCES',
      removeInside: 'EACCES',
      mkdirTmp: 'EACCES',
      signalParent: 'EPERM',
      signalSelf: 'ok',
      tcpConnect: 'EACCES',
    });
  } finally {
    rmSync(inside, { recursive: true, force: true });
  }
});
