// The two pure decisions behind a hard limit, as tables: how a worker's end is named
// (classifyWorkerEnd) and who a supervisor tick is charged to (chargeTick). Neither looks at a
// clock or at which mechanism fired first, so neither can depend on the machine's load.
import test from 'ava';
import { RuntimeClosed, RuntimeTimeout, WorkerCrashed, type CrashReason, type StrataError, type TimeoutLimit } from '../src/index.js';
import { WATCHDOG_EXIT_CODE } from '../src/native/native-paths.js';
import { chargeTick } from '../src/isolated/tick-charge.js';
import { classifyWorkerEnd, cpuCapExceeded, type WorkerActivity } from '../src/isolated/worker-end.js';

const deadline = new RuntimeTimeout('the command ran past requestTimeout (500 ms); the worker was killed and the runtime is closed', 'requestTimeout');
const flood = new WorkerCrashed('the guest made more than maxHostCalls (1) host calls in one command; the worker was killed', 'maxHostCalls');
const closed = new RuntimeClosed('the runtime is closed');

type Expected = ['RuntimeTimeout', TimeoutLimit] | ['WorkerCrashed', CrashReason] | ['same', StrataError];

// killed by the parent, exit code, signal, activity → the error
const table: [StrataError | undefined, number | null, string | null, WorkerActivity, Expected][] = [
  // The parent's own reason always wins: it decided on a limit it measured, even when the
  // worker died of something else just before the SIGKILL landed.
  [deadline, null, 'SIGKILL', 'guest', ['same', deadline]],
  [deadline, null, 'SIGXCPU', 'guest', ['same', deadline]],
  [flood, null, 'SIGXCPU', 'guest', ['same', flood]],
  [closed, null, 'SIGKILL', 'guest', ['same', closed]],
  [closed, null, 'SIGKILL', 'idle', ['same', closed]],
  // The kernel's CPU cap: the guest's time while guest code runs, a crash otherwise.
  [undefined, null, 'SIGXCPU', 'guest', ['RuntimeTimeout', 'cpu']],
  [undefined, null, 'SIGXCPU', 'host', ['WorkerCrashed', 'cpu']],
  [undefined, null, 'SIGXCPU', 'idle', ['WorkerCrashed', 'cpu']],
  // Every other death is a crash, whatever was running.
  [undefined, null, 'SIGKILL', 'guest', ['WorkerCrashed', 'signal']],
  [undefined, null, 'SIGABRT', 'guest', ['WorkerCrashed', 'signal']],
  [undefined, null, 'SIGSEGV', 'idle', ['WorkerCrashed', 'signal']],
  [undefined, WATCHDOG_EXIT_CODE, null, 'guest', ['WorkerCrashed', 'maxMemory']],
  [undefined, WATCHDOG_EXIT_CODE, null, 'idle', ['WorkerCrashed', 'maxMemory']],
  [undefined, 0, null, 'guest', ['WorkerCrashed', 'exit']],
  [undefined, 1, null, 'host', ['WorkerCrashed', 'exit']],
];

for (const [killedFor, code, signal, activity, expectation] of table) {
  const [kind, detail] = expectation;
  const by = killedFor === undefined ? 'not killed by the parent' : `killed by the parent for ${killedFor.name}`;
  const expected = expectation[0] === 'same' ? `the parent's ${expectation[1].name}` : `${kind} (${String(detail)})`;
  test(`worker end: ${by}, ${signal ?? `exit ${code}`}, ${activity} → ${expected}`, (t) => {
    const error = classifyWorkerEnd({ killedFor, code, signal, activity, cpuSeconds: 1, stderrTail: '' });
    if (expectation[0] === 'same') return t.is(error, expectation[1]);
    if (expectation[0] === 'RuntimeTimeout') {
      t.true(error instanceof RuntimeTimeout, String(error));
      t.is((error as RuntimeTimeout).limit, expectation[1]);
      t.is(error.code, 'ERR_STRATA_TIMEOUT');
    } else {
      t.true(error instanceof WorkerCrashed, String(error));
      t.is((error as WorkerCrashed).reason, expectation[1]);
    }
  });
}

test('worker end: the CPU cap names itself and says what to do; stderr is quoted', (t) => {
  const error = classifyWorkerEnd({ killedFor: undefined, code: null, signal: 'SIGXCPU', activity: 'guest', cpuSeconds: 6, stderrTail: 'last words' });
  t.is(
    error.message,
    'the guest ran past its CPU time cap (6 s of CPU per command: twice requestTimeout, rounded up); the worker was killed and the runtime is closed: ' +
      'start a new runtime, or raise timeout or requestTimeout if the work is meant to take this long (worker stderr: last words)',
  );
  const crash = classifyWorkerEnd({ killedFor: undefined, code: null, signal: 'SIGXCPU', activity: 'host', cpuSeconds: undefined, stderrTail: '' });
  t.is(crash.message, 'the worker ran past its CPU time cap while no guest code ran; it was killed');
});

test("the parent's own CPU check is named by the same rule as the kernel's", (t) => {
  const guest = cpuCapExceeded('guest', 'its CPU time cap (1000 ms of CPU: twice requestTimeout)');
  t.true(guest instanceof RuntimeTimeout && guest.limit === 'cpu', String(guest));
  t.regex(guest.message, /worker was killed/);
  for (const activity of ['host', 'idle'] as const) {
    const other = cpuCapExceeded(activity, 'its CPU time cap (1000 ms of CPU: twice requestTimeout)');
    t.true(other instanceof WorkerCrashed && other.reason === 'cpu', String(other));
  }
});

// elapsed, worker CPU, host calls in flight → guest, host wait
const ticks: [number, number, number, number, number][] = [
  // No call in flight: the tick is the guest's, whatever the CPU says (the deadline is wall time).
  [50, 50, 0, 50, 0],
  [50, 0, 0, 50, 0],
  [50, 120, 0, 50, 0],
  // A call in flight and the guest waiting on it: the host's.
  [50, 0, 1, 0, 50],
  [50, 0, 3, 0, 50],
  // A call in flight and the guest running: its CPU time, at most the tick. On a loaded machine a
  // running guest gets a fraction of a core (here 10 ms of 50): charged, not called idle.
  [50, 50, 1, 50, 0],
  [50, 10, 1, 10, 40],
  [400, 20, 1, 20, 380],
  [50, 120, 2, 50, 0],
  // Nonsense from a clock or /proc never charges a negative amount.
  [-5, 10, 1, 0, 0],
  [50, -10, 1, 0, 50],
];

for (const [elapsedMs, workerCpuMs, hostCallsInFlight, guestMs, hostWaitMs] of ticks) {
  test(`tick: ${elapsedMs} ms, ${workerCpuMs} ms of worker CPU, ${hostCallsInFlight} call(s) in flight → guest ${guestMs} ms, host wait ${hostWaitMs} ms`, (t) => {
    t.deepEqual(chargeTick({ elapsedMs, workerCpuMs, hostCallsInFlight }), { guestMs, hostWaitMs });
  });
}
