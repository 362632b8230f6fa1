// Density probe (issue 21): what one more idle session costs when sessions are isolates in one
// worker process instead of worker processes (65–70 MiB each today), and which way of installing
// the bootstrap (WEB_POLYFILLS, 568 KB) the multi-isolate worker should use.
//
// A spike, not part of `npm run bench`: it uses isolated-vm directly, with the worker's V8 flags
// (buildWorkerFlags' defaults: --jitless and the regexp and freeze flags, plus --expose-gc), and
// measures each way of opening a session in a fresh child process of its own, so that one way's
// freed memory never counts against the next. The isolates of a way all live in that one process.
//
//   bare        isolate + context, no bootstrap: the floor.
//   compile     the bootstrap compiled in every isolate (what a Runtime would do without a cache).
//   codecache   the bootstrap compiled once with produceCachedData, then each isolate compiles with
//               cachedData (what runtime.ts's bootstrapCache does today, per process).
//   snapshot    the bootstrap run once inside ivm.Isolate.createSnapshot; each isolate starts from it.
//   snapshot-url  the same, with the lazy URL group loaded inside the snapshot: what a lazy group
//               costs every idle isolate once it is no longer lazy.
//   runtime     today's in-process Runtime.start({ bootstrap: WEB_POLYFILLS }): prelude, deadline
//               addon, host callbacks and the code cache; what one session costs if the worker
//               simply held many Runtimes.
//   runtime-snapshot  Runtime.start({ snapshot }) from one Runtime.createSnapshot({ bootstrap:
//               WEB_POLYFILLS }): the prelude and bootstrap deserialized, the host's callbacks
//               attached after restore; what a multi-isolate worker's session costs.
//
// For each way it reports:
//   1. RSS and V8 heap at N = 1, 10, 100, 500, 1000 idle isolates (each isolate and Node collected
//      first), and the marginal MiB per isolate as the least-squares slope of RSS over N;
//   2. the time to open one more isolate ready to eval (create + context + bootstrap + first `1+1`),
//      p50 / p95 over --opens opens, with 100 idle isolates already open (each disposed after);
//   3. the warm eval round trip of `1+1` (evalSync, and the async eval) with 1 and with 100 idle;
//   4. the extra RSS per isolate once every session ran a small task, then its first URL (idle
//      after use: lazy polyfills compile their bundles in each isolate that first uses them).
//
// Usage (after `npx turbo run build`):
//   node bench/density-probe.mjs [--max 1000] [--opens 50] [--ways bare,compile,...] [--json PATH]
// Prints a markdown table; the results as JSON on stdout's last line, or into PATH with --json.
// It stops growing a way early when free memory falls under 3 GiB. About two minutes on 2 cores.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { freemem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';

const WAYS = ['bare', 'compile', 'codecache', 'snapshot', 'snapshot-url', 'runtime', 'runtime-snapshot'];
const CHECKPOINTS = [1, 10, 100, 500, 1000];
const OPEN_TIMING_AT = 100;
const EVAL_ROUNDS = 2000;
const MIN_FREE_BYTES = 3 * 1024 ** 3;
const MiB = 1024 * 1024;
// Runtime's default memory limit: maxHeapSize + maxBufferBytes (options.ts), in MiB.
const MEMORY_LIMIT_MIB = 256;
// The small tasks each session runs once, in turn, for the after-use readings (not in a bare
// context): eager polyfills first, then the first URL, which loads the lazy URL group (its bundle
// is 340 KB of source, compiled in the isolate that first reads URL).
const TOUCH_TASKS = {
  eager: "new TextEncoder().encode('x').length + structuredClone({ a: [1] }).a.length + (setTimeout(() => {}, 1), 0)",
  url: "new URL('https://a.example/b').pathname.length",
};

const args = parseArgs(process.argv.slice(2));
if (args.child === undefined) await orchestrate(args);
else await measureWay(args);

// --- the parent: one child per way, then the table -----------------------------------------

async function orchestrate({ max, opens, ways, json }) {
  const { buildWorkerFlags } = await import('../packages/runtime/dist/src/isolated/v8-flags.js');
  const flags = buildWorkerFlags();
  const nodeArgs = [...flags.node, '--expose-gc', ...flags.v8];
  const script = fileURLToPath(import.meta.url);
  const results = [];
  for (const way of ways) {
    process.stderr.write(`density-probe: ${way}…\n`);
    const child = spawnSync(process.execPath, [...nodeArgs, script, '--child', way, '--max', String(max), '--opens', String(opens)], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      maxBuffer: 64 * MiB,
    });
    const lastLine = child.stdout.trim().split('\n').at(-1) ?? '';
    if (child.status !== 0 || !lastLine.startsWith('{')) {
      results.push({ way, failed: `exit ${child.status ?? child.signal}: ${child.stdout.slice(-500)}` });
      continue;
    }
    results.push(JSON.parse(lastLine));
  }
  const report = { node: process.version, flags: nodeArgs, memoryLimitMiB: MEMORY_LIMIT_MIB, results };
  process.stdout.write(`${renderTable(report)}\n`);
  if (json === undefined) process.stdout.write(`${JSON.stringify(report)}\n`);
  else writeFileSync(json, `${JSON.stringify(report, null, 2)}\n`);
}

function renderTable({ node, flags, results }) {
  const mib = (bytes) => (Number.isFinite(bytes) ? (bytes / MiB).toFixed(2) : '–');
  const ms = (value) => (value === undefined ? '–' : value.toFixed(3));
  const lines = [
    `Density probe, Node ${node}, flags ${flags.join(' ')}`,
    '',
    '| way | prepare ms | artefact KiB | MiB/isolate (RSS slope) | heap MiB/isolate (total / used) | +MiB/isolate after eager task / first URL | RSS at N (MiB) | open p50 / p95 ms (100 idle) | evalSync p50 1 / 100 idle µs | eval async p50 1 / 100 idle µs |',
    '| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |',
  ];
  for (const r of results) {
    if (r.failed !== undefined) {
      lines.push(`| ${r.way} | failed: ${r.failed.replaceAll('\n', ' ').replaceAll('|', '/')} | | | | | | | | |`);
      continue;
    }
    const last = r.curve.at(-1);
    const curve = r.curve.map((p) => `${p.n}: ${mib(p.rss)}`).join(', ');
    const us = (x) => (x === undefined ? '–' : (x * 1000).toFixed(1));
    lines.push(
      `| ${r.way} | ${r.prepareMs.toFixed(1)} | ${r.artefactBytes === undefined ? '–' : (r.artefactBytes / 1024).toFixed(0)} | ${mib(r.slopeBytesPerIsolate)} | ${mib(last.heapPerIsolate)} / ${mib(last.usedHeapPerIsolate)} | ${r.touched === undefined ? '–' : `${mib(r.touched.eager.extraBytesPerIsolate)} / ${mib(r.touched.url.extraBytesPerIsolate)}`} | ${curve} | ${ms(r.open.p50)} / ${ms(r.open.p95)} | ${us(r.evalSync.idle1.p50)} / ${us(r.evalSync.idle100.p50)} | ${us(r.evalAsync.idle1.p50)} / ${us(r.evalAsync.idle100.p50)} |`,
    );
    if (r.notes.length > 0) lines.push(`|  | ${r.notes.join('; ').replaceAll('|', '/')} | | | | | | | | |`);
  }
  return lines.join('\n');
}

// --- a child: one way, all its isolates in this process -------------------------------------

async function measureWay({ child: way, max, opens }) {
  if (typeof globalThis.gc !== 'function') throw new Error('run through the parent: the child needs --expose-gc');
  const ivm = (await import('isolated-vm')).default;
  const { WEB_POLYFILLS } = await import('@strata/polyfills');
  const { ENTROPY_GLOBAL } = await import('@strata/polyfills/constants');
  const { randomFillSync } = await import('node:crypto');
  const notes = [];

  const started = performance.now();
  const opener = await prepareOpener(way, { ivm, WEB_POLYFILLS, ENTROPY_GLOBAL, randomFillSync, notes });
  const prepareMs = performance.now() - started;

  const sessions = [];
  const curve = [];
  let open;
  let evalIdle1;
  let evalIdle100;
  for (const n of CHECKPOINTS.filter((c) => c <= max)) {
    while (sessions.length < n) {
      if (freemem() < MIN_FREE_BYTES) break;
      sessions.push(await opener.open());
    }
    if (sessions.length < n) {
      notes.push(`stopped at ${sessions.length} isolates: under ${MIN_FREE_BYTES / 1024 ** 3} GiB free`);
      break;
    }
    curve.push(await settle(sessions));
    if (n === 1) evalIdle1 = await evalRoundTrips(sessions[0]);
    if (n === OPEN_TIMING_AT) {
      evalIdle100 = await evalRoundTrips(sessions[sessions.length - 1]);
      open = await timeOpens(opener, opens);
    }
  }
  // Idle after use: every session runs a small task touching the common polyfills once (an agent's
  // session is used, then idles between turns), then RSS is read again.
  const touched = await touchAll(sessions, way);
  if (opener.check !== undefined) notes.push(...(await opener.check(sessions[0], sessions[1])));
  const result = {
    way,
    prepareMs,
    artefactBytes: opener.artefactBytes,
    curve,
    slopeBytesPerIsolate: slope(curve.map((p) => [p.n, p.rss])),
    touched,
    open: open ?? {},
    evalSync: { idle1: evalIdle1.sync, idle100: evalIdle100?.sync ?? {} },
    evalAsync: { idle1: evalIdle1.async, idle100: evalIdle100?.async ?? {} },
    notes,
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(0);
}

/**
 * How this way opens a session: `open()` resolves to `{ evalSync, eval, heap, gc, dispose }` once
 * the session has answered its first `1+1`.
 */
async function prepareOpener(way, { ivm, WEB_POLYFILLS, ENTROPY_GLOBAL, randomFillSync, notes }) {
  const filename = 'strata:bootstrap-0';
  const entropy = (byteLength) => randomFillSync(new Uint8Array(byteLength));
  const newIsolate = (extra = {}) => new ivm.Isolate({ memoryLimit: MEMORY_LIMIT_MIB, ...extra });
  // A session over a raw isolate; `install` puts the bootstrap into its context.
  const rawSession = (isolate, install) => {
    const context = isolate.createContextSync();
    install?.(isolate, context);
    if (context.evalSync('1+1') !== 2) throw new Error('1+1 is not 2');
    return {
      evalSync: (code) => context.evalSync(code),
      eval: (code) => context.eval(code),
      heap: () => isolate.getHeapStatisticsSync(),
      gc: () => context.evalSync('gc()'),
      dispose: () => isolate.dispose(),
    };
  };
  // As Runtime.start does: the host's entropy offered, then the bootstrap, which captures it.
  const installWith = (compile) => (isolate, context) => {
    context.global.setSync(ENTROPY_GLOBAL, new ivm.Callback(entropy));
    compile(isolate).runSync(context);
  };

  switch (way) {
    case 'bare':
      return { open: async () => rawSession(newIsolate()) };
    case 'compile':
      return {
        open: async () =>
          rawSession(
            newIsolate(),
            installWith((isolate) => isolate.compileScriptSync(WEB_POLYFILLS, { filename })),
          ),
      };
    case 'codecache': {
      // Made once, in a throwaway isolate, as the worker would before any guest code runs.
      const maker = newIsolate();
      const made = maker.compileScriptSync(WEB_POLYFILLS, { filename, produceCachedData: true });
      const cachedData = made.cachedData;
      maker.dispose();
      if (cachedData === undefined) throw new Error('V8 produced no code cache');
      let rejected = 0;
      const compile = (isolate) => {
        const script = isolate.compileScriptSync(WEB_POLYFILLS, { filename, cachedData });
        if (script.cachedDataRejected === true) rejected++;
        return script;
      };
      return {
        artefactBytes: cachedData.copy().byteLength,
        open: async () => rawSession(newIsolate(), installWith(compile)),
        check: async () => (rejected > 0 ? [`V8 rejected the code cache ${rejected} times`] : []),
      };
    }
    case 'snapshot':
    case 'snapshot-url': {
      // The bootstrap runs inside the snapshot creator: no host callback can be offered there
      // (an ivm.Callback is not serialisable), so crypto captures no entropy source.
      const scripts = [{ code: WEB_POLYFILLS, filename }];
      if (way === 'snapshot-url') scripts.push({ code: TOUCH_TASKS.url, filename: 'strata:load-url' });
      let snapshot;
      try {
        snapshot = ivm.Isolate.createSnapshot(scripts);
      } catch (error) {
        notes.push(`createSnapshot failed: ${error.message}`);
        throw error;
      }
      return {
        artefactBytes: snapshot.copy().byteLength,
        open: async () => rawSession(newIsolate({ snapshot })),
        check: async (session, other) => probeSnapshotSession(session, other),
      };
    }
    case 'runtime':
    case 'runtime-snapshot': {
      const { Runtime } = await import('@strata/runtime');
      // Made once, before any session opens, as the worker would.
      const snapshot = way === 'runtime-snapshot' ? await Runtime.createSnapshot({ bootstrap: WEB_POLYFILLS }) : undefined;
      const open = async () => {
        const runtime = await Runtime.start(snapshot === undefined ? { bootstrap: WEB_POLYFILLS } : { snapshot });
        if ((await runtime.eval('1+1')) !== 2) throw new Error('1+1 is not 2');
        return {
          evalSync: undefined,
          eval: (code) => runtime.eval(code),
          // Runtime has no heap statistics accessor, and its prelude hides gc() from the context.
          heap: () => undefined,
          gc: undefined,
          dispose: () => runtime.close(),
        };
      };
      return {
        open,
        ...(snapshot === undefined ? {} : { artefactBytes: snapshot.byteLength, check: async (session, other) => probeRuntimeSession(session, other) }),
      };
    }
    default:
      throw new Error(`unknown way ${way}; ways: ${WAYS.join(', ')}`);
  }
}

/** What works, and what does not, in a context started from the snapshot. */
async function probeSnapshotSession(session, other) {
  const probes = {
    'globals present': 'typeof setTimeout + typeof fetch + typeof TextEncoder + typeof __strataEventLoop',
    'crypto.randomUUID': 'crypto.randomUUID().length',
    'lazy URL after restore': 'new URL("https://a.example/b?c=1").searchParams.get("c")',
    'lazy streams after restore': 'typeof new ReadableStream().getReader',
  };
  const notes = [];
  for (const [name, code] of Object.entries(probes)) {
    try {
      notes.push(`${name}: ${session.evalSync(code)}`);
    } catch (error) {
      notes.push(`${name}: throws ${error.message}`);
    }
  }
  // A snapshot fixes the heap's state: each isolate must still get its own Math.random seed.
  const randoms = [session, other].map((s) => s.evalSync('Math.random()'));
  notes.push(`Math.random ${randoms[0] === randoms[1] ? 'REPEATS' : 'differs'} across two isolates from one snapshot`);
  return notes;
}

/** The same probes through a Runtime restored from its snapshot: the host's hooks attached after restore. */
async function probeRuntimeSession(session, other) {
  const probes = {
    'crypto.randomUUID': 'crypto.randomUUID().length',
    'lazy URL after restore': 'new URL("https://a.example/b?c=1").searchParams.get("c")',
    'lazy streams after restore': 'typeof new ReadableStream().getReader',
  };
  const notes = [];
  for (const [name, code] of Object.entries(probes)) {
    try {
      notes.push(`${name}: ${await session.eval(code)}`);
    } catch (error) {
      notes.push(`${name}: throws ${error.message}`);
    }
  }
  const randoms = await Promise.all([session, other].map((s) => s.eval('Math.random()')));
  notes.push(`Math.random ${randoms[0] === randoms[1] ? 'REPEATS' : 'differs'} across two runtimes from one snapshot`);
  return notes;
}

/** RSS and the summed V8 heap of all sessions, after every heap and Node's were collected. */
async function settle(sessions) {
  for (const session of sessions) session.gc?.();
  globalThis.gc();
  await sleep(300);
  globalThis.gc();
  let total = 0;
  let used = 0;
  let measured = 0;
  for (const session of sessions) {
    const stats = session.heap();
    if (stats === undefined) continue;
    total += stats.total_heap_size + stats.externally_allocated_size;
    used += stats.used_heap_size + stats.externally_allocated_size;
    measured++;
  }
  const { rss } = process.memoryUsage();
  const per = (bytes) => (measured === 0 ? Number.NaN : bytes / measured);
  return { n: sessions.length, rss, heapPerIsolate: per(total), usedHeapPerIsolate: per(used) };
}

/** Each touch task in every session, in turn; the extra RSS per isolate that each step left behind. */
async function touchAll(sessions, way) {
  if (way === 'bare' || sessions.length === 0) return undefined;
  const steps = {};
  let before = await settle(sessions);
  for (const [name, task] of Object.entries(TOUCH_TASKS)) {
    for (const session of sessions) await session.eval(task);
    const after = await settle(sessions);
    steps[name] = { rss: after.rss, extraBytesPerIsolate: (after.rss - before.rss) / after.n, usedHeapPerIsolate: after.usedHeapPerIsolate };
    before = after;
  }
  return steps;
}

/** Open `count` more sessions one at a time; each is disposed after it answered (not timed). */
async function timeOpens(opener, count) {
  const times = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const session = await opener.open();
    times.push(performance.now() - started);
    await session.dispose();
  }
  return percentiles(times);
}

/** Warm `1+1` round trips on one session: synchronous, and through isolated-vm's async path. */
async function evalRoundTrips(session) {
  const run = async (once) => {
    for (let i = 0; i < 200; i++) await once();
    const times = [];
    for (let i = 0; i < EVAL_ROUNDS; i++) {
      const started = performance.now();
      await once();
      times.push(performance.now() - started);
    }
    return percentiles(times);
  };
  return {
    sync: session.evalSync === undefined ? {} : await run(() => session.evalSync('1+1')),
    async: await run(() => session.eval('1+1')),
  };
}

function percentiles(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { p50: at(0.5), p95: at(0.95), count: sorted.length };
}

/** Least-squares slope of y over x. */
function slope(points) {
  if (points.length < 2) return Number.NaN;
  const meanX = points.reduce((s, [x]) => s + x, 0) / points.length;
  const meanY = points.reduce((s, [, y]) => s + y, 0) / points.length;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - meanX) * (y - meanY);
    den += (x - meanX) ** 2;
  }
  return num / den;
}

function parseArgs(argv) {
  const parsed = { max: 1000, opens: 50, ways: WAYS, json: undefined, child: undefined };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    if (flag === '--max') parsed.max = Number(value);
    else if (flag === '--opens') parsed.opens = Number(value);
    else if (flag === '--ways') parsed.ways = value.split(',');
    else if (flag === '--json') parsed.json = value;
    else if (flag === '--child') parsed.child = value;
    else throw new Error(`unknown option ${flag}; options: --max N, --opens N, --ways a,b, --json PATH`);
  }
  for (const way of parsed.ways) if (!WAYS.includes(way)) throw new Error(`unknown way ${way}; ways: ${WAYS.join(', ')}`);
  return parsed;
}
