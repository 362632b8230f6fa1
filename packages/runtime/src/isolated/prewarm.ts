import { WorkerCrashed } from '../errors.js';
import type { Message } from '@strata/wire';
import { WorkerProcess, planKey, type LaunchPlan } from './worker-process.js';

/**
 * One spare worker, started in the background: it has loaded everything and waits for its
 * configuration, holds no data, is handed to exactly one runtime, and dies with this process
 * (its exec helper set a parent-death signal; it never keeps this process alive).
 */
let spare: { key: string; worker: Promise<WorkerProcess> } | undefined;

/**
 * A worker for `plan`: the spare if it was started from the same plan and is alive, else a new
 * one, to which `first` (the caller's first command) is written as soon as it is spawned
 * (WorkerProcess.start). `firstSent` says which: a spare has not been sent it.
 */
export async function takeWorker(
  plan: LaunchPlan,
  prewarm: boolean,
  helloTimeoutMs: number,
  first?: Message,
): Promise<{ worker: WorkerProcess; firstSent: boolean }> {
  const key = planKey(plan);
  const candidate = spare?.key === key ? spare.worker : undefined;
  if (candidate !== undefined) spare = undefined;
  if (prewarm) startSpare(plan, key, helloTimeoutMs);
  if (candidate !== undefined) {
    const worker = await candidate.catch(() => undefined);
    if (worker !== undefined && !worker.exited) return { worker, firstSent: false };
  }
  return { worker: await WorkerProcess.start(plan, helloTimeoutMs, first), firstSent: first !== undefined };
}

function startSpare(plan: LaunchPlan, key: string, helloTimeoutMs: number): void {
  if (spare !== undefined) {
    if (spare.key === key) return;
    void spare.worker.then(
      (w) => w.kill(new WorkerCrashed('the spare worker was replaced', 'exit')),
      () => undefined,
    );
  }
  const worker = WorkerProcess.start(plan, helloTimeoutMs);
  worker.catch(() => {
    if (spare?.worker === worker) spare = undefined;
  });
  spare = { key, worker };
}

/** Kills the spare, if any (tests use this to check for leaked processes). */
export async function discardSpare(): Promise<void> {
  const current = spare;
  spare = undefined;
  const worker = await current?.worker.catch(() => undefined);
  if (worker !== undefined && !worker.exited) {
    const gone = new Promise<void>((resolve) => worker.onExit(() => resolve()));
    worker.hold();
    worker.kill(new WorkerCrashed('the spare worker was discarded', 'exit'));
    await gone;
  }
}
