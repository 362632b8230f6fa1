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
