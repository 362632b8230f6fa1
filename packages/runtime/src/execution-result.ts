import type { ConsoleCapture } from './console-capture.js';
import { JsError } from './errors.js';
import type { EvalOptions } from './runtime.js';
import { assertLanguage } from './typescript-input.js';

/**
 * What `execute(code)` returns: it never throws for the run's own failure (a guest exception, a
 * timeout, a result too large, a crash); the failure is described here instead.
 */
export interface ExecutionResult {
  /** `'ok'` when the code ran and its result crossed; `'error'` otherwise. */
  readonly status: 'ok' | 'error';
  /** Console output on stdout during the run, capped at `maxOutputBytes`. */
  readonly stdout: string;
  /** Console output on stderr during the run, capped at `maxOutputBytes`. */
  readonly stderr: string;
  /** The completion value (a returned promise awaited); `undefined` on error. */
  readonly result: unknown;
  /** The error's message; `undefined` when `status` is `'ok'`. */
  readonly error: string | undefined;
  /**
   * The error's kind: the guest's error name for a guest exception (`'TypeError'`), else the
   * Strata error class (`'RuntimeTimeout'`, `'ResultTooLarge'`, `'HeapLimitExceeded'`, …).
   */
  readonly errorType: string | undefined;
  /** Whether stdout or stderr was cut at `maxOutputBytes`. */
  readonly truncated: boolean;
}

/** The result of a run: its value, or its error described, with the console output captured meanwhile. */
export function executionResult(capture: ConsoleCapture, result: unknown, error?: unknown): ExecutionResult {
  const output = { stdout: capture.stdout, stderr: capture.stderr, truncated: capture.truncated };
  if (arguments.length < 3) return { status: 'ok', ...output, result, error: undefined, errorType: undefined };
  const errorType = error instanceof JsError ? error.guestName : error instanceof Error ? error.name : 'Error';
  const message =
    error instanceof JsError && error.message.startsWith(`${error.guestName}: `)
      ? error.message.slice(error.guestName.length + 2)
      : error instanceof Error
        ? error.message
        : String(error);
  return { status: 'error', ...output, result: undefined, error: message, errorType };
}

/** What {@link execute} needs of a runtime. */
export interface Executable {
  captureConsole(): ConsoleCapture;
  eval(code: string, options?: EvalOptions): Promise<unknown>;
}

/**
 * `execute` for either runtime: evaluates with the console captured for the run, and describes
 * the outcome instead of throwing for the run's own failure. A bad option is the caller's
 * mistake, not the run's: it throws `InvalidOption`; TypeScript that does not strip is the run's
 * own `SyntaxError`.
 */
export async function execute(runtime: Executable, code: string, options: EvalOptions = {}): Promise<ExecutionResult> {
  assertLanguage(options.language, 'execute');
  const capture = runtime.captureConsole();
  try {
    return executionResult(capture, await runtime.eval(code, options));
  } catch (error) {
    return executionResult(capture, undefined, error);
  } finally {
    capture.stop();
  }
}
