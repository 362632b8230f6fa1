import { internals, type IsolatedRuntime } from '../isolated/isolated-runtime.js';
import { startTimeline, stopTimeline, takeTimeline, type TimelineMark } from '../timeline.js';

export type { TimelineMark } from '../timeline.js';

/**
 * Starts recording Strata's timeline marks in this process, and in every worker started from now
 * on: the points of a cold start (spawn, Node's own start-up, modules loaded, each layer's
 * hooks, ready) and of every round trip (encode, write, read, decode, enter and leave the
 * isolate). `npm run bench` prints the breakdowns. Costs one comparison per mark when off.
 */
export function recordTimeline(): void {
  startTimeline();
}

/** Stops recording in this process, and forgets its marks. */
export function stopRecordingTimeline(): void {
  stopTimeline();
}

/**
 * The marks recorded since the last collection, oldest first, on the machine's monotonic clock
 * (nanoseconds): this process's, labelled `parent …`, and, given a runtime started while
 * recording, its worker's, labelled `worker …` (asking for them is one more command, whose own
 * marks come with the next collection).
 */
export async function collectTimeline(runtime?: IsolatedRuntime): Promise<TimelineMark[]> {
  const parent = takeTimeline().map(([label, at]): TimelineMark => [`parent ${label}`, at]);
  const worker = runtime === undefined ? [] : (await internals.workerTimeline(runtime)).map(([label, at]): TimelineMark => [`worker ${label}`, at]);
  return [...parent, ...worker].sort((a, b) => a[1] - b[1]);
}
