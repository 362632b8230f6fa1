/**
 * The one error that `@strata/wire` throws for anything it refuses: a malformed or
 * oversize frame, a value outside the closed set of kinds, an unknown message type or
 * exception class.
 *
 * @module
 */

/** Longest {@link ProtocolError.reason}; reasons can quote attacker bytes, so they stay short. */
export const MAX_REASON_CHARS = 512;

/** Longest quoted snippet of untrusted text inside a reason. */
const MAX_QUOTE_CHARS = 40;

/**
 * Thrown for every refusal: by the decoder for bad input from the peer, by the encoder
 * for a value or message the decoder would refuse, and by {@link FrameReader} for a bad
 * or oversize frame. Nothing else escapes the decoder, so a supervisor can treat
 * `err instanceof ProtocolError` (or `err.code === 'ERR_STRATA_PROTOCOL'`) as "the peer
 * broke the protocol".
 *
 * The message is a short, length-capped reason; it never carries more than a few dozen
 * characters of the offending input.
 */
export class ProtocolError extends Error {
  /** Always `'ProtocolError'`. */
  override readonly name = 'ProtocolError';
  /** Stable machine-readable code: `'ERR_STRATA_PROTOCOL'`. */
  readonly code = 'ERR_STRATA_PROTOCOL';
  /** The capped reason, same text as `message`. */
  readonly reason: string;

  /**
   * @param reason - why the input was refused; cut to {@link MAX_REASON_CHARS} characters.
   * @param options - standard error options; `cause` keeps an internal error for debugging.
   */
  constructor(reason: string, options?: { cause?: unknown }) {
    const capped = reason.length > MAX_REASON_CHARS ? `${reason.slice(0, MAX_REASON_CHARS - 1)}…` : reason;
    super(capped, options);
    this.reason = capped;
  }
}

/**
 * A short, quoted, printable rendering of untrusted text for use inside a reason.
 * Long text is cut so a reason can never echo a large attacker-controlled payload.
 */
export function quote(text: string): string {
  const cut = text.length > MAX_QUOTE_CHARS ? `${text.slice(0, MAX_QUOTE_CHARS)}…` : text;
  return JSON.stringify(cut.toWellFormed());
}
