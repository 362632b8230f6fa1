// The addon and the ABI ≥ 8 stacking: the decisions (pure, as tables), the addon loaded, and
// stackDenyAll fired in children only (never in ava's own process: it cannot be undone).
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { LayerConfigError, planLayers } from '@strata/runtime/layers';
import { ADDON_PATH, addonUnavailableReason, loadAddon } from '../src/addon.js';
import { errataFromKernel } from '../src/errata.js';
import { LANDLOCK_HELPER, landlockAbi } from '../src/helper.js';
import { PACKAGE_ROOT, computeReadSet, helperArguments } from '../src/read-set.js';
import landlockLayer, { capabilityFor } from '../src/layer.js';
import { STACKED, STACK_MIN_ABI, STACK_WORD, checkStackAfterLoad, planStack, runStackTestFire, sealStackDecision } from '../src/stack.js';
import { PLATFORM_ENV, declaredFeatures, platformTest } from '@strata/runtime/testing';

const linux = process.platform === 'linux';
const kernel = linux ? landlockAbi() : undefined;
const abi = kernel && 'abi' in kernel ? kernel.abi : 0;
const maybe = platformTest(test, { feature: 'linux', available: linux, reason: 'Linux only (x64 or arm64)' });
const belowTsync = linux && abi >= 1 && abi < STACK_MIN_ABI;
const withTsync = linux && abi >= STACK_MIN_ABI;
const onAbi8 = platformTest(test, {
  feature: `landlock-abi=${STACK_MIN_ABI}`,
  available: withTsync,
  reason: `this kernel has Landlock ABI ${abi}, needs ${STACK_MIN_ABI}`,
});

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
  for (const bad of ['yes', 1, null, {}])
    t.throws(() => checkStackAfterLoad(bad), {
      instanceOf: LayerConfigError,
      code: 'ERR_STRATA_LAYER_CONFIG',
      message: /"stackAfterLoad" must be true or false/,
    });
  t.throws(() => landlockLayer({ stackAfterLoad: 'no' }), { instanceOf: LayerConfigError, code: 'ERR_STRATA_LAYER_CONFIG' });
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

test("sealStackDecision (worker): from the probe's capability alone, in the probe's words", (t) => {
  const fails = () => 'the child died of SIGSYS';
  const cases: [string, ReturnType<typeof capabilityFor>, ReturnType<typeof sealStackDecision>][] = [
    [
      'test-fired on ABI 8',
      capabilityFor(
        8,
        7,
        planStack(8, true, () => undefined),
      ),
      { stack: true },
    ],
    [
      'test-fired on ABI 9',
      capabilityFor(
        9,
        7,
        planStack(9, true, () => undefined),
      ),
      { stack: true },
    ],
    ['off', capabilityFor(8, 7, planStack(8, false, fails)), { stack: false, stacked: 'off (stackAfterLoad: false)' }],
    ['below ABI 8', capabilityFor(7, 7, planStack(7, true, fails)), { stack: false, stacked: 'not available on ABI 7 (needs 8)' }],
    [
      'test-fire failed',
      capabilityFor(8, 7, planStack(8, true, fails)),
      { stack: false, stacked: "not stacked: the probe's test-fire failed (tsync-stack is missing; see capability.detail.stackAfterLoad)" },
    ],
    [
      'a capability without the word or a reason',
      { available: true, provides: [], missing: [] },
      { stack: false, stacked: 'not stacked: the probe did not plan it' },
    ],
  ];
  for (const [label, capability, expected] of cases) t.deepEqual(sealStackDecision(capability), expected, label);
  t.is(STACKED, 'deny-all-fs (TSYNC)');
  t.is(STACK_WORD, 'tsync-stack');
});

test('the layer stacks in seal, not in apply: its launch link carries no stack flag', async (t) => {
  const layer = landlockLayer({});
  t.is(typeof layer.seal, 'function');
  if (!linux) return;
  const step = (await layer.launch!({ platform: 'linux', arch: process.arch, options: {}, layerPaths: [], workerNode: process.execPath }))!;
  t.deepEqual(
    step.args?.filter((a) => !a.startsWith('/')).filter((a) => a !== '--read' && a !== '--read-file'),
    [],
    'only --read and --read-file, with their paths',
  );
});

test("a failed test-fire: tsync-stack is missing, so 'auto' degrades with a warning and 'require' refuses", (t) => {
  const failed = capabilityFor(
    8,
    7,
    planStack(8, true, () => 'the child died of SIGSYS'),
  );
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
  const fired = capabilityFor(
    8,
    7,
    planStack(8, true, () => undefined),
  );
  t.deepEqual([fired.provides.includes('tsync-stack'), fired.missing], [true, []]);
  t.deepEqual(
    capabilityFor(
      7,
      7,
      planStack(7, true, () => 'unused'),
    ).missing,
    [],
  );
  t.deepEqual(
    capabilityFor(
      8,
      'unknown (EINVAL)',
      planStack(8, false, () => 'unused'),
    ).detail,
    { abi: 8, errata: 'unknown (EINVAL)', stackAfterLoad: 'off (stackAfterLoad: false)' },
  );
});

maybe('the addon builds and loads on Linux: abi() and errata() agree with the helper', (t) => {
  t.is(addonUnavailableReason(), undefined);
  const addon = loadAddon();
  t.deepEqual(Object.keys(addon).sort(), ['abi', 'errata', 'stackDenyAll', 'stackDenyAllThisThread']);
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
  t.is(
    out.message,
    `strata-landlock: landlock_restrict_self(LANDLOCK_RESTRICT_SELF_TSYNC): Invalid argument (errno 22): thread sync needs Landlock ABI 8 (Linux 7.0), this kernel has ABI ${abi}; nothing was stacked`,
  );
  t.is(out.after, 'read', 'nothing was stacked: the child still reads files');
});

(belowTsync ? test : test.skip)(`the probe's test-fire fails below ABI 8 with the addon's reason (this kernel: ABI ${abi})`, (t) => {
  const gap = runStackTestFire();
  t.regex(
    gap ?? '',
    /^strata-landlock: landlock_restrict_self\(LANDLOCK_RESTRICT_SELF_TSYNC\): Invalid argument \(errno 22\): thread sync needs Landlock ABI 8/,
  );
});

/**
 * The layer's apply, seal and selfTest, as the pipeline runs them, in a child under the real
 * helper, with `capability` as the probe's verdict; what they reported, or which hook threw what.
 */
function hooksUnderHelper(capability: object): { status: number | null; out: Record<string, unknown>; stderr: string } {
  const readSet = computeReadSet({ execPath: process.execPath, packageRoot: PACKAGE_ROOT, extra: [] });
  const layerUrl = new URL('../src/layer.js', import.meta.url).href;
  const script = `
    const { default: landlockLayer } = await import(${JSON.stringify(layerUrl)});
    const detail = {};
    const capability = ${JSON.stringify(capability)};
    const shared = { platform: 'linux', options: {}, capability, report: (d) => Object.assign(detail, d) };
    const layer = landlockLayer({});
    let error, hook;
    try {
      hook = 'apply'; await layer.apply({ ...shared, addContextBootstrap() {} });
      hook = 'seal'; await layer.seal(shared);
      hook = 'selfTest'; await layer.selfTest({ ...shared, evalInGuest: async () => undefined });
      hook = undefined;
    } catch (e) { error = e.message; }
    console.log(JSON.stringify({ error, hook, detail }));`;
  const args = [...helperArguments(readSet), '--', process.execPath, '--input-type=module', '-e', script];
  const child = spawnSync(LANDLOCK_HELPER, args, { encoding: 'utf8', env: {}, timeout: 30_000 });
  let out: Record<string, unknown> = {};
  try {
    out = JSON.parse(child.stdout) as Record<string, unknown>;
  } catch {
    // left empty: the assertions name stderr
  }
  return { status: child.status, out, stderr: child.stderr };
}

maybe("apply, seal and selfTest under the helper with this kernel's own verdict: ABI, errata, threads covered, the read set works", (t) => {
  // The probe's verdict here, without running the test-fire in ava's process tree twice.
  const verdict = withTsync ? planStack(abi, true, () => runStackTestFire()) : planStack(abi, true, () => 'unused');
  const { status, out, stderr } = hooksUnderHelper(capabilityFor(abi, kernel !== undefined && 'errata' in kernel ? kernel.errata : 0, verdict));
  t.is(status, 0, stderr);
  t.deepEqual([out.error, out.hook], [undefined, undefined]);
  const detail = out.detail as Record<string, unknown>;
  t.deepEqual({ abi: detail.abi, errata: detail.errata }, kernel);
  t.is(detail.ownFilesReadable, true, 'the positive control ran in apply');
  t.is(detail.stacked, withTsync ? STACKED : `not available on ABI ${abi} (needs 8)`);
  const covered = detail.threadsCovered as Record<string, unknown>;
  t.true(typeof covered.threads === 'number' && covered.threads >= 1, JSON.stringify(covered));
  t.is(covered.how, 'inherited: the domain was made before Node started (pre-exec)');
  t.is('stack' in covered, withTsync);
  t.is((detail.selfTest as Record<string, unknown>).readOwn, withTsync ? 'EACCES' : 'none');
});

maybe(
  `seal with a capability that provides tsync-stack: ${withTsync ? 'stacks the deny-all domain and checks it' : `below ABI 8 it is fatal in seal, naming ABI 8 (this kernel: ABI ${abi})`}`,
  (t) => {
    const promised = {
      ...capabilityFor(
        abi,
        7,
        planStack(abi, false, () => undefined),
      ),
      provides: [STACK_WORD],
    };
    const { status, out, stderr } = hooksUnderHelper(promised);
    t.is(status, 0, stderr);
    if (withTsync) {
      t.deepEqual([out.error, out.hook], [undefined, undefined]);
      const detail = out.detail as Record<string, unknown>;
      t.is(detail.stacked, 'deny-all-fs (TSYNC)');
      t.regex(String((detail.threadsCovered as Record<string, unknown>).stack), /stacked on every thread at once \(TSYNC\)/);
      t.is((detail.selfTest as Record<string, unknown>).readOwn, 'EACCES');
    } else {
      // a stack the probe promised and the kernel cannot give is a bug: never silently skipped
      t.is(out.hook, 'seal');
      t.regex(
        String(out.error),
        /^strata-landlock: landlock_restrict_self\(LANDLOCK_RESTRICT_SELF_TSYNC\): Invalid argument \(errno 22\): thread sync needs Landlock ABI 8/,
      );
    }
  },
);

maybe('stackDenyAllThisThread (tests only) in a child: the calling thread loses every file, a thread started before it keeps them', (t) => {
  const { status, out, stderr } = inChild(`
    const fs = require('node:fs');
    const { Worker } = require('node:worker_threads');
    const code = (f) => { try { f(); return 'read'; } catch (e) { return e.code; } };
    const thread = new Worker("require('node:worker_threads').parentPort.on('message', (p) => { let r; try { require('node:fs').readFileSync(p); r = 'read'; } catch (e) { r = e.code; } require('node:worker_threads').parentPort.postMessage(r); })", { eval: true });
    thread.once('online', () => {
      const handled = require(ADDON).stackDenyAllThisThread();
      const out = { handled, main: code(() => fs.readFileSync('/etc/hostname')), list: code(() => fs.readdirSync('/')), stat: code(() => fs.statSync('/etc/hostname')) };
      thread.postMessage('/etc/hostname');
      thread.once('message', (r) => { out.thread = r; console.log(JSON.stringify(out)); thread.terminate(); });
    });
  `);
  t.is(status, 0, stderr);
  t.true(typeof out.handled === 'number' && (out.handled & 0b111) === 0b111, 'execute, write_file, read_file are handled');
  // stat is not mediated by Landlock; the other thread is untouched: a simulation, not the real stack
  t.deepEqual([out.main, out.list, out.stat, out.thread], ['EACCES', 'EACCES', 'read', 'read']);
});

onAbi8(`the probe's test-fire passes: a thread started before the stack and libuv's pool are denied too`, (t) => {
  t.is(runStackTestFire(), undefined);
});

onAbi8(`stackDenyAll in a child: every file is denied on every thread, the process runs on`, (t) => {
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

// As rust-landlock's LANDLOCK_CRATE_TEST_ABI: a machine that declares its Landlock ABI
// (STRATA_TEST_PLATFORM=landlock-abi=N, as CI does) has exactly that ABI, so the ABI-dependent
// tests above ran or skipped for the reason the machine declared.
const declaredAbi = [...declaredFeatures()].map((f) => /^landlock-abi=(\d+)$/.exec(f)).find((m) => m !== null);
(declaredAbi ? test : test.skip)(
  `the kernel's Landlock ABI is the one ${PLATFORM_ENV} declares${declaredAbi ? '' : ' (skipped: no landlock-abi declared)'}`,
  (t) => {
    t.is(abi, Number(declaredAbi![1]));
  },
);

test('capabilityFor: a kernel newer than this package knows is noted (what it added is not handled), and changes no verdict', (t) => {
  const ok = () => undefined;
  t.is(capabilityFor(9, 7, planStack(9, true, ok)).notes, undefined);
  t.is(capabilityFor(7, 7, planStack(7, true, ok)).notes, undefined);
  const newer = capabilityFor(11, 15, planStack(11, true, ok));
  t.deepEqual(newer.notes, [
    "the kernel's Landlock ABI 11 is newer than this package knows (9): what ABI 10-11 added is not handled (allowed), the rest is in force; a newer @strata/layer-landlock may handle it",
  ]);
  t.deepEqual(newer.missing, []);
  t.deepEqual(capabilityFor(10, 15, planStack(10, true, ok)).notes?.[0]?.includes('what ABI 10 added'), true);
});
