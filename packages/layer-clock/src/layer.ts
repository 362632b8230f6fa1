/**
 * `@strata/layer-clock/layer`: the module a worker imports to build the clock layer from its
 * descriptor. Its default export is the factory; you normally name it with `clock()` from
 * `@strata/layer-clock` instead of importing it.
 *
 * @packageDocumentation
 */
import { clockBootstrap } from './bootstrap.js';
import { inspectClock, type ClockExpectation, type ClockVerdict } from './bootstrap/inspect-clock.js';
import { createRandom, createSeededCrypto } from './bootstrap/random.js';
import { CLOCK_LAYER_NAME, CLOCK_LAYER_VERSION, CLOCK_PROVIDES, CLOCK_RANDOM_ALGORITHM } from './constants.js';
import { ClockSelfTestFailed } from './errors.js';
import type { Layer, LayerCapability } from '@strata/runtime/layers';
import { resolveClockOptions, type ResolvedClockOptions } from './options.js';

/** How many of the seed's first `Math.random` values the self-test compares. */
const SELF_TEST_RANDOM_VALUES = 8;
/** How many bytes of `crypto.getRandomValues` the self-test compares, where the guest has it. */
const SELF_TEST_CRYPTO_BYTES = 16;

/**
 * Builds the clock layer from a descriptor's options, `{ at, seed }` (epoch milliseconds or an
 * ISO 8601 string with a zone, and an unsigned 32-bit integer; both optional).
 *
 * - `probe`: available on every platform (it is JavaScript inside the isolate); provides
 *   `frozen-date`, `frozen-intl-date`, `frozen-temporal-now` and `seeded-random`, misses nothing.
 * - `apply`: adds {@link clockBootstrap} to every context; reports `{ at, seed, random }`.
 * - `selfTest`: from inside a guest, tries every route to the real time, to an unfrozen
 *   `Date` constructor and to unseeded randomness; throws {@link ClockSelfTestFailed} naming
 *   each route that got through (with `crypto` where the guest has it: its first bytes and
 *   UUID against the seed's). Reports `{ routes, walked, temporal, performance, crypto }`.
 *
 * @throws `ClockOptionError` for an invalid option (a misconfiguration, never downgraded).
 */
export default function clockLayer(options: Readonly<Record<string, unknown>> = {}): Layer {
  const config = resolveClockOptions(options, `layer "${CLOCK_LAYER_NAME}"`);
  const capability: LayerCapability = Object.freeze({
    available: true,
    provides: Object.freeze([...CLOCK_PROVIDES]),
    missing: Object.freeze([]),
  });
  return Object.freeze({
    name: CLOCK_LAYER_NAME,
    version: CLOCK_LAYER_VERSION,
    probe: () => capability,
    apply(context) {
      context.addContextBootstrap(clockBootstrap(config));
      context.report({ at: new Date(config.at).toISOString(), seed: config.seed, random: CLOCK_RANDOM_ALGORITHM });
    },
    async selfTest(context) {
      const raw = await context.evalInGuest(selfTestSource(config));
      const verdict = readVerdict(raw);
      context.report({ routes: verdict.routes, walked: verdict.walked, temporal: verdict.temporal, performance: verdict.performance, crypto: verdict.crypto });
      if (verdict.failures.length > 0) throw new ClockSelfTestFailed(verdict.failures);
    },
  } satisfies Layer);
}

/** What the self-test expects for `config`, computed on the host by the guest's own generators. */
function selfTestExpectation(config: ResolvedClockOptions): ClockExpectation {
  const next = createRandom(config.seed);
  const crypto = createSeededCrypto(config.seed);
  const cryptoBytes: number[] = [];
  crypto.fill(cryptoBytes, SELF_TEST_CRYPTO_BYTES);
  return {
    at: config.at,
    seed: config.seed,
    random: Array.from({ length: SELF_TEST_RANDOM_VALUES }, () => next()),
    cryptoBytes,
    cryptoUuid: crypto.uuid(),
  };
}

/** The self-test's guest script: a strict expression whose value is the verdict as JSON. */
function selfTestSource(config: ResolvedClockOptions): string {
  const expected = selfTestExpectation(config);
  return `(function () {\n'use strict';\nreturn (${inspectClock.toString()})(globalThis, ${JSON.stringify(expected)});\n})()\n//# sourceURL=strata-layer-clock-self-test.js\n`;
}

function readVerdict(raw: unknown): ClockVerdict {
  try {
    if (typeof raw === 'string') {
      const verdict = JSON.parse(raw) as ClockVerdict;
      if (Array.isArray(verdict.failures)) return verdict;
    }
  } catch {
    // reported below
  }
  throw new ClockSelfTestFailed([`the self-test returned no verdict (got ${typeof raw})`]);
}
