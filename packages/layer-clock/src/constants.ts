/**
 * The default frozen time: 2026-01-01T00:00:00.000Z. A fixed instant rather than "now", since
 * the host's current time is exactly what the layer keeps from the guest, and a default that
 * moved would make two runs differ. Recent enough that date-aware libraries behave as usual.
 */
export const DEFAULT_CLOCK_AT = 1_767_225_600_000;

/** The default seed of the guest's `Math.random`. */
export const DEFAULT_CLOCK_SEED = 0;

/** The largest seed: seeds are unsigned 32-bit integers. */
export const MAX_CLOCK_SEED = 0xffff_ffff;

/** The module a `LayerDescriptor` names for this layer; the worker imports it. */
export const CLOCK_LAYER_MODULE = '@strata/layer-clock/layer';

/** The layer's `name` in the report. */
export const CLOCK_LAYER_NAME = 'clock';

/** The layer's `version` in the report: this package's version (a test keeps them equal). */
export const CLOCK_LAYER_VERSION = '0.1.0';

/**
 * What the layer enforces, as it appears in its capability's `provides`:
 * `frozen-date` (`Date.now()`, `new Date()`, `Date()`, every `Date` constructor the guest can reach),
 * `frozen-intl-date` (`Intl.DateTimeFormat#format()` and `#formatToParts()` without a date),
 * `frozen-temporal-now` (`Temporal.Now`, where the engine has Temporal),
 * `seeded-random` (`Math.random`, and `crypto.getRandomValues` / `randomUUID` where the context has them).
 */
export const CLOCK_PROVIDES = ['frozen-date', 'frozen-intl-date', 'frozen-temporal-now', 'seeded-random'] as const;

/** The name of the generator behind the guest's `Math.random`, as reported. */
export const CLOCK_RANDOM_ALGORITHM = 'sfc32';
