import { installClock } from './bootstrap/install-clock.js';
import { createRandom, createSfc32, CRYPTO_SEED_MASK, cryptoFrom, doublesFrom } from './bootstrap/random.js';
import { resolveClockOptions } from './options.js';

/**
 * The clock as a bootstrap script for a V8 context: evaluate it once per context, after the
 * host's other bootstrap scripts (such as `WEB_POLYFILLS`) and before any guest code. The
 * layer adds it with `addContextBootstrap`; use it directly with isolated-vm:
 *
 * ```ts
 * const context = await isolate.createContext();
 * await context.eval(clockBootstrap({ at: '2026-01-01T00:00:00Z', seed: 42 }));
 * ```
 *
 * Afterwards, in the context:
 *
 * - `Date.now()`, `new Date()` and `Date()` return `at`, as does every `Date` constructor the
 *   guest can reach (`Date.prototype.constructor`, subclasses, `Reflect.construct(Date, [], X)`).
 *   With arguments, `Date` is the original, so parsing, `Date.UTC` and arithmetic are unchanged.
 *   The original constructor stays in the script's closure; nothing the guest can reach leads to it.
 * - `Intl.DateTimeFormat#format()` and `#formatToParts()` without a date format `at`.
 * - `Temporal.Now` (where the engine has Temporal) answers `at`; a function of it the script
 *   does not know throws. `ShadowRealm`, a way to a fresh, unfrozen `Date`, is removed.
 * - `Math.random` is sfc32 seeded from `seed`: the same seed gives the same sequence, each
 *   value a multiple of 2^-53 in [0, 1).
 * - Where an earlier bootstrap (`WEB_POLYFILLS`) made `crypto.getRandomValues` and
 *   `crypto.randomUUID`, they draw from a second sfc32 stream, seeded with `seed` XOR
 *   `0x63727970`, so `Math.random`'s sequence is the same with or without `crypto`. They keep
 *   Web Crypto's refusals: a non-integer typed array is a `TypeMismatchError`, more than 65 536
 *   bytes a `QuotaExceededError` (`DOMException`s; `TypeError` and `RangeError` without one).
 *   Without `crypto`, none is created.
 * - `performance.timeOrigin` is `at` where `performance` exists (it is not created); `now()`
 *   keeps counting, so `timeOrigin + now()` starts at `at`.
 *
 * Replacements keep the originals' property attributes and key order; the constructor and
 * the functions that ignore `this` print as native code. The script is strict, uses neither
 * `eval` nor `Function`, and defines no global.
 *
 * @param options `at` (a `Date`, epoch milliseconds or an ISO 8601 string with a zone; default
 * {@link DEFAULT_CLOCK_AT}) and `seed` (0 to 2^32 - 1; default 0).
 * @throws {@link ClockOptionError} for an invalid option.
 */
export function clockBootstrap(options: { at?: Date | number | string; seed?: number } = {}): string {
  const config = resolveClockOptions(options, 'clockBootstrap()');
  return [
    '(function () {',
    "'use strict';",
    `(${compact(installClock.toString())})(globalThis, ${JSON.stringify(config)}, {`,
    `createSfc32: ${compact(createSfc32.toString())},`,
    `doublesFrom: ${compact(doublesFrom.toString())},`,
    `cryptoFrom: ${compact(cryptoFrom.toString())},`,
    `cryptoSeedMask: ${CRYPTO_SEED_MASK},`,
    '});',
    '})();',
    '//# sourceURL=strata-layer-clock.js',
    '',
  ].join('\n');
}

/**
 * Drops indentation, blank lines and whole-line comments (line comments and comment blocks)
 * from a function's source: the script is parsed again in every context. Line breaks stay, so automatic semicolon insertion
 * is unaffected. A line with an odd number of backticks may be part of a template literal
 * spanning lines, whose text must not change: then the source is kept as it is.
 */
function compact(source: string): string {
  const lines = source.split('\n');
  if (lines.some((line) => line.split('`').length % 2 === 0)) return source;
  const kept: string[] = [];
  let inComment = false;
  for (const line of lines.map((l) => l.trim())) {
    if (inComment) inComment = !line.includes('*/');
    else if (line.startsWith('/*')) inComment = !line.includes('*/');
    else if (line !== '' && !line.startsWith('//')) kept.push(line);
  }
  return kept.join('\n');
}

/**
 * The sequence the guest's `Math.random` gives for `seed`, computed on the host by the same
 * code: `seededRandom(42)()` is the guest's first `Math.random()` under `{ seed: 42 }`.
 *
 * @throws {@link ClockOptionError} for a seed that is not an integer from 0 to 2^32 - 1.
 */
export function seededRandom(seed: number): () => number {
  return createRandom(resolveClockOptions({ seed }, 'seededRandom()').seed);
}
