/**
 * What the profile exists to stop, tried for real: by the layer's self-test in the worker, and by
 * the probe's dry run in a throwaway child. Each attempt is chosen so that, were it let through,
 * it would do no harm (an echo, a connect to the discard port, signal 0).
 *
 * @module
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { errnoOf, tryConnect } from '@strata/runtime/layers';
import type { SeatbeltAddon } from './addon.js';

/** The error codes Seatbelt answers a denied operation with. */
export const DENIED: readonly string[] = Object.freeze(['EPERM', 'EACCES']);

/** What each attempt gave: an error code, `'none'` when it went through, or a short outcome. */
export interface AttemptResults {
  readonly readOutside: string;
  readonly write: string;
  readonly spawn: string;
  readonly tcpConnect: string;
  readonly signalParent: string;
  readonly parentArgs: string;
  readonly readOwn: string;
}

export { errnoOf, tryConnect };

/** Spawns /bin/echo with no stdio (no pipes to make first): the error code, or 'none' when it ran. */
export function trySpawn(): string {
  const child = spawnSync('/bin/echo', ['strata-seatbelt'], { stdio: 'ignore', env: {}, timeout: 5_000 });
  return child.error === undefined ? 'none' : ((child.error as NodeJS.ErrnoException).code ?? child.error.message);
}

/**
 * Tries everything the profile must stop, and one thing it must allow (`ownFile`, a file of the
 * read set). Returns what each gave and one line per attempt that went the wrong way (empty when all went right).
 */
export async function tryForbidden(addon: Pick<SeatbeltAddon, 'processArgsErrno'>, ownFile: string): Promise<{ results: AttemptResults; problems: string[] }> {
  const problems: string[] = [];
  const readOutside = errnoOf(() => readFileSync('/etc/passwd'));
  if (!DENIED.includes(readOutside)) problems.push(`reading /etc/passwd gave ${readOutside}, expected EPERM`);
  const probePath = join(tmpdir(), `strata-seatbelt-probe-${process.pid}`);
  const write = errnoOf(() => writeFileSync(probePath, 'x', { flag: 'wx' }));
  if (write === 'none') rmSync(probePath, { force: true });
  if (!DENIED.includes(write)) problems.push(`creating ${probePath} gave ${write}, expected EPERM`);
  const spawn = trySpawn();
  if (!DENIED.includes(spawn)) problems.push(`spawning /bin/echo gave ${spawn}, expected EPERM`);
  const tcpConnect = await tryConnect();
  if (!DENIED.includes(tcpConnect)) problems.push(`a TCP connect to 127.0.0.1 gave ${tcpConnect}, expected EPERM`);
  const signalParent = errnoOf(() => process.kill(process.ppid, 0));
  if (signalParent !== 'EPERM') problems.push(`signalling the parent (kill(${process.ppid}, 0)) gave ${signalParent}, expected EPERM`);
  const argsErrno = addon.processArgsErrno(process.ppid);
  const parentArgs = argsErrno === 0 ? 'none' : `errno ${argsErrno}`;
  if (argsErrno === 0) problems.push(`the parent's arguments and environment (sysctl kern.procargs2 of ${process.ppid}) were readable`);
  // The positive control: a denial of everything would pass every line above.
  const readOwn = errnoOf(() => readFileSync(ownFile));
  if (readOwn !== 'none') problems.push(`reading ${ownFile} gave ${readOwn}: the read rules are broken`);
  return { results: { readOutside, write, spawn, tcpConnect, signalParent, parentArgs, readOwn }, problems };
}
