/**
 * How the parent names the end of a worker: a pure decision over facts it holds once the worker
 * is gone (whether it killed the worker itself and why, the exit status, the signal, what the
 * worker was doing), never over which of two mechanisms the scheduler let fire first. So a guest
 * that runs too long gets `RuntimeTimeout` whether the parent's deadline, the parent's CPU check
 * or the kernel's CPU cap (SIGXCPU) stopped it; `WorkerCrashed` is left for real crashes.
 *
 * @module
 */
import { RuntimeTimeout, WorkerCrashed, type StrataError } from '../errors.js';
import { WATCHDOG_EXIT_CODE } from '../native/native-paths.js';

/**
 * What the worker was doing: running guest code (`eval`, `evalModule`), a command of the
 * parent's own (`configure`, `bind`, `revoke`: no guest code), or nothing.
 */
export type WorkerActivity = 'guest' | 'host' | 'idle';

/** The facts about a worker that is gone. */
export interface WorkerEnd {
  /** The reason the parent gave when it killed the worker, if it did: decided on what it measured. */
  readonly killedFor: StrataError | undefined;
  /** The exit status, or null when a signal ended it. */
  readonly code: number | null;
  /** The signal that ended it, or null. */
  readonly signal: string | null;
  /** What the worker was doing when it ended. */
  readonly activity: WorkerActivity;
  /** The CPU time cap per command, in seconds (the exec helper's `--cpu-seconds`), if any. */
  readonly cpuSeconds: number | undefined;
  /** The last lines of the worker's stderr, already cut short; '' for none. */
  readonly stderrTail: string;
}

/**
 * The error for a command stopped by a CPU time cap (`what` names the cap): the guest's own doing
 * while guest code runs, so a `RuntimeTimeout` like the deadline it races with; otherwise (a
 * layer's self-test, a spare worker) a `WorkerCrashed`, since no guest time was exceeded.
 */
export function cpuCapExceeded(activity: WorkerActivity, what: string, said = ''): StrataError {
  if (activity === 'guest') {
    return new RuntimeTimeout(
      `the guest ran past ${what}; the worker was killed and the runtime is closed: start a new runtime, ` +
        `or raise timeout or requestTimeout if the work is meant to take this long${said}`,
      'cpu',
    );
  }
  return new WorkerCrashed(`the worker ran past ${what} while no guest code ran; it was killed${said}`, 'cpu');
}

/**
 * The error every waiter on a worker is told once it is gone. In order: the parent's own reason
 * when it killed the worker (even if the worker died of something else a moment before the
 * SIGKILL landed, the parent decided on a limit it had measured); the worker's memory watchdog;
 * SIGXCPU, the kernel's CPU cap ({@link cpuCapExceeded}); any other signal; any other exit.
 */
export function classifyWorkerEnd(end: WorkerEnd): StrataError {
  if (end.killedFor !== undefined) return end.killedFor;
  const said = end.stderrTail === '' ? '' : ` (worker stderr: ${end.stderrTail})`;
  if (end.signal === null && end.code === WATCHDOG_EXIT_CODE)
    return new WorkerCrashed(`the worker's resident memory passed maxMemory; it stopped itself${said}`, 'maxMemory');
  if (end.signal === 'SIGXCPU') {
    const cap =
      end.cpuSeconds === undefined ? 'its CPU time cap' : `its CPU time cap (${end.cpuSeconds} s of CPU per command: twice requestTimeout, rounded up)`;
    return cpuCapExceeded(end.activity, cap, said);
  }
  if (end.signal !== null) return new WorkerCrashed(`the worker died of ${end.signal}${said}`, 'signal');
  return new WorkerCrashed(`the worker exited with status ${end.code}${said}`, 'exit');
}
