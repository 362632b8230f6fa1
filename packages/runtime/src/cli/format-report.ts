/**
 * `strata doctor`'s human output: the doctor report as aligned text. Pure.
 *
 * @module
 */
import type { LayerReport } from '../layers/layer.js';
import { layersByEnforcement, layersOf, type DoctorReport } from './doctor-report.js';

/** The columns of the layer table, named as the fields of a layer report. */
export const LAYER_COLUMNS = ['name', 'version', 'requirement', 'enforcement', 'selfTest', 'provides', 'missing'] as const;

/** The whole doctor report as text: the facts, the layer table, the verdict. Ends with a newline. */
export function formatDoctorReport(report: DoctorReport): string {
  const base = report.report?.base;
  const facts: [string, string][] = [
    ['node', report.node.version],
    ['platform', `${report.node.platform} ${report.node.arch}`],
    ['native helpers', nativeHelpers(report)],
    ['worker spawn', workerSpawn(report)],
    ['privileges', privileges(report)],
    ['worker', report.worker === null ? 'not started' : `pid ${report.worker.pid}, answered in ${report.worker.startMs} ms`],
    [
      'base hardening',
      base === undefined
        ? 'unknown (no worker)'
        : `jitless ${yesNo(base.jitless)}, privileges dropped ${yesNo(base.privilegesDropped)}, strict eval ${yesNo(base.strictEval)}`,
    ],
    ['worker node', base === undefined ? '-' : base.workerNode],
    ['worker flags', base === undefined ? '-' : base.flags.join(' ') || '-'],
    ['sandbox', sandboxRow(report)],
    ['sandbox extras', report.sandboxExtras === null ? '-' : report.sandboxExtras.join(', ') || 'none'],
  ];
  const layers = layersOf(report.report);
  const table = renderTable(
    [...LAYER_COLUMNS],
    layers.map((layer) => layerRow(layer)),
  );
  const empty = layers.length === 0 ? ['(no layers: this release of Strata has no OS layers for this platform)'] : [];
  const notes = layers.flatMap((layer) => (layer.capability?.notes ?? []).map((note) => `note (${layer.name}): ${note}`));
  return [
    `strata doctor: @strata/runtime ${report.strata}`,
    '',
    ...renderTable(['', ''], facts, { header: false }),
    '',
    ...table,
    ...empty,
    ...(notes.length > 0 ? ['', ...notes] : []),
    '',
    report.summary,
    '',
  ].join('\n');
}

/** The sandbox's name, and when it is `'none'`, which layers are in force all the same. */
function sandboxRow(report: DoctorReport): string {
  if (report.sandbox === null) return 'unknown (no worker)';
  const { full, partial } = layersByEnforcement(layersOf(report.report));
  if (report.sandbox !== 'none' || (full.length === 0 && partial.length === 0)) return report.sandbox;
  const parts = [
    full.length > 0 ? `in force: ${full.join(', ')}` : 'no layer fully in force',
    ...(partial.length > 0 ? [`partly: ${partial.join(', ')}`] : []),
  ];
  return `none (not the whole OS sandbox; ${parts.join('; ')})`;
}

/** One layer's row, in {@link LAYER_COLUMNS} order. */
export function layerRow(layer: LayerReport): string[] {
  const list = (items: readonly string[] | undefined) => (items === undefined || items.length === 0 ? '-' : items.join(', '));
  return [
    layer.name,
    layer.version,
    layer.requirement,
    layer.enforcement,
    layer.selfTest,
    list(layer.capability?.provides),
    list(layer.capability?.missing),
  ].map((cell) => String(cell ?? '-'));
}

/**
 * Rows as left-aligned columns separated by two spaces, the header first (unless `header` is
 * false). Trailing spaces are trimmed, so the last column may be as long as it needs.
 */
export function renderTable(headers: readonly string[], rows: readonly (readonly string[])[], { header = true } = {}): string[] {
  const all = header ? [headers, ...rows] : rows;
  const widths = headers.map((_, i) => Math.max(0, ...all.map((row) => (row[i] ?? '').length)));
  return all.map((row) =>
    headers
      .map((_, i) => (row[i] ?? '').padEnd(widths[i]!))
      .join('  ')
      .trimEnd(),
  );
}

function nativeHelpers(report: DoctorReport): string {
  const h = report.nativeHelpers;
  if (h.built) return `built (${h.directory}: strata-exec, strata_watchdog.node)`;
  const missing = [h.strataExec ? undefined : 'strata-exec', h.watchdog ? undefined : 'strata_watchdog.node'].filter((x) => x !== undefined);
  return `NOT built: ${missing.join(', ')} missing from ${h.directory}`;
}

function workerSpawn(report: DoctorReport): string {
  const spawn = report.workerSpawn;
  if (spawn === undefined) return 'unknown';
  if (spawn.method === 'posix_spawn') return 'posix_spawn (this process is not forked to start a worker)';
  if (spawn.method === 'child_process') return `child_process: this process is forked to start each worker (${spawn.reason ?? 'no reason given'})`;
  return `unknown: ${spawn.reason ?? 'no reason given'}`;
}

function privileges(report: DoctorReport): string {
  const p = report.privileges;
  const self = p.root ? 'root (uid 0)' : `not root (uid ${p.uid ?? 'unknown'})`;
  if (p.workerUid === null) return `${self}; the worker's uid is unknown`;
  if (p.root) return `${self}; the worker drops to uid ${p.workerUid}`;
  return `${self}; the worker runs as uid ${p.workerUid}`;
}

function yesNo(value: boolean): string {
  return value ? 'yes' : 'no';
}
