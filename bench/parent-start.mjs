// Run by bench/run.mjs under each parent Node (24, and 22 from hosts/node22): the time to import
// @strata/runtime, and the median cold IsolatedRuntime.start (sandbox 'require', the default
// layers) + first 1+1 — the worker is a Node 24 either way. Prints one JSON line.
const runs = Number(process.argv[2] ?? 15);
let t0 = performance.now();
const { IsolatedRuntime } = await import('@strata/runtime');
const importMs = performance.now() - t0;
const times = [];
for (let i = 0; i < runs + 1; i++) {
  t0 = performance.now();
  const rt = await IsolatedRuntime.start({ prewarm: false, sandbox: 'require' });
  await rt.eval('1+1');
  if (i > 0) times.push(performance.now() - t0);
  await rt.close();
}
times.sort((a, b) => a - b);
console.log(JSON.stringify({ version: process.version, importMs, startMs: times[Math.floor(times.length / 2)] }));
