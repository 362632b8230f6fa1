// Before and after, in one run: the in-process and worker figures that a change to the engine can
// move, measured for this checkout and another one (e.g. a worktree of the previous commit),
// alternating batches between the two so that machine noise falls on both alike.
//
//   node bench/compare-checkouts.mjs /path/to/other/checkout [rounds=5]
//
// Each side runs in a child process of its own (each loads its own isolated-vm); the medians of
// every round's batches are compared as ratios (this checkout / the other).
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
  const colds = [];
  for (let i = 0; i < 4; i++) {
    const t0 = process.hrtime.bigint();
    const cold = await IsolatedRuntime.start({ prewarm: false, sandbox: 'require' });
    await cold.eval('1+1');
    if (i > 0) colds.push(Number(process.hrtime.bigint() - t0) / 1000);
    await cold.close();
  }
  out['IsolatedRuntime cold start (require) + first 1+1'] = colds.sort((a, b) => a - b)[1];
  const iso = await IsolatedRuntime.start();
  iso.bindFunction('inc', (x) => x + 1);
  out['IsolatedRuntime warm eval round trip'] = await time(() => iso.eval('1+1'), 300);
  out['IsolatedRuntime guest -> host -> guest'] = await time(() => iso.eval('inc(1)'), 300);
  await iso.close();
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
for (let r = 0; r < rounds; r++) {
  results.other.push(runSide(other));
  results.this.push(runSide(here.replace(/\/$/, '')));
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const us = (v) => (v >= 1000 ? `${(v / 1000).toFixed(2)} ms` : `${v.toFixed(2)} µs`);
console.log(`| figure | other (${otherArg}) | this checkout | ratio |\n| --- | ---: | ---: | ---: |`);
for (const name of Object.keys(results.this[0])) {
  const a = median(results.other.map((x) => x[name]));
  const b = median(results.this.map((x) => x[name]));
  console.log(`| ${name} | ${us(a)} | ${us(b)} | ${(b / a).toFixed(2)}× |`);
}
