import { installAbort } from './bootstrap/abort.js';
import { installBase64 } from './bootstrap/base64.js';
import { installBlob } from './bootstrap/blob.js';
import { installCompression } from './bootstrap/compression.js';
import { installCrypto } from './bootstrap/crypto.js';
import { installDomException } from './bootstrap/dom-exception.js';
import { installEncoding } from './bootstrap/encoding.js';
import { installEncodingStreams } from './bootstrap/encoding-streams.js';
import { installEventLoop } from './bootstrap/event-loop.js';
import { installEvents } from './bootstrap/events.js';
import { installFetch } from './bootstrap/fetch.js';
import { installFile } from './bootstrap/file.js';
import { installFileReader } from './bootstrap/file-reader.js';
import { installFormData } from './bootstrap/form-data.js';
import { installGlobalScope } from './bootstrap/global-scope.js';
import { installGlobals } from './bootstrap/globals.js';
import { installHeaders } from './bootstrap/headers.js';
import { installPerformance } from './bootstrap/performance.js';
import { installStreams } from './bootstrap/streams.js';
import { installStructuredClone } from './bootstrap/structured-clone.js';
import { installUrl } from './bootstrap/url.js';
import { ENTROPY_GLOBAL, EVENT_LOOP_GLOBAL, FETCH_CANCEL_GLOBAL, FETCH_GLOBAL, STREAM_GLOBALS, URL_GLOBALS } from './constants.js';
import { COMPRESSION_BUNDLE } from './generated/compression-bundle.js';
import { CRYPTO_BUNDLE } from './generated/crypto-bundle.js';
import { STREAMS_BUNDLE } from './generated/streams-bundle.js';
import { URL_BUNDLE } from './generated/url-bundle.js';
import { PACKAGE_VERSION } from './generated/version.js';

// Order matters: each installer may use what the earlier ones put on
// `internal` (DOMException before everything that throws one, the event loop
// before events, events before AbortSignal and FileReader...).
const installers = [
  installGlobals,
  installDomException,
  installEventLoop,
  installPerformance,
  installEvents,
  installAbort,
  installEncoding,
  installBase64,
  installBlob,
  installFileReader,
  installStructuredClone,
  installUrl,
  installCrypto,
  installStreams,
  installEncodingStreams,
  installCompression,
  installFile,
  installFormData,
  installHeaders,
  installFetch,
  installGlobalScope,
];

/**
 * Drops indentation, blank lines and whole-line comments: about a third of
 * the compiled text, parsed again in every context. Line breaks stay, so
 * automatic semicolon insertion is unaffected. A line with an odd number of
 * backticks may be part of a template literal spanning lines, whose text
 * must not change: then the source is kept as it is.
 */
function compact(source: string): string {
  const lines = source.split('\n');
  if (lines.some((line) => line.split('`').length % 2 === 0)) return source;
  return lines
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('//'))
    .join('\n');
}

// The global built-ins the crypto bundle names (see installCrypto, which passes them in).
const CRYPTO_INTRINSICS = [
  'Object',
  'Array',
  'Number',
  'Math',
  'BigInt',
  'ArrayBuffer',
  'DataView',
  'Uint8Array',
  'Uint32Array',
  'Error',
  'TypeError',
  'RangeError',
];

// The host hooks' names, handed to the installers in `internal` (they are compiled alone and import nothing).
const HOST_GLOBALS = { eventLoop: EVENT_LOOP_GLOBAL, entropy: ENTROPY_GLOBAL, fetch: FETCH_GLOBAL, fetchCancel: FETCH_CANCEL_GLOBAL };

function assemble(): string {
  // Each installer is a self-contained function: its compiled source text is
  // the code. They share nothing but the global object and `internal`.
  const body = installers.map((install) => `(${compact(install.toString())})(globalThis, internal);`).join('\n');
  return [
    '(function () {',
    "'use strict';",
    // Evaluating the bootstrap a second time in the same context is a no-op.
    `if (Object.prototype.hasOwnProperty.call(globalThis, ${JSON.stringify(EVENT_LOOP_GLOBAL)})) return;`,
    `const internal = { userAgent: ${JSON.stringify(`Strata/${PACKAGE_VERSION}`)}, urlGlobals: ${JSON.stringify(URL_GLOBALS)}, streamGlobals: ${JSON.stringify(STREAM_GLOBALS)}, hostGlobals: ${JSON.stringify(HOST_GLOBALS)} };`,
    // The third-party bundle (scripts/bundle.mjs), as a function that installUrl calls on first
    // use of a URL global. Its parameters shadow the globals it would otherwise read at that
    // time, whatever the guest has done to them. Not parenthesised, so V8 only pre-parses it.
    'internal.runUrlBundle = function (globalThis, TextEncoder, TextDecoder, SharedArrayBuffer) {',
    URL_BUNDLE,
    'return strataUrlBundle;',
    '};',
    // The hash functions behind crypto.subtle.digest, which installCrypto runs on the first
    // digest (running it costs every context about 0.2 ms). The built-ins it names are bound to
    // the ones of bootstrap time, and a stand-in `globalThis` keeps it off the guest's global.
    'internal.runCryptoBundle = function (intrinsics) {',
    `const { globalThis, ${CRYPTO_INTRINSICS.join(', ')} } = intrinsics;`,
    CRYPTO_BUNDLE,
    'return strataCryptoBundle;',
    '};',
    // The web streams classes, run by installStreams on first use of a stream global (see there
    // for the bindings: built-ins, AbortController, queueMicrotask... of bootstrap time).
    'internal.runStreamsBundle = function (intrinsics) {',
    'const { globalThis, self, global, queueMicrotask, structuredClone, AbortController, Object, Promise, Symbol, Number, Math, String, Function, Error, TypeError, RangeError, ArrayBuffer, DataView, Uint8Array, isFinite } = intrinsics;',
    STREAMS_BUNDLE,
    'return strataStreamsBundle;',
    '};',
    // fflate's streaming (de)compressors, run by installCompression on the first construction.
    'internal.runCompressionBundle = function (intrinsics) {',
    'const { globalThis, Object, Math, Error, Uint8Array, Uint16Array, Int32Array, TextDecoder, Date } = intrinsics;',
    COMPRESSION_BUNDLE,
    'return strataCompressionBundle;',
    '};',
    body,
    '})();',
    '//# sourceURL=strata-web-polyfills.js',
    '',
  ].join('\n');
}

/**
 * A small, pure-JavaScript bootstrap of browser basics for a bare V8
 * isolate, as the source of one script. Evaluate it once per context,
 * before any guest code:
 *
 * ```ts
 * import ivm from 'isolated-vm';
 * import { WEB_POLYFILLS } from '@strata/polyfills';
 *
 * const isolate = new ivm.Isolate({ memoryLimit: 64 });
 * const context = await isolate.createContext();
 * await context.eval(WEB_POLYFILLS);
 * ```
 *
 * It defines, as writable, configurable, non-enumerable globals:
 * `setTimeout` / `setInterval` / `clearTimeout` / `clearInterval` on virtual
 * time, `queueMicrotask`, `performance` (`now()` is a counter, not a clock),
 * `reportError`, `DOMException`, `Event` / `CustomEvent` / `EventTarget`,
 * `AbortController` / `AbortSignal`, `TextEncoder` / `TextDecoder`, `btoa` /
 * `atob`, `Blob`, `FileReader` / `ProgressEvent`, `structuredClone`, `URL` /
 * `URLSearchParams` / `URLPattern` (bundled third-party code, loaded on first
 * use), `crypto` / `Crypto` / `SubtleCrypto` (`getRandomValues` and
 * `randomUUID` from the host's `__strataEntropy`, `subtle.digest` for SHA-1
 * and SHA-2), the WHATWG streams (`ReadableStream`, `WritableStream`,
 * `TransformStream`, their readers and controllers, `ByteLengthQueuingStrategy`
 * / `CountQueuingStrategy`: bundled third-party code, loaded on first use) and
 * `Blob.prototype.stream()`, `TextEncoderStream` / `TextDecoderStream`,
 * `CompressionStream` / `DecompressionStream` (gzip, deflate, deflate-raw, by
 * bundled third-party code loaded on first construction), `self` and
 * `navigator` (only `userAgent`); and the host hook `__strataEventLoop`
 * ({@link StrataEventLoop}).
 *
 * It never defines `window`, `document`, `location`, `process`, `require`
 * or `requestAnimationFrame`: those push libraries onto DOM,
 * browser-detection or Node code paths. `fetch` (with `Request`, `Response`,
 * `Headers`, `FormData`, `File`) is there, but reaches a network only
 * through the host's `__strataFetch` transport (FETCH_GLOBAL); without one
 * it rejects with a TypeError.
 *
 * Timers never fire on their own. The host drives them: while the result of
 * an evaluation is a pending promise, it calls
 * `__strataEventLoop.runNext()` until the promise settles or `runNext()`
 * returns `false`. Virtual time jumps from one timer to the next, so nothing
 * sleeps. A string handler (`setTimeout('code')`) is never compiled: the
 * timer gets an id and never runs. A `setInterval` that fires
 * `MAX_INTERVAL_RUNS` (10,000) times is cut off: it is cleared and a warning
 * goes to `console.warn` if the host installed a console. At most
 * `MAX_PENDING_TIMERS` (100,000) timers wait at once; past it `setTimeout`
 * and `setInterval` throw a `RangeError`. Exceptions thrown
 * by callbacks and listeners go to `console.error` and never stop the loop.
 *
 * The script is strict, uses neither `eval` nor `Function`, so it loads
 * where those are disabled, and evaluating it twice in one context is a
 * no-op. `Date` is left alone.
 */
export const WEB_POLYFILLS: string = assemble();
