/**
 * `strata run FILE`: one program, in a fresh worker, with the default layers.
 *
 * @module
 */
import { inspect } from 'node:util';
import { WEB_POLYFILLS } from '@strata/polyfills';
import { JsError, WorkerCrashed } from '../errors.js';
import { executionResult } from '../execution-result.js';
import type { ExecutionResult } from '../runtime-contract.js';
import type { IsolatedRuntimeOptions } from '../isolated/isolated-options.js';
import type { IsolatedRuntime, SandboxReport } from '../isolated/isolated-runtime.js';
import { sampleProcess } from '../isolated/worker-process.js';
import type { RunArgs } from './args.js';
import { ConsoleStream } from './console-stream.js';
import { ExitStatus, exitStatusForStartError, type ExitStatusCode } from './exit-status.js';
import { readSource, FileUnreadable } from './read-source.js';
import { startRuntime } from './start-runtime.js';
import { toTaggedJson, type JsonValue } from '@strata/wire';
import { forStream, type CliIo } from './terminal-text.js';

/**
 * What `strata run --json` prints: one object, on one line. `result` is the guest's value in
 * tagged JSON (see `tagged-json.ts`), `null` when the run failed; `stack` is the guest's own
 * stack frames on failure (`[]` when it has none), `null` on success. `sandbox`,
 * `sandboxExtras` and `report` are `null` when no worker was started.
 */
export interface RunJsonOutput {
  readonly status: 'ok' | 'error';
  readonly result: JsonValue;
  readonly error: string | null;
  readonly errorType: string | null;
  readonly stack: readonly string[] | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly truncated: boolean;
  readonly sandbox: string | null;
  readonly sandboxExtras: readonly string[] | null;
  readonly report: SandboxReport | null;
}

/** What the run produced: `execute`'s result, plus the guest's stack frames when it threw. */
interface RunOutcome extends ExecutionResult {
  readonly stack: readonly string[];
}

/**
 * Runs `strata run`: reads FILE, starts a worker, runs the program, prints, closes the worker.
 * Never throws for the program's own failure; returns the exit status.
 */
export async function runCommand(args: RunArgs, io: CliIo): Promise<ExitStatusCode> {
  let source: string;
  try {
    source = await readSource(args.file);
  } catch (error) {
    if (!(error instanceof FileUnreadable)) throw error;
    return refuse(args, io, ExitStatus.usage, error.name, error.message);
  }
  let rt: IsolatedRuntime;
  try {
    rt = await startRuntime(runtimeOptions(args));
  } catch (error) {
    const tooSmall = await memoryTooSmall(args, error);
    if (tooSmall !== undefined) return refuse(args, io, ExitStatus.usage, 'InvalidOption', tooSmall);
    const status = exitStatusForStartError(error);
    return refuse(args, io, status, errorName(error), error instanceof Error ? error.message : String(error));
  }
  try {
    const stream = args.json ? undefined : new ConsoleStream(io.stdout, io.stderr);
    const stopListening = stream === undefined ? undefined : rt.onConsole((entry) => stream.write(entry));
    const outcome = await runProgram(rt, source, args.file);
    stopListening?.();
    if (args.json) {
      writeJson(io, jsonOutput(outcome, rt));
    } else {
      printOutcome(io, outcome);
      if (stream !== undefined && stream.dropped > 0) {
        io.stderr.write(`strata: ${stream.dropped} lines of the program's output were dropped: the reader fell behind\n`);
      }
    }
    return outcome.status === 'ok' ? ExitStatus.ok : ExitStatus.failed;
  } finally {
    await rt.close();
  }
}

/** The runtime options a `strata run` command line asks for. */
export function runtimeOptions(args: RunArgs): IsolatedRuntimeOptions {
  return {
    sandbox: args.sandbox,
    strictEval: args.strictEval,
    ...(args.polyfills ? { bootstrap: WEB_POLYFILLS } : {}),
    ...(args.timeout === undefined ? {} : { timeout: args.timeout }),
    ...(args.memory === undefined ? {} : { maxMemory: args.memory }),
  };
}

/**
 * `execute` with the guest's stack kept: the same capture (capped at `maxOutputBytes`, so its
 * memory is bounded even while the console also streams) and the same result, built by
 * `executionResult` as `execute` builds it; but the error is seen before it is flattened, so the
 * user gets the line that threw.
 */
async function runProgram(rt: IsolatedRuntime, source: string, filename: string): Promise<RunOutcome> {
  const capture = rt.captureConsole();
  try {
    return { ...executionResult(capture, await rt.eval(source, { filename })), stack: [] };
  } catch (error) {
    return { ...executionResult(capture, undefined, error), stack: guestFrames(error) };
  } finally {
    capture.stop();
  }
}

/** The guest's own frames (`at f (prog.js:2:9)`), without the host frames after the isolate boundary. */
export function guestFrames(error: unknown): string[] {
  if (!(error instanceof JsError) || error.guestStack === undefined) return [];
  const frames: string[] = [];
  for (const line of error.guestStack.split('\n').slice(1)) {
    if (line.includes('<isolated-vm boundary>')) break;
    if (/^\s+at /.test(line)) frames.push(line.trim());
  }
  return frames;
}

function printOutcome(io: CliIo, outcome: RunOutcome): void {
  if (outcome.status === 'ok') {
    const text = formatResult(outcome.result);
    if (text !== undefined) io.stdout.write(`${forStream(io.stdout, text)}\n`);
    return;
  }
  const lines = [`${outcome.errorType}: ${outcome.error}`, ...outcome.stack.map((frame) => `    ${frame}`)];
  io.stderr.write(`${forStream(io.stderr, lines.join('\n'))}\n`);
  if (outcome.errorType === 'SyntaxError' && /await is only valid/.test(outcome.error ?? '')) {
    io.stderr.write(
      'strata: FILE runs as a script, where top-level await is not available: wrap the program in (async () => { ... })(); its promise is awaited\n',
    );
  }
}

/**
 * The result as `strata run` prints it: `undefined` prints nothing, a string as it is (as
 * `node -p` does, so output pipes cleanly), anything else as `util.inspect` shows it, in full
 * (no depth or length cut: the result is the program's answer, and it is capped at 1 MiB).
 */
export function formatResult(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string') return value;
  return inspect(value, { depth: Infinity, maxArrayLength: Infinity, maxStringLength: Infinity, breakLength: 100 });
}

function jsonOutput(outcome: RunOutcome, rt: IsolatedRuntime): RunJsonOutput {
  return {
    status: outcome.status,
    result: outcome.status === 'ok' ? toTaggedJson(outcome.result) : null,
    error: outcome.error ?? null,
    errorType: outcome.errorType ?? null,
    stack: outcome.status === 'ok' ? null : outcome.stack,
    stdout: outcome.stdout,
    stderr: outcome.stderr,
    truncated: outcome.truncated,
    sandbox: rt.sandbox,
    sandboxExtras: rt.sandboxExtras,
    report: rt.report,
  };
}

/** A run that never reached the program: a file, usage or start-up failure. */
function refuse(args: RunArgs, io: CliIo, status: ExitStatusCode, errorType: string, message: string): ExitStatusCode {
  if (args.json) {
    writeJson(io, {
      status: 'error',
      result: null,
      error: message,
      errorType,
      stack: [],
      stdout: '',
      stderr: '',
      truncated: false,
      sandbox: null,
      sandboxExtras: null,
      report: null,
    });
    return status;
  }
  // A misuse of the tool reads as the tool speaking; a refusal keeps the error's name, which scripts match.
  io.stderr.write(status === ExitStatus.usage ? `strata: ${message}\n` : `${errorType}: ${message}\n`);
  if (status === ExitStatus.sandboxUnavailable) {
    io.stderr.write("strata: 'strata doctor' shows what this machine provides; '--sandbox auto' runs with what it can provide and warns about the rest\n");
  } else if (status === ExitStatus.strataFailed) {
    io.stderr.write("strata: no worker could be started; 'strata doctor' checks this machine\n");
  } else if (errorType === 'InvalidOption') {
    io.stderr.write("Try 'strata run --help' for the options.\n");
  }
  return status;
}

const MIB = 1024 * 1024;

/**
 * When the worker died of `--memory` while starting, the limit is simply below what a worker
 * needs here: measured on an idle worker started without it, and said with the smallest value
 * that works (its resident size and a quarter more, in whole MiB). Undefined otherwise.
 */
async function memoryTooSmall(args: RunArgs, error: unknown): Promise<string | undefined> {
  if (args.memory === undefined || !(error instanceof WorkerCrashed) || error.reason !== 'maxMemory') return undefined;
  let idle: number | undefined;
  try {
    const probe = await startRuntime({ ...runtimeOptions(args), maxMemory: undefined });
    try {
      await probe.eval('0');
      idle = sampleProcess(probe.pid)?.rssBytes;
    } finally {
      await probe.close();
    }
  } catch {
    return undefined;
  }
  if (idle === undefined) return undefined;
  const smallest = Math.ceil((idle * 1.25) / MIB);
  return (
    `--memory ${Math.round(args.memory / MIB)}M (${args.memory} bytes) is below what a worker needs to start here: ` +
    `an idle worker uses ${Math.ceil(idle / MIB)} MiB. Use --memory ${smallest}M or more (your program's own memory comes on top)`
  );
}

function writeJson(io: CliIo, output: RunJsonOutput): void {
  io.stdout.write(`${JSON.stringify(output)}\n`);
}

function errorName(error: unknown): string {
  return error instanceof Error ? error.name : 'Error';
}
