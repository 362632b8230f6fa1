/**
 * The `strata` CLI's exit statuses, and which failure earns which. Scripts branch on these, so
 * they are stable: a guest's own failure (1) is never confused with a misuse of the tool (2), a
 * refused sandbox (3) or a machine where Strata cannot start a worker at all (4).
 *
 * @module
 */

/** Exit statuses of `strata`. */
export const ExitStatus = Object.freeze({
  /** The program ran and its result crossed; `doctor`: everything this platform can provide is in force. */
  ok: 0,
  /** The program failed (exception, timeout, crash, result too large); `doctor`: protection is degraded. */
  failed: 1,
  /** Usage error: unknown option, bad value, missing or unreadable file. */
  usage: 2,
  /** The sandbox asked for could not be provided (`--sandbox require`), or a layer failed its self-test. */
  sandboxUnavailable: 3,
  /** Strata could not do its part: no worker could be started here (native helpers not built, unsupported platform), or an internal error. */
  strataFailed: 4,
} as const);

/** One of the values of {@link ExitStatus}. */
export type ExitStatusCode = (typeof ExitStatus)[keyof typeof ExitStatus];

/** The table printed by `strata --help`, one row per status. */
export const EXIT_STATUS_TABLE: readonly (readonly [ExitStatusCode, string])[] = [
  [ExitStatus.ok, 'ok: the program ran and its result crossed (doctor: everything this platform can provide is in force)'],
  [ExitStatus.failed, 'the program failed: exception, timeout, crash, result too large (doctor: protection is degraded)'],
  [ExitStatus.usage, 'usage error: unknown option, bad value, missing or unreadable file'],
  [ExitStatus.sandboxUnavailable, 'the sandbox could not be provided (--sandbox require refused, or a layer failed its self-test)'],
  [ExitStatus.strataFailed, 'Strata could not start a worker here (native helpers not built, unsupported platform), or failed itself'],
];

/**
 * The exit status for an error thrown while *starting* a runtime, matched on the stable `code`
 * of Strata's errors (so this keeps working across bundlers and new error classes).
 */
export function exitStatusForStartError(error: unknown): ExitStatusCode {
  const code = (error as { code?: unknown } | null)?.code;
  switch (code) {
    case 'ERR_STRATA_SANDBOX_UNAVAILABLE':
    case 'ERR_STRATA_LAYER_FAILED':
      return ExitStatus.sandboxUnavailable;
    case 'ERR_STRATA_INVALID_OPTION':
    case 'ERR_STRATA_LAYER_CONFIG':
      return ExitStatus.usage;
    default:
      return ExitStatus.strataFailed;
  }
}
