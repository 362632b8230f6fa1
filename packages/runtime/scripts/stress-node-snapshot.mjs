// Does the worker need --no-node-snapshot? isolated-vm's README asks for it on Node >= 20; it
// costs ~55 ms of start-up. The worker runs without it. This runs many worker lifetimes, each
// doing what would trip a snapshot problem (module loading, host calls both ways, GC pressure,
// a heap-limit death, a timeout), and counts every outcome; any unexpected one fails the run.
//
//   node scripts/stress-node-snapshot.mjs [lifetimes=1000]
import { IsolatedRuntime, HeapLimitExceeded, RuntimeTimeout } from '@strata/runtime';

const lifetimes = Number(process.argv[2] ?? 1000);
const CONCURRENCY = 4;
const counts = { ok: 0, expectedHeapLimit: 0, expectedTimeout: 0, unexpected: 0 };
const unexpected = [];

async function lifetime(i) {
  const rt = await IsolatedRuntime.start({ timeout: 1_000, maxHeapSize: 32 * 1024 * 1024, prewarm: true });
  try {
    rt.bindFunction('tool', async (x) => ({ x, list: Array.from({ length: 50 }, (_, k) => k) }));
    rt.bindFunction('sync', (x) => x + 1);
    rt.addModule('lib', 'export const twice = (x) => 2 * x; export default new Map([[1, 2]]);');
    const out = await rt.evalModule('import m, { twice } from "lib"; export const v = twice(m.get(1));');
    if (out.v !== 4) throw new Error(`module result ${JSON.stringify(out)}`);
    // GC pressure: lots of short-lived objects and buffers.
    const sum = await rt.eval(
      'let s = 0; for (let k = 0; k < 2000; k++) { const o = { a: new Array(100).fill(k), b: new Uint8Array(1024) }; s += o.a.length + o.b.length; } s',
    );
    if (sum !== 2000 * 1124) throw new Error(`sum ${sum}`);
    const r = await rt.eval('(async () => { let n = 0; for (let k = 0; k < 20; k++) n += (await tool(k)).list.length + sync(k); return n })()');
    if (r !== 20 * 50 + 210) throw new Error(`host calls ${r}`);
    if (i % 10 === 0) {
      await rt.eval('const a = []; for (;;) a.push(new Array(1e5).fill(1))').catch((e) => {
        if (!(e instanceof HeapLimitExceeded)) throw e;
        counts.expectedHeapLimit++;
      });
    } else if (i % 10 === 5) {
      await rt.eval('for (;;) {}').catch((e) => {
        if (!(e instanceof RuntimeTimeout)) throw e;
        counts.expectedTimeout++;
      });
    }
    counts.ok++;
  } catch (error) {
    counts.unexpected++;
    if (unexpected.length < 10) unexpected.push(`${i}: ${error?.name}: ${String(error?.message).slice(0, 300)}`);
  } finally {
    await rt.close();
  }
}

const started = performance.now();
let next = 0;
await Promise.all(
  Array.from({ length: CONCURRENCY }, async () => {
    while (next < lifetimes) await lifetime(next++);
  }),
);
const seconds = (performance.now() - started) / 1000;
console.log(JSON.stringify({ node: process.version, withNoNodeSnapshot: false, lifetimes, seconds: Math.round(seconds), ...counts, unexpected }, null, 2));
process.exitCode = counts.unexpected === 0 ? 0 : 1;
