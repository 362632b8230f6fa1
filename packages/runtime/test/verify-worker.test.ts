import test from 'ava';
import { IsolatedRuntime, WorkerCrashed, type LayerReport } from '../src/index.js';
import { spawn } from 'node:child_process';
import { WorkerEndedWhileChecked, hasEnded, inspectWorker, verifyWorker } from '../src/isolated/verify-worker.js';
import { checkNoLeaks } from './helpers/leaks.js';

checkNoLeaks(test);

const claim = (name: string): LayerReport => ({
  name,
  version: '1',
  requirement: 'require',
  capability: { available: true, provides: [], missing: [] },
  enforcement: 'full',
  selfTest: 'passed',
  detail: {},
});

test('every runtime is checked from outside before guest code runs, and the report says what was seen', async (t) => {
  await using rt = await IsolatedRuntime.start({ prewarm: false });
  const seen = rt.report.verified!;
  t.true(seen.noNewPrivs);
  t.true(seen.threads >= 2);
  // Seccomp mode 2 on every thread exactly when a seccomp layer is in force (it is a default layer on Linux).
  const seccompInForce = rt.report.layers.some((l) => l.name === 'seccomp' && l.enforcement !== 'none');
  t.is(seen.seccomp, seccompInForce ? 2 : 0);
  if (process.getuid?.() === 0) {
    t.is(seen.uid, 65534);
    t.true(seen.noCapabilities);
  } else {
    t.log('not root: the uid check does not apply');
  }
});

test('a process that breaks the promises fails verification, naming each broken one', (t) => {
  // This test process itself: no NoNewPrivs, no seccomp; as root, uid 0 with capabilities.
  const root = process.getuid?.() === 0;
  const error = t.throws(() => verifyWorker(process.pid, [claim('seccomp'), claim('emptyroot')], root), { instanceOf: WorkerCrashed });
  t.regex(error?.message ?? '', /lacks NoNewPrivs/);
  t.regex(error?.message ?? '', /seccomp layer is in force but the worker's threads show seccomp mode 0/);
  t.regex(error?.message ?? '', /emptyroot layer is in force but the worker shares this process's user, mnt, net, ipc namespace\(s\)/);
  if (root) t.regex(error?.message ?? '', /runs as uid 0/);
  t.deepEqual(inspectWorker(process.pid).ownNamespaces, []);
});

test('a worker that has ended (a zombie, not yet reaped) is not read as a broken promise: the check says it ended', async (t) => {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  const pid = child.pid!;
  // This event loop, which would reap it, is held until the child is a zombie.
  const stillAlive = () => !hasEnded(pid);
  const until = Date.now() + 10_000;
  while (stillAlive() && Date.now() < until) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
  t.true(hasEnded(pid), 'the child became a zombie');
  const root = process.getuid?.() === 0;
  const error = t.throws(() => verifyWorker(pid, [claim('seccomp'), claim('emptyroot')], root), { instanceOf: WorkerEndedWhileChecked });
  t.is(error?.name, 'WorkerCrashed');
  t.regex(error?.message ?? '', new RegExp(`pid ${pid}\\) ended while its sandbox was checked`));
  await exited;
  t.true(hasEnded(pid), 'reaped: gone');
});

test('a live process is never taken for an ended one', (t) => {
  t.false(hasEnded(process.pid));
});
