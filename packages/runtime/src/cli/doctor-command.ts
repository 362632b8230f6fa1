/**
 * `strata doctor`: starts a worker the way `strata run` does and reports what is in force.
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { IsolatedRuntime } from '../isolated/isolated-runtime.js';
import { workerSpawnSupport } from '../isolated/worker-child.js';
import { missingDefaultLayers } from '../layers/default-layers.js';
import { artifactCandidates, findNativeArtifact } from '../native/native-artifact.js';
import type { DoctorArgs } from './args.js';
import { assess, type DoctorFacts, type DoctorReport } from './doctor-report.js';
import { ExitStatus, type ExitStatusCode } from './exit-status.js';
import { formatDoctorReport } from './format-report.js';
import type { CliIo } from './terminal-text.js';
import { startRuntime } from './start-runtime.js';
import { packageVersion } from './version.js';

// This file compiles to dist/src/cli/doctor-command.js, three levels below the package root, as
// native-paths.js is: the helpers are the package's prebuilds/<platform>-<arch>/, else what
// node-gyp built into build/Release/ (native/native-artifact.ts).
const PACKAGE_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** Runs `strata doctor`: prints the report (a table, or JSON) and returns the exit status. */
export async function doctorCommand(args: DoctorArgs, io: CliIo): Promise<ExitStatusCode> {
  const report = assess(await gatherFacts());
  io.stdout.write(args.json ? `${JSON.stringify(report)}\n` : formatDoctorReport(report));
  return exitStatusFor(report);
}

/** 0 when everything is in force, 1 when degraded, 4 when no worker could be started. */
export function exitStatusFor(report: DoctorReport): ExitStatusCode {
  return report.status === 'ok' ? ExitStatus.ok : report.status === 'degraded' ? ExitStatus.failed : ExitStatus.strataFailed;
}

/** Starts a worker with `sandbox: 'auto'` and the default layers, asks it `1 + 1`, reads its report, closes it. */
async function gatherFacts(): Promise<DoctorFacts> {
  const strataExecPath = findNativeArtifact(PACKAGE_ROOT, 'strata-exec');
  const watchdogPath = findNativeArtifact(PACKAGE_ROOT, 'strata_watchdog.node');
  const strataExec = strataExecPath !== undefined;
  const watchdog = watchdogPath !== undefined;
  const directory = dirname(strataExecPath ?? watchdogPath ?? artifactCandidates(PACKAGE_ROOT, 'strata-exec').source);
  const uid = process.getuid?.() ?? null;
  const common = {
    strata: packageVersion(),
    node: { version: process.version, platform: process.platform, arch: process.arch },
    nativeHelpers: { built: strataExec && watchdog, directory, strataExec, watchdog },
    workerSpawn: spawnFacts(),
  };
  const started = performance.now();
  let rt: IsolatedRuntime | undefined;
  try {
    rt = await startRuntime({ sandbox: 'auto' });
    const answer = await rt.eval('1 + 1');
    if (answer !== 2) throw new Error(`the worker answered 1 + 1 with ${String(answer)}`);
    return {
      ...common,
      privileges: { root: uid === 0, uid, workerUid: workerUid(rt.pid) },
      worker: { pid: rt.pid, startMs: Math.round(performance.now() - started) },
      sandbox: rt.sandbox,
      sandboxExtras: rt.sandboxExtras,
      report: rt.report,
      error: null,
      missingDefaultLayers: missingDefaultLayers(),
    };
  } catch (error) {
    return {
      ...common,
      privileges: { root: uid === 0, uid, workerUid: null },
      worker: null,
      sandbox: null,
      sandboxExtras: null,
      report: null,
      error: { errorType: error instanceof Error ? error.name : 'Error', message: error instanceof Error ? error.message : String(error) },
    };
  } finally {
    await rt?.close();
  }
}

/** The real uid of a process, from `/proc` (Linux); `null` where that cannot be read. */
function workerUid(pid: number): number | null {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Uid:'));
    const uid = Number(line?.split(/\s+/)[1]);
    return Number.isSafeInteger(uid) ? uid : null;
  } catch {
    return null;
  }
}

/** How workers are started here (worker-child.ts), or why that cannot be told. */
function spawnFacts(): NonNullable<DoctorFacts['workerSpawn']> {
  try {
    return workerSpawnSupport();
  } catch (error) {
    return { method: null, reason: (error as Error).message };
  }
}
