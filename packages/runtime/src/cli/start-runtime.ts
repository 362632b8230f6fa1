import { WorkerCrashed } from '../errors.js';
import { IsolatedRuntime } from '../isolated/isolated-runtime.js';
import type { IsolatedRuntimeOptions } from '../isolated/isolated-options.js';

/**
 * How long a worker may take to start before the CLI gives up. A cold start takes ~0.1–0.5 s;
 * the library has no start deadline of its own, and a CLI must end rather than hang.
 */
export const START_DEADLINE_MS = 30_000;

/**
 * `IsolatedRuntime.start(options)` with a deadline and without the prewarmed spare (a CLI runs one
 * program, so a second worker would only cost start-up time and memory). Past the deadline it
 * rejects with `WorkerCrashed` (`reason: 'start'`), and a worker that starts later is closed.
 */
export async function startRuntime(options: IsolatedRuntimeOptions, deadlineMs = START_DEADLINE_MS): Promise<IsolatedRuntime> {
  const starting = IsolatedRuntime.start({ ...options, prewarm: false });
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      void starting.then(
        (late) => late.close(),
        () => undefined,
      );
      reject(new WorkerCrashed(`the worker did not start within ${deadlineMs} ms`, 'start'));
    }, deadlineMs);
  });
  try {
    return await Promise.race([starting, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
