// npm run load: the load and fault script. RUNS runs (default 10 000) through a SandboxPool of 4
// with the default layers (sandbox: 'require'); one run in ten is a hostile guest; meanwhile
// workers are killed (SIGKILL) or stopped (SIGSTOP) at random. At the end: every run accounted
// for (ok / crashed / timed out), p50 and p99 latency, and no leaked process or file descriptor.
// With isolates per worker above 1, the pool's workers are SandboxHosts shared by the runs of one
// tenant (three tenants take turns): a fault in one worker reaches its neighbours, never another
// tenant's, and every answer is checked against the run that asked (no answer reaches another
// isolate's caller).
//
//   node bench/load-fault.mjs [runs] [concurrency] [isolates per worker]
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { IsolatedRuntime, SandboxPool } from '@strata/runtime';

const RUNS = Number(process.argv[2] ?? 10_000);
const CONCURRENCY = Number(process.argv[3] ?? 4);
const ISOLATES_PER_WORKER = Number(process.argv[4] ?? 1);
const TENANTS = ['acme', 'globex', 'initech'];
const POOL_SIZE = 4;
const FAULT_EVERY_MS = 1_000; // a fault is tried this often...
const FAULT_CHANCE = 0.5; // ...and happens this often

/** Live children of this process (workers), from /proc. */
function childPids() {
  const children = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === process.pid && fields[0] !== 'Z') children.push(Number(entry));
    } catch {
      // ended while we looked
    }
  }
  return children;
}
const openFds = () => readdirSync('/proc/self/fd').length;
/** What each open fd is (for the leak report). */
function fdTargets() {
  const out = new Map();
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      out.set(fd, readlinkSync(`/proc/self/fd/${fd}`));
    } catch {
      // the fd used to read the directory is gone already
    }
  }
  return out;
}

// What a run does. Ordinary: a small program calling a host function. Hostile: each contained
// differently; `expect` is the error class that containing it produces.
// Each run's answer names the run: an answer delivered to another run's caller is caught.
const ORDINARY = { code: (i) => `let s = 0; for (let i = 0; i < 1000; i++) s += price(i % 7); [${i}, s]` };
const HOSTILE = [
  { name: 'endless loop', code: 'for (;;) {}', expect: 'RuntimeTimeout' },
  { name: 'heap bomb', code: 'const a = []; for (;;) a.push(new Array(1e6).fill(1))', expect: 'HeapLimitExceeded' },
  { name: 'buffer bomb', code: 'new Uint8Array(2 ** 31)', expect: 'JsError' },
  { name: 'deep recursion', code: 'const f = (n) => f(n + 1) + 1; f(0)', expect: 'JsError' },
  { name: 'host-call flood', code: 'for (;;) price(1)', expect: 'WorkerCrashed' },
  { name: 'output flood', code: 'for (let i = 0; i < 1e4; i++) console.log("x".repeat(1000)); 1', expect: 'ok' },
  { name: 'escape attempt', code: "price.constructor.constructor('return process')()", expect: 'JsError' },
  { name: 'never settles', code: 'new Promise(() => {})', expect: 'PromiseNeverSettled' },
  { name: 'V8 abort', code: 'new Array(2 ** 32 - 1).fill(0)', expect: 'WorkerCrashed', rare: true },
];

function pickRun(i) {
  if (i % 10 !== 9) return { kind: 'ordinary', code: ORDINARY.code(i) };
  // The V8 abort takes seconds to happen: one in fifty hostile runs.
  const hostile = (i / 10) % 50 === 49 ? HOSTILE.find((h) => h.rare) : HOSTILE.filter((h) => !h.rare)[Math.floor(i / 10) % (HOSTILE.length - 1)];
  return { kind: hostile.name, code: hostile.code, expect: hostile.expect };
}

// The first worker spawn of a process leaves one /dev/null open for good (seen with strace; once
// per process, not per worker): one runtime is started and closed before the baseline is taken.
await (await IsolatedRuntime.start({ prewarm: false, sandbox: 'require' })).close();
const fdsBefore = openFds();
const fdTargetsBefore = fdTargets();
const started = performance.now();
const pool = await SandboxPool.start({
  size: POOL_SIZE,
  sandbox: 'require',
  timeout: 1_000,
  requestTimeout: 3_000,
  maxMemory: 256 * 1024 * 1024,
  maxHeapSize: 64 * 1024 * 1024,
  maxHostCalls: 2_000,
  crashBudget: null,
  isolatesPerWorker: ISOLATES_PER_WORKER,
});
await pool.waitReady(120_000);

const outcomes = { ok: 0, contained: 0, crashed: 0, timedOut: 0, unexpected: 0 };
const byKind = new Map();
const unexpected = [];
const latencies = [];
const faults = { SIGKILL: 0, SIGSTOP: 0 };

// Faults: a random child killed or stopped now and then. A stopped worker is found by its hard
// deadline (requestTimeout) when it is used, or sits stopped in the pool until then.
const faulter = setInterval(() => {
  if (Math.random() > FAULT_CHANCE) return;
  const pids = childPids();
  if (pids.length === 0) return;
  const pid = pids[Math.floor(Math.random() * pids.length)];
  const signal = Math.random() < 0.5 ? 'SIGKILL' : 'SIGSTOP';
  try {
    process.kill(pid, signal);
    faults[signal]++;
  } catch {
    // gone already
  }
}, FAULT_EVERY_MS);

function account(kind, outcome) {
  outcomes[outcome]++;
  const entry = byKind.get(kind) ?? { ok: 0, contained: 0, crashed: 0, timedOut: 0, unexpected: 0 };
  entry[outcome]++;
  byKind.set(kind, entry);
}

async function oneRun(i) {
  const run = pickRun(i);
  const t0 = performance.now();
  let rt;
  try {
    rt = await pool.checkout(ISOLATES_PER_WORKER > 1 ? { tenant: TENANTS[i % TENANTS.length] } : {});
    rt.bindFunction('price', (n) => (n % 2 === 0 ? 2 : 4));
    const value = await rt.eval(run.code);
    if (run.kind === 'ordinary') {
      // 1000 prices over i % 7: 142 rounds of 2+4+2+4+2+4+2 = 20, then 2+4+2+4+2+4 for the last 6.
      const right = Array.isArray(value) && value[0] === i && value[1] === 142 * 20 + 18;
      account(run.kind, right ? 'ok' : 'unexpected');
      if (!right && unexpected.length < 20) unexpected.push(`ordinary run ${i}: answered ${JSON.stringify(value)}`);
    } else account(run.kind, run.expect === 'ok' ? 'contained' : 'unexpected');
  } catch (error) {
    const name = error?.name ?? String(error);
    if (name === 'WorkerCrashed') account(run.kind, run.expect === 'WorkerCrashed' ? 'contained' : 'crashed');
    else if (name === 'RuntimeTimeout') account(run.kind, run.expect === 'RuntimeTimeout' ? 'contained' : 'timedOut');
    else if (name === run.expect) account(run.kind, 'contained');
    else {
      account(run.kind, 'unexpected');
      if (unexpected.length < 20) unexpected.push(`${run.kind}: ${name}: ${String(error?.message).slice(0, 200)}`);
    }
  } finally {
    await rt?.close();
    latencies.push(performance.now() - t0);
  }
}

let next = 0;
let done = 0;
const progress = setInterval(() => {
  const s = pool.stats();
  console.error(`… ${done}/${RUNS} runs, pool ready ${s.ready} starting ${s.starting} cold starts ${s.coldStarts} discarded ${s.discarded}`);
}, 10_000);
await Promise.all(
  Array.from({ length: CONCURRENCY }, async () => {
    while (next < RUNS) {
      const i = next++;
      await oneRun(i);
      done++;
    }
  }),
);
clearInterval(faulter);
clearInterval(progress);
const stats = pool.stats();
await pool.close();
// Stopped workers die with SIGKILL like the rest; give the kernel a moment to reap.
for (let i = 0; i < 100 && childPids().length > 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
for (let i = 0; i < 40 && openFds() > fdsBefore; i++) await new Promise((resolve) => setTimeout(resolve, 50));

latencies.sort((a, b) => a - b);
const pct = (p) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))].toFixed(1);
const accounted = Object.values(outcomes).reduce((a, b) => a + b, 0);
const seconds = ((performance.now() - started) / 1000).toFixed(0);
console.log(
  `load and fault: ${RUNS} runs, ${CONCURRENCY} at a time, through a SandboxPool of ${POOL_SIZE} (default layers, sandbox 'require'${
    ISOLATES_PER_WORKER > 1 ? `, ${ISOLATES_PER_WORKER} isolates per worker, ${TENANTS.length} tenants` : ''
  }), in ${seconds} s`,
);
console.log(`faults injected: ${faults.SIGKILL} SIGKILL, ${faults.SIGSTOP} SIGSTOP`);
console.log(
  `accounted for: ${accounted} of ${RUNS} — ok ${outcomes.ok}, hostile contained ${outcomes.contained}, crashed ${outcomes.crashed}, timed out ${outcomes.timedOut}, unexpected ${outcomes.unexpected}`,
);
for (const [kind, entry] of byKind)
  console.log(
    `  ${kind.padEnd(16)} ${Object.entries(entry)
      .filter(([, n]) => n > 0)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}`,
  );
for (const line of unexpected) console.log(`  unexpected: ${line}`);
console.log(`latency (checkout to result, closed): p50 ${pct(50)} ms, p99 ${pct(99)} ms, max ${latencies.at(-1).toFixed(1)} ms`);
console.log(
  `pool: ${stats.checkouts} checkouts, ${stats.coldStarts} cold starts, ${stats.discarded} ready workers discarded (died waiting), ${stats.failedStarts} failed starts`,
);
console.log(`leaks: ${childPids().length} child processes left, ${openFds() - fdsBefore} file descriptors more than at the start`);
for (const [fd, target] of fdTargets())
  if (fdTargetsBefore.get(fd) !== target) console.log(`  fd ${fd} -> ${target} (was ${fdTargetsBefore.get(fd) ?? 'closed'})`);
const ok = accounted === RUNS && outcomes.unexpected === 0 && childPids().length === 0 && openFds() <= fdsBefore;
console.log(ok ? 'result: every run accounted for, nothing unexpected, nothing leaked' : 'result: FAILED (see above)');
process.exitCode = ok ? 0 : 1;
