/**
 * The long fuzz run: `npm run fuzz` at the repository root, or
 * `node packages/wire/dist/scripts/fuzz.js [DURATION] [--seed=N]`.
 *
 * DURATION is seconds (`60`, `60s`, the default 60) or a frame count (`100000f`).
 * Prints the seed, frames tried, outcome counts, frames per second and the largest heap
 * growth; exits 1 if any input made the decoder throw something other than a
 * ProtocolError, fail a round trip, or hang.
 *
 * @module
 */

import { runFuzz, type FuzzStats } from './fuzz-run.js';

function parseArgs(argv: readonly string[]): { seed: number; seconds?: number; frames?: number } {
  let seed = (Date.now() ^ (process.pid << 16)) >>> 0;
  let seconds: number | undefined = 60;
  let frames: number | undefined;
  for (const arg of argv) {
    const seedMatch = /^--seed=(\d+)$/.exec(arg);
    const durationMatch = /^(\d+(?:\.\d+)?)(s|f|frames)?$/.exec(arg);
    if (seedMatch) {
      seed = Number(seedMatch[1]) >>> 0;
    } else if (durationMatch) {
      const amount = Number(durationMatch[1]);
      if (durationMatch[2] === 'f' || durationMatch[2] === 'frames') {
        frames = Math.floor(amount);
        seconds = undefined;
      } else {
        seconds = amount;
        frames = undefined;
      }
    } else {
      console.error(`usage: fuzz.js [SECONDS | SECONDSs | FRAMESf] [--seed=N]  (got ${JSON.stringify(arg)})`);
      process.exit(2);
    }
  }
  return { seed, ...(seconds === undefined ? {} : { seconds }), ...(frames === undefined ? {} : { frames }) };
}

function summary(stats: FuzzStats): string {
  const perSecond = stats.frames / Math.max(stats.elapsedMs / 1000, 1e-9);
  const outcomes = Object.entries(stats.outcomes)
    .map(([name, count]) => `${name} ${count}`)
    .join(', ');
  return (
    `frames ${stats.frames} in ${(stats.elapsedMs / 1000).toFixed(1)} s (${Math.round(perSecond)} frames/s); ` +
    `${outcomes}; failures ${stats.failures.length}; ` +
    `max heap growth ${(stats.maxHeapGrowthBytes / 1048576).toFixed(1)} MiB; slowest frame ${stats.slowestFrameMs.toFixed(1)} ms`
  );
}

const args = parseArgs(process.argv.slice(2));
const budget = args.frames === undefined ? `${args.seconds} s` : `${args.frames} frames`;
console.log(`@strata/wire fuzz: seed ${args.seed}, ${budget} (replay with --seed=${args.seed})`);
const stats = runFuzz({ ...args, onProgress: (s) => console.log(`  ${summary(s)}`) });
console.log(summary(stats));
for (const failure of stats.failures) {
  console.log(`FAIL [${failure.kind}] frame ${failure.frame}: ${failure.detail}\n  input ${failure.inputHex}`);
}
process.exit(stats.failures.length === 0 ? 0 : 1);
