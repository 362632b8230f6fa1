// Pure renderers for `npm run bench`: results (as written to bench/results.json) to a Markdown
// table and an SVG chart. No I/O here; bench/run.mjs writes the files.

/** `12.3 µs`, `4.56 ms`, `69.8 MiB`: a value in its unit, readably. */
export function formatValue(value, unit) {
  if (value === undefined || value === null || Number.isNaN(value)) return '—';
  if (unit === 'MiB') return `${value.toFixed(1)} MiB`;
  if (unit === 'µs')
    return value >= 10_000 ? `${(value / 1000).toFixed(0)} ms` : value >= 1000 ? `${(value / 1000).toFixed(2)} ms` : `${value.toFixed(value < 10 ? 2 : 0)} µs`;
  return `${value} ${unit}`;
}

const escapeCell = (text) => String(text).replaceAll('|', '\\|');

/**
 * The Markdown: Strata's figures against their floors and goals (docs/design.md §7), then every
 * alternative side by side, then what was skipped and why.
 */
export function renderMarkdown(results) {
  const lines = [];
  lines.push(`Measured ${results.date.slice(0, 10)} on ${results.machine}, Node ${results.node}; medians.`, '');
  lines.push(
    '| figure | Strata | floor | ratio to floor | goal (docs/design.md §7) | ratio to goal | met |',
    '| --- | ---: | ---: | ---: | --- | ---: | :---: |',
  );
  for (const r of results.strata) {
    const ratio = r.floor === undefined ? '—' : `${(r.value / r.floor).toFixed(2)}×`;
    const toGoal = r.goalValue === undefined ? '—' : `${(r.value / r.goalValue).toFixed(2)}×`;
    const floor = r.floor === undefined ? '—' : `${formatValue(r.floor, r.unit)} (${r.floorName})`;
    const met = r.met === undefined ? '' : r.met ? '✓' : '✗';
    lines.push(
      `| ${escapeCell(r.figure)} | ${formatValue(r.value, r.unit)} | ${escapeCell(floor)} | ${ratio} | ${escapeCell(r.goal ?? '—')} | ${toGoal} | ${met} |`,
    );
  }
  const names = results.alternatives.columns;
  lines.push('', `| figure | ${names.map(escapeCell).join(' | ')} |`, `| --- | ${names.map(() => '---:').join(' | ')} |`);
  for (const row of results.alternatives.rows) {
    lines.push(`| ${escapeCell(row.figure)} | ${names.map((n) => (row.cells[n] === undefined ? '—' : formatValue(row.cells[n], row.unit))).join(' | ')} |`);
  }
  if (results.alternatives.skipped.length > 0) {
    lines.push('', 'Not measured here:', '');
    for (const s of results.alternatives.skipped) lines.push(`- ${escapeCell(s.alternative)}${s.figure ? ` (${s.figure})` : ''}: ${escapeCell(s.reason)}`);
  }
  return `${lines.join('\n')}\n`;
}

const xmlEscape = (text) => String(text).replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');

/**
 * An SVG bar chart, one panel per figure in `figures` (by name), one bar per alternative, on a
 * log scale (the values span four orders of magnitude). Deterministic for the same input.
 */
export function renderSvg(results, figures) {
  const names = results.alternatives.columns;
  const panels = figures.map((figure) => results.alternatives.rows.find((r) => r.figure === figure)).filter(Boolean);
  const barHeight = 18;
  const gap = 6;
  const labelWidth = 230;
  const chartWidth = 470;
  const panelHeight = (b) => 34 + b * (barHeight + gap);
  const heights = panels.map((p) => panelHeight(names.filter((n) => p.cells[n] !== undefined).length));
  const width = labelWidth + chartWidth + 110;
  const height = heights.reduce((a, b) => a + b, 0) + 40;
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
  ];
  out.push(`<rect width="${width}" height="${height}" fill="white"/>`);
  out.push(
    `<text x="10" y="20" font-size="14" font-weight="bold">${xmlEscape(`Strata and the alternatives (median; log scale; ${results.date.slice(0, 10)})`)}</text>`,
  );
  let y = 40;
  panels.forEach((panel, i) => {
    const present = names.filter((n) => panel.cells[n] !== undefined);
    const values = present.map((n) => panel.cells[n]);
    const lo = Math.min(...values) / 2;
    const hi = Math.max(...values) * 1.5;
    const scale = (v) => (Math.log10(v) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo));
    out.push(`<text x="10" y="${y + 14}" font-weight="bold">${xmlEscape(panel.figure)}</text>`);
    present.forEach((name, j) => {
      const by = y + 24 + j * (barHeight + gap);
      const w = Math.max(2, scale(panel.cells[name]) * chartWidth);
      const strata = name.startsWith('Strata');
      out.push(`<text x="${labelWidth - 8}" y="${by + 13}" text-anchor="end">${xmlEscape(name)}</text>`);
      out.push(`<rect x="${labelWidth}" y="${by}" width="${w.toFixed(1)}" height="${barHeight}" fill="${strata ? '#2b6cb0' : '#a0aec0'}"/>`);
      out.push(`<text x="${(labelWidth + w + 6).toFixed(1)}" y="${by + 13}">${xmlEscape(formatValue(panel.cells[name], panel.unit))}</text>`);
    });
    y += heights[i];
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
