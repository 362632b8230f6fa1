// The addon and the ABI ≥ 8 stacking: the decisions (pure, as tables), the addon loaded, and
// stackDenyAll fired in children only (never in ava's own process: it cannot be undone).
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { planLayers } from '@strata/runtime';
import { ADDON_PATH, addonUnavailableReason, loadAddon } from '../src/addon.js';
import { errataFromKernel } from '../src/errata.js';
import { LANDLOCK_HELPER, landlockAbi } from '../src/helper.js';
import { PACKAGE_ROOT, computeReadSet, helperArguments } from '../src/read-set.js';
import landlockLayer, { capabilityFor } from '../src/layer.js';
import { STACKED, STACK_MIN_ABI, checkStackAfterLoad, planStack, runStackTestFire, workerStackDecision } from '../src/stack.js';

const linux = process.platform === 'linux';
const kernel = linux ? landlockAbi() : undefined;
const abi = kernel && 'abi' in kernel ? kernel.abi : 0;
const maybe = linux ? test : test.skip;
const belowTsync = linux && abi >= 1 && abi < STACK_MIN_ABI;
const withTsync = linux && abi >= STACK_MIN_ABI;
const onAbi8 = withTsync ? test : test.skip;
const skipReason = withTsync ? '' : ` (skipped: this kernel has Landlock ABI ${abi}, needs ${STACK_MIN_ABI})`;

/** Runs `source` (CommonJS) in a throwaway Node child with the addon's path as ADDON; its stdout as JSON. */
function inChild(source: string): { status: number | null; out: Record<string, unknown>; stderr: string } {
  const child = spawnSync(process.execPath, ['-e', `const ADDON = ${JSON.stringify(ADDON_PATH)};\n${source}`], { encoding: 'utf8', env: {}, timeout: 30_000 });
  let out: Record<string, unknown> = {};
  try {
    out = JSON.parse(child.stdout) as Record<string, unknown>;
  } catch {
    // left empty: the assertions name stderr
  }
  return { status: child.status, out, stderr: child.stderr };
}

test('stackAfterLoad: a boolean, true when not given', (t) => {
  t.true(checkStackAfterLoad(undefined));
  t.true(checkStackAfterLoad(true));
  t.false(checkStackAfterLoad(false));
  for (const bad of ['yes', 1, null, {}]) t.throws(() => checkStackAfterLoad(bad), { instanceOf: TypeError, message: /"stackAfterLoad" must be true or false/ });
  t.throws(() => landlockLayer({ stackAfterLoad: 'no' }), { instanceOf: TypeError });
  t.notThrows(() => landlockLayer({ stackAfterLoad: false }));
});

test('planStack (parent): off, below ABI 8, test-fire failed, test-fired', (t) => {
  let fired = 0;
  const ok = () => {
    fired++;
    return undefined;
  };
  const fails = () => 'strata-landlock: landlock_restrict_self(LANDLOCK_RESTRICT_SELF_TSYNC): Operation not permitted (errno 1); nothing was stacked';
  t.deepEqual(planStack(8, false, ok), { stack: false, detail: 'off (stackAfterLoad: false)' });
  t.deepEqual(planStack(7, true, ok), { stack: false, detail: 'not available on ABI 7 (needs 8)' });
  t.deepEqual(planStack(1, true, ok), { stack: false, detail: 'not available on ABI 1 (needs 8)' });
  t.is(fired, 0, 'the test-fire runs only when it could matter');
  t.deepEqual(planStack(8, true, ok), { stack: true, detail: 'deny-all-fs (TSYNC), test-fired', provides: 'tsync-stack' });
  t.deepEqual(planStack(9, true, fails), { stack: false, detail: `the test-fire failed: ${fails()}`, missing: 'tsync-stack' });
  t.is(fired, 1);
});

test('workerStackDecision (worker): stacks only when the launch chain asked', (t) => {
  t.deepEqual(workerStackDecision(8, true, true), { stack: true });
  t.deepEqual(workerStackDecision(8, false, false), { stack: false, stacked: 'off (stackAfterLoad: false)' });
  t.deepEqual(workerStackDecision(7, true, false), { stack: false, stacked: 'not available on ABI 7 (needs 8)' });
  t.regex((workerStackDecision(8, true, false) as { stacked: string }).stacked, /^not stacked: the probe's test-fire failed \(tsync-stack is missing/);
  t.regex((workerStackDecision('unknown here (x)', true, false) as { stacked: string }).stacked, /^not stacked: the ABI is unknown here/);
  t.is(STACKED, 'deny-all-fs (TSYNC)');
});

test("a failed test-fire: tsync-stack is missing, so 'auto' degrades with a warning and 'require' refuses", (t) => {
  const failed = capabilityFor(8, 7, planStack(8, true, () => 'the child died of SIGSYS'));
  t.true(failed.missing.includes('tsync-stack'));
  t.regex(String(failed.detail!.stackAfterLoad), /SIGSYS/);
  const auto = planLayers([{ name: 'landlock', requirement: 'auto', capability: failed }]);
  t.is(auto.decision, 'proceed');
  if (auto.decision === 'proceed') {
    t.is(auto.layers[0]!.enforcement, 'partial');
    t.deepEqual(auto.warnings, ['landlock is only partly in force: tsync-stack']);
  }
  const require = planLayers([{ name: 'landlock', requirement: 'require', capability: failed }]);
  t.deepEqual(require, { decision: 'refuse', gaps: ['landlock: tsync-stack'] });
  // test-fired, or not applicable: nothing missing
  const fired = capabilityFor(8, 7, planStack(8, true, () => undefined));
  t.deepEqual([fired.provides.includes('tsync-stack'), fired.missing], [true, []]);
  t.deepEqual(capabilityFor(7, 7, planStack(7, true, () => 'unused')).missing, []);
  t.deepEqual(capabilityFor(8, 'unknown (EINVAL)', planStack(8, false, () => 'unused')).detail, { abi: 8, errata: 'unknown (EINVAL)', stackAfterLoad: 'off (stackAfterLoad: false)' });
});

maybe('the addon builds and loads on Linux: abi() and errata() agree with the helper', (t) => {
  t.is(addonUnavailableReason(), undefined);
  const addon = loadAddon();
  t.deepEqual(Object.keys(addon).sort(), ['abi', 'errata', 'stackDenyAll']);
  // abi() and errata() only ask the kernel: harmless in ava's process
  t.deepEqual({ abi: addon.abi(), errata: errataFromKernel(addon.errata()) }, kernel);
});

(belowTsync ? test : test.skip)(`stackDenyAll refuses below ABI 8, naming ABI 8 and the errno, and stacks nothing (this kernel: ABI ${abi})`, (t) => {
  const { status, out, stderr } = inChild(`
    const fs = require('node:fs');
    const addon = require(ADDON);
    let error;
    try { addon.stackDenyAll(); } catch (e) { error = e; }
    const after = (() => { try { fs.readFileSync('/etc/hostname'); return 'read'; } catch (e) { return e.code; } })();
    console.log(JSON.stringify({ isError: error instanceof Error, code: error && error.code, message: error && error.message, after }));
  `);
  t.is(status, 0, stderr);
  t.true(out.isError);
  t.is(out.code, 'ERR_STRATA_LANDLOCK');
  t.is(out.message, `strata-landlock: landlock_restrict_self(LANDLOCK_RESTRICT_SELF_TSYNC): Invalid argument (errno 22): thread sync needs Landlock ABI 8 (Linux 7.0), this kernel has ABI ${abi}; nothing was stacked`);
  t.is(out.after, 'read', 'nothing was stacked: the child still reads files');
});

(belowTsync ? test : test.skip)(`the probe's test-fire fails below ABI 8 with the addon's reason (this kernel: ABI ${abi})`, (t) => {
  const gap = runStackTestFire();
  t.regex(gap ?? '', /^strata-landlock: landlock_restrict_self\(LANDLOCK_RESTRICT_SELF_TSYNC\): Invalid argument \(errno 22\): thread sync needs Landlock ABI 8/);
});

/** The layer's apply, in a child under the real helper (with or without --stack-after-load); what it reported or threw. */
function applyUnderHelper(stackAfterLoad: boolean): { status: number | null; out: Record<string, unknown>; stderr: string } {
  const readSet = computeReadSet({ execPath: process.execPath, packageRoot: PACKAGE_ROOT, extra: [] });
  const layerUrl = new URL('../src/layer.js', import.meta.url).href;
  const script = `
    const { default: landlockLayer } = await import(${JSON.stringify(layerUrl)});
    const detail = {};
    const context = { platform: 'linux', options: {}, addContextBootstrap() {}, report: (d) => Object.assign(detail, d) };
    let error;
    try { await landlockLayer({}).apply(context); } catch (e) { error = e.message; }
    console.log(JSON.stringify({ error, detail, env: process.env.STRATA_LANDLOCK_STACK ?? null }));`;
  const args = [...helperArguments(readSet), ...(stackAfterLoad ? ['--stack-after-load'] : []), '--', process.execPath, '--input-type=module', '-e', script];
  const child = spawnSync(LANDLOCK_HELPER, args, { encoding: 'utf8', env: {}, timeout: 30_000 });
  let out: Record<string, unknown> = {};
  try {
    out = JSON.parse(child.stdout) as Record<string, unknown>;
  } catch {
    // left empty: the assertions name stderr
  }
  return { status: child.status, out, stderr: child.stderr };
}

maybe('apply under the helper: ABI, errata, threads covered, and no stack unless the launch chain asks', (t) => {
  const { status, out, stderr } = applyUnderHelper(false);
  t.is(status, 0, stderr);
  t.is(out.error, undefined);
  const detail = out.detail as Record<string, unknown>;
  t.deepEqual({ abi: detail.abi, errata: detail.errata }, kernel);
  t.is(detail.stacked, withTsync ? "not stacked: the probe's test-fire failed (tsync-stack is missing; see capability.detail.stackAfterLoad)" : `not available on ABI ${abi} (needs 8)`);
  const covered = detail.threadsCovered as Record<string, unknown>;
  t.true(typeof covered.threads === 'number' && covered.threads >= 1, JSON.stringify(covered));
  t.is(covered.how, 'inherited: the domain was made before Node started (pre-exec)');
  t.is(out.env, null);
});

maybe(`apply under the helper with --stack-after-load: ${withTsync ? 'stacks the deny-all domain and checks it' : `below ABI 8 the request is fatal, naming ABI 8 (this kernel: ABI ${abi})`}`, (t) => {
  const { status, out, stderr } = applyUnderHelper(true);
  t.is(status, 0, stderr);
  t.is(out.env, null, 'the worker removes the variable once read');
  if (withTsync) {
    t.is(out.error, undefined);
    const detail = out.detail as Record<string, unknown>;
    t.is(detail.stacked, 'deny-all-fs (TSYNC)');
    t.regex(String((detail.threadsCovered as Record<string, unknown>).stack), /stacked on every thread at once \(TSYNC\)/);
  } else {
    // a stack the parent asked for and the kernel cannot give is a bug: never silently skipped
    t.regex(String(out.error), /^strata-landlock: landlock_restrict_self\(LANDLOCK_RESTRICT_SELF_TSYNC\): Invalid argument \(errno 22\): thread sync needs Landlock ABI 8/);
  }
});

onAbi8(`the probe's test-fire passes: a thread started before the stack and libuv's pool are denied too${skipReason}`, (t) => {
  t.is(runStackTestFire(), undefined);
});

onAbi8(`stackDenyAll in a child: every file is denied on every thread, the process runs on${skipReason}`, (t) => {
  const { status, out, stderr } = inChild(`
    const fs = require('node:fs');
    const { Worker } = require('node:worker_threads');
    const code = (f) => { try { f(); return 'read'; } catch (e) { return e.code; } };
    const thread = new Worker("require('node:worker_threads').parentPort.on('message', (p) => { let r; try { require('node:fs').readFileSync(p); r = 'read'; } catch (e) { r = e.code; } require('node:worker_threads').parentPort.postMessage(r); })", { eval: true });
    thread.once('online', () => {
      const before = code(() => fs.readFileSync('/etc/hostname'));
      const handled = require(ADDON).stackDenyAll();
      const out = { before, handled, main: code(() => fs.readFileSync('/etc/hostname')), list: code(() => fs.readdirSync('/')), write: code(() => fs.writeFileSync('/tmp/strata-stack-' + process.pid, 'x')) };
      thread.postMessage('/etc/hostname');
      thread.once('message', (r) => { out.thread = r; console.log(JSON.stringify(out)); thread.terminate(); });
    });
  `);
  t.is(status, 0, stderr);
  t.is(out.before, 'read');
  t.true(typeof out.handled === 'number' && (out.handled & 0b111) === 0b111, 'execute, write_file, read_file are handled');
  t.deepEqual([out.main, out.list, out.write, out.thread], ['EACCES', 'EACCES', 'EACCES', 'EACCES']);
});
