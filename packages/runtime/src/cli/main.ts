/**
 * The `strata` CLI: parses the command line, routes warnings, runs the command, sets the exit
 * status. `strata.ts` is the bin that loads this.
 *
 * @module
 */
import { parseCliArgs, UsageError, type CliArgs } from './args.js';
import { doctorCommand } from './doctor-command.js';
import { ExitStatus, type ExitStatusCode } from './exit-status.js';
import { mcpCommand } from './mcp-command.js';
import { runCommand } from './run-command.js';
import type { CliIo } from './terminal-text.js';
import { helpText, shortUsage } from './usage.js';
import { packageVersion } from './version.js';

/**
 * After the command is done, how long the process may take to exit on its own (flushing output,
 * reaping the worker) before it is ended: whatever might still hold the event loop open, the CLI
 * must not hang.
 */
const EXIT_GRACE_MS = 5_000;

/** Runs `strata` with `argv` (without `node` and the script) and sets `process.exitCode`. */
export async function main(argv: readonly string[]): Promise<void> {
  const io: CliIo = { stdout: process.stdout, stderr: process.stderr };
  // `strata run prog.js | head -1`: a reader that goes away is not an error of the program's.
  for (const stream of [process.stdout, process.stderr]) stream.on('error', ignoreBrokenPipe);
  let status: ExitStatusCode;
  try {
    status = await dispatch(argv, io);
  } catch (error) {
    io.stderr.write(`strata: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    status = ExitStatus.strataFailed;
  }
  process.exitCode = status;
  setTimeout(() => process.exit(status), EXIT_GRACE_MS).unref();
}

/** Parses `argv` and runs what it asks for; returns the exit status. */
export async function dispatch(argv: readonly string[], io: CliIo): Promise<ExitStatusCode> {
  let args: CliArgs;
  try {
    args = parseCliArgs(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.stderr.write(`strata: ${error.message}\n${shortUsage(error.command)}`);
    return ExitStatus.usage;
  }
  switch (args.command) {
    case 'help':
      io.stdout.write(helpText(args.topic));
      return ExitStatus.ok;
    case 'version':
      io.stdout.write(`${packageVersion()}\n`);
      return ExitStatus.ok;
    case 'run':
      routeWarnings(io, !args.json);
      return runCommand(args, io);
    case 'doctor':
      // The report says what is degraded; the same news as a process warning would be noise.
      routeWarnings(io, false);
      return doctorCommand(args, io);
    case 'mcp':
      // stdout carries the protocol: every word of ours goes to stderr.
      routeWarnings(io, true);
      return mcpCommand(args, io);
  }
}

/**
 * Replaces Node's default warning printer. Strata's own warnings (a degraded sandbox) are shown
 * as one `strata: warning:` line when `showStrata`, and left out where the output already says
 * it (`--json` has `sandbox`, doctor has its report); other warnings are printed as they are.
 */
function routeWarnings(io: CliIo, showStrata: boolean): void {
  process.removeAllListeners('warning');
  process.on('warning', (warning: Error & { code?: string }) => {
    const ours = typeof warning.code === 'string' && warning.code.startsWith('STRATA_');
    if (!ours) io.stderr.write(`${warning.name}: ${warning.message}\n`);
    else if (showStrata) io.stderr.write(`strata: warning: ${warning.message.replace(/^Strata: /, '')}\n`);
  });
}

function ignoreBrokenPipe(error: NodeJS.ErrnoException): void {
  if (error.code !== 'EPIPE' && error.code !== 'ERR_STREAM_DESTROYED') throw error;
}
