/**
 * `@strata/layer-clock`: a frozen clock and a seeded `Math.random` inside the isolate, so the
 * same seed and clock give byte-identical output from fresh workers, and the guest never
 * reads the host's time.
 *
 * ```ts
 * import { IsolatedRuntime } from '@strata/runtime';
 * import { clock } from '@strata/layer-clock';
 *
 * const rt = await IsolatedRuntime.start({ layers: [clock({ at: '2026-01-01T00:00:00Z', seed: 42 })] });
 * ```
 *
 * @packageDocumentation
 */
import { CLOCK_LAYER_MODULE } from './constants.js';
import { ClockOptionError } from './errors.js';
import type { LayerDescriptor, LayerRequirement } from '@strata/runtime';
import { resolveClockOptions } from './options.js';

/** Options of {@link clock}. */
export interface ClockOptions {
  /**
   * The frozen time: a `Date`, integer epoch milliseconds, or an ISO 8601 string (a date such as
   * `'2026-01-01'` is UTC midnight; a date-time needs `Z` or an offset). Default
   * {@link DEFAULT_CLOCK_AT}, 2026-01-01T00:00:00.000Z: never the host's current time.
   */
  at?: Date | number | string;
  /** The seed of the guest's `Math.random` and `crypto` randomness: an integer from 0 to 2^32 - 1. Default 0. */
  seed?: number;
  /** Overrides the runtime's `sandbox` mode for this layer. The layer is available everywhere, so this only matters for `'off'`. */
  requirement?: LayerRequirement;
}

/** The descriptor {@link clock} returns: the layer module and its normalised, JSON-serialisable options. */
export interface ClockLayerDescriptor extends LayerDescriptor {
  readonly module: typeof CLOCK_LAYER_MODULE;
  readonly options: { readonly at: number; readonly seed: number };
}

const REQUIREMENTS: readonly LayerRequirement[] = ['require', 'auto', 'off'];

/**
 * Names the clock layer for `IsolatedRuntime.start({ layers })`: in every context, `Date`,
 * `Intl.DateTimeFormat#format()` and `Temporal.Now` stand still at `at`, the original `Date`
 * is unreachable, `Math.random` (and `crypto.getRandomValues` / `randomUUID`, where the context
 * has them) is seeded with `seed`, and `performance.timeOrigin` is `at`.
 * See {@link clockBootstrap} for the exact routes.
 *
 * Options are validated here, so a mistake surfaces where it is written; `at` becomes epoch
 * milliseconds so the descriptor is plain JSON.
 *
 * @throws {@link ClockOptionError} for an invalid option.
 */
export function clock(options: ClockOptions = {}): ClockLayerDescriptor {
  const { at, seed } = resolveClockOptions(options, 'clock()', ['at', 'seed', 'requirement']);
  const requirement = options.requirement;
  if (requirement !== undefined && !REQUIREMENTS.includes(requirement)) {
    throw new ClockOptionError(
      `clock(): option "requirement" must be one of ${REQUIREMENTS.map((r) => `'${r}'`).join(', ')}; got ${JSON.stringify(requirement)}`,
    );
  }
  const descriptor: ClockLayerDescriptor = { module: CLOCK_LAYER_MODULE, options: Object.freeze({ at, seed }) };
  return Object.freeze(requirement === undefined ? descriptor : { ...descriptor, requirement });
}

export { clockBootstrap, seededRandom } from './bootstrap.js';
export { ClockOptionError, ClockSelfTestFailed } from './errors.js';
export { CLOCK_LAYER_MODULE, DEFAULT_CLOCK_AT, DEFAULT_CLOCK_SEED } from './constants.js';
