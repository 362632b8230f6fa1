// docs/design.md §8 under the whole Linux sandbox: the compromised-worker system-call suite of
// @strata/layer-seccomp, run in a child launched through the real chain — strata-exec (base
// hardening, uid 65534 when root) → strata-emptyroot → strata-landlock → strata-no-io-uring → Node,
// which then applies the seccomp filter itself — and every call checked for its errno.
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { EMPTYROOT_HELPER } from '../src/helper.js';
import { rootPlanFor } from '../src/layer.js';
import { helperArguments } from '../src/root-plan.js';
import { platformTest } from '@strata/runtime/testing';

const linux = process.platform === 'linux' && (process.arch === 'x64' || process.arch === 'arm64');
const maybe = platformTest(test, { feature: 'linux', available: linux, reason: 'Linux only (x64 or arm64)' });
const packageDir = (name: string) => dirname(fileURLToPath(import.meta.resolve(`${name}/package.json`)));
/** A compiled module of another layer package, by file: its internals are not in its main entry. */
const internalModule = async <T>(name: string, module: string): Promise<T> =>
  (await import(pathToFileURL(join(packageDir(name), 'dist', 'src', module)).href)) as T;
const { computeReadSet, helperArguments: landlockArguments } = await internalModule<typeof import('../../layer-landlock/src/read-set.js')>(
  '@strata/layer-landlock',
  'read-set.js',
);
const { LANDLOCK_HELPER } = await internalModule<typeof import('../../layer-landlock/src/helper.js')>('@strata/layer-landlock', 'helper.js');
const { NO_IO_URING_HELPER } = await internalModule<typeof import('../../layer-seccomp/src/addon.js')>('@strata/layer-seccomp', 'addon.js');
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
    '--drop-privileges',
    '--',
    EMPTYROOT_HELPER,
    ...helperArguments(rootPlanFor({})),
    '--',
    LANDLOCK_HELPER,
    ...landlockArguments(computeReadSet({ execPath: process.execPath, packageRoot: packageDir('@strata/layer-landlock'), extra: [] })),
    '--',
    NO_IO_URING_HELPER,
    '--',
    process.execPath,
    SUITE,
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
