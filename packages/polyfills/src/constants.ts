/**
 * Name of the global through which a host drives the virtual-time event
 * loop that `WEB_POLYFILLS` installs. See {@link StrataEventLoop}.
 */
export const EVENT_LOOP_GLOBAL = '__strataEventLoop';

/**
 * Name of the global function through which a host gives the bootstrap
 * entropy: `(byteLength: number) => Uint8Array` of that many random bytes.
 * Define it before evaluating `WEB_POLYFILLS`; the bootstrap captures it for
 * `crypto.getRandomValues` / `crypto.randomUUID` and deletes the global.
 * Without it, both throw a `NotSupportedError` DOMException.
 */
export const ENTROPY_GLOBAL = '__strataEntropy';

/**
 * How many times one `setInterval` may fire before it is cut off (cleared,
 * with a `console.warn`). 10,000 runs is 160 s of 16 ms animation frames.
 */
export const MAX_INTERVAL_RUNS = 10_000;

/**
 * How far each `performance.now()` call advances the virtual clock, in
 * milliseconds (1/128 ms, a power of two so sums stay exact).
 */
export const PERFORMANCE_TICK_MS = 1 / 128;

/**
 * The globals `WEB_POLYFILLS` defines, besides {@link EVENT_LOOP_GLOBAL}.
 * Each is a writable, configurable, non-enumerable property of the global
 * object, as on the web.
 */
export const POLYFILLED_GLOBALS = [
  'reportError',
  'DOMException',
  'setTimeout',
  'setInterval',
  'clearTimeout',
  'clearInterval',
  'queueMicrotask',
  'performance',
  'Event',
  'CustomEvent',
  'EventTarget',
  'AbortSignal',
  'AbortController',
  'TextEncoder',
  'TextDecoder',
  'btoa',
  'atob',
  'Blob',
  'ProgressEvent',
  'FileReader',
  'structuredClone',
  'URL',
  'URLSearchParams',
  'URLPattern',
  'crypto',
  'Crypto',
  'SubtleCrypto',
  'navigator',
  'self',
] as const;

/**
 * The globals of {@link POLYFILLED_GLOBALS} defined lazily: accessors until
 * the first read of any of them loads the bundled URL code, then writable,
 * configurable, non-enumerable data properties like the others.
 */
export const LAZY_GLOBALS = ['URL', 'URLSearchParams', 'URLPattern'] as const;

/**
 * Globals `WEB_POLYFILLS` never defines. A `window` or `document` pushes
 * libraries onto DOM code paths, `location` onto browser detection,
 * `process` / `require` onto Node ones, and `fetch` would pretend to a
 * network the sandbox does not have.
 */
export const NEVER_DEFINED_GLOBALS = [
  'window',
  'document',
  'location',
  'process',
  'require',
  'module',
  'exports',
  'global',
  'fetch',
  'XMLHttpRequest',
  'requestAnimationFrame',
  'cancelAnimationFrame',
  'setImmediate',
] as const;
