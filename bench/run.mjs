// npm run bench: Strata's overheads measured side by side with the floor they stand on, in one
// run, as ratios. Medians of batches, after a warm-up; never used as test assertions.
import { writeFileSync } from 'node:fs';
import ivm from 'isolated-vm';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { IsolatedRuntime, Runtime } from '@strata/runtime';

const BATCHES = 30;
const PER_BATCH = 200;
// The raw baseline does the same work as Runtime.eval: the same time limit, the result copied out.
const TIMEOUT = 30_000;

async function measure(fn) {
  for (let i = 0; i < PER_BATCH * 3; i++) await fn();
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
const rt = await Runtime.create();
rt.bindFunction('inc', (x) => x + 1);

const rows = [];
async function compare(name, goal, raw, strata) {
  const rawUs = await measure(raw);
  const strataUs = await measure(strata);
  rows.push({ name, rawUs, strataUs, ratio: strataUs / rawUs, goal });
}

await compare('eval "1+1"', 1.5, () => context.evalSync('1+1', { copy: true, timeout: TIMEOUT }), () => rt.eval('1+1'));
await compare('eval returning an object', 1.5, () => context.evalSync('({ a: [1, 2, 3], b: "x" })', { copy: true, timeout: TIMEOUT }), () => rt.eval('({ a: [1, 2, 3], b: "x" })'));
await compare('guest -> host -> guest call', 1.5, () => context.evalSync('inc(1)', { copy: true, timeout: TIMEOUT }), () => rt.eval('inc(1)'));
{
  // Per-call cost of host functions inside one eval: 1000 calls each.
  const loop = '{ let s = 0; for (let i = 0; i < 1000; i++) s = inc(s); s }';
  const rawUs = (await measure(() => context.evalSync(loop, { copy: true, timeout: TIMEOUT }))) / 1000;
  const strataUs = (await measure(() => rt.eval(loop))) / 1000;
  rows.push({ name: 'host call inside a loop (per call)', rawUs, strataUs, ratio: strataUs / rawUs, goal: 1.5 });
}

await rt.close();
isolate.dispose();

// --- IsolatedRuntime: a worker process -----------------------------------------------------
const floorScript = fileURLToPath(new URL('./floor-process.mjs', import.meta.url));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const COLD_RUNS = 15;
{
  const floor = [];
  const cold = [];
  for (let i = 0; i < COLD_RUNS; i++) {
    let t0 = performance.now();
    spawnSync(process.execPath, [floorScript], { stdio: ['ignore', 'pipe', 'inherit'] });
    floor.push(performance.now() - t0);
    t0 = performance.now();
    const irt = await IsolatedRuntime.start({ prewarm: false });
    await irt.eval('1+1');
    cold.push(performance.now() - t0);
    await irt.close();
  }
  const f = median(floor) * 1000;
  const c = median(cold) * 1000;
  rows.push({ name: 'cold IsolatedRuntime.start + first 1+1 (vs node + isolated-vm + isolate + eval)', rawUs: f, strataUs: c, ratio: c / f, goal: 1.3 });
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
    ['emptyroot + landlock + seccomp (the Linux defaults)', [{ module: '@strata/layer-emptyroot/layer' }, { module: '@strata/layer-landlock/layer' }, { module: '@strata/layer-seccomp/layer' }]],
    ['clock', [{ module: '@strata/layer-clock/layer', options: { at: 0, seed: 1 } }]],
  ];
  const baseline = [];
  for (const [name, layers] of configurations) {
    const times = [];
    for (let i = 0; i < COLD_RUNS + 1; i++) {
      const t0 = performance.now();
      const irt = await IsolatedRuntime.start({ prewarm: false, sandbox: 'auto', layers });
      await irt.eval('1+1');
      if (i > 0) times.push(performance.now() - t0);
      await irt.close();
    }
    const ms = median(times);
    if (name === 'no layers') baseline.push(ms);
    rows.push({ name: `cold start + first 1+1 with layers: ${name}`, rawUs: baseline[0] * 1000, strataUs: ms * 1000, ratio: ms / baseline[0], goal: undefined, absoluteGoalUs: Infinity, unit: 'µs' });
  }
}
{
  const irt = await IsolatedRuntime.start({ prewarm: false });
  irt.bindFunction('inc', (x) => x + 1);
  const warm = await measure(() => irt.eval('1+1'));
  const call = await measure(() => irt.eval('inc(1)'));
  const plain = await measure(() => context2.evalSync('1+1', { copy: true, timeout: TIMEOUT }));
  rows.push({ name: 'warm eval round trip through the worker (vs raw in-process eval)', rawUs: plain, strataUs: warm, ratio: warm / plain, goal: undefined, absoluteGoalUs: 60 });
  rows.push({ name: 'guest -> host -> guest through the parent', rawUs: plain, strataUs: call, ratio: call / plain, goal: undefined, absoluteGoalUs: 60 });
  // Idle RSS: the worker after one eval, against an idle bare node + isolated-vm + isolate.
  const idle = spawn(process.execPath, [floorScript, '--idle'], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise((resolve) => idle.stdout.once('data', resolve));
  await new Promise((resolve) => setTimeout(resolve, 300));
  const rss = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))[1]) * 1024;
  const floorRss = rss(idle.pid);
  const workerRss = rss(irt.pid);
  idle.kill('SIGKILL');
  rows.push({ name: 'idle worker RSS (MiB, vs idle node + isolated-vm + isolate)', rawUs: floorRss / 2 ** 20, strataUs: workerRss / 2 ** 20, ratio: workerRss / floorRss, goal: 1.2, unit: 'MiB' });
  await irt.close();
}
context2Isolate.dispose();

const results = { node: process.version, date: new Date().toISOString(), unit: 'µs (median)', rows };
writeFileSync(new URL('./results.json', import.meta.url), `${JSON.stringify(results, null, 2)}\n`);
console.log(`Strata vs its floors, ${process.version}; medians (${BATCHES} batches of ${PER_BATCH}; ${COLD_RUNS} cold starts)\n`);
console.log('| figure | floor | Strata | ratio | goal |');
console.log('| --- | ---: | ---: | ---: | ---: |');
for (const r of rows) {
  const unit = r.unit ?? 'µs';
  const met = r.goal !== undefined ? r.ratio <= r.goal : r.strataUs <= r.absoluteGoalUs;
  const goal = r.goal !== undefined ? `≤ ${r.goal}×` : r.absoluteGoalUs === Infinity ? '(the price of the layer)' : `≤ ${r.absoluteGoalUs} µs`;
  const mark = r.absoluteGoalUs === Infinity ? '' : met ? ' ✓' : ' ✗';
  console.log(`| ${r.name} | ${r.rawUs.toFixed(2)} ${unit} | ${r.strataUs.toFixed(2)} ${unit} | ${r.ratio.toFixed(2)}×${mark} | ${goal} |`);
}
