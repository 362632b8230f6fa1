// npm run bench:timeline (and the end of npm run bench): where a cold start and a warm round trip
// spend their time, from the marks Strata's parent and worker take along the way (one monotonic
// clock for both processes). Medians over several starts and thousands of round trips; written
// to bench/timeline-results.{json,md}. `node bench/timeline.mjs --out NAME` writes
// bench/NAME.{json,md} instead (a before/after pair).
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { readdirSync, readFileSync } from 'node:fs';
import { IsolatedRuntime, SandboxHost, SandboxPool } from '@strata/runtime';
import { WEB_POLYFILLS } from '@strata/polyfills';
import { collectTimeline, recordTimeline } from '@strata/runtime/testing';
import { COLD_PHASES, OPEN_PHASES, WARM_PHASES } from './timeline-phases.mjs';

const COLD_RUNS = 9;
const WARM_UP = 500;
const ROUND_TRIPS = 3000;
// Opens in a warm SandboxHost, each after the worker idled this long (as bench/density.mjs's).
const OPENS = 40;
const IDLE_BEFORE_OPEN_MS = 100;
const outName = process.argv.includes('--out') ? process.argv[process.argv.indexOf('--out') + 1] : 'timeline-results';
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
};
const now = () => Number(process.hrtime.bigint());
/** CPU time of a process's main thread so far, in µs (/proc/<pid>/schedstat: nanoseconds on a CPU). */
const mainThreadCpuUs = (pid) => Number(readFileSync(`/proc/${pid}/schedstat`, 'latin1').split(' ')[0]) / 1000;
/**
 * CPU time of a whole process so far, in µs: every thread's time on a CPU (/proc/<pid>/task/<tid>/schedstat,
 * nanoseconds). Not /proc/<pid>/stat's utime + stime, in clock ticks of 10 ms: a worker that
 * wakes for a moment is charged a whole tick when the tick falls then, which read 0.2–1% of a core
 * for 8 idle workers in runs of 5 s.
 */
const processCpuUs = (pid) =>
  readdirSync(`/proc/${pid}/task`).reduce((sum, tid) => {
    try {
      return sum + Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'latin1').split(' ')[0]) / 1000;
    } catch {
      return sum; // a thread that ended since the listing
    }
  }, 0);
/** This process's children (the workers: each exec'd in place from its launch chain). */
const childPids = () =>
  readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        return Number(readFileSync(`/proc/${pid}/stat`, 'latin1').split(') ')[1].split(' ')[1]) === process.pid;
      } catch {
        return false;
      }
    });

/**
 * The steps of a sequence of marks: from each mark to the next. A label seen again (a round trip
 * inside the start, a layer's self-test entering its isolate) is folded into the step it is in.
 */
/** Each phase's duration in one run: from the first time its first mark was taken to the first time its last one was. */
/** Each phase of `table` in one run: from one mark to another, each its first occurrence, its n-th as `label#n`, its last as `label#last`. */
function phases(marks, table) {
  const at = new Map();
  const seen = new Map();
  for (const [label, time] of marks) {
    const n = (seen.get(label) ?? 0) + 1;
    seen.set(label, n);
    if (n === 1) at.set(label, time);
    at.set(`${label}#${n}`, time);
    at.set(`${label}#last`, time);
  }
  return table.map(([name, from, to]) => [name, at.has(from) && at.has(to) ? (at.get(to) - at.get(from)) / 1000 : undefined]);
}

function medianPhases(runs) {
  return runs[0].map(([name], i) => {
    const values = runs.map((run) => run[i][1]).filter((us) => us !== undefined);
    return { phase: name, us: values.length === 0 ? undefined : median(values) };
  });
}

function steps(marks) {
  const seen = new Set();
  const firsts = marks.filter(([label]) => !seen.has(label) && seen.add(label));
  return firsts.slice(1).map(([label, at], i) => [`${firsts[i][0]} → ${label}`, (at - firsts[i][1]) / 1000]);
}

/** Median of each step over runs that have the same steps; the runs that differ are counted. */
function medianSteps(runs) {
  const byName = new Map();
  for (const run of runs) for (const [name, us] of run) (byName.get(name) ?? byName.set(name, []).get(name)).push(us);
  return [...byName]
    .filter(([, values]) => values.length >= runs.length / 2)
    .map(([name, values]) => ({ step: name, us: median(values), runs: values.length }));
}

recordTimeline();

// Cold: IsolatedRuntime.start with every default layer under `sandbox: 'require'`, no spare.
const coldRuns = [];
const coldPhaseRuns = [];
const coldTotals = [];
for (let i = 0; i < COLD_RUNS + 1; i++) {
  await collectTimeline();
  const t0 = now();
  const rt = await IsolatedRuntime.start({ prewarm: false, sandbox: 'require' });
  await rt.eval('1+1');
  const t1 = now();
  const marks = [['call IsolatedRuntime.start', t0], ...(await collectTimeline(rt)).filter(([, at]) => at >= t0 && at <= t1), ['first 1+1 answered', t1]];
  marks.sort((a, b) => a[1] - b[1]);
  await rt.close();
  if (i === 0) continue; // the first start of a process loads the parent's modules
  coldRuns.push(steps(marks));
  coldPhaseRuns.push(phases(marks, COLD_PHASES));
  coldTotals.push((t1 - t0) / 1000);
}

// Warm: `eval('1+1')` on a started runtime, each round trip cut into its steps.
const rt = await IsolatedRuntime.start({ prewarm: false, sandbox: 'require' });
for (let i = 0; i < WARM_UP; i++) await rt.eval('1+1');
await collectTimeline(rt);
const calls = [];
for (let i = 0; i < ROUND_TRIPS; i++) {
  const t0 = now();
  await rt.eval('1+1');
  calls.push([t0, now()]);
}
const all = await collectTimeline(rt);
// What the worker's spin costs (src/worker/spin-policy.ts): its main thread's CPU per round trip,
// against the round trip's wall time.
// And the parent's (this process, all its threads): it spins for an answer it expects from a
// worker with a frame ring (src/isolated/worker-process.ts).
const cpuBefore = mainThreadCpuUs(rt.pid);
const parentBefore = process.cpuUsage();
const wallBefore = now();
for (let i = 0; i < ROUND_TRIPS; i++) await rt.eval('1+1');
const parentCpu = process.cpuUsage(parentBefore);
const burst = {
  wallUs: (now() - wallBefore) / 1000 / ROUND_TRIPS,
  workerCpuUs: (mainThreadCpuUs(rt.pid) - cpuBefore) / ROUND_TRIPS,
  parentCpuUs: (parentCpu.user + parentCpu.system) / ROUND_TRIPS,
};
await rt.close();
// And what it costs at rest: a pool of 8 ready workers, idle for 5 s.
const pool = await SandboxPool.start({ size: 8, sandbox: 'require' });
await pool.waitReady();
await new Promise((resolve) => setTimeout(resolve, 500));
const workers = childPids();
const idleBefore = workers.map(processCpuUs);
const idleWall = now();
await new Promise((resolve) => setTimeout(resolve, 5_000));
const idleCpuUs = workers.map(processCpuUs).reduce((sum, cpu, i) => sum + cpu - idleBefore[i], 0);
const idle = { workers: workers.length, percentOfACore: (100 * idleCpuUs) / ((now() - idleWall) / 1000) };
await pool.close();
const warmRuns = [];
const warmPhaseRuns = [];
let cursor = 0;
for (const [t0, t1] of calls) {
  while (cursor < all.length && all[cursor][1] < t0) cursor++;
  const inside = [];
  for (let j = cursor; j < all.length && all[j][1] <= t1; j++) inside.push(all[j]);
  const trip = [['call eval', t0], ...inside, ['answer delivered', t1]];
  warmRuns.push(steps(trip));
  warmPhaseRuns.push(phases(trip, WARM_PHASES));
}
const warmTotal = median(calls.map(([t0, t1]) => (t1 - t0) / 1000));

// An open + first 1+1 in a warm SandboxHost (WEB_POLYFILLS, require), each after an idle moment:
// what bench/density.mjs's open figure is made of.
const host = await SandboxHost.start({ tenant: 'timeline', maxIsolates: 10, sandbox: 'require', prewarm: false, bootstrap: [WEB_POLYFILLS] });
const watcher = await host.open();
const openOnce = async () => {
  const t0 = now();
  const opened = await host.open();
  const two = await opened.eval('1+1');
  const t1 = now();
  if (two !== 2) throw new Error(`1+1 gave ${String(two)}`);
  await opened.close();
  return [t0, t1];
};
for (let i = 0; i < 10; i++) {
  await new Promise((resolve) => setTimeout(resolve, IDLE_BEFORE_OPEN_MS));
  await openOnce();
}
await collectTimeline(watcher);
const openWindows = [];
for (let i = 0; i < OPENS; i++) {
  await new Promise((resolve) => setTimeout(resolve, IDLE_BEFORE_OPEN_MS));
  openWindows.push(await openOnce());
}
const openMarks = await collectTimeline(watcher);
await host.close();
const openPhaseRuns = openWindows.map(([t0, t1]) =>
  phases([['call open', t0], ...openMarks.filter(([, at]) => at >= t0 && at <= t1), ['answered', t1]], OPEN_PHASES),
);
const openTotal = median(openWindows.map(([t0, t1]) => (t1 - t0) / 1000));

const cold = medianSteps(coldRuns);
const warm = medianSteps(warmRuns);
const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${process.platform} ${process.arch}, Node ${process.version}`;
const results = {
  measured: new Date().toISOString().slice(0, 10),
  machine,
  cold: { total: median(coldTotals), phases: medianPhases(coldPhaseRuns), steps: cold },
  warm: { total: warmTotal, phases: medianPhases(warmPhaseRuns), steps: warm },
  openAfterIdle: { total: openTotal, idleMs: IDLE_BEFORE_OPEN_MS, opens: OPENS, phases: medianPhases(openPhaseRuns) },
  spin: { burst, idle },
};
writeFileSync(new URL(`./${outName}.json`, import.meta.url), `${JSON.stringify(results, null, 2)}\n`);

const fmt = (us) => (us >= 1000 ? `${(us / 1000).toFixed(2)} ms` : `${us.toFixed(1)} µs`);
const phaseTable = (title, total, phaseRows) => [
  `### ${title}: ${fmt(total)} (median)`,
  '',
  '| phase | median |',
  '| --- | ---: |',
  ...phaseRows.map((r) => `| ${r.phase} | ${r.us === undefined ? '—' : fmt(r.us)} |`),
  '',
];
const table = (title, total, rows, phaseRows) =>
  [
    ...phaseTable(title, total, phaseRows),
    'Step by step (from each mark to the next, as first taken in the run):',
    '',
    '| step | median |',
    '| --- | ---: |',
    ...rows.map((r) => `| ${r.step} | ${fmt(r.us)} |`),
    `| **sum of the step medians** | **${fmt(rows.reduce((s, r) => s + r.us, 0))}** |`,
    '',
  ].join('\n');
const markdown = [
  `Measured ${results.measured} on ${machine}. Marks from Strata's parent and worker on one monotonic clock.`,
  '',
  table(`Cold start: IsolatedRuntime.start (require, default layers) + first 1+1, ${COLD_RUNS} starts`, results.cold.total, cold, results.cold.phases),
  table(`Warm round trip: eval('1+1'), ${ROUND_TRIPS} round trips`, warmTotal, warm, results.warm.phases),
  ...phaseTable(
    `Open + first 1+1 in a warm SandboxHost (WEB_POLYFILLS), each after ${IDLE_BEFORE_OPEN_MS} ms idle, ${OPENS} opens`,
    openTotal,
    results.openAfterIdle.phases,
  ),
  '### What the worker and the parent spend waiting (each spins for what it expects when commands come back to back)',
  '',
  '| figure | value |',
  '| --- | ---: |',
  `| ${ROUND_TRIPS} round trips back to back: wall time per round trip | ${fmt(burst.wallUs)} |`,
  `| the same: the worker's main thread on a CPU per round trip (its work and its spin) | ${fmt(burst.workerCpuUs)} |`,
  `| the same: the parent on a CPU per round trip (its work and its spin) | ${fmt(burst.parentCpuUs)} |`,
  `| a pool of ${idle.workers} ready workers, idle for 5 s: their CPU | ${idle.percentOfACore.toFixed(2)}% of a core |`,
  '',
].join('\n');
writeFileSync(new URL(`./${outName}.md`, import.meta.url), markdown);
console.log(markdown);
console.log(`written: bench/${outName}.json, bench/${outName}.md`);
