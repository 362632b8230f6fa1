// The main entry is a deliberate list: what an application uses. Adding a name here is a decision
// (it becomes API); an internal that leaks into the entry fails this test.
import test from 'ava';
import { readFileSync } from 'node:fs';
import { InvalidOption, IsolatedRuntime, Runtime, SandboxHost, SandboxPool, type StrataRuntime } from '@strata/runtime';

const MAIN = [
  // engines
  'Runtime',
  'IsolatedRuntime',
  'SandboxPool',
  'SandboxHost',
  'ISOLATE_OPTIONS',
  // the options a pool accepts per checkout (the parent enforces them; the rest need a worker of their own)
  'SESSION_OPTIONS',
  // the default runtime (module-level functions)
  'configureDefaultRuntime',
  'eval',
  'execute',
  'evalModule',
  'bindFunction',
  'bindObject',
  'addModule',
  'setModuleResolver',
  'setModuleLoader',
  'closeDefaultRuntime',
  // TypeScript input
  'stripTypes',
  'MAX_TYPESCRIPT_CHARS',
  'MAX_TYPESCRIPT_NESTING',
  'STRIP_TIMEOUT_MS',
  // the guest's fetch, performed by the host under a policy
  'egressHandler',
  // layers as an application passes them
  'defaultLayers',
  // the Node.js this needs
  'MIN_NODE_MAJOR',
  'ENGINE_NODE_MAJOR',
  'UnsupportedNode',
  // errors
  'StrataError',
  'JsError',
  'RuntimeTimeout',
  'HeapLimitExceeded',
  'ValueNotTransferable',
  'ResultTooLarge',
  'ModuleNotFound',
  'RuntimeClosed',
  'InvalidOption',
  'PromiseNeverSettled',
  'WorkerCrashed',
  'SandboxUnavailable',
  'ThreadUnavailable',
  'CrashBudgetExceeded',
  'SandboxHostFull',
  'EgressRefused',
  'EgressFailed',
  'LayerFailed',
  'LayerConfigError',
].sort();

test('the main entry exports exactly what an application uses', async (t) => {
  const main = await import('@strata/runtime');
  t.deepEqual(Object.keys(main).sort(), MAIN);
});

test('the contract both engines implement is a type of the main entry, StrataRuntime, and no value', async (t) => {
  // Deliberate: code that only runs guest code takes either engine. The compiler checks the
  // assignments; the entry's keys (values only) must not grow by it.
  const either: readonly ((rt: Runtime | IsolatedRuntime) => StrataRuntime)[] = [(rt) => rt];
  t.is(either.length, 1);
  const main = await import('@strata/runtime');
  t.false('StrataRuntime' in main);
});

test('the layer-author API is in @strata/runtime/layers, and the test helpers in @strata/runtime/testing', async (t) => {
  const layers = await import('@strata/runtime/layers');
  for (const name of ['defaultLayers', 'PLATFORM_LAYERS', 'planLayers', 'LayerFailed', 'LayerConfigError', 'LAYER_OPTIONS']) t.true(name in layers, name);
  // The pieces a worker's read set is computed from are Strata's own layers' business, in their own entry.
  const internals = [
    'normalizeWorkerFiles',
    'nodeInstallDir',
    'nodeModulesWithRuntime',
    'opensslConfig',
    'parseLoadedObjects',
    'parseMaps',
    'sharedLibraries',
    'strataPackages',
    'SYSTEM_WORKER_FILES',
  ];
  for (const name of internals) t.false(name in layers, `${name} is in @strata/runtime/layers`);
  const workerFiles = await import('@strata/runtime/worker-files');
  for (const name of internals) t.true(name in workerFiles, name);
  const testing = await import('@strata/runtime/testing');
  t.deepEqual(Object.keys(testing).sort(), [
    'PLATFORM_ENV',
    'checkGuestStillWorks',
    'checkLayerConformance',
    'collectTimeline',
    'declaredFeatures',
    'isDeclared',
    'platformTest',
    'platformVerdict',
    'recordTimeline',
    'stopRecordingTimeline',
    'testLayer',
  ]);
});

test('every layer package builds its descriptor with a named factory, and none has a default export', async (t) => {
  for (const name of ['clock', 'emptyroot', 'landlock', 'seatbelt', 'seccomp']) {
    const entry = (await import(`@strata/layer-${name}`)) as Record<string, unknown>;
    t.false('default' in entry, `@strata/layer-${name} has a default export`);
    const factory = entry[name];
    t.is(typeof factory, 'function', `@strata/layer-${name} exports ${name}()`);
    const descriptor = (factory as () => { module: string })();
    t.is(descriptor.module, `@strata/layer-${name}/layer`);
  }
});

test('the one spelling of the sandbox modes is the layer requirements', async (t) => {
  const { IsolatedRuntime, InvalidOption } = await import('@strata/runtime');
  await t.throwsAsync(IsolatedRuntime.start({ sandbox: 'none' as never }), {
    instanceOf: InvalidOption,
    message: /sandbox must be 'require', 'auto' or 'off'/,
  });
  await t.throwsAsync(IsolatedRuntime.start({ layers: [{ module: '@strata/layer-clock/layer', requirement: 'none' as never }] }), {
    instanceOf: InvalidOption,
    message: /requirement must be 'require', 'auto' or 'off'/,
  });
});

test('the package exports no deep paths beyond its entries', (t) => {
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { exports: Record<string, unknown> };
  t.deepEqual(Object.keys(manifest.exports).sort(), [
    '.',
    './bounded-worker',
    './layers',
    './native',
    './native-build',
    './package.json',
    './testing',
    './worker-files',
  ]);
});

test('the bounded worker thread is in @strata/runtime/bounded-worker: its parent side and its worker side', async (t) => {
  const entry = await import('@strata/runtime/bounded-worker');
  t.deepEqual(Object.keys(entry).sort(), ['BoundedWorker', 'boundedWorkerData', 'serveBoundedRequests', 'workerExecArgv']);
});

test('a class made by a factory refuses new from JavaScript, saying which factory to call', (t) => {
  for (const [Class, name] of [
    [Runtime, 'Runtime'],
    [IsolatedRuntime, 'IsolatedRuntime'],
    [SandboxPool, 'SandboxPool'],
    [SandboxHost, 'SandboxHost'],
  ] as const) {
    const construct = Class as unknown as new (options: object) => unknown;
    const error = t.throws(() => new construct({ size: 8 }), { instanceOf: InvalidOption });
    t.is(error?.message, `${name} has no public constructor: use \`await ${name}.start(options)\``);
  }
});
