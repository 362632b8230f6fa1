/**
 * Size limits shared by the encoder and the strict decoder. Both sides check the same
 * numbers, so anything the encoder accepts the decoder accepts too.
 *
 * @module
 */

/** The limits that bound one frame and the value inside it. */
export interface Limits {
  /**
   * Largest frame body in bytes (the 4-byte length header not included). A
   * {@link FrameReader} refuses a larger declared length as soon as the header arrives,
   * before buffering any of the body.
   */
  readonly maxFrameBytes: number;
  /** Deepest nesting of containers (arrays, objects, Maps, Sets); the outermost container is depth 1. */
  readonly maxDepth: number;
  /**
   * Most CBOR data items in one frame: every value, object key and Map key counts one;
   * the tags that mark a Date, bigint, Set or Map do not.
   */
  readonly maxNodes: number;
  /** Longest single text string (in UTF-8 bytes) or byte string. */
  readonly maxStringBytes: number;
  /** Longest bigint magnitude in bytes (bigints are rebuilt in linear time, but still cost CPU). */
  readonly maxBigIntBytes: number;
}

/**
 * Safe defaults.
 *
 * - `maxFrameBytes` 16 MiB: a 1 MiB result fits sixteen times over, while one frame can
 *   never make the parent buffer more than 16 MiB.
 * - `maxDepth` 64: deeper than real data gets; keeps every recursive consumer far from
 *   the stack limit (the message envelope itself uses one level).
 * - `maxNodes` 2,000,000: the densest 1 MiB body (one byte per item) has about
 *   1,050,000 items, so any 1 MiB result fits; it caps what a frame can expand to in
 *   JavaScript objects at roughly a hundred MB in the worst case (empty objects).
 * - `maxStringBytes` 16 MiB: one string or byte array may fill a frame; lower it to
 *   refuse big blobs.
 * - `maxBigIntBytes` 4 KiB: 32,768-bit integers, well past any real key size.
 */
export const DEFAULT_LIMITS: Limits = Object.freeze({
  maxFrameBytes: 16 * 1024 * 1024,
  maxDepth: 64,
  maxNodes: 2_000_000,
  maxStringBytes: 16 * 1024 * 1024,
  maxBigIntBytes: 4096,
});

/** Hard ceilings for {@link resolveLimits}: what the frame header and the decoder can honour. */
const CEILINGS: Limits = Object.freeze({
  // the length header is a 32-bit unsigned integer
  maxFrameBytes: 0xffff_ffff,
  // the value builder recurses once per level; 1000 frames stay far inside V8's stack
  maxDepth: 1000,
  maxNodes: 0xffff_ffff,
  maxStringBytes: 0xffff_ffff,
  maxBigIntBytes: 1024 * 1024,
});

const LIMIT_NAMES = Object.keys(DEFAULT_LIMITS) as (keyof Limits)[];

// Resolved limits are remembered so hot paths can skip re-validating the same object.
const resolved = new WeakSet<Limits>([DEFAULT_LIMITS]);

/** A caller's limits object as last seen, and what it resolved to. */
interface Seen {
  readonly snapshot: Partial<Limits>;
  readonly keyCount: number;
  readonly limits: Limits;
}

// Callers tend to pass the same partial object on every call; re-resolve only if it changed.
const seen = new WeakMap<object, Seen>();

/**
 * Fill in defaults for the limits not given and check every value.
 *
 * @param limits - some or all limits; `undefined` means {@link DEFAULT_LIMITS}.
 * @returns a frozen, complete {@link Limits} object (the same object when it was
 *   already resolved, or when the same unchanged partial object was resolved before).
 * @throws TypeError for an unknown limit name, RangeError for a value that is not an
 *   integer between 1 and its ceiling (these are programming errors, not protocol errors).
 */
export function resolveLimits(limits?: Partial<Limits>): Limits {
  if (limits === undefined) return DEFAULT_LIMITS;
  if (resolved.has(limits as Limits)) return limits as Limits;
  if (typeof limits !== 'object' || limits === null) {
    throw new TypeError('@strata/wire: limits must be an object');
  }
  const names = Object.keys(limits);
  const before = seen.get(limits);
  if (before !== undefined && unchanged(before, limits, names.length)) return before.limits;
  for (const name of names) {
    if (!(LIMIT_NAMES as string[]).includes(name)) {
      throw new TypeError(`@strata/wire: unknown limit ${JSON.stringify(name)}; known: ${LIMIT_NAMES.join(', ')}`);
    }
  }
  const out: { -readonly [K in keyof Limits]: number } = { ...DEFAULT_LIMITS };
  for (const name of LIMIT_NAMES) {
    const value = limits[name];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > CEILINGS[name]) {
      throw new RangeError(`@strata/wire: limits.${name} must be an integer from 1 to ${CEILINGS[name]}, got ${String(value)}`);
    }
    out[name] = value;
  }
  const frozen = Object.freeze(out);
  resolved.add(frozen);
  seen.set(limits, { snapshot: { ...limits }, keyCount: names.length, limits: frozen });
  return frozen;
}

function unchanged(before: Seen, limits: Partial<Limits>, keyCount: number): boolean {
  if (before.keyCount !== keyCount) return false;
  for (const name of LIMIT_NAMES) if (before.snapshot[name] !== limits[name]) return false;
  return true;
}
