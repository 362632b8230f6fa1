// npm run bench: Strata's overheads measured side by side with the floor they stand on, in one
// run, as ratios. Medians of batches, after a warm-up; never used as test assertions.
import { writeFileSync } from 'node:fs';
import ivm from 'isolated-vm';
import { Runtime } from '@strata/runtime';

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

const results = { node: process.version, date: new Date().toISOString(), unit: 'µs (median)', rows };
writeFileSync(new URL('./results.json', import.meta.url), `${JSON.stringify(results, null, 2)}\n`);
console.log(`Runtime vs raw isolated-vm, ${process.version}, median of ${BATCHES} batches of ${PER_BATCH}\n`);
console.log('| figure | raw isolated-vm | Strata Runtime | ratio | goal |');
console.log('| --- | ---: | ---: | ---: | ---: |');
for (const r of rows) {
  console.log(`| ${r.name} | ${r.rawUs.toFixed(2)} µs | ${r.strataUs.toFixed(2)} µs | ${r.ratio.toFixed(2)}× ${r.ratio <= r.goal ? '✓' : '✗'} | ≤ ${r.goal}× |`);
}
