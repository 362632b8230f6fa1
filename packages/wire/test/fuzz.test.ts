import test from 'ava';
import { runFuzz, type FuzzStats } from '../scripts/fuzz-run.js';

function report(stats: FuzzStats): string {
  return (
    `seed ${stats.seed}: ${stats.frames} frames in ${Math.round(stats.elapsedMs)} ms, ${JSON.stringify(stats.outcomes)}, ` +
    `heap +${(stats.maxHeapGrowthBytes / 1048576).toFixed(1)} MiB, slowest ${stats.slowestFrameMs.toFixed(1)} ms`
  );
}

function check(t: import('ava').ExecutionContext, stats: FuzzStats): void {
  t.log(report(stats));
  t.deepEqual(stats.failures, [], `replay with: npm run fuzz -- --seed=${stats.seed}`);
  // every path was exercised
  for (const outcome of ['message', 'value', 'protocol-error', 'incomplete', 'limits-agree']) {
    t.true(stats.outcomes[outcome]! > 0, `no ${outcome} outcomes`);
  }
}

test('fixed-seed fuzz: random and mutated frames only ever yield a value or a ProtocolError', (t) => {
  check(t, runFuzz({ seed: 0x5747, frames: 10000 }));
});

test('fresh-seed fuzz (seed in the log)', (t) => {
  check(t, runFuzz({ seed: (Date.now() ^ (process.pid << 8)) >>> 0, frames: 10000 }));
});
