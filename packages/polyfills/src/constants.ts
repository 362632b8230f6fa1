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
 * Name of the global function through which a host gives the bootstrap's
 * `fetch` a network: `(request) => Promise<response>`, the host's transport.
 * Define it before evaluating `WEB_POLYFILLS`; the bootstrap captures it for
 * `fetch` and deletes the global. `request` is
 * `{ url, method, headers: [name, value][], body?: Uint8Array, redirect: 'follow' | 'manual' }`
 * (the URL without its fragment, lower-case header names, the whole body
 * read); the answer is
 * `{ status, statusText, url, redirected, headers: [name, value][], body: Uint8Array }`.
 * A rejection whose `name` is "AbortError" rejects `fetch` with an AbortError
 * DOMException, any other with a TypeError of the same message. Without it,
 * `fetch` rejects with a TypeError: the sandbox has no network.
 */
export const FETCH_GLOBAL = '__strataFetch';

/**
 * Name of the global function through which a host lets the bootstrap's
 * `fetch` cancel a request: `(id: number) => void`. `fetch` calls the
 * {@link FETCH_GLOBAL} transport as `transport(request, id)`, with an id
 * unique in the context (1, 2, …), and, when the request's signal aborts
 * while the host has it, `cancel(id)`: the host stops that request (its
 * answer is ignored either way). Optional; captured and deleted like the
 * transport.
 */
export const FETCH_CANCEL_GLOBAL = '__strataFetchCancel';

/**
 * How many times one `setInterval` may fire before it is cut off (cleared,
 * with a `console.warn`). 10,000 runs is 160 s of 16 ms animation frames.
 */
export const MAX_INTERVAL_RUNS = 10_000;

/**
 * How many timers may wait to fire at once (`setTimeout`, `setInterval` and
 * the polyfills' own tasks together). Past it, `setTimeout` and
 * `setInterval` throw a `RangeError` in the guest instead of filling its heap.
 */
export const MAX_PENDING_TIMERS = 100_000;

/**
 * How far each `performance.now()` call advances the virtual clock, in
 * milliseconds (1/128 ms, a power of two so sums stay exact).
 */
export const PERFORMANCE_TICK_MS = 1 / 128;

/**
 * The URL classes: one group of {@link LAZY_GLOBALS}, loaded together. The
 * bootstrap gets the list from here (`internal.urlGlobals`).
 *
 * @internal
 */
export const URL_GLOBALS = ['URL', 'URLSearchParams', 'URLPattern'] as const;

/**
 * The web streams classes: the other group of {@link LAZY_GLOBALS}. The
 * bootstrap gets the list from here (`internal.streamGlobals`).
 *
 * @internal
 */
export const STREAM_GLOBALS = [
  'ReadableStream',
  'ReadableStreamDefaultReader',
  'ReadableStreamBYOBReader',
  'ReadableStreamBYOBRequest',
  'ReadableStreamDefaultController',
  'ReadableByteStreamController',
  'WritableStream',
  'WritableStreamDefaultWriter',
  'WritableStreamDefaultController',
  'TransformStream',
  'TransformStreamDefaultController',
  'ByteLengthQueuingStrategy',
  'CountQueuingStrategy',
] as const;

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
  'ErrorEvent',
  'addEventListener',
  'removeEventListener',
  'dispatchEvent',
  // An event handler attribute: a (configurable, non-enumerable) accessor.
  'onerror',
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
  ...URL_GLOBALS,
  'crypto',
  'Crypto',
  'CryptoKey',
  'SubtleCrypto',
  ...STREAM_GLOBALS,
  'TextEncoderStream',
  'TextDecoderStream',
  'CompressionStream',
  'DecompressionStream',
  'File',
  'FormData',
  'Headers',
  'Request',
  'Response',
  'fetch',
  'navigator',
  'self',
] as const;

/**
 * The globals of {@link POLYFILLED_GLOBALS} defined lazily, in two groups:
 * the URL classes and the web streams classes. Each is an accessor until the
 * first read of any global of its group (or, for the streams, the first
 * `Blob.prototype.stream()`, `TextEncoderStream`, `TextDecoderStream`,
 * `CompressionStream` or `DecompressionStream`) loads that group's bundled
 * code; then they are writable, configurable, non-enumerable data properties
 * like the others.
 */
export const LAZY_GLOBALS = [...URL_GLOBALS, ...STREAM_GLOBALS] as const;

/**
 * Globals `WEB_POLYFILLS` never defines. A `window` or `document` pushes
 * libraries onto DOM code paths, `location` onto browser detection,
 * `process` / `require` onto Node ones.
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
  'XMLHttpRequest',
  'requestAnimationFrame',
  'cancelAnimationFrame',
  'setImmediate',
] as const;
