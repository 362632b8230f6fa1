import type { Message } from '@strata/wire';
import type { StrataError } from '../errors.js';
import type { WorkerActivity } from './worker-end.js';

/**
 * What an IsolatedRuntime needs of its worker: a `WorkerProcess` when the worker is the
 * runtime's alone, or one isolate's port of a SandboxHost's shared worker. Either way `kill`
 * ends what is the runtime's (the process, or the isolate) and `onExit` reports when it is gone.
 */
export interface WorkerPort {
  /** The worker process's id. */
  readonly pid: number;
  /** Whether what the runtime owns is gone (the process, or the isolate in its worker). */
  readonly exited: boolean;
  setMessageHandler(handler: (message: Message) => void): void;
  /** Called once, with the reason, when what the runtime owns is gone. */
  onExit(listener: (error: StrataError) => void): void;
  setActivity(activity: WorkerActivity): void;
  /** A command. */
  send(message: Message): void;
  /** The answer to the call the guest is blocked on. */
  reply(message: Message): void;
  /** The settlement of a host call that returned a promise. */
  settle(message: Message): void;
  /** Keeps this process alive while something waits on the worker, until the returned function is called. */
  hold(): () => void;
  /**
   * Ends what the runtime owns; `reason` is what every waiter is told. Idempotent. `'worker'`
   * ends the whole process even when it is shared: for what only a compromised worker does (a
   * protocol violation), which no isolate of it can be trusted after.
   */
  kill(reason: StrataError, scope?: 'isolate' | 'worker'): void;
}
