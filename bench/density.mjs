// Density (issue 21's figures): what an idle session costs when sessions are isolates in one
// tenant's sandboxed worker (SandboxHost) instead of a worker process each (IsolatedRuntime.start),
// measured on this machine with WEB_POLYFILLS as every isolate's bootstrap, all layers required.
//
// Every scenario runs in a fresh child process of its own (`--scenario NAME`), so that one
// scenario's garbage never counts against the next; the child is "the host process" (it holds
// the SandboxHost objects), and the RSS of a point is its own (after gc) plus every worker's
// (VmRSS in /proc/<pid>/status), read after the sessions have idled for a moment.
//
//   latency   SandboxHost.start (cold, no spare), open + first `1+1` in a warm host (p50 / p95)
//             after the worker idled 100 ms, then back to back, then 1 ms apart in a worker with a
//             spare for each (the machine awake), and without a bootstrap;
//             and the warm `rt.eval('1+1')` round trip in a worker holding 1 isolate against one
//             in a worker holding 99 idle isolates beside it, in alternating batches.
//   host      N = 1, 10, 100, 1000 idle sessions of one tenant, in hosts of --per-worker isolates
//             each (opened in turn; a host is started when the last one is full); each session
//             ran one `1+1`, then idles. The slope of RSS over N is the marginal MiB per session.
//             Then every session is closed and the workers' RSS read again, before the hosts close.
//   process   the same with one worker process per session (IsolatedRuntime.start), N = 1, 10, 20.
//   tenants   --tenants tenants × 5 sessions, one host per tenant; it stops early (and says so)
//             when MemAvailable would fall under --reserve-gib or the time budget is spent.
//
// Usage (after `npx turbo run build`; `npm run bench:density` builds first):
//   node bench/density.mjs [--per-worker 100] [--max 1000] [--tenants 200] [--opens 200] [--reserve-gib 6]
// Prints a markdown table and writes bench/density-results.json, .md and bench/density.svg.
// Figures are never test assertions. About three to five minutes on 2 cores.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { renderDensityMarkdown, renderDensitySvg } from './report.mjs';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const SESSION_CHECKPOINTS = [1, 10, 100, 1000];
const PROCESS_CHECKPOINTS = [1, 10, 20];
const TENANT_CHECKPOINTS = [1, 10, 50, 100, 200];
const SESSIONS_PER_TENANT = 5;
const IDLE_NEIGHBOURS = 100;
const EVAL_BATCHES = 40;
const EVAL_PER_BATCH = 50;
const EVAL_WARMUP = 300;
const HOST_STARTS = 5;
const OPEN_WARMUP = 20;
// Opens in a warm worker with a spare for each: per round (after the spares are made), and rounds.
const WARM_OPENS_PER_ROUND = 12;
const WARM_OPEN_ROUNDS = 6;
// An open after the worker idled this long (untimed) finds the spare isolates it makes when idle
// (an agent platform's opens come between turns); back-to-back opens wait for them to be made.
const IDLE_BEFORE_OPEN_MS = 100;
const SETTLE_MS = 1500;
// The tenants scenario starts this many hosts at once (the machine has 2 cores).
const TENANT_START_CONCURRENCY = 2;
const TENANTS_BUDGET_MS = 150_000;
const SCENARIO_TIMEOUT_MS = 300_000;
const MAX_FAILURES = 10;
// Every session's options: the bench's other figures run with every default layer required.
const SANDBOX = 'require';
// What a worker's command line names (the file the parent starts), to find this run's workers.
const { WORKER_ENTRY } = await import('../packages/runtime/dist/src/isolated/worker-process.js');

const args = parseArgs(process.argv.slice(2));
if (args.scenario === undefined) await orchestrate(args);
else await runScenario(args);

// --- the parent: one child per scenario, then the files ------------------------------------

async function orchestrate(options) {
  const before = workerPids();
  const started = performance.now();
  const script = fileURLToPath(import.meta.url);
  const scenarios = {};
  for (const name of ['latency', 'host', 'process', 'tenants']) {
    process.stderr.write(`density: ${name}…\n`);
    const t0 = performance.now();
    const child = spawnSync(process.execPath, ['--expose-gc', script, '--scenario', name, ...forwardedArgs(options)], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      maxBuffer: 64 * MiB,
      timeout: SCENARIO_TIMEOUT_MS,
      killSignal: 'SIGKILL',
    });
    const lastLine = child.stdout.trim().split('\n').at(-1) ?? '';
    scenarios[name] =
      child.status === 0 && lastLine.startsWith('{')
        ? { ...JSON.parse(lastLine), seconds: (performance.now() - t0) / 1000 }
        : { failed: `exit ${child.status ?? child.signal}${child.error ? ` (${child.error.message})` : ''}: ${child.stdout.slice(-400)}` };
  }
  // Workers die with their parent (a parent-death signal), yet check: none of this run's remain.
  await sleep(500);
  const leftover = [...workerPids()].filter((pid) => !before.has(pid));
  const density = summarise(scenarios, options, { leftover, seconds: (performance.now() - started) / 1000 });
  writeFileSync(new URL('./density-results.json', import.meta.url), `${JSON.stringify(density, null, 2)}\n`);
  const markdown = renderDensityMarkdown(density);
  writeFileSync(new URL('./density-results.md', import.meta.url), markdown);
  writeFileSync(new URL('./density.svg', import.meta.url), renderDensitySvg(density));
  console.log(`\n${markdown}`);
  console.log('written: bench/density-results.json, bench/density-results.md, bench/density.svg');
  if (leftover.length > 0) {
    console.error(`density: worker processes left behind: ${leftover.join(', ')}`);
    process.exitCode = 1;
  }
}

/** The figures of the run, from what each scenario measured: slopes, totals, goals. */
function summarise(scenarios, options, { leftover, seconds }) {
  const { host, process: perProcess, tenants } = scenarios;
  const lineThrough = (curve) => (curve?.length >= 2 ? leastSquares(curve.map((p) => [p.n, p.totalMiB])) : undefined);
  const hostFit = lineThrough(host?.curve);
  const processFit = lineThrough(perProcess?.curve);
  const tenantFit = lineThrough(tenants?.curve);
  const head = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8', cwd: fileURLToPath(new URL('.', import.meta.url)) });
  return {
    node: process.version,
    date: new Date().toISOString(),
    // The figures move with the runtime's code: which commit they were measured on (uncommitted changes aside).
    commit: head.status === 0 ? head.stdout.trim() : undefined,
    machine: `${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, ${process.platform} ${process.arch}, ${(totalmem() / GiB).toFixed(1)} GiB`,
    memTotalMiB: totalmem() / MiB,
    sandbox: SANDBOX,
    bootstrap: 'WEB_POLYFILLS',
    perWorker: options.perWorker,
    seconds,
    leftoverWorkers: leftover,
    fits: {
      host: hostFit && { slopeMiB: hostFit.slope, interceptMiB: hostFit.intercept },
      process: processFit && { slopeMiB: processFit.slope, interceptMiB: processFit.intercept },
      tenants: tenantFit && { slopeMiB: tenantFit.slope, interceptMiB: tenantFit.intercept },
    },
    goals: { perSessionMiB: 5, perSessionGoalMiB: 3, thousandSessionsMiB: 8 * 1024, openP50Ms: 0.5, evalRatio: 1 },
    scenarios,
  };
}

function forwardedArgs(options) {
  return [
    '--per-worker',
    String(options.perWorker),
    '--max',
    String(options.max),
    '--tenants',
    String(options.tenants),
    '--opens',
    String(options.opens),
    '--reserve-gib',
    String(options.reserveGib),
  ];
}

// --- a child: one scenario ----------------------------------------------------------------

async function runScenario(options) {
  if (typeof globalThis.gc !== 'function') throw new Error('run through the parent: a scenario needs --expose-gc');
  const { SandboxHost, IsolatedRuntime } = await import('@strata/runtime');
  const { WEB_POLYFILLS } = await import('@strata/polyfills');
  const common = { sandbox: SANDBOX, prewarm: false, bootstrap: [WEB_POLYFILLS] };
  const tools = { SandboxHost, IsolatedRuntime, common };
  const scenario = { latency, host: hostCurve, process: processCurve, tenants: tenantSpread }[options.scenario];
  if (scenario === undefined) throw new Error(`unknown scenario ${options.scenario}`);
  const result = await scenario(tools, options);
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(0);
}

/** SandboxHost.start, open + first 1+1, and the warm eval round trip with 1 and 100 isolates. */
async function latency({ SandboxHost, common }, { opens }) {
  const notes = [];
  const startMs = [];
  for (let i = 0; i < HOST_STARTS; i++) {
    const t0 = performance.now();
    const host = await SandboxHost.start({ ...common, tenant: 'bench-start', maxIsolates: 1 });
    startMs.push(performance.now() - t0);
    await host.close();
  }

  // The same opens without a bootstrap: what the bootstrap's share of an open is.
  const bare = await SandboxHost.start({ ...common, bootstrap: [], tenant: 'bench-latency-bare', maxIsolates: 1 });
  const bareMs = [];
  for (let i = 0; i < OPEN_WARMUP + opens; i++) {
    const t0 = performance.now();
    const rt = await bare.open();
    await rt.eval('1+1');
    if (i >= OPEN_WARMUP) bareMs.push(performance.now() - t0);
    await rt.close();
  }
  await bare.close();

  const host = await SandboxHost.start({ ...common, tenant: 'bench-latency', maxIsolates: IDLE_NEIGHBOURS + 1 });
  const openOnce = async () => {
    const t0 = performance.now();
    const rt = await host.open();
    const two = await rt.eval('1+1');
    const ms = performance.now() - t0;
    if (two !== 2) throw new Error(`1+1 gave ${String(two)}`);
    await rt.close();
    return ms;
  };
  for (let i = 0; i < OPEN_WARMUP; i++) await openOnce();
  // The floor after the same idle moment, in turn with the opens (this VM's load drifts over all
  // three alike): a pipe round trip to another node process, and raw isolated-vm's evalSync('1+1')
  // on an isolate of this process. After an idle moment each costs many times what it does warm.
  const floor = await idleFloor();
  const openMs = [];
  const backToBackMs = [];
  const pipeAfterIdleUs = [];
  const evalAfterIdleUs = [];
  for (let i = 0; i < opens; i++) {
    await sleep(IDLE_BEFORE_OPEN_MS);
    openMs.push(await openOnce());
    await sleep(IDLE_BEFORE_OPEN_MS);
    if (i % 2 === 0) pipeAfterIdleUs.push(await floor.pipeRoundTripUs());
    else evalAfterIdleUs.push(floor.rawEvalUs());
  }
  const warmFloor = { pipeUs: [], evalUs: [] };
  for (let i = 0; i < opens; i++) {
    warmFloor.pipeUs.push(await floor.pipeRoundTripUs());
    warmFloor.evalUs.push(floor.rawEvalUs());
  }
  floor.close();
  for (let i = 0; i < opens; i++) backToBackMs.push(await openOnce());

  // Opens in a warm worker that has spares for all of them, 1 ms apart (the machine awake): each
  // round waits for the spares to be made, then opens WARM_OPENS_PER_ROUND isolates; the first of
  // a round comes after that idle moment and is left out.
  const warmHost = await SandboxHost.start({
    ...common,
    tenant: 'bench-latency-warm',
    maxIsolates: WARM_OPENS_PER_ROUND + 1,
    spareIsolates: WARM_OPENS_PER_ROUND,
  });
  const warmOpenMs = [];
  for (let round = 0; round < WARM_OPEN_ROUNDS; round++) {
    await sleep(WARM_OPENS_PER_ROUND * 60 + 1000);
    const opened = [];
    for (let i = 0; i < WARM_OPENS_PER_ROUND; i++) {
      await sleep(1);
      const t0 = performance.now();
      const warmRt = await warmHost.open();
      const two = await warmRt.eval('1+1');
      const elapsed = performance.now() - t0;
      if (two !== 2) throw new Error(`1+1 gave ${String(two)}`);
      if (i > 0) warmOpenMs.push(elapsed);
      opened.push(warmRt);
    }
    for (const warmRt of opened) await warmRt.close();
  }
  await warmHost.close();

  // The warm round trip in a worker holding one isolate and in one holding 100, in alternating
  // batches: the load of this shared machine drifts over both alike.
  const lone = await SandboxHost.start({ ...common, tenant: 'bench-eval-lone', maxIsolates: 1 });
  const loneRt = await lone.open();
  const rt = await host.open();
  const neighbours = [];
  for (let i = 0; i < IDLE_NEIGHBOURS - 1; i++) {
    const other = await host.open();
    await other.eval('1+1');
    neighbours.push(other);
  }
  const sharedWith = rt.report.sharedWith;
  if (sharedWith !== IDLE_NEIGHBOURS - 1)
    notes.push(`report.sharedWith was ${sharedWith} with ${IDLE_NEIGHBOURS} isolates open (expected ${IDLE_NEIGHBOURS - 1})`);
  const [alone, crowded] = await alternatingRoundTrips([loneRt, rt]);
  for (const other of neighbours) await other.close();
  await rt.close();
  await host.close();
  await lone.close();
  return {
    hostStartMs: percentiles(startMs),
    open: percentiles(openMs),
    idleBeforeOpenMs: IDLE_BEFORE_OPEN_MS,
    openBackToBack: percentiles(backToBackMs),
    openWarm: { ...percentiles(warmOpenMs), spares: WARM_OPENS_PER_ROUND },
    openWithoutBootstrap: percentiles(bareMs),
    floorAfterIdle: { pipeRoundTripUs: percentiles(pipeAfterIdleUs), rawEvalUs: percentiles(evalAfterIdleUs) },
    floorWarm: { pipeRoundTripUs: percentiles(warmFloor.pipeUs), rawEvalUs: percentiles(warmFloor.evalUs) },
    eval: { alone, crowded, idleNeighbours: IDLE_NEIGHBOURS - 1, batches: EVAL_BATCHES, perBatch: EVAL_PER_BATCH },
    sharedWith,
    notes,
  };
}

/**
 * What an open after an idle moment stands on, without Strata: a one-byte round trip through a
 * pipe to a node process that echoes it, and raw isolated-vm's evalSync('1+1') in this process.
 */
async function idleFloor() {
  const { default: ivm } = await import('isolated-vm');
  const isolate = new ivm.Isolate({ memoryLimit: 32 });
  const context = isolate.createContextSync();
  const echo = spawn(process.execPath, ['-e', 'process.stdin.on("data", (d) => process.stdout.write(d))'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const pipeRoundTripUs = () =>
    new Promise((resolve) => {
      const t0 = performance.now();
      echo.stdout.once('data', () => resolve((performance.now() - t0) * 1000));
      echo.stdin.write('x');
    });
  await pipeRoundTripUs();
  return {
    pipeRoundTripUs,
    rawEvalUs: () => {
      const t0 = performance.now();
      context.evalSync('1+1');
      return (performance.now() - t0) * 1000;
    },
    close: () => {
      echo.kill('SIGKILL');
      isolate.dispose();
    },
  };
}

/** Idle sessions of one tenant in hosts of `perWorker` isolates each, at N = 1, 10, 100, 1000. */
async function hostCurve({ SandboxHost, common }, { perWorker, max, reserveGib }) {
  const notes = [];
  const failures = [];
  const hosts = [];
  const sessions = [];
  const hostStartMs = [];
  const openMs = [];
  const openSession = async () => {
    let host = hosts.at(-1);
    if (host === undefined || host.isolates >= perWorker) {
      const t0 = performance.now();
      host = await SandboxHost.start({ ...common, tenant: 'bench-density', maxIsolates: perWorker });
      hostStartMs.push(performance.now() - t0);
      hosts.push(host);
    }
    const t0 = performance.now();
    const rt = await host.open();
    const two = await rt.eval('1+1');
    openMs.push(performance.now() - t0);
    if (two !== 2) throw new Error(`1+1 gave ${String(two)}`);
    sessions.push(rt);
  };
  const curve = [];
  for (const n of checkpointsUpTo(SESSION_CHECKPOINTS, max)) {
    while (sessions.length < n && failures.length < MAX_FAILURES && memAvailableBytes() > reserveGib * GiB) {
      try {
        await openSession();
      } catch (error) {
        failures.push(`session ${sessions.length + 1}: ${error.code ?? error.name}: ${error.message}`);
      }
    }
    if (sessions.length < n) {
      notes.push(`stopped at ${sessions.length} sessions (${failures.length} failed opens; MemAvailable ${(memAvailableBytes() / GiB).toFixed(1)} GiB)`);
      break;
    }
    curve.push({ n, hosts: hosts.length, ...(await settledRss(hosts.map((h) => h.pid))) });
    process.stderr.write(`density: ${n} sessions in ${hosts.length} hosts: ${curve.at(-1).totalMiB.toFixed(0)} MiB\n`);
  }
  const sharing = { sharedWith: sessions[0]?.report.sharedWith, isolatesOfFirstHost: hosts[0]?.isolates, tenant: sessions[0]?.report.tenant };
  const first = hosts[0];
  const firstFull = first === undefined ? undefined : rssMiB(first.pid);
  // Every session closed, the workers kept: what the workers give back.
  const t0 = performance.now();
  for (const rt of sessions.splice(0)) await rt.close();
  const closeAllMs = performance.now() - t0;
  const afterClose = { n: 0, hosts: hosts.length, ...(await settledRss(hosts.map((h) => h.pid))) };
  const stillOpen = hosts.reduce((s, h) => s + h.isolates, 0);
  if (stillOpen !== 0) notes.push(`${stillOpen} isolates still counted open after every session closed`);
  // The first worker filled again: memory kept after closing but reused is the allocator's, not a leak.
  let reuse;
  if (first !== undefined) {
    const closedMiB = rssMiB(first.pid);
    const again = [];
    for (let i = 0; i < perWorker && !first.closed; i++) {
      const rt = await first.open();
      await rt.eval('1+1');
      again.push(rt);
    }
    await settledRss([]);
    reuse = { isolates: again.length, fullMiB: firstFull, closedMiB, refilledMiB: rssMiB(first.pid) };
    for (const rt of again) await rt.close();
  }
  const pids = hosts.map((h) => h.pid);
  for (const host of hosts) await host.close();
  await sleep(200);
  const alive = pids.filter((pid) => existsSync(`/proc/${pid}`));
  if (alive.length > 0) notes.push(`workers alive after host.close(): ${alive.join(', ')}`);
  return {
    perWorker,
    curve,
    afterClose,
    closeAllMs,
    reuse,
    sharing,
    hostStartMs: percentiles(hostStartMs),
    open: percentiles(openMs),
    failures,
    notes,
  };
}

/** The same idle sessions, one worker process each (today's IsolatedRuntime.start). */
async function processCurve({ IsolatedRuntime, common }, { reserveGib }) {
  const notes = [];
  const failures = [];
  const runtimes = [];
  const startMs = [];
  const curve = [];
  for (const n of PROCESS_CHECKPOINTS) {
    while (runtimes.length < n && failures.length < MAX_FAILURES && memAvailableBytes() > reserveGib * GiB) {
      try {
        const t0 = performance.now();
        const rt = await IsolatedRuntime.start(common);
        const two = await rt.eval('1+1');
        startMs.push(performance.now() - t0);
        if (two !== 2) throw new Error(`1+1 gave ${String(two)}`);
        runtimes.push(rt);
      } catch (error) {
        failures.push(`runtime ${runtimes.length + 1}: ${error.code ?? error.name}: ${error.message}`);
      }
    }
    if (runtimes.length < n) {
      notes.push(`stopped at ${runtimes.length} runtimes`);
      break;
    }
    curve.push({ n, hosts: runtimes.length, ...(await settledRss(runtimes.map((rt) => rt.pid))) });
  }
  for (const rt of runtimes) await rt.close();
  return { curve, start: percentiles(startMs), failures, notes };
}

/** `tenants` tenants × 5 idle sessions, one host per tenant: the process count bounds the RSS. */
async function tenantSpread({ SandboxHost, common }, { tenants: wanted, reserveGib }) {
  const notes = [];
  const failures = [];
  const hosts = [];
  const sessions = [];
  const curve = [];
  const started = performance.now();
  let perTenantBytes = 100 * MiB; // a first guess, replaced by what the first checkpoint shows
  let stopReason;
  const startTenant = async (i) => {
    const host = await SandboxHost.start({ ...common, tenant: `bench-tenant-${i}`, maxIsolates: SESSIONS_PER_TENANT });
    hosts.push(host);
    for (let s = 0; s < SESSIONS_PER_TENANT; s++) {
      const rt = await host.open();
      if ((await rt.eval('1+1')) !== 2) throw new Error('1+1 is not 2');
      sessions.push(rt);
    }
  };
  let next = 0;
  for (const checkpoint of checkpointsUpTo(TENANT_CHECKPOINTS, wanted)) {
    while (next < checkpoint && stopReason === undefined) {
      const batch = Math.min(TENANT_START_CONCURRENCY, checkpoint - next);
      if (memAvailableBytes() - batch * perTenantBytes < reserveGib * GiB) {
        stopReason = `MemAvailable would fall under the ${reserveGib} GiB kept free for the rest of the machine`;
      } else if (performance.now() - started > TENANTS_BUDGET_MS) {
        stopReason = `the scenario's time budget (${TENANTS_BUDGET_MS / 1000} s) was spent`;
      } else if (failures.length >= MAX_FAILURES) {
        stopReason = `${failures.length} tenants failed to start`;
      } else {
        const ids = Array.from({ length: batch }, (_, k) => next + k);
        next += batch;
        const outcomes = await Promise.allSettled(ids.map(startTenant));
        outcomes.forEach((o, k) => {
          if (o.status === 'rejected') failures.push(`tenant ${ids[k]}: ${o.reason?.code ?? o.reason?.name}: ${o.reason?.message}`);
        });
      }
    }
    if (hosts.length === 0) break;
    const point = { n: hosts.length, sessions: sessions.length, ...(await settledRss(hosts.map((h) => h.pid))) };
    curve.push(point);
    perTenantBytes = Math.max(perTenantBytes, (point.workersMiB / point.n) * MiB);
    process.stderr.write(`density: ${point.n} tenants, ${point.sessions} sessions: ${point.totalMiB.toFixed(0)} MiB\n`);
    if (stopReason !== undefined) break;
  }
  if (stopReason !== undefined) notes.push(`stopped at ${hosts.length} of ${wanted} tenants: ${stopReason}`);
  const tenantsSeen = new Set(hosts.map((h) => h.report.tenant));
  if (tenantsSeen.size !== hosts.length) notes.push(`${hosts.length} hosts reported only ${tenantsSeen.size} distinct tenants`);
  const badSharing = sessions.filter((rt) => rt.report.sharedWith !== SESSIONS_PER_TENANT - 1).length;
  if (badSharing > 0) notes.push(`${badSharing} sessions reported a sharedWith other than ${SESSIONS_PER_TENANT - 1}`);
  for (const host of hosts) await host.close();
  return { wanted, reached: hosts.length, sessionsPerTenant: SESSIONS_PER_TENANT, curve, seconds: (performance.now() - started) / 1000, failures, notes };
}

// --- measuring ------------------------------------------------------------------------------

/** The checkpoints under `last`, then `last` itself. */
function checkpointsUpTo(checkpoints, last) {
  return [...checkpoints.filter((c) => c < last), last];
}

/** RSS of this process (after gc) and of the workers, once the sessions idled for a moment. */
async function settledRss(pids) {
  globalThis.gc();
  await sleep(SETTLE_MS);
  globalThis.gc();
  const parentMiB = rssMiB(process.pid);
  const workersMiB = pids.reduce((sum, pid) => sum + rssMiB(pid), 0);
  return { parentMiB, workersMiB, totalMiB: parentMiB + workersMiB };
}

function rssMiB(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'latin1');
  const kib = /VmRSS:\s+(\d+)\s+kB/.exec(status);
  if (kib === null) throw new Error(`no VmRSS for process ${pid}`);
  return Number(kib[1]) / 1024;
}

function memAvailableBytes() {
  const kib = /MemAvailable:\s+(\d+)\s+kB/.exec(readFileSync('/proc/meminfo', 'latin1'));
  return kib === null ? 0 : Number(kib[1]) * 1024;
}

/** The pids of the workers this checkout's runtime starts (their command line names its entry). */
function workerPids() {
  const pids = new Set();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'latin1').includes(WORKER_ENTRY)) pids.add(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** `rt.eval('1+1')` round trips on each warm session, one at a time, in batches taken in turn. */
async function alternatingRoundTrips(sessions) {
  for (const rt of sessions) for (let i = 0; i < EVAL_WARMUP; i++) await rt.eval('1+1');
  const times = sessions.map(() => []);
  for (let batch = 0; batch < EVAL_BATCHES; batch++) {
    // Each session first in every other batch: neither always follows the other.
    const order = batch % 2 === 0 ? [...sessions.keys()] : [...sessions.keys()].reverse();
    for (const which of order) {
      for (let i = 0; i < EVAL_PER_BATCH; i++) {
        const t0 = performance.now();
        await sessions[which].eval('1+1');
        times[which].push(performance.now() - t0);
      }
    }
  }
  return times.map(percentiles);
}

function percentiles(values) {
  if (values.length === 0) return { count: 0 };
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { p50: at(0.5), p95: at(0.95), max: sorted.at(-1), count: sorted.length };
}

/** Least-squares line of y over x. */
function leastSquares(points) {
  const meanX = points.reduce((s, [x]) => s + x, 0) / points.length;
  const meanY = points.reduce((s, [, y]) => s + y, 0) / points.length;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - meanX) * (y - meanY);
    den += (x - meanX) ** 2;
  }
  const slope = num / den;
  return { slope, intercept: meanY - slope * meanX };
}

function parseArgs(argv) {
  const parsed = { perWorker: 100, max: 1000, tenants: 200, opens: 200, reserveGib: 6, scenario: undefined };
  const numeric = { '--per-worker': 'perWorker', '--max': 'max', '--tenants': 'tenants', '--opens': 'opens', '--reserve-gib': 'reserveGib' };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    if (flag === '--scenario') parsed.scenario = value;
    else if (flag in numeric) {
      const number = Number(value);
      if (!Number.isFinite(number) || number <= 0) throw new Error(`${flag} needs a positive number (got ${value})`);
      parsed[numeric[flag]] = number;
    } else throw new Error(`unknown option ${flag}; options: ${Object.keys(numeric).join(', ')}`);
  }
  return parsed;
}
