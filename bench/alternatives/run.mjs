// node bench/alternatives/run.mjs [--cold N] [--warm N] [--cpu N] [--only "name,name"] [--json]
// Measures the alternatives alone and prints them as a table (npm run bench shows them beside Strata).
import { parseArgs } from 'node:util';
import { ALTERNATIVES, measureAlternatives } from './measure.mjs';

const { values } = parseArgs({
  options: {
    cold: { type: 'string' },
    warm: { type: 'string' },
    cpu: { type: 'string' },
    only: { type: 'string' },
    json: { type: 'boolean', default: false },
  },
});
const coldRuns = values.cold ? Number(values.cold) : 15;
const rows = await measureAlternatives({
  coldRuns,
  warmRuns: values.warm ? Number(values.warm) : 200,
  cpuRuns: values.cpu ? Number(values.cpu) : coldRuns,
  only: values.only ? values.only.split(',').map((s) => s.trim()) : ALTERNATIVES,
  log: (line) => process.stderr.write(line + '\n'),
});

if (values.json) {
  console.log(JSON.stringify(rows, null, 2));
} else {
  const value = (r) => {
    if (r.skipped) return 'skipped';
    if (r.valueMiB !== undefined) return `${r.valueMiB.toFixed(2)} MiB`;
    if (r.valueUs >= 10_000) return `${(r.valueUs / 1000).toFixed(1)} ms`;
    if (r.valueUs >= 1000) return `${(r.valueUs / 1000).toFixed(2)} ms`;
    return `${r.valueUs.toFixed(1)} µs`;
  };
  const table = rows.map((r) => [r.alternative, r.figure, value(r), r.skipped ? `${r.skipped}${r.note ? ` (${r.note})` : ''}` : r.note]);
  const head = ['alternative', 'figure', 'value', 'note'];
  const widths = [0, 1, 2].map((i) => Math.max(head[i].length, ...table.map((t) => t[i].length)));
  const line = (cells) => cells.map((c, i) => (i < 3 ? (i === 2 ? c.padStart(widths[i]) : c.padEnd(widths[i])) : c)).join('  ');
  console.log(line(head));
  console.log(line(widths.map((w) => '-'.repeat(w)).concat('----')));
  for (const t of table) console.log(line(t));
}
