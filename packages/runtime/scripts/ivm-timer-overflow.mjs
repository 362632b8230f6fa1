// The minimal reproduction of the isolated-vm 7.0.1 crash that Strata avoids (README, "Known
// issues"): enter an isolate in a loop with a shrinking `timeout`, as an event loop driving many
// small tasks under one command deadline would. Each entry arms a timer on isolated-vm's timer
// thread; a finished entry's timer stays queued until its due time, and with a shrinking timeout
// they all fall due within the same millisecond. The timer thread handles due timers recursively
// (run_next -> maybe_run_next), one pair of frames per timer, and overflows its stack: SIGSEGV.
// With a constant `timeout` the due times spread out and the same loop survives.
//
//   node packages/runtime/scripts/ivm-timer-overflow.mjs [budgetMs=1000] [rounds=20]
import ivm from 'isolated-vm';

const budget = Number(process.argv[2] ?? 1000);
const rounds = Number(process.argv[3] ?? 20);
const isolate = new ivm.Isolate();
const context = isolate.createContextSync();
const fn = context.evalSync('(function () { return 0; })', { reference: true });
for (let round = 0; round < rounds; round++) {
  const deadline = performance.now() + budget;
  for (let remaining = budget; remaining > 0; remaining = deadline - performance.now()) {
    fn.applySync(undefined, [], { timeout: Math.ceil(remaining) });
  }
}
console.log(`survived ${rounds} rounds of ${budget} ms`);
