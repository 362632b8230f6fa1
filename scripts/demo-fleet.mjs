// npm run demo:fleet: a session that outlives its machine. Two processes share one PostgreSQL:
// machine A runs a session and is killed (SIGKILL) in the middle of a tool call that had already
// charged an account; machine B takes the session over once A's lease has expired, continues the
// cell (the charge runs again under the same call id, and the tool finds it already done), and
// goes on with the state A built.
//
// The database: STRATA_FLEET_DATABASE_URL if set (a database you may create a table in), or else
// a throwaway local server from the PostgreSQL binaries `npm ci` installed for the tests.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';

const machine = fileURLToPath(new URL('./demo-fleet-machine.mjs', import.meta.url));
let connectionString = process.env.STRATA_FLEET_DATABASE_URL;
let server;
if (connectionString === undefined) {
  const helper = await import(new URL('../packages/store-postgres/dist/test/helpers/postgres-server.js', import.meta.url).href);
  const found = await helper.findPostgresBinaries();
  if ('missing' in found) {
    console.error(`demo:fleet: no PostgreSQL binaries here (${found.missing}); set STRATA_FLEET_DATABASE_URL=postgresql://… to a database of yours`);
    process.exit(1);
  }
  server = await helper.startPostgresServer(found);
  connectionString = server.connectionString('postgres');
  console.log('demo:fleet: a throwaway PostgreSQL server is up (set STRATA_FLEET_DATABASE_URL to use yours)\n');
}

/** Runs a machine; resolves with its process once `until` (a line it prints) appears, or when it exits. */
function run(name, mode, sessionId, until) {
  const child = spawn(process.execPath, [machine, name, connectionString, sessionId, mode], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)));
  const reached = new Promise((resolve, reject) => {
    let seen = '';
    child.stdout.setEncoding('utf8').on('data', (chunk) => {
      seen += chunk;
      for (const line of chunk.split('\n')) if (line !== '' && line !== until) console.log(`  ${line}`);
      if (until !== undefined && seen.includes(`${until}\n`)) resolve();
    });
    void exited.then((status) => (until === undefined || status === 0 ? resolve() : reject(new Error(`machine ${name} exited (${status}) first`))));
  });
  return { child, exited, reached };
}

const sessionId = `order-${randomUUID().slice(0, 8)}`;
try {
  console.log('machine A starts the session:');
  const a = run('A', 'start', sessionId, 'CHARGED');
  await a.reached;
  a.child.kill('SIGKILL');
  const died = performance.now();
  console.log(`  (machine A is killed: the charge is in the ledger, its answer in no journal; its lease runs out within 2 s)\n`);
  await a.exited;
  console.log('machine B resumes it:');
  const b = run('B', 'resume', sessionId, undefined);
  await b.reached;
  const status = await b.exited;
  if (status !== 0) throw new Error(`machine B failed (${status})`);
  console.log(`\ndemo:fleet: the session moved from A to B ${Math.round(performance.now() - died)} ms after A died; one charge, no call lost`);
} finally {
  await server?.dispose();
}
