/**
 * What a host function's failure shows the guest. A careless tool can throw anything: a revoked
 * Proxy, a Proxy whose traps throw, an Error whose `name` or `message` getter throws, a value
 * whose `toString` loops into an exception. Describing it must never throw and never run a
 * Proxy trap, or the failure escapes into the host's event loop instead of reaching the guest.
 *
 * @module
 */
import { types } from 'node:util';

/** The message a host error shows the guest unless `redactHostErrors` is false. */
export const REDACTED_HOST_ERROR = 'host function failed';

const MAX_NAME_CHARS = 100;
const MAX_MESSAGE_CHARS = 8192;

/**
 * An error Strata itself writes for the guest (a refused `fetch`, say): its message is shown
 * whatever `redactHostErrors` says, under the name the guest's code expects. Never made from a
 * host function's own error, whose message may hold what the guest must not see.
 */
export class GuestFacingError extends Error {
  readonly guestName: string;

  constructor(guestName: 'TypeError' | 'AbortError', message: string) {
    super(message);
    this.guestName = guestName;
  }
}

/** The class name and message the guest sees for `thrown`. Never throws. */
export function describeHostError(thrown: unknown, redact: boolean): { name: string; message: string } {
  if (!types.isProxy(thrown) && thrown instanceof GuestFacingError) return { name: thrown.guestName, message: errorMessage(thrown) };
  const name = errorName(thrown);
  if (redact) return { name, message: REDACTED_HOST_ERROR };
  return { name, message: errorMessage(thrown) };
}

function errorName(thrown: unknown): string {
  if (types.isProxy(thrown)) return 'Error';
  try {
    if (!(thrown instanceof Error)) return 'Error';
    const name: unknown = thrown.name;
    return typeof name === 'string' && name !== '' ? name.slice(0, MAX_NAME_CHARS) : 'Error';
  } catch {
    return 'Error';
  }
}

function errorMessage(thrown: unknown): string {
  if (types.isProxy(thrown)) return 'the host function threw a Proxy';
  try {
    const message: unknown = thrown instanceof Error ? thrown.message : thrown;
    const text = typeof message === 'string' ? message : String(message);
    return text.length > MAX_MESSAGE_CHARS ? `${text.slice(0, MAX_MESSAGE_CHARS)}…` : text;
  } catch {
    return 'the host function threw a value that cannot be described';
  }
}

/**
 * Whether a host function's return value is a promise or another thenable, read without running a
 * Proxy trap. A `then` getter that throws is the host function's failure: it comes back as `error`.
 */
export function thenableOf(value: unknown): { thenable: boolean; error?: unknown } {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return { thenable: false };
  if (types.isProxy(value)) return { thenable: false };
  if (types.isPromise(value)) return { thenable: true };
  try {
    return { thenable: typeof (value as { then?: unknown }).then === 'function' };
  } catch (error) {
    return { thenable: false, error };
  }
}
