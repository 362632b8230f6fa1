// npm run bench: Strata's overheads measured side by side with the floor they stand on, in one
// run, as ratios. Medians of batches, after a warm-up; never used as test assertions.
import { existsSync, writeFileSync, readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import ivm from 'isolated-vm';
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { IsolatedRuntime, Runtime, SandboxPool } from '@strata/runtime';
import { AgentSandbox } from '@strata/agent';
import { renderMarkdown, renderSvg, formatValue } from './report.mjs';

const BATCHES = 30;
const PER_BATCH = 200;
// The raw baseline does the same work as Runtime.eval: the same time limit, the result copied out.
const TIMEOUT = 30_000;

// Warm-up: at least this long and PER_BATCH * 3 calls, so that the host's own code is optimized
// before the first batch (600 calls left the first figure of a run 1.4× slower than the same
// figure measured again later in the process).
const WARM_UP_MS = 500;

async function warmUp(...fns) {
  const until = performance.now() + WARM_UP_MS;
  for (let i = 0; i < PER_BATCH * 3 || performance.now() < until; i++) for (const fn of fns) await fn();
}

async function measure(fn) {
  await warmUp(fn);
  const samples = [];
  for (let b = 0; b < BATCHES; b++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < PER_BATCH; i++) await fn();
    samples.push(Number(process.hrtime.bigint() - start) / 1000 / PER_BATCH);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)];
}

const isolate = new ivm.Isolate({ memoryLimit: 128 });
const context = isolate.createContextSync();
context.global.setSync('inc', new ivm.Callback((x) => x + 1));
const context2Isolate = new ivm.Isolate({ memoryLimit: 128 });
const context2 = context2Isolate.createContextSync();
const rt = await Runtime.start();
rt.bindFunction('inc', (x) => x + 1);

/**
 * Both sides in alternating batches (one of each per round, the order swapped every round), so
 * that this VM's drift, which moves a whole run by a third within minutes, falls on both alike:
 * measured one after the other, `1+1` read 1.94× in one run and 1.36× in another.
 */
async function measurePair(a, b) {
  await warmUp(a, b);
  const batch = async (fn) => {
    const start = process.hrtime.bigint();
    for (let i = 0; i < PER_BATCH; i++) await fn();
    return Number(process.hrtime.bigint() - start) / 1000 / PER_BATCH;
  };
  const samples = [[], []];
  for (let round = 0; round < BATCHES; round++) {
    const order = round % 2 === 0 ? [0, 1] : [1, 0];
    for (const side of order) samples[side].push(await batch(side === 0 ? a : b));
  }
  return samples.map((s) => s.sort((x, y) => x - y)[Math.floor(s.length / 2)]);
}

const rows = [];
async function compare(name, goal, raw, strata, note) {
  const [rawUs, strataUs] = await measurePair(raw, strata);
  rows.push({ name, rawUs, strataUs, ratio: strataUs / rawUs, goal, note });
}

await compare(
  'eval "1+1"',
  1.5,
  () => context.evalSync('1+1', { copy: true, timeout: TIMEOUT }),
  () => rt.eval('1+1'),
);
await compare(
  'eval returning an object',
  1.5,
  () => context.evalSync('({ a: [1, 2, 3], b: "x" })', { copy: true, timeout: TIMEOUT }),
  () => rt.eval('({ a: [1, 2, 3], b: "x" })'),
);
{
  // The least any check before the copy needs with isolated-vm: the completion as a reference,
  // then one call that hands it back copied (the check itself left out). Strata's walk runs in that call.
  const handBack = context.evalSync('(function (value) { return [0, value]; })', { reference: true });
  await compare(
    'eval returning an object, against two raw entries (a reference, then a call returning it copied)',
    undefined,
    () =>
      handBack.applySync(undefined, [context.evalSync('({ a: [1, 2, 3], b: "x" })', { reference: true, timeout: TIMEOUT }).derefInto()], {
        result: { copy: true },
      }),
    () => rt.eval('({ a: [1, 2, 3], b: "x" })'),
    '(what checking before the copy costs beyond its floor)',
  );
}
await compare(
  'guest -> host -> guest call',
  1.5,
  () => context.evalSync('inc(1)', { copy: true, timeout: TIMEOUT }),
  () => rt.eval('inc(1)'),
);
{
  // Per-call cost of host functions inside one eval: 1000 calls each.
  const loop = '{ let s = 0; for (let i = 0; i < 1000; i++) s = inc(s); s }';
  const [rawLoopUs, strataLoopUs] = await measurePair(
    () => context.evalSync(loop, { copy: true, timeout: TIMEOUT }),
    () => rt.eval(loop),
  );
  const rawUs = rawLoopUs / 1000;
  const strataUs = strataLoopUs / 1000;
  rows.push({ name: 'host call inside a loop (per call)', rawUs, strataUs, ratio: strataUs / rawUs, goal: 1.5 });
}

await rt.close();
isolate.dispose();

// --- IsolatedRuntime and SandboxPool: the figures of docs/design.md §7 -------------------------
const floorScript = fileURLToPath(new URL('./floor-process.mjs', import.meta.url));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const COLD_RUNS = 15;
const strata = []; // { figure, value, unit, floor?, floorName?, goal?, met? }
const sideBySide = new Map(); // figure -> { unit, cells: { [alternative]: value } }
const cell = (figure, unit, alternative, value) => {
  const row = sideBySide.get(figure) ?? { figure, unit, cells: {} };
  row.cells[alternative] = value;
  sideBySide.set(figure, row);
};
const FIG = {
  cold: 'fresh sandbox + first 1+1',
  fresh10: 'fresh sandbox + 10 small commands',
  warm: 'warm eval round trip',
  idleRss: 'idle sandbox RSS',
  cpuKernel: 'CPU-bound kernel',
};
const rss = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))[1]) / 1024;

// The same kernel everywhere (the alternatives module exports it when installed).
let alternatives;
try {
  alternatives = await import('./alternatives/measure.mjs');
} catch (error) {
  alternatives = undefined;
  console.error(`(alternatives not measured: ${error.message.split('\n')[0]} — run \`npm ci --prefix bench/alternatives\`)`);
}
const CPU_KERNEL =
  alternatives?.CPU_KERNEL ??
  'let n = 0; for (let i = 2; i < 200000; i++) { let p = true; for (let d = 2; d * d <= i; d++) if (i % d === 0) { p = false; break; } if (p) n++; } n';

// The floor is started as the worker is: on Linux with posix_spawn (the spawn addon), not with
// node:child_process, whose fork of this process (150 MiB by now) would cost the floor alone
// about 10 ms (the spawn row below).
const { spawnWorkerChild } = await import('../packages/runtime/dist/src/isolated/worker-child.js');
/** A child's output drained; its exit code and signal once it has ended. */
function untilClosed(child) {
  for (const stream of [child.frames, child.stderr]) stream.resume();
  return new Promise((resolve) => child.onClose((...end) => resolve(end)));
}
async function runFloorProcess() {
  if (process.platform !== 'linux') return void spawnSync(process.execPath, [floorScript], { stdio: ['ignore', 'pipe', 'inherit'] });
  const child = await spawnWorkerChild(process.execPath, [floorScript], 'posix_spawn');
  const [code] = await untilClosed(child);
  if (code !== 0) throw new Error(`the floor process exited with ${code}`);
}
{
  const floor = [];
  const cold = [];
  for (let i = 0; i < COLD_RUNS + 1; i++) {
    let t0 = performance.now();
    await runFloorProcess();
    if (i > 0) floor.push(performance.now() - t0);
    t0 = performance.now();
    const irt = await IsolatedRuntime.start({ prewarm: false, sandbox: 'require' });
    await irt.eval('1+1');
    if (i > 0) cold.push(performance.now() - t0);
    await irt.close();
  }
  const f = median(floor) * 1000;
  const c = median(cold) * 1000;
  rows.push({
    name: 'cold IsolatedRuntime.start (require, default layers) + first 1+1 (vs node + isolated-vm + isolate + eval)',
    rawUs: f,
    strataUs: c,
    ratio: c / f,
    goal: 1.3,
  });
  strata.push({
    figure: 'cold IsolatedRuntime.start (all default layers, require) + first 1+1',
    value: c,
    unit: 'µs',
    floor: f,
    floorName: 'node + isolated-vm + isolate + eval, a process',
    goal: '≤ 1.3× the floor',
    met: c / f <= 1.3,
  });
  cell(FIG.cold, 'µs', 'Strata (cold)', c);
}
// A parent on Node 22 (hosts/node22) against one on Node 24, each in its own process running the
// same loop: the worker is the same Node 24, so this is what the older parent costs, if anything.
{
  const node22 = fileURLToPath(new URL(`../hosts/node22/node_modules/node-${process.platform}-${process.arch}/bin/node`, import.meta.url));
  const script = fileURLToPath(new URL('./parent-start.mjs', import.meta.url));
  const measureOn = (node) => {
    const ran = spawnSync(node, [script, String(COLD_RUNS)], { encoding: 'utf8', cwd: fileURLToPath(new URL('.', import.meta.url)) });
    return ran.status === 0 ? JSON.parse(ran.stdout.trim().split('\n').pop()) : undefined;
  };
  const on24 = measureOn(process.execPath);
  const on22 = existsSync(node22) ? measureOn(node22) : undefined;
  if (on24 === undefined || on22 === undefined) {
    console.error('(the Node 22 parent is not measured: run `npm ci --prefix hosts/node22`)');
  } else {
    rows.push({
      name: `import @strata/runtime, parent on Node 22 (vs Node 24)`,
      rawUs: on24.importMs * 1000,
      strataUs: on22.importMs * 1000,
      ratio: on22.importMs / on24.importMs,
      goal: undefined,
      absoluteGoalUs: Infinity,
      unit: 'µs',
    });
    rows.push({
      name: `cold IsolatedRuntime.start (require) + first 1+1, parent on Node 22 (vs Node 24)`,
      rawUs: on24.startMs * 1000,
      strataUs: on22.startMs * 1000,
      ratio: on22.startMs / on24.startMs,
      goal: undefined,
      absoluteGoalUs: Infinity,
      unit: 'µs',
    });
  }
}
// The parent's own spawn, the part of a cold start before the child's first instruction: a fork
// (node:child_process, how an application starts a process) against posix_spawn (the spawn addon
// the worker and the floor above are started with on Linux), of strata-exec printing its usage,
// alternating, from this process.
if (process.platform === 'linux') {
  const { execHelperPath } = await import('../packages/runtime/dist/src/native/native-paths.js');
  const spawnOnce = async (method) => {
    const t0 = performance.now();
    const child = await spawnWorkerChild(execHelperPath(), [], method);
    const ms = performance.now() - t0;
    await untilClosed(child);
    return ms;
  };
  const forked = [];
  const spawned = [];
  for (let i = 0; i < COLD_RUNS + 1; i++) {
    const f = await spawnOnce('child_process');
    const s = await spawnOnce('posix_spawn');
    if (i > 0) {
      forked.push(f);
      spawned.push(s);
    }
  }
  const f = median(forked) * 1000;
  const s = median(spawned) * 1000;
  rows.push({
    name: `the parent's spawn of a small program from this ${rss(process.pid).toFixed(0)} MiB process: posix_spawn (vs node:child_process's fork)`,
    rawUs: f,
    strataUs: s,
    ratio: s / f,
    goal: undefined,
    absoluteGoalUs: Infinity,
    note: '(the fork the worker no longer pays, nor the floor above)',
    unit: 'µs',
  });
}
// The price of each layer: cold starts with each switched on and off (probes are cached per process,
// as in any long-running host, so the first start of each configuration is a warm-up).
{
  const configurations = [
    ['no layers', []],
    ['seccomp', [{ module: '@strata/layer-seccomp/layer' }]],
    ['landlock', [{ module: '@strata/layer-landlock/layer' }]],
    ['emptyroot', [{ module: '@strata/layer-emptyroot/layer' }]],
    ['landlock + seccomp', [{ module: '@strata/layer-landlock/layer' }, { module: '@strata/layer-seccomp/layer' }]],
    [
      'emptyroot + landlock + seccomp (the Linux defaults)',
      [{ module: '@strata/layer-emptyroot/layer' }, { module: '@strata/layer-landlock/layer' }, { module: '@strata/layer-seccomp/layer' }],
    ],
    ['clock', [{ module: '@strata/layer-clock/layer', options: { at: 0, seed: 1 } }]],
  ];
  const baseline = [];
  for (const [name, layers] of configurations) {
    const times = [];
    for (let i = 0; i < COLD_RUNS + 1; i++) {
      const t0 = performance.now();
      // Each configuration exactly (replaceDefaultLayers): `layers` alone adds to the defaults.
      const irt = await IsolatedRuntime.start({ prewarm: false, sandbox: 'auto', replaceDefaultLayers: true, layers });
      await irt.eval('1+1');
      if (i > 0) times.push(performance.now() - t0);
      await irt.close();
    }
    const ms = median(times);
    if (name === 'no layers') baseline.push(ms);
    rows.push({
      name: `cold start + first 1+1 with layers: ${name}`,
      rawUs: baseline[0] * 1000,
      strataUs: ms * 1000,
      ratio: ms / baseline[0],
      goal: undefined,
      absoluteGoalUs: Infinity,
      unit: 'µs',
    });
  }
}
// The pool: each checkout takes a ready worker (the one readied last); the next is measured once
// the pool is full again.
// Beside it, what a fresh worker's first commands stand on: a node process started with the
// pool's refill, reading its pipe synchronously as a worker does, waited for as long, then ten
// one-byte round trips (on this VM a process that slept wakes slowly, and so does its parent).
const ECHO = "const fs=require('fs');const b=Buffer.alloc(1);for(;;){if(fs.readSync(0,b,0,1,null)===0)process.exit(0);fs.writeSync(1,b,0,1)}";
/** A node process that answers each byte it reads with one, as a worker reads its pipe. */
function startEcho() {
  const child = spawn(process.execPath, ['-e', ECHO], { stdio: ['pipe', 'pipe', 'inherit'] });
  return {
    ping: () =>
      new Promise((resolve) => {
        child.stdout.once('data', resolve);
        child.stdin.write('x');
      }),
    kill: () => child.kill('SIGKILL'),
  };
}
/** A checkout and ten small commands, in ms; the runtime is closed after. */
async function checkoutTen(pool) {
  const t0 = performance.now();
  const rt = await pool.checkout();
  for (let k = 0; k < 10; k++) await rt.eval(`${k} + 1`);
  const ms = performance.now() - t0;
  await rt.close();
  return ms;
}
{
  const pool = await SandboxPool.start({ size: 4, sandbox: 'require' });
  const checkout = [];
  const fresh10 = [];
  const pipe10 = [];
  for (let i = 0; i < COLD_RUNS + 1; i++) {
    await pool.waitReady(120_000);
    const t0 = performance.now();
    const rt = await pool.checkout();
    await rt.eval('1+1');
    if (i > 0) checkout.push(performance.now() - t0);
    await rt.close();
    const echo = startEcho();
    await echo.ping();
    await pool.waitReady(120_000);
    const fresh = await checkoutTen(pool);
    if (i > 0) fresh10.push(fresh);
    const t1 = performance.now();
    for (let k = 0; k < 10; k++) await echo.ping();
    if (i > 0) pipe10.push(performance.now() - t1);
    echo.kill();
  }
  // The same after an idle moment: the pool full for 300 ms, nothing running (a checkout takes the
  // worker readied last, and right after a refill that one is still warm; here none is). Beside
  // it, ten round trips to a node process after the same 300 ms.
  const idle10 = [];
  const idlePipe10 = [];
  const IDLE_MS = 300;
  for (let i = 0; i < COLD_RUNS + 1; i++) {
    const echo = startEcho();
    await echo.ping();
    await pool.waitReady(120_000);
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
    const fresh = await checkoutTen(pool);
    if (i > 0) idle10.push(fresh);
    await pool.waitReady(120_000);
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
    const t0 = performance.now();
    for (let k = 0; k < 10; k++) await echo.ping();
    if (i > 0) idlePipe10.push(performance.now() - t0);
    echo.kill();
  }
  await pool.close();
  const c = median(checkout) * 1000;
  const f = median(fresh10) * 1000;
  strata.push({
    figure: `10 one-byte round trips to a ready node process, ${IDLE_MS} ms after anything ran (the machine idle)`,
    value: median(idlePipe10) * 1000,
    unit: 'µs',
    goal: '(a floor)',
  });
  strata.push({
    figure: `fresh pooled sandbox + 10 small commands, ${IDLE_MS} ms after the pool is full (the machine idle)`,
    value: median(idle10) * 1000,
    unit: 'µs',
    floor: median(idlePipe10) * 1000,
    floorName: `10 round trips to a node process after the same ${IDLE_MS} ms`,
    goal: '(what a session after a quiet moment pays)',
  });
  strata.push({
    figure: '10 one-byte round trips to a ready node process, after the same wait (what a fresh pooled sandbox + 10 commands stands on)',
    value: median(pipe10) * 1000,
    unit: 'µs',
    goal: '(a floor)',
  });
  strata.push({ figure: 'SandboxPool checkout + first 1+1', value: c, unit: 'µs', goal: '≤ 1 ms', goalValue: 1000, met: c <= 1000 });
  strata.push({ figure: 'fresh pooled sandbox + 10 small commands', value: f, unit: 'µs', goal: '≤ 2 ms', goalValue: 2000, met: f <= 2000 });
  cell(FIG.cold, 'µs', 'Strata (pool)', c);
  cell(FIG.fresh10, 'µs', 'Strata (pool)', f);
}
// Agent sessions (@strata/agent): a session's first cell from a pool, and what replay costs (a
// restore, a recovery and an approval all replay the journal in a fresh worker).
{
  const pool = await SandboxPool.start({ size: 2, sandbox: 'require', clock: { at: 0, seed: 1 } });
  const tools = { t: async (x) => x };
  const first = [];
  const checkout = [];
  for (let i = 0; i < COLD_RUNS + 1; i++) {
    await pool.waitReady(120_000);
    let t0 = performance.now();
    const session = await AgentSandbox.start({ pool, tools });
    await session.run('1+1');
    if (i > 0) first.push(performance.now() - t0);
    await session.close();
    await pool.waitReady(120_000);
    t0 = performance.now();
    const rt = await pool.checkout();
    await rt.eval('1+1');
    if (i > 0) checkout.push(performance.now() - t0);
    await rt.close();
  }
  const firstUs = median(first) * 1000;
  const checkoutUs = median(checkout) * 1000;
  strata.push({
    figure: 'AgentSandbox from a pool: start + first cell',
    value: firstUs,
    unit: 'µs',
    floor: checkoutUs,
    floorName: 'SandboxPool checkout + first 1+1',
    goal: '(sessions are pool checkouts)',
  });
  const record = async (cells, callsPerCell) => {
    const session = await AgentSandbox.start({ pool, tools });
    for (let i = 0; i < cells; i++) {
      await session.run(
        callsPerCell === 0 ? `globalThis.v${i} = ${i} * 2; v${i}` : `let s${i} = 0; for (let k = 0; k < ${callsPerCell}; k++) s${i} += await t(k); s${i}`,
      );
    }
    const journal = session.journal;
    await session.close();
    return journal;
  };
  const restoreMs = async (journal) => {
    const times = [];
    for (let i = 0; i < COLD_RUNS + 1; i++) {
      await pool.waitReady(120_000);
      const t0 = performance.now();
      const session = await AgentSandbox.restore(journal, { pool, tools });
      if (i > 0) times.push(performance.now() - t0);
      await session.close();
    }
    return median(times);
  };
  const empty = await restoreMs(await record(0, 0));
  const cells20 = await restoreMs(await record(20, 0));
  const calls200 = await restoreMs(await record(20, 10));
  await pool.close();
  strata.push({
    figure: 'restore a 20-cell session (from a pool)',
    value: cells20 * 1000,
    unit: 'µs',
    floor: empty * 1000,
    floorName: 'restore of a journal with no cells',
    goal: '—',
  });
  strata.push({ figure: 'replay, per cell', value: ((cells20 - empty) / 20) * 1000, unit: 'µs', goal: '—' });
  strata.push({ figure: 'replay, per recorded tool call', value: ((calls200 - cells20) / 200) * 1000, unit: 'µs', goal: '—' });
}
// The bootstrap: WEB_POLYFILLS' size, and what it adds to every new Runtime (a context in a fresh
// isolate), against a Runtime with no bootstrap at all.
{
  const { WEB_POLYFILLS } = await import('@strata/polyfills');
  strata.push({ figure: 'WEB_POLYFILLS (bytes)', value: Buffer.byteLength(WEB_POLYFILLS), unit: 'bytes', goal: '—' });
  // Runtime.start, and then `use` (the first use of a lazy group, say) when given.
  const startMs = async (bootstrap, use) => {
    const times = [];
    for (let i = 0; i < 31; i++) {
      const t0 = performance.now();
      const r = await Runtime.start({ bootstrap });
      if (use !== undefined) await r.eval(use);
      if (i > 0) times.push(performance.now() - t0);
      await r.close();
    }
    return median(times) * 1000;
  };
  const bare = await startMs([]);
  const withPolyfills = await startMs([WEB_POLYFILLS]);
  rows.push({
    name: 'Runtime.start with WEB_POLYFILLS (vs no bootstrap)',
    rawUs: bare,
    strataUs: withPolyfills,
    ratio: withPolyfills / bare,
    goal: undefined,
    absoluteGoalUs: bare + 2000,
    unit: 'µs',
  });
  // The first Runtime of a process compiles the bootstrap without a code cache (each worker pays
  // this once): in a fresh process each, the first start with the polyfills against one without.
  const firstStartMs = (bootstrap) => {
    const program = `import { Runtime } from '@strata/runtime'; import { WEB_POLYFILLS } from '@strata/polyfills';
      await (await Runtime.start()).close();
      const t0 = performance.now(); const r = await Runtime.start({ bootstrap: ${bootstrap ? '[WEB_POLYFILLS]' : '[]'} }); const ms = performance.now() - t0;
      await r.close(); console.log(ms);`;
    const times = [];
    for (let i = 0; i < 7; i++) times.push(Number(spawnSync(process.execPath, ['--input-type=module', '-e', program], { encoding: 'utf8' }).stdout));
    return median(times) * 1000;
  };
  const firstBare = firstStartMs(false);
  const firstWith = firstStartMs(true);
  strata.push({
    figure: 'first Runtime.start of a process with WEB_POLYFILLS (no code cache yet)',
    value: firstWith,
    unit: 'µs',
    floor: firstBare,
    floorName: 'the same first start with no bootstrap',
    goal: '—',
  });
  // What the first use of a lazy group costs a context: the streams bundle (a Response body read
  // as a stream) and the URL bundle, each on top of Runtime.start with the polyfills.
  const startAndUse = (code) => startMs([WEB_POLYFILLS], code);
  strata.push({
    figure: 'Runtime.start + first web stream (new Response(x).body read)',
    value: await startAndUse("new Response('x').body.getReader().read().then(() => 0)"),
    unit: 'µs',
    floor: withPolyfills,
    floorName: 'Runtime.start with WEB_POLYFILLS',
    goal: '—',
  });
  strata.push({
    figure: 'Runtime.start + first URL (new URL(x))',
    value: await startAndUse("new URL('http://x/').href"),
    unit: 'µs',
    floor: withPolyfills,
    floorName: 'Runtime.start with WEB_POLYFILLS',
    goal: '—',
  });
}
// The guest's fetch, checked and performed by the parent under an egress policy, against a server
// on 127.0.0.1: a warm round trip from the sandboxed guest, against Node's own fetch in the parent.
{
  const http = await import('node:http');
  const { WEB_POLYFILLS } = await import('@strata/polyfills');
  const server = http.createServer((_req, res) => res.end('{"ok":true}'));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${server.address().port}`;
  const fetchRt = await IsolatedRuntime.start({ sandbox: 'require', bootstrap: [WEB_POLYFILLS], egress: { allow: [`${origin}/*`] } });
  const rounds = async (fn) => {
    for (let i = 0; i < 20; i++) await fn();
    const times = [];
    for (let i = 0; i < 200; i++) {
      const t0 = performance.now();
      await fn();
      times.push(performance.now() - t0);
    }
    return median(times) * 1000;
  };
  // A fresh connection per request in both (the egress engine never pools a socket).
  const nodeUs = await rounds(async () => (await fetch(`${origin}/x`, { headers: { connection: 'close' } })).json());
  const guestUs = await rounds(() => fetchRt.eval(`fetch('${origin}/x').then((r) => r.json()).then((j) => j.ok)`));
  await fetchRt.close();
  server.close();
  strata.push({
    figure: 'guest fetch through the egress policy (local server)',
    value: guestUs,
    unit: 'µs',
    floor: nodeUs,
    floorName: "Node's fetch in the parent, a fresh connection each",
    goal: '—',
  });
}
// Code mode: the declarations a prompt carries for twenty realistic tools, and what an opt-in
// type check of the model's code against them costs once the compiler is warm.
{
  const { TWENTY_TOOLS } = await import('../packages/agent/dist/test/fixtures/twenty-tools.js');
  const { ToolBridge } = await import('@strata/agent');
  const bridge = new ToolBridge({ tools: Object.fromEntries(TWENTY_TOOLS.map((tool) => [tool.name, { ...tool, execute: async () => null }])) });
  const text = bridge.declarations();
  strata.push({ figure: 'declarations for 20 tools (characters)', value: text.length, unit: 'chars', goal: '—' });
  const first = performance.now();
  await bridge.typecheck('1');
  const cold = (performance.now() - first) * 1000;
  const times = [];
  for (let i = 0; i < 20; i++) {
    const t0 = performance.now();
    await bridge.typecheck(`const w = await tools.getWeather({ city: "C${i}" }); w`);
    times.push((performance.now() - t0) * 1000);
  }
  strata.push({
    figure: 'typecheck a cell against 20 tools, warm (TypeScript compiler API, in its worker thread)',
    value: median(times),
    unit: 'µs',
    goal: '(opt-in)',
  });
  strata.push({ figure: 'typecheck, the first in a process (loads the compiler, parses its lib)', value: cold, unit: 'µs', goal: '(opt-in)' });
}
{
  const irt = await IsolatedRuntime.start({ prewarm: false, sandbox: 'require' });
  irt.bindFunction('inc', (x) => x + 1);
  const warm = await measure(() => irt.eval('1+1'));
  const call = await measure(() => irt.eval('inc(1)'));
  const plain = await measure(() => context2.evalSync('1+1', { copy: true, timeout: TIMEOUT }));
  rows.push({
    name: 'warm eval round trip through the worker (vs raw in-process eval)',
    rawUs: plain,
    strataUs: warm,
    ratio: warm / plain,
    goal: undefined,
    absoluteGoalUs: 60,
  });
  rows.push({ name: 'guest -> host -> guest through the parent', rawUs: plain, strataUs: call, ratio: call / plain, goal: undefined, absoluteGoalUs: 60 });
  strata.push({
    figure: 'warm eval round trip through the worker',
    value: warm,
    unit: 'µs',
    floor: plain,
    floorName: 'raw isolated-vm eval, in process',
    goal: '≤ 60 µs',
    goalValue: 60,
    met: warm <= 60,
  });
  strata.push({
    figure: 'guest → host function → guest, through the parent',
    value: call,
    unit: 'µs',
    floor: plain,
    floorName: 'raw isolated-vm eval, in process',
    goal: '≤ 60 µs',
    goalValue: 60,
    met: call <= 60,
  });
  cell(FIG.warm, 'µs', 'Strata', warm);
  cell(FIG.warm, 'µs', 'raw isolated-vm (in process)', plain);
  // Idle RSS: a fresh worker after one eval, against an idle bare node + isolated-vm + isolate
  // after its one eval. (Until stop 48 the worker was the one measured above, after thousands of
  // evals: its heap then held what the round trips had left, 55 MiB, and 58 once the warm-up
  // lasted 500 ms.)
  const idleRt = await IsolatedRuntime.start({ prewarm: false, sandbox: 'require' });
  await idleRt.eval('1+1');
  const idle = spawn(process.execPath, [floorScript, '--idle'], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise((resolve) => idle.stdout.once('data', resolve));
  await new Promise((resolve) => setTimeout(resolve, 300));
  const floorRss = rss(idle.pid);
  const workerRss = rss(idleRt.pid);
  idle.kill('SIGKILL');
  await idleRt.close();
  rows.push({
    name: 'idle worker RSS (MiB, vs idle node + isolated-vm + isolate)',
    rawUs: floorRss,
    strataUs: workerRss,
    ratio: workerRss / floorRss,
    goal: 1.2,
    unit: 'MiB',
  });
  strata.push({
    figure: 'idle worker RSS',
    value: workerRss,
    unit: 'MiB',
    floor: floorRss,
    floorName: 'idle node + isolated-vm + isolate',
    goal: '≤ 1.2× the floor',
    met: workerRss / floorRss <= 1.2,
  });
  cell(FIG.idleRss, 'MiB', 'Strata', workerRss);
  await irt.close();
}
// Fresh in-process isolates (raw isolated-vm): the floor of every "fresh sandbox" figure.
{
  const fresh = [];
  const fresh10 = [];
  for (let i = 0; i < COLD_RUNS + 1; i++) {
    let t0 = performance.now();
    let iso = new ivm.Isolate({ memoryLimit: 128 });
    iso.createContextSync().evalSync('1+1', { copy: true, timeout: TIMEOUT });
    if (i > 0) fresh.push(performance.now() - t0);
    iso.dispose();
    t0 = performance.now();
    iso = new ivm.Isolate({ memoryLimit: 128 });
    const ctx = iso.createContextSync();
    for (let k = 0; k < 10; k++) ctx.evalSync(`${k} + 1`, { copy: true, timeout: TIMEOUT });
    if (i > 0) fresh10.push(performance.now() - t0);
    iso.dispose();
  }
  cell(FIG.cold, 'µs', 'raw isolated-vm (in process)', median(fresh) * 1000);
  cell(FIG.fresh10, 'µs', 'raw isolated-vm (in process)', median(fresh10) * 1000);
  // The pool's floors: a fresh isolate in this process, no worker, no sandbox.
  Object.assign(
    strata.find((r) => r.figure === 'SandboxPool checkout + first 1+1'),
    { floor: median(fresh) * 1000, floorName: 'a fresh raw isolated-vm isolate + 1+1, in process' },
  );
  Object.assign(
    strata.find((r) => r.figure === 'fresh pooled sandbox + 10 small commands'),
    { floor: median(fresh10) * 1000, floorName: 'a fresh raw isolated-vm isolate + 10 evals, in process' },
  );
}
// A CPU-bound kernel: the worker runs --jitless by default; jitless: false gives V8 its JIT back.
{
  const timeKernel = async (run) => {
    await run();
    const times = [];
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      await run();
      times.push(performance.now() - t0);
    }
    return median(times) * 1000;
  };
  const jitless = await IsolatedRuntime.start({ prewarm: false, sandbox: 'require' });
  const jit = await IsolatedRuntime.start({ prewarm: false, sandbox: 'require', jitless: false });
  const iso = new ivm.Isolate({ memoryLimit: 128 });
  const ctx = iso.createContextSync();
  const inProcess = await timeKernel(() => ctx.evalSync(CPU_KERNEL, { copy: true, timeout: TIMEOUT }));
  const withoutJit = await timeKernel(() => jitless.eval(CPU_KERNEL));
  const withJit = await timeKernel(() => jit.eval(CPU_KERNEL));
  await jitless.close();
  await jit.close();
  iso.dispose();
  strata.push({
    figure: 'CPU-bound kernel in the worker, --jitless (the default)',
    value: withoutJit,
    unit: 'µs',
    floor: inProcess,
    floorName: 'raw isolated-vm with its JIT, in process',
    goal: '(the price of --jitless)',
  });
  strata.push({
    figure: 'CPU-bound kernel in the worker, jitless: false',
    value: withJit,
    unit: 'µs',
    floor: inProcess,
    floorName: 'raw isolated-vm with its JIT, in process',
    goal: '—',
  });
  cell(FIG.cpuKernel, 'µs', 'Strata (--jitless)', withoutJit);
  cell(FIG.cpuKernel, 'µs', 'Strata (JIT)', withJit);
  cell(FIG.cpuKernel, 'µs', 'raw isolated-vm (in process)', inProcess);
}
context2Isolate.dispose();
// language: 'typescript' adds one strip in the parent's stripper thread, before the code is sent.
{
  const { stripTypeScriptTypes } = await import('node:module');
  const block = (i) => [
    `interface Item${i} { sku: string; price: number; tags?: readonly string[] }`,
    `type Priced${i}<T extends Item${i}> = T & { total: number };`,
    `function price${i}<T extends Item${i}>(item: T, units: number): Priced${i}<T> {`,
    `  const total: number = (item.price * units) as number;`,
    `  return { ...item, total } satisfies Priced${i}<T>;`,
    `}`,
    `const items${i}: Item${i}[] = [{ sku: 'A${i}', price: ${i + 1}.5 }];`,
    `const totals${i} = items${i}.map((it: Item${i}): number => price${i}(it, 2).total);`,
    `let sum${i}: number = totals${i}.reduce((a: number, b: number) => a + b, 0);`,
    `sum${i}! satisfies number;`,
  ];
  const source = Array.from({ length: 20 }, (_, i) => block(i))
    .flat()
    .join('\n');
  const { stripTypes } = await import('@strata/runtime');
  for (let i = 0; i < 50; i++) stripTypeScriptTypes(source, { mode: 'strip' });
  for (let i = 0; i < 50; i++) await stripTypes(source);
  const raw = [];
  const threaded = [];
  for (let i = 0; i < 200; i++) {
    let t0 = process.hrtime.bigint();
    stripTypeScriptTypes(source, { mode: 'strip' });
    raw.push(Number(process.hrtime.bigint() - t0) / 1000);
    t0 = process.hrtime.bigint();
    await stripTypes(source);
    threaded.push(Number(process.hrtime.bigint() - t0) / 1000);
  }
  // Strata strips in a worker thread (a trap cannot poison the host's stripper); the floor is Node's stripper called in place.
  strata.push({
    figure: 'strip TypeScript types, 200 lines (stripTypes, in its worker thread)',
    value: median(threaded),
    unit: 'µs',
    floor: median(raw),
    floorName: 'module.stripTypeScriptTypes on the main thread',
    goal: '—',
  });
}

// --- The alternatives (bench/alternatives, installed with npm ci --prefix bench/alternatives) --
const skipped = [];
if (alternatives !== undefined) {
  for (const row of await alternatives.measureAlternatives({ coldRuns: COLD_RUNS })) {
    if (row.skipped !== undefined) {
      skipped.push({ alternative: row.alternative, figure: FIG[row.figure] ?? row.figure, reason: row.skipped });
      continue;
    }
    const unit = row.valueMiB !== undefined ? 'MiB' : 'µs';
    cell(FIG[row.figure] ?? row.figure, unit, row.alternative, row.valueMiB ?? row.valueUs);
  }
} else {
  skipped.push({
    alternative: 'quickjs-emscripten, bubblewrap + Node, sandbox-runtime + Node, deno',
    reason: 'bench/alternatives is not installed: npm ci --prefix bench/alternatives',
  });
}
// Columns in a fixed order: Strata first, then the rest as they came.
const columns = [...new Set([...sideBySide.values()].flatMap((r) => Object.keys(r.cells)))].sort(
  (a, b) => b.startsWith('Strata') - a.startsWith('Strata') || 0,
);
const figureOrder = Object.values(FIG);
const results = {
  node: process.version,
  date: new Date().toISOString(),
  machine: `${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, ${process.platform} ${process.arch}`,
  runtime: rows,
  strata,
  alternatives: { columns, rows: figureOrder.map((f) => sideBySide.get(f)).filter(Boolean), skipped },
};
writeFileSync(new URL('./results.json', import.meta.url), `${JSON.stringify(results, null, 2)}\n`);
const markdown = renderMarkdown(results);
writeFileSync(new URL('./results.md', import.meta.url), markdown);
writeFileSync(new URL('./results.svg', import.meta.url), renderSvg(results, [FIG.cold, FIG.fresh10, FIG.warm, FIG.cpuKernel]));

console.log(`Runtime (in process) and the layers, against their floors; medians (${BATCHES} batches of ${PER_BATCH}; ${COLD_RUNS} cold starts)\n`);
console.log('| figure | floor | Strata | ratio | goal |');
console.log('| --- | ---: | ---: | ---: | ---: |');
for (const r of rows) {
  const unit = r.unit ?? 'µs';
  const met = r.goal !== undefined ? r.ratio <= r.goal : r.strataUs <= r.absoluteGoalUs;
  const goal =
    r.note ?? (r.goal !== undefined ? `≤ ${r.goal}×` : r.absoluteGoalUs === Infinity ? '(the price of the layer)' : `≤ ${formatValue(r.absoluteGoalUs, unit)}`);
  const mark = r.note !== undefined || r.absoluteGoalUs === Infinity ? '' : met ? ' ✓' : ' ✗';
  console.log(`| ${r.name} | ${formatValue(r.rawUs, unit)} | ${formatValue(r.strataUs, unit)} | ${r.ratio.toFixed(2)}×${mark} | ${goal} |`);
}
console.log(`\n${markdown}`);
console.log('written: bench/results.json, bench/results.md, bench/results.svg');

// Density (issue 21), in a process of its own: it holds a thousand sessions and many workers,
// and each of its scenarios measures from a clean parent. `npm run bench:density` runs it alone.
console.log('\nDensity: idle sessions per machine (bench/density.mjs)');
const density = spawnSync(process.execPath, [fileURLToPath(new URL('./density.mjs', import.meta.url))], { stdio: 'inherit' });
if (density.status !== 0) {
  console.error(`bench: bench/density.mjs failed (${density.status ?? density.signal})`);
  process.exitCode = 1;
}

// Sessions in stores (issue 23): appends, a cell in a stored session, resume, takeover; with a
// local PostgreSQL server of its own. `npm run bench:stores` runs it alone.
console.log('\nStores: sessions that outlive a machine (bench/stores.mjs)');
const storesRun = spawnSync(process.execPath, [fileURLToPath(new URL('./stores.mjs', import.meta.url))], { stdio: 'inherit' });
if (storesRun.status !== 0) {
  console.error(`bench: bench/stores.mjs failed (${storesRun.status ?? storesRun.signal})`);
  process.exitCode = 1;
}

// The timeline (issue 22): where a cold start and a warm round trip spend their time, step by
// step, from the marks of both processes. `npm run bench:timeline` runs it alone.
console.log('\nTimeline: a cold start and a round trip, step by step (bench/timeline.mjs)');
const timeline = spawnSync(process.execPath, [fileURLToPath(new URL('./timeline.mjs', import.meta.url))], { stdio: 'inherit' });
if (timeline.status !== 0) {
  console.error(`bench: bench/timeline.mjs failed (${timeline.status ?? timeline.signal})`);
  process.exitCode = 1;
}
