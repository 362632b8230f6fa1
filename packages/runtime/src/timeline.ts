/**
 * Points in time along Strata's own paths (a worker's cold start, a command's round trip), for
 * the breakdowns `npm run bench` publishes (docs/design.md §7). Off unless a bench turns it on:
 * a mark is then one comparison. Times are `process.hrtime.bigint()`, CLOCK_MONOTONIC, which
 * every process of a machine shares, so the parent's marks and its workers' interleave.
 *
 * @module
 */

/** One point: what happened, and when (nanoseconds on the machine's monotonic clock). */
export type TimelineMark = readonly [label: string, atNs: number];

/** At most this many marks are kept; later ones are dropped (a bench takes them long before). */
const MAX_MARKS = 1 << 18;

let labels: string[] | undefined;
let times: bigint[] = [];

/** Whether marks are being recorded in this process. */
export function timelineRecording(): boolean {
  return labels !== undefined;
}

/** Starts recording marks in this process (workers started from now on record theirs too). */
export function startTimeline(): void {
  labels ??= [];
}

/** Stops recording, and forgets what was recorded. */
export function stopTimeline(): void {
  labels = undefined;
  times = [];
}

/** Records a point, when recording. */
export function mark(label: string): void {
  if (labels === undefined || labels.length >= MAX_MARKS) return;
  labels.push(label);
  times.push(process.hrtime.bigint());
}

/**
 * Records a point at a moment already past, given on `performance.now()`'s clock (Node's own
 * start-up marks), in its place among the marks recorded since.
 */
export function markAt(label: string, performanceMs: number): void {
  if (labels === undefined || labels.length >= MAX_MARKS) return;
  const ago = BigInt(Math.round((performance.now() - performanceMs) * 1e6));
  const at = process.hrtime.bigint() - ago;
  let index = times.length;
  while (index > 0 && times[index - 1]! > at) index--;
  labels.splice(index, 0, label);
  times.splice(index, 0, at);
}

/** The marks recorded so far, oldest first, and forgets them (recording goes on). */
export function takeTimeline(): TimelineMark[] {
  if (labels === undefined) return [];
  const taken = labels.map((label, i): TimelineMark => [label, Number(times[i]!)]);
  labels = [];
  times = [];
  return taken;
}
