// Sessions in stores (issue 23): what keeping a session's journal in a store costs, side by side
// with keeping it in memory. `npm run bench:stores` runs it alone; `npm run bench` runs it after
// the main figures. Writes bench/stores-results.json and bench/stores-results.md.
//
// - one append of a cell with 3 tool calls (1 cell row + 3 call rows, one transaction), at the
//   store: memory, SQLite (durability full and normal), PostgreSQL (a local server the bench
//   starts from the binaries the tests use, with its default fsync and synchronous commit; over
//   its Unix socket, so no network's round trip is in the figure);
// - a cell with 3 tool calls run in a session in each store, against the same cell in a session
//   without one (each call is written as started before its tool runs, and as ended before the
//   guest hears its answer: 8 writes for this cell);
// - resuming a 20-cell session (10 tool calls each) from each store, by a second connection, against
//   restoring the same journal from memory; both into a pooled worker, so the store's part shows;
// - the takeover after the holder died: a child process holds the session (lease TTL 1 s) and is
//   SIGKILLed; the time from its death until another process has the session ready, and until it
//   has the lease, against the TTL.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AgentSandbox, MemoryJournalStore, SqliteJournalStore } from '@strata/agent';
import { SandboxPool } from '@strata/runtime';

const RUNS = Number(process.env.STRATA_BENCH_STORE_RUNS ?? 200);
const SESSION_RUNS = 40;
const RESUME_RUNS = 11;
const TAKEOVER_RUNS = 5;
const TTL_MS = 1_000;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const folder = mkdtempSync(join(tmpdir(), 'strata-bench-stores-'));
const cleanups = [() => rmSync(folder, { recursive: true, force: true })];
const results = {
  date: new Date().toISOString(),
  machine: `${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, ${process.platform} ${process.arch}`,
  node: process.version,
  figures: [],
  skipped: [],
};
const figure = (row) => {
  results.figures.push(row);
  console.log(`${row.figure} [${row.store}]: ${row.ms.toFixed(3)} ms${row.vs === undefined ? '' : ` (${(row.ms / row.vs).toFixed(2)}× ${row.vsName})`}`);
};

// --- the stores ------------------------------------------------------------------------------
// Each kind: `fresh()` gives a new, empty place (a file, a database), `connect(place)` a store on it.
const stores = [
  { name: 'memory', fresh: async () => new MemoryJournalStore(), connect: async (store) => store, shared: true },
  { name: 'sqlite (durability full)', fresh: async () => join(folder, `full-${Math.random()}.db`), connect: async (file) => SqliteJournalStore.open(file) },
  {
    name: 'sqlite (durability normal)',
    fresh: async () => join(folder, `normal-${Math.random()}.db`),
    connect: async (file) => SqliteJournalStore.open(file, { durability: 'normal' }),
  },
];
let postgres;
try {
  const helper = await import(new URL('../packages/store-postgres/dist/test/helpers/postgres-server.js', import.meta.url).href);
  const found = await helper.findPostgresBinaries();
  if ('missing' in found) throw new Error(found.missing);
  const { PostgresJournalStore } = await import('@strata/store-postgres');
  // PostgreSQL's defaults (fsync, synchronous commit): a write costs what it costs a real server.
  const server = await helper.startPostgresServer(found, { durable: true });
  cleanups.unshift(() => server.dispose());
  let databases = 0;
  postgres = {
    name: 'postgresql (local server)',
    fresh: async () => {
      const database = `bench_${++databases}`;
      await server.query(`CREATE DATABASE ${database}`);
      return server.connectionString(database);
    },
    connect: (connectionString) => PostgresJournalStore.connect({ connectionString }),
  };
  stores.push(postgres);
} catch (error) {
  results.skipped.push({ store: 'postgresql', reason: error instanceof Error ? error.message : String(error) });
  console.log(`bench: PostgreSQL not measured: ${error instanceof Error ? error.message : String(error)}`);
}
const open = async (kind) => kind.connect(await kind.fresh());

const cellRows = (cell, seq) => ({
  cells: [
    { cell, record: JSON.stringify({ code: `const a = await lookup("sku-${cell}"); const b = await stock(a.id); await note(b)`, status: 'ok', result: 7 }) },
  ],
  calls: [0, 1, 2].map((i) => ({
    cell,
    seq: seq + i,
    record: JSON.stringify({ tool: ['lookup', 'stock', 'note'][i], args: [`sku-${cell}`], status: 'completed', result: { id: cell, units: 12 }, ms: 1 }),
  })),
  nextSeq: seq + 3,
});

try {
  // --- 1. one append of a cell with 3 tool calls ------------------------------------------------
  for (const kind of stores) {
    const store = await open(kind);
    const created = await store.create('append', '{}', { owner: 'bench', ttlMs: 600_000 });
    let version = created.version;
    const times = [];
    for (let i = 0; i < RUNS + 10; i++) {
      const t0 = performance.now();
      version = await store.append('append', cellRows(i + 1, i * 3 + 1), { version, lease: created.lease });
      if (i >= 10) times.push(performance.now() - t0);
    }
    await store.close();
    const ms = median(times);
    const goal = kind.name.startsWith('sqlite') ? 1 : kind === postgres ? 3 : undefined;
    figure({ figure: 'append a cell with 3 tool calls (p50)', store: kind.name, ms, ...(goal === undefined ? {} : { goalMs: goal, met: ms <= goal }) });
  }

  // --- 2. a cell with 3 tool calls in a session -------------------------------------------------
  const pool = await SandboxPool.start({ size: 2, sandbox: 'require', timeout: 30_000, clock: { at: 0, seed: 1 } });
  cleanups.unshift(() => pool.close());
  const tools = { lookup: async (sku) => ({ id: sku.length }), stock: async (id) => ({ units: id * 2 }), note: async () => true };
  const CELL = 'const a = await lookup("sku"); const b = await stock(a.id); await note(b); b.units';
  const runCell = async (options) => {
    const session = await AgentSandbox.start({ pool, tools, ...options });
    const times = [];
    for (let i = 0; i < SESSION_RUNS + 5; i++) {
      const t0 = performance.now();
      await session.run(CELL);
      if (i >= 5) times.push(performance.now() - t0);
    }
    await session.close();
    return median(times);
  };
  // Once unmeasured first: the first sessions of a process warm what every later one uses.
  await runCell({});
  const inMemory = await runCell({});
  figure({ figure: 'a cell with 3 tool calls, in a session', store: 'none (journal in memory)', ms: inMemory });
  for (const kind of stores) {
    const store = await open(kind);
    const ms = await runCell({ store });
    await store.close();
    figure({ figure: 'a cell with 3 tool calls, in a session', store: kind.name, ms, vs: inMemory, vsName: 'without a store' });
  }

  // --- 3. resume a 20-cell session ------------------------------------------------------------
  const record = async (options) => {
    const session = await AgentSandbox.start({ pool, tools: { t: async (k) => k }, ...options });
    for (let i = 0; i < 20; i++) await session.run(`let s${i} = 0; for (let k = 0; k < 10; k++) s${i} += await t(k); s${i}`);
    const journal = session.journal;
    await session.close();
    return journal;
  };
  const timed = async (start) => {
    const times = [];
    for (let i = 0; i < RESUME_RUNS + 1; i++) {
      await pool.waitReady(120_000);
      const t0 = performance.now();
      const session = await start();
      if (i > 0) times.push(performance.now() - t0);
      await session.close();
    }
    return median(times);
  };
  const journal = await record({});
  const restored = await timed(() => AgentSandbox.restore(journal, { pool, tools: { t: async (k) => k } }));
  figure({ figure: 'restore a 20-cell session (200 tool calls)', store: 'from memory (restore)', ms: restored });
  for (const kind of stores) {
    const place = await kind.fresh();
    const writer = await kind.connect(place);
    await record({ store: writer, sessionId: 'twenty' });
    // A second connection resumes it, as another process does; the writer's is closed first.
    if (!kind.shared) await writer.close();
    const reader = kind.shared ? writer : await kind.connect(place);
    const ms = await timed(() => AgentSandbox.resume('twenty', { pool, tools: { t: async (k) => k }, store: reader }));
    await reader.close();
    const goal = kind === postgres ? 1.5 : undefined;
    figure({
      figure: 'resume a 20-cell session (200 tool calls)',
      store: kind.name,
      ms,
      vs: restored,
      vsName: 'restore from memory',
      ...(goal === undefined ? {} : { goalRatio: goal, met: ms / restored <= goal }),
    });
  }
  await pool.close();
  cleanups.shift();

  // --- 4. takeover after the holder died ------------------------------------------------------
  const holderScript = fileURLToPath(new URL('./stores-holder.mjs', import.meta.url));
  for (const kind of stores.filter((k) => k.name === 'sqlite (durability full)' || k === postgres)) {
    const readies = [];
    for (let run = 0; run < TAKEOVER_RUNS; run++) {
      const place = await kind.fresh();
      const store = await kind.connect(place);
      const id = `takeover-${run}`;
      const holder = spawn(process.execPath, [holderScript, kind === postgres ? 'postgres' : 'sqlite', place, id, String(TTL_MS)], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      await new Promise((resolve, reject) => {
        holder.stdout.on('data', (chunk) => String(chunk).includes('holding') && resolve());
        holder.once('exit', (code) => reject(new Error(`the holder exited (${code}) before it held the session`)));
      });
      // Killed at a random point of its renewal period, as a crash would come.
      await new Promise((resolve) => setTimeout(resolve, Math.random() * (TTL_MS / 3)));
      const died = performance.now();
      holder.kill('SIGKILL');
      await new Promise((resolve) => holder.once('exit', resolve));
      const session = await AgentSandbox.resume(id, { store, lease: { waitMs: 10 * TTL_MS, ttlMs: TTL_MS } });
      readies.push(performance.now() - died);
      await session.close();
      await store.close();
    }
    const ms = median(readies);
    const worst = Math.max(...readies);
    figure({
      figure: `takeover after the holder died (lease TTL ${TTL_MS} ms): death to a resumed session (worst of ${TAKEOVER_RUNS}: ${worst.toFixed(0)} ms)`,
      store: kind.name,
      ms,
      goalMs: TTL_MS + 100,
      met: worst <= TTL_MS + 100,
    });
  }
} finally {
  for (const cleanup of cleanups) await cleanup();
}

const lines = [
  `Measured ${results.date.slice(0, 10)} on ${results.machine}, Node ${results.node}; medians.`,
  '',
  '| figure | store | time | ratio | goal | met |',
  '| --- | --- | ---: | ---: | --- | :---: |',
];
for (const r of results.figures) {
  const ratio = r.vs === undefined ? '—' : `${(r.ms / r.vs).toFixed(2)}× ${r.vsName}`;
  const goal = r.goalMs !== undefined ? `≤ ${r.goalMs} ms` : r.goalRatio !== undefined ? `≤ ${r.goalRatio}×` : '—';
  lines.push(`| ${r.figure} | ${r.store} | ${r.ms.toFixed(3)} ms | ${ratio} | ${goal} | ${r.met === undefined ? '' : r.met ? '✓' : '✗'} |`);
}
for (const s of results.skipped) lines.push('', `Not measured: ${s.store}: ${s.reason}`);
writeFileSync(new URL('./stores-results.json', import.meta.url), `${JSON.stringify(results, null, 2)}\n`);
writeFileSync(new URL('./stores-results.md', import.meta.url), `${lines.join('\n')}\n`);
console.log(`\n${lines.join('\n')}\n\nwritten: bench/stores-results.json, bench/stores-results.md`);
