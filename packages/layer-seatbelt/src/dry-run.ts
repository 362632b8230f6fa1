/**
 * The probe's dry run: a throwaway child (`node dry-run.js <profile>`) applies the profile the
 * worker would get, then tries what it must stop (see attempts.ts) and what a worker must still
 * do after it (a timer, libuv's thread pool, a new V8 isolate, writing to its inherited stdout), and
 * prints one JSON line. The parent's probe reads that line; the child's sandbox dies with it.
 *
 * Run as `node dry-run.js`; the layer imports only {@link dryRun} and the marker from here.
 *
 * @module
 */
import { spawnSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { loadAddon } from './addon.js';
import { tryForbidden } from './attempts.js';
import { PACKAGE_ROOT } from './read-set.js';

/** The `marker` field of the child's JSON line. */
export const DRY_RUN_MARKER = 'strata-seatbelt: dry run';

const DRY_RUN_SCRIPT = fileURLToPath(import.meta.url);

/** The child's JSON line. */
interface DryRunLine {
  readonly marker: string;
  readonly problems: readonly string[];
}

interface IsolatedVm {
  Isolate: new (options: {
    memoryLimit: number;
  }) => { compileScriptSync(code: string): { runSync(context: unknown): unknown }; createContextSync(): unknown; dispose(): void };
}

async function main(profile: string | undefined): Promise<void> {
  if (profile === undefined) throw new Error('usage: node dry-run.js <profile>');
  const addon = loadAddon();
  // Loaded before the profile, as in the worker: after it, nothing outside the read set can be loaded.
  const ivm = createRequire(import.meta.resolve('@strata/runtime'))('isolated-vm') as IsolatedVm;
  addon.apply(profile);
  const { problems } = await tryForbidden(addon, `${PACKAGE_ROOT}/package.json`);
  // What the worker still needs: a timer, libuv's thread pool started now (its first threads), a new isolate.
  await new Promise((resolve) => setTimeout(resolve, 5));
  const own = await readFile(`${PACKAGE_ROOT}/package.json`, 'utf8').then(
    (text) => text.length,
    (error: NodeJS.ErrnoException) => error.code ?? error.message,
  );
  if (typeof own !== 'number') problems.push(`an asynchronous read of this layer's package.json (libuv's thread pool) gave ${own}`);
  const isolate = new ivm.Isolate({ memoryLimit: 32 });
  try {
    const answer = isolate.compileScriptSync('6 * 7').runSync(isolate.createContextSync());
    if (answer !== 42) problems.push(`a V8 isolate created under the profile answered ${String(answer)}`);
  } finally {
    isolate.dispose();
  }
  const line: DryRunLine = { marker: DRY_RUN_MARKER, problems };
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

/**
 * Runs the dry run of `profile` in a throwaway child: undefined when the child applied it, was
 * denied everything it tried, and still ran; otherwise why not, in one line. macOS only (the
 * child needs the addon).
 */
export function dryRun(profile: string): string | undefined {
  const child = spawnSync(process.execPath, [DRY_RUN_SCRIPT, profile], { env: {}, encoding: 'utf8', timeout: 30_000, stdio: ['ignore', 'pipe', 'pipe'] });
  if (child.error) return `the seatbelt dry run could not run: ${child.error.message}`;
  if (child.signal) return `the seatbelt dry-run child died of ${child.signal}`;
  const lastLine = (text: string) => text.trim().split('\n').pop() ?? '';
  if (child.status !== 0) return `the seatbelt dry run failed: ${lastLine(child.stderr) || `exit status ${child.status}`}`;
  let line: DryRunLine;
  try {
    line = JSON.parse(lastLine(child.stdout)) as DryRunLine;
  } catch {
    return `the seatbelt dry run printed no result (stdout: ${JSON.stringify(child.stdout.slice(0, 200))})`;
  }
  if (line.marker !== DRY_RUN_MARKER || !Array.isArray(line.problems)) return 'the seatbelt dry run printed an unexpected result';
  return line.problems.length === 0 ? undefined : `the seatbelt dry run: ${line.problems.join('; ')}`;
}

if (process.argv[1] === DRY_RUN_SCRIPT) {
  main(process.argv[2]).catch((error: unknown) => {
    process.stderr.write(`strata-seatbelt: dry run failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
