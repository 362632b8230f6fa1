import type { ConsoleCapture } from './console-capture.js';
import { JsError } from './errors.js';
import type { EvalOptions, ExecutionResult, StrataRuntime } from './runtime-contract.js';
import { assertLanguage } from './typescript-input.js';

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
export type Executable = Pick<StrataRuntime, 'captureConsole' | 'eval'>;

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
