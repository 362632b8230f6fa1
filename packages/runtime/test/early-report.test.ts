// IsolatedRuntime.start writes the configuration when it spawns the worker, and the worker reports
// its layers as soon as they are in force, before it makes the guest's isolate: the parent checks
// them from outside meanwhile. A worker that answers its configuration without that report,
// reports twice or after, reports what /proc contradicts, or floods its hello is killed, and the
// start fails with the reason; one whose hello, report and answer come in one read starts.
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { IsolatedRuntime, SandboxHost, WorkerCrashed } from '../src/index.js';
import { setWorkerEntryForTests } from '../src/isolated/isolated-runtime.js';
import { checkNoLeaks } from './helpers/leaks.js';

const REPORT_WORKER = fileURLToPath(new URL('./fixtures/report-worker.js', import.meta.url));

checkNoLeaks(test);
test.before(() => setWorkerEntryForTests(REPORT_WORKER));
test.after.always(() => setWorkerEntryForTests(undefined));

// The fixture reads its behaviour from the first bootstrap script (it runs none); no layers: it applies nothing.
const start = (behaviour: string) =>
  IsolatedRuntime.start({ prewarm: false, sandbox: 'off', replaceDefaultLayers: true, layers: [], bootstrap: [`// ${behaviour}`] });

test('the configuration is written at spawn (this worker waits for it before its hello); hello, report and answer in one read are kept for the start, which succeeds', async (t) => {
  const rt = await start('together');
  t.teardown(() => rt.close());
  t.is(await rt.eval('1+1'), 'evaluated 1+1');
  t.deepEqual(rt.report.layers, []);
});

test('SandboxHost.start writes the configuration at spawn too (this worker waits for it before its hello)', async (t) => {
  const host = await SandboxHost.start({
    tenant: 'early-report',
    prewarm: false,
    sandbox: 'off',
    replaceDefaultLayers: true,
    layers: [],
    bootstrap: ['// host'],
  });
  t.teardown(() => host.close());
  const rt = await host.open();
  t.is(await rt.eval('1+1'), 'evaluated 1+1');
  t.deepEqual(host.report.layers, []);
});

const refused: [string, RegExp, WorkerCrashed['reason']][] = [
  ['noReport', /answered its configuration without reporting its layers first/, 'protocol'],
  ['twoReports', /a report outside its start/, 'protocol'],
  // the answer first: refused as an answer without a report (and the late report as such)
  ['reportAfter', /without reporting its layers first|a report after its configuration was answered/, 'protocol'],
  ['lyingReport', /failed verification from outside: a seccomp layer is in force but the worker's threads show seccomp mode 0/, 'start'],
  ['flood', /messages before any request was answered/, 'protocol'],
];

for (const [behaviour, message, reason] of refused) {
  test(`a worker that sends ${behaviour} at its start is killed, and the start fails saying why`, async (t) => {
    const error = await t.throwsAsync(start(behaviour), { instanceOf: WorkerCrashed });
    t.regex(error!.message, message);
    t.is(error!.reason, reason);
  });
}

// A worker can end right after its report (its memory cap while it makes the guest's isolate): a
// zombie shows no namespaces and no filter, and that is no broken promise. The start fails with
// the worker's own end (this fixture exits 57, the memory cap's code), never with a verification
// failure that would send the user looking at the sandbox.
test('a worker that has ended when its report is checked from outside fails the start with its own end, not a broken promise', async (t) => {
  const error = await t.throwsAsync(start('lyingReportThenEnds'), { instanceOf: WorkerCrashed });
  t.is(error!.reason, 'maxMemory', error!.message);
  t.notRegex(error!.message, /failed verification/);
});

test('SandboxHost.start: a worker that has ended when its layers are checked from outside fails with its own end', async (t) => {
  const starting = SandboxHost.start({
    tenant: 'early-report',
    prewarm: false,
    sandbox: 'off',
    replaceDefaultLayers: true,
    layers: [],
    bootstrap: ['// hostLyingThenEnds'],
  });
  const error = await t.throwsAsync(starting, { instanceOf: WorkerCrashed });
  t.is(error!.reason, 'maxMemory', error!.message);
  t.notRegex(error!.message, /failed verification/);
});
