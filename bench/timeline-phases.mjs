// The phases the README talks about, each from one timeline mark to another (bench/timeline.mjs
// measures them per run and keeps the medians). Alone, it prints results files side by side:
//
//   node bench/timeline-phases.mjs bench/timeline-before.json bench/timeline-stop31.json bench/timeline-results.json
import { readFileSync } from 'node:fs';

export const COLD_PHASES = [
  ['the parent plans (probes, launch plan)', 'call IsolatedRuntime.start', 'parent spawn'],
  ["the launch chain to Node (strata-exec, the layers' links)", 'parent spawn', 'worker node start'],
  ["Node's own start-up, --jitless", 'worker node start', 'worker node bootstrapped'],
  ["the worker's code loaded", 'worker node bootstrapped', 'worker modules loaded'],
  ['hello, and the configuration across the pipe', 'worker modules loaded', 'worker configure'],
  ['the layer modules imported', 'worker configure', 'worker layers: loaded'],
  ["the layers' apply, seal and self-tests", 'worker layers: loaded', 'worker layers applied and self-tested'],
  ["the guest's isolate (Strata's prelude; no bootstrap)", 'worker layers applied and self-tested', 'worker configured'],
  ['checked from outside, the first 1+1 (and a warm-up call, before stop 45)', 'worker configured', 'first 1+1 answered'],
];

export const WARM_PHASES = [
  ['the parent: call, encode, write', 'call eval', 'parent written'],
  ["the worker's wake-up", 'parent written', 'worker read'],
  ['the worker decodes the command', 'worker read', 'worker decoded'],
  ['the worker dispatches it to the Runtime', 'worker decoded', 'worker enter isolate'],
  ['in the isolate (the eval; two entries before stop 40)', 'worker enter isolate', 'worker left isolate'],
  ['the worker exports the result and encodes the answer', 'worker left isolate', 'worker write'],
  ["the pipe, and the parent's wake-up", 'worker write', 'parent read'],
  ['the parent: decode, deliver', 'parent read', 'answer delivered'],
];

// An open in a warm SandboxHost after 100 ms idle, and its first command sent behind it. A label
// with `#n` is that mark's n-th occurrence in the run, `#last` its last (the parent writes twice;
// the worker, which reads both frames at once, answers both in one write). The parent's second
// frame and the worker's wake-up overlap; the rest follow one another.
export const OPEN_PHASES = [
  // The host hands out the isolate it opened ahead (an open with no options), so the first
  // command is the first frame; an open that goes to the worker writes its frame before it.
  ['the parent: open(), the first command encoded and written', 'call open', 'parent written#last'],
  ["the worker's wake-up", 'parent written#last', 'worker read#1'],
  ['the worker decodes the frame', 'worker read#1', 'worker decoded#1'],
  ['the command dispatched to its isolate', 'worker decoded#1', 'worker enter isolate'],
  ["in the isolate (its first command after the spare's warm-up)", 'worker enter isolate', 'worker left isolate'],
  ['the answer exported, encoded and written', 'worker left isolate', 'worker written#last'],
  ["the pipe, the parent's wake-up, decode and delivery", 'worker written#last', 'answered'],
];

const fmt = (us) => (us === undefined ? '—' : us >= 1000 ? `${(us / 1000).toFixed(1)} ms` : `${us.toFixed(1)} µs`);

if (process.argv[1] === new URL(import.meta.url).pathname) {
  const files = process.argv.slice(2);
  const results = files.map((file) => JSON.parse(readFileSync(file, 'utf8')));
  const names = files.map((file) => file.replace(/^.*\//, '').replace(/\.json$/, ''));
  for (const [title, key, phases] of [
    ['cold start + first 1+1', 'cold', COLD_PHASES],
    ["warm round trip, eval('1+1')", 'warm', WARM_PHASES],
  ]) {
    console.log(`| ${title} | ${names.join(' | ')} |\n| --- |${' ---: |'.repeat(names.length)}`);
    for (let i = 0; i < phases.length; i++) console.log(`| ${phases[i][0]} | ${results.map((r) => fmt(r[key].phases[i]?.us)).join(' | ')} |`);
    console.log(`| **median of the whole** | ${results.map((r) => `**${fmt(r[key].total)}**`).join(' | ')} |\n`);
  }
}
