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

// --- density (bench/density.mjs, issue 21) -------------------------------------------------

const mib = (value) => (Number.isFinite(value) ? `${value.toFixed(value < 10 ? 2 : 0)} MiB` : '—');
const gibOrMib = (value) => (Number.isFinite(value) ? (value >= 1024 ? `${(value / 1024).toFixed(2)} GiB` : mib(value)) : '—');
const ms = (value) => (Number.isFinite(value) ? `${value.toFixed(value < 10 ? 2 : 0)} ms` : '—');
const us = (value) => (Number.isFinite(value) ? `${(value * 1000).toFixed(0)} µs` : '—');
const mark = (met) => (met === undefined ? '' : met ? '✓' : '✗');

/** The last point of a curve at `n` sessions, if the run got there. */
const pointAt = (curve, n) => curve?.find((p) => p.n === n);

/**
 * The density figures as Markdown: SandboxHost against one process per session, against the
 * goals of issue 21, then every point measured, then what went wrong.
 */
export function renderDensityMarkdown(d) {
  const { latency, host, process: perProcess, tenants } = d.scenarios;
  const hostFit = d.fits.host;
  const processFit = d.fits.process;
  const lines = [
    `Measured ${d.date.slice(0, 10)}${d.commit ? ` at ${d.commit}` : ''} on ${d.machine}, Node ${d.node}; every isolate bootstrapped with ${d.bootstrap}; sandbox: '${d.sandbox}'; ` +
      `RSS = the host process (after gc) + every worker (VmRSS). SandboxHost: one tenant, ${d.perWorker} isolates per worker. The run took ${d.seconds.toFixed(0)} s.`,
    '',
    `| figure | SandboxHost (${d.perWorker} isolates per worker) | one process per session (IsolatedRuntime.start) | goal (issue 21) | met |`,
    '| --- | ---: | ---: | --- | :---: |',
  ];
  const row = (figure, strata, before, goal, met) => lines.push(`| ${escapeCell(figure)} | ${strata} | ${before} | ${escapeCell(goal)} | ${mark(met)} |`);
  const hostPoints = host?.curve?.map((p) => p.n).join(', ');
  const processPoints = perProcess?.curve?.map((p) => p.n).join(', ');
  row(
    'marginal RSS per idle session (least-squares slope)',
    `${mib(hostFit?.slopeMiB)} (N = ${hostPoints ?? '—'})`,
    `${mib(processFit?.slopeMiB)} (N = ${processPoints ?? '—'})`,
    `≤ ${d.goals.perSessionMiB} MiB (goal ${d.goals.perSessionGoalMiB} MiB)`,
    hostFit && hostFit.slopeMiB <= d.goals.perSessionMiB,
  );
  const at1000 = pointAt(host?.curve, 1000);
  row(
    'total RSS, 1 000 idle sessions of one tenant',
    at1000 ? `${gibOrMib(at1000.totalMiB)} (${at1000.hosts} workers)` : '—',
    processFit ? `${gibOrMib(processFit.interceptMiB + 1000 * processFit.slopeMiB)} (extrapolated)` : '—',
    `≤ ${d.goals.thousandSessionsMiB / 1024} GiB`,
    at1000 && at1000.totalMiB <= d.goals.thousandSessionsMiB,
  );
  const lastTenants = tenants?.curve?.at(-1);
  if (lastTenants !== undefined) {
    const scaled = tenants.reached < tenants.wanted && d.fits.tenants !== undefined;
    const extrapolated = scaled
      ? `; extrapolated to ${tenants.wanted}: ${gibOrMib(d.fits.tenants.interceptMiB + tenants.wanted * d.fits.tenants.slopeMiB)}`
      : '';
    row(
      `total RSS, ${lastTenants.n} tenants × ${tenants.sessionsPerTenant} sessions (one worker per tenant)${scaled ? ` — scaled down from ${tenants.wanted}` : ''}`,
      `${gibOrMib(lastTenants.totalMiB)} (${mib(d.fits.tenants?.slopeMiB)} per tenant${extrapolated})`,
      processFit ? `${gibOrMib(processFit.interceptMiB + lastTenants.sessions * processFit.slopeMiB)} (extrapolated)` : '—',
      '(bounded by the process count)',
      undefined,
    );
  }
  row(
    'open a session + first 1+1, p50 / p95',
    latency?.open
      ? `${ms(latency.open.p50)} / ${ms(latency.open.p95)} (warm host, ${latency.open.count} opens, each after ${latency.idleBeforeOpenMs ?? 0} ms idle)`
      : '—',
    perProcess?.start ? `${ms(perProcess.start.p50)} / ${ms(perProcess.start.p95)} (IsolatedRuntime.start + 1+1)` : '—',
    `≤ ${d.goals.openP50Ms} ms p50`,
    latency?.open && latency.open.p50 <= d.goals.openP50Ms,
  );
  if (latency?.floorAfterIdle?.pipeRoundTripUs?.count > 0) {
    const idle = latency.floorAfterIdle;
    const warm = latency.floorWarm;
    const sum = (f) => f.pipeRoundTripUs.p50 + f.rawEvalUs.p50;
    row(
      `the floor after the same idle moment: a pipe round trip to a node process + raw isolated-vm evalSync('1+1'), p50 (warm)`,
      `${us(idle.pipeRoundTripUs.p50 / 1000)} + ${us(idle.rawEvalUs.p50 / 1000)} = ${ms(sum(idle) / 1000)} (warm: ${us(warm.pipeRoundTripUs.p50 / 1000)} + ${us(warm.rawEvalUs.p50 / 1000)} = ${ms(sum(warm) / 1000)}); the open is ${(latency.open.p50 / (sum(idle) / 1000)).toFixed(1)}× it`,
      '—',
      '(what an open after idle stands on)',
      undefined,
    );
  }
  if (latency?.openBackToBack?.count > 0) {
    const b = latency.openBackToBack;
    row('the same opens back to back (no idle moment between them), p50 / p95', `${ms(b.p50)} / ${ms(b.p95)}`, '—', '—', undefined);
  }
  if (latency?.openWarm?.count > 0) {
    const w = latency.openWarm;
    row(
      `open + first 1+1 in a warm worker: a spare for each open, opens 1 ms apart (the machine awake), p50 / p95`,
      `${ms(w.p50)} / ${ms(w.p95)} (${w.count} opens; spareIsolates: ${w.spares})`,
      '—',
      `≤ ${d.goals.openP50Ms} ms p50`,
      w.p50 <= d.goals.openP50Ms,
    );
  }
  if (latency?.openWithoutBootstrap?.count > 0) {
    const bare = latency.openWithoutBootstrap;
    row(
      'open + first 1+1 with no bootstrap at all, back to back, p50 / p95',
      `${ms(bare.p50)} / ${ms(bare.p95)}`,
      '—',
      "(the bootstrap's share of an open)",
      undefined,
    );
  }
  if (latency?.eval) {
    const { alone, crowded, idleNeighbours } = latency.eval;
    const ratio = crowded.p50 / alone.p50;
    row(
      `warm eval round trip p50: 1 isolate in the worker / with ${idleNeighbours} idle beside it (ratio)`,
      `${us(alone.p50)} / ${us(crowded.p50)} (${ratio.toFixed(2)}×; in alternating batches)`,
      '—',
      'no worse with 100 idle than with one (within 10%)',
      ratio <= d.goals.evalRatio * 1.1,
    );
  }
  row(
    'SandboxHost.start (cold, no spare worker), p50 / max',
    latency?.hostStartMs ? `${ms(latency.hostStartMs.p50)} / ${ms(latency.hostStartMs.max)} (${latency.hostStartMs.count} starts)` : '—',
    '(as the open above)',
    '—',
    undefined,
  );
  lines.push(
    '',
    'Every point measured:',
    '',
    '| scenario | sessions | workers | host process | workers | total | per session |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
  );
  const points = (name, curve, sessionsOf = (p) => p.n) => {
    for (const p of curve ?? []) {
      const sessions = sessionsOf(p);
      lines.push(
        `| ${name} | ${sessions} | ${p.hosts ?? p.n} | ${mib(p.parentMiB)} | ${mib(p.workersMiB)} | ${mib(p.totalMiB)} | ${sessions > 0 ? mib(p.totalMiB / sessions) : '—'} |`,
      );
    }
  };
  points('SandboxHost, one tenant', host?.curve);
  if (host?.afterClose) points('SandboxHost, every session closed, workers kept', [host.afterClose]);
  if (host?.reuse) {
    const r = host.reuse;
    lines.push(
      `| SandboxHost, the first worker alone: full / every session closed / ${r.isolates} opened again | ${r.isolates} | 1 | — | ${mib(r.fullMiB)} / ${mib(r.closedMiB)} / ${mib(r.refilledMiB)} | — | — |`,
    );
  }
  points('one process per session', perProcess?.curve);
  points(
    'tenants × 5 sessions',
    tenants?.curve?.map((p) => ({ ...p, hosts: p.n })),
    (p) => p.sessions,
  );
  const problems = [];
  for (const [name, s] of Object.entries(d.scenarios)) {
    if (s.failed !== undefined) problems.push(`${name}: the scenario failed: ${s.failed}`);
    for (const note of s.notes ?? []) problems.push(`${name}: ${note}`);
    const failures = s.failures ?? [];
    if (failures.length > 0) problems.push(`${name}: ${failures.length} opens failed, the first: ${failures[0]}`);
  }
  if (d.leftoverWorkers.length > 0) problems.push(`worker processes left behind: ${d.leftoverWorkers.join(', ')}`);
  lines.push('', problems.length === 0 ? 'No failed opens, no notes, no worker left behind.' : 'Notes:', '');
  for (const p of problems) lines.push(`- ${escapeCell(p)}`);
  return `${lines.join('\n')}\n`;
}

/**
 * An SVG line chart of total RSS against idle sessions (0 to 1 000): SandboxHost as measured, one
 * process per session as measured and then extrapolated from its slope (dashed), with this
 * machine's memory and the 8 GiB goal as horizontal lines. Deterministic for the same input.
 */
export function renderDensitySvg(d) {
  const hostCurve = d.scenarios.host?.curve ?? [];
  const processCurve = d.scenarios.process?.curve ?? [];
  const width = 940;
  const height = 440;
  const left = 70;
  const right = 350;
  const top = 44;
  const bottom = 50;
  const plotW = width - left - right;
  const plotH = height - top - bottom;
  const maxN = 1000;
  const stepMiB = 4096;
  const yMax = Math.ceil((Math.max(d.memTotalMiB, ...hostCurve.map((p) => p.totalMiB)) * 1.08) / stepMiB) * stepMiB;
  const x = (n) => left + (n / maxN) * plotW;
  const y = (value) => top + plotH - (Math.min(value, yMax) / yMax) * plotH;
  const f = (v) => v.toFixed(1);
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="10" y="20" font-size="14" font-weight="bold">${xmlEscape(`Idle sessions against total RSS, WEB_POLYFILLS in every isolate (${d.date.slice(0, 10)})`)}</text>`,
  ];
  for (let v = 0; v <= yMax; v += stepMiB) {
    out.push(`<line x1="${left}" y1="${f(y(v))}" x2="${left + plotW}" y2="${f(y(v))}" stroke="#edf2f7"/>`);
    out.push(`<text x="${left - 6}" y="${f(y(v) + 4)}" text-anchor="end">${v}</text>`);
  }
  for (let n = 0; n <= maxN; n += 200) {
    out.push(`<text x="${f(x(n))}" y="${top + plotH + 16}" text-anchor="middle">${n}</text>`);
  }
  out.push(`<line x1="${left}" y1="${top + plotH}" x2="${left + plotW}" y2="${top + plotH}" stroke="#4a5568"/>`);
  out.push(`<line x1="${left}" y1="${top}" x2="${left}" y2="${top + plotH}" stroke="#4a5568"/>`);
  out.push(`<text x="${left + plotW / 2}" y="${height - 12}" text-anchor="middle">idle sessions</text>`);
  out.push(`<text x="16" y="${top + plotH / 2}" text-anchor="middle" transform="rotate(-90 16 ${top + plotH / 2})">RSS (MiB)</text>`);
  const rightLabels = [];
  const level = (value, label, colour) => {
    out.push(`<line x1="${left}" y1="${f(y(value))}" x2="${left + plotW}" y2="${f(y(value))}" stroke="${colour}" stroke-dasharray="2 3"/>`);
    rightLabels.push({ y: y(value), label, colour });
  };
  level(d.memTotalMiB, `this machine's memory (${(d.memTotalMiB / 1024).toFixed(1)} GiB)`, '#718096');
  level(d.goals.thousandSessionsMiB, `goal: 1 000 sessions ≤ ${d.goals.thousandSessionsMiB / 1024} GiB`, '#2f855a');
  const polyline = (curve, colour, dash) =>
    `<polyline fill="none" stroke="${colour}" stroke-width="2"${dash ? ' stroke-dasharray="6 4"' : ''} points="${curve.map(([n, v]) => `${f(x(n))},${f(y(v))}`).join(' ')}"/>`;
  const dots = (curve, colour) => curve.map(([n, v]) => `<circle cx="${f(x(n))}" cy="${f(y(v))}" r="3" fill="${colour}"/>`);
  const hostColour = '#2b6cb0';
  const processColour = '#c05621';
  const hostPoints = hostCurve.map((p) => [p.n, p.totalMiB]);
  if (hostPoints.length > 0) {
    out.push(polyline(hostPoints, hostColour, false), ...dots(hostPoints, hostColour));
    const [n, v] = hostPoints.at(-1);
    const label = `SandboxHost, one tenant, ${d.perWorker} per worker: ${(v / 1024).toFixed(2)} GiB${n === maxN ? '' : ` at ${n}`}`;
    rightLabels.push({ y: y(v), label, colour: hostColour });
  }
  const tenantPoints = (d.scenarios.tenants?.curve ?? []).map((p) => [p.sessions, p.totalMiB]);
  if (tenantPoints.length > 0) {
    const tenantColour = '#6b46c1';
    out.push(polyline(tenantPoints, tenantColour, false), ...dots(tenantPoints, tenantColour));
    const [n, v] = tenantPoints.at(-1);
    const label = `${d.scenarios.tenants.reached} tenants × ${d.scenarios.tenants.sessionsPerTenant}, a worker each: ${(v / 1024).toFixed(2)} GiB${n === maxN ? '' : ` at ${n}`}`;
    rightLabels.push({ y: y(v), label, colour: tenantColour });
  }
  const processPoints = processCurve.map((p) => [p.n, p.totalMiB]);
  const fit = d.fits.process;
  if (processPoints.length > 0 && fit !== undefined) {
    out.push(polyline(processPoints, processColour, false), ...dots(processPoints, processColour));
    // The extrapolation, from the last measured point up to the top of the chart (or 1 000).
    const [lastN] = processPoints.at(-1);
    const endN = Math.min(maxN, Math.max(lastN, (yMax - fit.interceptMiB) / fit.slopeMiB));
    const line = [
      [lastN, fit.interceptMiB + lastN * fit.slopeMiB],
      [endN, fit.interceptMiB + endN * fit.slopeMiB],
    ];
    out.push(polyline(line, processColour, true));
    const at1000 = fit.interceptMiB + maxN * fit.slopeMiB;
    const labelX = x(endN) + 6;
    out.push(
      `<text x="${f(labelX)}" y="${top + 14}" fill="${processColour}">${xmlEscape(`one process per session (measured to ${lastN},`)}</text>`,
      `<text x="${f(labelX)}" y="${top + 28}" fill="${processColour}">${xmlEscape(`dashed: extrapolated, ${fit.slopeMiB.toFixed(0)} MiB each;`)}</text>`,
      `<text x="${f(labelX)}" y="${top + 42}" fill="${processColour}">${xmlEscape(`${(at1000 / 1024).toFixed(0)} GiB at 1 000)`)}</text>`,
    );
  }
  // The labels right of the plot, each at its line's height, pushed apart where they would overlap.
  let previous = -Infinity;
  for (const { y: at, label, colour } of rightLabels.sort((a, b) => a.y - b.y)) {
    previous = Math.max(at, previous + 15);
    out.push(`<text x="${left + plotW + 6}" y="${f(previous + 4)}" fill="${colour}">${xmlEscape(label)}</text>`);
  }
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
