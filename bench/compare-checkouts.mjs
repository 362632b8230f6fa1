// Before and after, in one run: the in-process and worker figures that a change to the engine can
// move, measured for this checkout and another one (e.g. a worktree of the previous commit),
// alternating batches between the two so that machine noise falls on both alike.
//
//   node bench/compare-checkouts.mjs /path/to/other/checkout [rounds=5]
//
// Each side runs in a child process of its own (each loads its own isolated-vm), the order
// swapped every round; the medians of every round's figures are compared as ratios (this
// checkout / the other). The other checkout needs the timeline's marks (stop 31 on) for the cold
// start's own part.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { resolve } from 'node:path';

const here = fileURLToPath(new URL('..', import.meta.url));
const [otherArg, roundsArg] = process.argv.slice(2);

if (otherArg === '--side') {
  // A child: measure this checkout's build and print JSON.
  const root = roundsArg;
  const { Runtime, IsolatedRuntime } = await import(`${root}/packages/runtime/dist/src/index.js`);
  const { WEB_POLYFILLS } = await import(`${root}/packages/polyfills/dist/src/index.js`);
  const time = async (fn, n) => {
    for (let i = 0; i < Math.min(n, 200); i++) await fn();
    const samples = [];
    for (let b = 0; b < 9; b++) {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < n; i++) await fn();
      samples.push(Number(process.hrtime.bigint() - t0) / 1000 / n);
    }
    return samples.sort((a, b) => a - b)[4];
  };
  const rt = await (Runtime.start ?? Runtime.create).call(Runtime, { bootstrap: WEB_POLYFILLS });
  rt.bindFunction('inc', (x) => x + 1);
  rt.bindFunction('later', async (x) => x + 1);
  const out = {};
  out['Runtime eval "1+1"'] = await time(() => rt.eval('1+1'), 2000);
  out['Runtime eval returning an object'] = await time(() => rt.eval('({ a: [1, 2, 3], b: "x" })'), 2000);
  out['Runtime guest -> host -> guest'] = await time(() => rt.eval('inc(1)'), 2000);
  out['Runtime host call in a loop (per call)'] = (await time(() => rt.eval('{ let s = 0; for (let i = 0; i < 1000; i++) s = inc(s); s }'), 50)) / 1000;
  out['Runtime 100 async host calls (per call)'] =
    (await time(() => rt.eval('(async () => { let s = 0; for (let i = 0; i < 100; i++) s = await later(s); return s })()'), 50)) / 100;
  out['Runtime 100 timers (per timer)'] =
    (await time(() => rt.eval('(async () => { for (let i = 0; i < 100; i++) await new Promise((r) => setTimeout(r, 0)); return 1 })()'), 50)) / 100;
  out['Runtime result of 1000 objects'] = await time(() => rt.eval('Array.from({ length: 1000 }, (_, i) => ({ i, s: "x" }))'), 100);
  await rt.close();
  // The cold start, and Strata's own part of it: from Node's bootstrap in the worker to the first
  // answer, by the timeline's marks (Node's start-up and the launch chain are most of a start and
  // move with the VM's phase; this part is what Strata's code decides).
  const { recordTimeline, collectTimeline } = await import(`${root}/packages/runtime/dist/src/testing/index.js`);
  recordTimeline();
  const colds = [];
  const own = [];
  for (let i = 0; i < 5; i++) {
    await collectTimeline();
    const t0 = process.hrtime.bigint();
    const cold = await IsolatedRuntime.start({ prewarm: false, sandbox: 'require' });
    await cold.eval('1+1');
    const t1 = process.hrtime.bigint();
    const bootstrapped = (await collectTimeline(cold)).find(([label, at]) => label === 'worker node bootstrapped' && at >= Number(t0))?.[1];
    await cold.close();
    if (i === 0) continue; // the first start of a process loads the parent's modules
    colds.push(Number(t1 - t0) / 1000);
    if (bootstrapped !== undefined) own.push((Number(t1) - bootstrapped) / 1000);
  }
  const middle = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  out['IsolatedRuntime cold start (require) + first 1+1'] = middle(colds);
  if (own.length > 0) out["IsolatedRuntime cold start: Strata's part, from Node bootstrapped in the worker to the first answer"] = middle(own);
  const iso = await IsolatedRuntime.start();
  iso.bindFunction('inc', (x) => x + 1);
  out['IsolatedRuntime warm eval round trip'] = await time(() => iso.eval('1+1'), 300);
  out['IsolatedRuntime guest -> host -> guest'] = await time(() => iso.eval('inc(1)'), 300);
  // The same, as the median of single commands (batches above are means: the VM's tail latencies count there).
  const single = async (code) => {
    const samples = [];
    for (let i = 0; i < 1500; i++) {
      const t0 = process.hrtime.bigint();
      await iso.eval(code);
      samples.push(Number(process.hrtime.bigint() - t0) / 1000);
    }
    return middle(samples);
  };
  out['IsolatedRuntime warm eval round trip, median command'] = await single('1+1');
  out['IsolatedRuntime guest -> host -> guest, median command'] = await single('inc(1)');
  await iso.close();
  // A pooled sandbox's first commands, 100 ms after the pool is full again (the machine idle).
  const { SandboxPool } = await import(`${root}/packages/runtime/dist/src/index.js`);
  const pool = await SandboxPool.start({ size: 2, sandbox: 'require' });
  const first = [];
  const ten = [];
  for (let i = 0; i < 8; i++) {
    await pool.waitReady(120_000);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const t0 = process.hrtime.bigint();
    const pooled = await pool.checkout();
    await pooled.eval('0 + 1');
    const t1 = process.hrtime.bigint();
    for (let k = 1; k < 10; k++) await pooled.eval(`${k} + 1`);
    const t2 = process.hrtime.bigint();
    if (i > 0) {
      first.push(Number(t1 - t0) / 1000);
      ten.push(Number(t2 - t0) / 1000);
    }
    await pooled.close();
  }
  await pool.close();
  out['SandboxPool checkout + first command, 100 ms after the pool is full'] = middle(first);
  out['SandboxPool checkout + 10 commands, 100 ms after the pool is full'] = middle(ten);
  console.log(JSON.stringify(out));
  process.exit(0);
}

if (otherArg === undefined) {
  console.error('usage: node bench/compare-checkouts.mjs /path/to/other/checkout [rounds=5]');
  process.exit(2);
}
const other = resolve(otherArg);
const rounds = Number(roundsArg ?? 5);
const runSide = (root) => {
  const run = spawnSync(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url), '--side', root], { encoding: 'utf8', maxBuffer: 1 << 20 });
  if (run.status !== 0) throw new Error(`${root}: ${run.stderr}`);
  return JSON.parse(run.stdout.trim().split('\n').pop());
};
const results = { this: [], other: [] };
// The order alternates: in this VM the side measured second in a round reads slower, whichever it is.
for (let r = 0; r < rounds; r++) {
  for (const side of r % 2 === 0 ? ['other', 'this'] : ['this', 'other']) {
    results[side].push(runSide(side === 'other' ? other : here.replace(/\/$/, '')));
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const us = (v) => (v >= 1000 ? `${(v / 1000).toFixed(2)} ms` : `${v.toFixed(2)} µs`);
console.log(`| figure | other (${otherArg}) | this checkout | ratio |\n| --- | ---: | ---: | ---: |`);
for (const name of Object.keys(results.this[0])) {
  const a = median(results.other.map((x) => x[name]));
  const b = median(results.this.map((x) => x[name]));
  console.log(`| ${name} | ${us(a)} | ${us(b)} | ${(b / a).toFixed(2)}× |`);
}
