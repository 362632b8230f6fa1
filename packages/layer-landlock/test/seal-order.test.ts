// The ABI ≥ 8 stack's place in the worker (docs/design.md §3: load everything → dumpable → seccomp →
// the deny-all Landlock domain → selfTest → report), proved end to end on any Landlock kernel: the
// real default layers (emptyroot, landlock, seccomp) with the deny-all domain simulated on the
// worker's main thread only (test/fixtures/simulated-stack-layer.ts; ABI 7 allows it without
// thread sync) in seal, where the real one is stacked. Seccomp's apply must come before it, and
// everything after it on the main thread — every self-test, the guest's isolate, the guest, the
// memory watchdog — must work without opening a file. Never in ava's process: every domain is
// made in a worker.
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { IsolatedRuntime, LayerFailed, WorkerCrashed, defaultLayers, type LayerDescriptor } from '@strata/runtime';
import { WEB_POLYFILLS } from '@strata/polyfills';
import { checkGuestStillWorks, platformTest } from '@strata/runtime/testing';
import { landlockAbi } from '../src/helper.js';
import { SIMULATED_STACK } from './fixtures/simulated-stack-layer.js';

const kernel = process.platform === 'linux' ? landlockAbi() : undefined;
const linux = process.platform === 'linux' && (process.arch === 'x64' || process.arch === 'arm64') && kernel !== undefined && 'abi' in kernel;
const maybe = platformTest(test.serial, { feature: 'landlock-abi=1', available: linux, reason: 'needs Linux (x64 or arm64) with Landlock' });

const FIXTURE = new URL('./fixtures/simulated-stack-layer.js', import.meta.url).href;
const WATCHDOG_FIRST_WORKER = fileURLToPath(new URL('./fixtures/watchdog-first-worker.js', import.meta.url));
const GiB = 1024 * 1024 * 1024;
// The runtime's test-only hook (not exported from its index): the worker entry to run instead of
// the real one. The same module instance as the IsolatedRuntime imported above.
const { setWorkerEntryForTests } = (await import(new URL('./isolated/isolated-runtime.js', import.meta.resolve('@strata/runtime')).href)) as {
  setWorkerEntryForTests(entry: string | undefined): void;
};
const simulated = (where: 'seal' | 'apply' = 'seal'): LayerDescriptor => ({ module: FIXTURE, options: { in: where } });

/** The default layers with the simulated stack right after landlock: its apply runs before seccomp's, its seal after every apply. The whole list (`replaceDefaultLayers`): merged into the defaults, the stack would go after them. */
function layersWith(stack: LayerDescriptor): LayerDescriptor[] {
  const layers = defaultLayers();
  const names = layers.map((d) => d.module);
  // The order of the default layers, which this proof is about.
  if (names.join() !== '@strata/layer-emptyroot/layer,@strata/layer-landlock/layer,@strata/layer-seccomp/layer')
    throw new Error(`unexpected default layers: ${names.join()}`);
  return [layers[0]!, layers[1]!, stack, layers[2]!];
}

maybe('the default layers with a deny-all domain sealed on the main thread: the worker starts, every selfTest passes, the guest works', async (t) => {
  await using rt = await IsolatedRuntime.start({
    sandbox: 'require',
    prewarm: false,
    bootstrap: WEB_POLYFILLS,
    replaceDefaultLayers: true,
    layers: layersWith(simulated('seal')),
  });
  t.deepEqual(
    rt.report.layers.map((l) => [l.name, l.enforcement, l.selfTest]),
    [
      ['emptyroot', 'full', 'passed'],
      ['landlock', 'full', 'passed'],
      [SIMULATED_STACK, 'full', 'passed'],
      ['seccomp', 'full', 'passed'],
    ],
  );
  t.is(rt.sandbox, 'landlock+seccomp');
  const entry = (name: string) => rt.report.layers.find((l) => l.name === name)!.detail;
  // the stack took effect in seal and was still in force during the self-tests
  t.deepEqual(
    [entry(SIMULATED_STACK)['stackedIn'], entry(SIMULATED_STACK)['readOwnAfter'], entry(SIMULATED_STACK)['readOwnAtSelfTest']],
    ['seal', 'EACCES', 'EACCES'],
  );
  // the positive controls ran in apply, before the stack
  t.is(entry('emptyroot')['bindsReadable'], true);
  t.is(entry('landlock')['ownFilesReadable'], true);
  // landlock's self-test saw the stack (reported, not asserted: it did not stack it itself)
  t.is((entry('landlock')['selfTest'] as Record<string, unknown>)['readOwn'], 'EACCES');
  t.is(rt.report.verified!.seccomp, 2);
  t.is(await rt.eval('1+1'), 2);
  t.deepEqual(await checkGuestStillWorks(rt), []);
});

maybe("with the deny-all domain sealed on the main thread, maxMemory still stops a memory bomb, by the worker's own watchdog", async (t) => {
  const code = `
    const memory = new WebAssembly.Memory({ initial: 1, maximum: 65536 });
    for (;;) { const before = memory.buffer.byteLength; memory.grow(160); new Uint8Array(memory.buffer, before).fill(1); }
  `;
  // The worker's watchdog (every 20 ms, exit 57: "it stopped itself") and the parent's poll (every
  // 50 ms: "it was killed") watch the same limit, and which one wins is a race the parent can win
  // every time under load. So the worker here is the real entry with its watchdog at a quarter of
  // the parent's maxMemory (test/fixtures/watchdog-first-worker.ts): the parent's poll is only a
  // backstop, reached if the watchdog could not read /proc after the stack. The evidence is the
  // watchdog's own: exit status 57 and its stderr line, naming its own (lowered) limit.
  const maxMemory = GiB;
  setWorkerEntryForTests(WATCHDOG_FIRST_WORKER);
  try {
    await using rt = await IsolatedRuntime.start({
      sandbox: 'require',
      prewarm: false,
      replaceDefaultLayers: true,
      layers: layersWith(simulated('seal')),
      jitless: false,
      maxMemory,
      timeout: 20_000,
    });
    const stack = rt.report.layers.find((l) => l.name === SIMULATED_STACK)!.detail;
    t.deepEqual([stack['stackedIn'], stack['readOwnAfter']], ['seal', 'EACCES'], 'the bomb runs after the deny-all seal');
    t.is(await rt.eval('1+1'), 2);
    const error = await rt.eval(code).then(
      () => undefined,
      (e: unknown) => e,
    );
    t.true(error instanceof WorkerCrashed, String(error));
    t.is((error as WorkerCrashed).reason, 'maxMemory');
    t.regex(
      (error as Error).message,
      new RegExp(
        `^the worker's resident memory passed maxMemory; it stopped itself \\(worker stderr: .*strata-watchdog: resident memory \\d+ bytes is over maxMemory ${maxMemory / 4} bytes\\)$`,
      ),
    );
    t.true(rt.closed);
  } finally {
    setWorkerEntryForTests(undefined);
  }
});

maybe("the negative control: the same stack in apply (the old place) stops seccomp's apply from loading its addon", async (t) => {
  const error = await t.throwsAsync(
    IsolatedRuntime.start({ sandbox: 'require', prewarm: false, replaceDefaultLayers: true, layers: layersWith(simulated('apply')) }),
    { instanceOf: LayerFailed },
  );
  t.deepEqual([error?.layer, error?.hook], ['seccomp', 'apply']);
  // the first file its addon's load opens: the package's own package.json (the layer is one
  // CommonJS file, and require reads its package's scope), else the addon itself
  t.regex(error?.message ?? '', /layer-seccomp\/package\.json: permission denied|strata_seccomp\.node: cannot open shared object file: Permission denied/i);
});
