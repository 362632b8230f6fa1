// docs/design.md §8 under the whole Linux sandbox: the compromised-worker system-call suite of
// @strata/layer-seccomp, run in a child launched through the real chain — strata-exec (base
// hardening, uid 65534 when root) → strata-emptyroot → strata-landlock → strata-no-io-uring → Node,
// which then applies the seccomp filter itself — and every call checked for its errno.
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { computeReadSet, helperArguments as landlockArguments, LANDLOCK_HELPER } from '@strata/layer-landlock';
import { NO_IO_URING_HELPER } from '@strata/layer-seccomp';
import { EMPTYROOT_HELPER, helperArguments, rootPlanFor } from '../src/index.js';

const linux = process.platform === 'linux' && (process.arch === 'x64' || process.arch === 'arm64');
const maybe = linux ? test : test.skip;
const packageDir = (name: string) => dirname(fileURLToPath(import.meta.resolve(`${name}/package.json`)));
const STRATA_EXEC = join(packageDir('@strata/runtime'), 'build', 'Release', 'strata-exec');
const SUITE = join(packageDir('@strata/layer-seccomp'), 'dist', 'test', 'fixtures', 'compromised-worker.js');

interface Output {
  selfTest: string;
  mode: number;
  noNewPrivs: number;
  threads: { tid: number; mode: number; filters: number; noNewPrivs: number }[];
  results: { what: string; result: number; expect: number | string; ok: boolean }[];
  abstractConnect: string;
}

let output: Output | undefined;
function run(): Output {
  if (output) return output;
  const chain = [
    '--drop-privileges', '--',
    EMPTYROOT_HELPER, ...helperArguments(rootPlanFor({})), '--',
    LANDLOCK_HELPER, ...landlockArguments(computeReadSet({ execPath: process.execPath, packageRoot: packageDir('@strata/layer-landlock'), extra: [] })), '--',
    NO_IO_URING_HELPER, '--',
    process.execPath, SUITE,
  ];
  const child = spawnSync(STRATA_EXEC, chain, { encoding: 'utf8', timeout: 60_000, env: {}, cwd: '/' });
  if (child.status !== 0) throw new Error(`the suite's child failed (${child.status ?? child.signal}): ${child.stderr}`);
  output = JSON.parse(child.stdout.trim().split('\n').pop()!) as Output;
  return output;
}

maybe('under the full chain, the seccomp layer applies and self-tests, and every thread has the filter', (t) => {
  const o = run();
  t.is(o.selfTest, 'passed');
  t.is(o.mode, 2);
  t.is(o.noNewPrivs, 1);
  for (const thread of o.threads) t.deepEqual([thread.mode, thread.noNewPrivs], [2, 1], `thread ${thread.tid}`);
});

maybe('under the full chain, the compromised-worker system-call suite gets every expected errno', (t) => {
  const o = run();
  t.true(o.results.length > 60, `${o.results.length} calls`);
  for (const r of o.results) t.true(r.ok, `${r.what}: got ${r.result}, expected ${r.expect}`);
  t.not(o.abstractConnect, 'connected');
});
