/**
 * Types shared by the bootstrap installers.
 *
 * Every installer in this folder is a self-contained function whose source
 * text (`Function.prototype.toString`) becomes part of `WEB_POLYFILLS`. They
 * therefore cannot import anything at run time: the only things they share
 * are the global object and the `internal` record below, which earlier
 * installers fill in for later ones. Only types are imported from here, and
 * `verbatimModuleSyntax` erases them.
 *
 * @internal
 * @module
 */

import type { STREAM_GLOBALS, URL_GLOBALS } from '../constants.js';

/** The isolate's global object: untyped on purpose, since these files define its members. */
export type GlobalObject = Record<string | symbol, any>;

/** A loosely typed class, for the polyfill classes passed between installers. */
export type AnyClass = new (...args: any[]) => any;

/** A timer or task sitting in the virtual-time heap. */
export interface QueuedTask {
  /** Set once cancelled: the heap drops it lazily. */
  cancelled: boolean;
}

/** The classes of the URL bundle (see url.ts). */
export interface UrlClasses {
  URL: AnyClass;
  URLSearchParams: AnyClass;
  URLPattern: AnyClass;
}

/** State the installers share; filled in installation order. */
export interface Internal {
  // set by the assembly (web-polyfills.ts), before any installer
  /** `navigator.userAgent`: "Strata/" and the package version. */
  userAgent: string;
  /** The names of the URL globals (URL_GLOBALS in constants.ts), in order. */
  urlGlobals: typeof URL_GLOBALS;
  /** The names of the web streams globals (STREAM_GLOBALS in constants.ts), in order. */
  streamGlobals: typeof STREAM_GLOBALS;
  /** The names of the host's hooks (the *_GLOBAL names in constants.ts): one spelling for host and bootstrap. */
  hostGlobals: { eventLoop: string; entropy: string; fetch: string; fetchCancel: string };
  /**
   * Runs the third-party URL bundle with the given bindings for the free
   * names it uses, and returns its classes. Each call runs it anew.
   */
  runUrlBundle(scope: object, textEncoder: unknown, textDecoder: unknown, sharedArrayBuffer: unknown): UrlClasses;
  /**
   * Runs the third-party crypto bundle, with the given built-ins for the free
   * names it uses, and returns its hash functions (see crypto.ts).
   */
  runCryptoBundle(intrinsics: object): Record<string, (...bytes: any[]) => Uint8Array>;

  // globals.ts
  /** Installs a global the way WebIDL does: writable, configurable, not enumerable. */
  define(name: string, value: unknown): void;
  /** Gives a class WebIDL looks: a `Symbol.toStringTag` and enumerable members. */
  webidl(cls: AnyClass, tag: string): void;
  /**
   * Reports an exception nobody caught, without interrupting the caller: to
   * the console here; events.ts replaces it with HTML's "report an
   * exception" (an `error` event at the global first). Look it up when
   * reporting, do not capture it.
   */
  reportError(error: unknown): void;
  /**
   * Defines `names` as globals loaded together (the URL and the streams classes): each is an
   * accessor (not enumerable, configurable; assigning replaces it with a data property) until
   * the first read of any of them, or the first call of the function returned, runs `load`,
   * once. Then those the guest has not replaced or deleted meanwhile become data properties
   * (as `define` makes them) holding `load()[name]`. The function returned gives `load`'s result.
   */
  defineLazyGroup<K extends string, T extends Readonly<Record<K, unknown>>>(names: readonly K[], load: () => T): () => T;
  /** Writes a warning to `console.warn` when the host provided a console. */
  warn(message: string): void;
  /** Predicates recognising polyfill objects that structuredClone must refuse. */
  platformBrands: Array<(value: object) => boolean>;
  /**
   * A brand check from a getter that throws for anything but a real instance (a built-in's, or a
   * bundled class's): true when calling it on the value does not throw. Undefined getter: false.
   */
  brandCheck(getter: ((this: unknown) => unknown) | undefined): (value: unknown) => boolean;
  /** Brand checks (a `Symbol.toStringTag` can lie). */
  isArrayBuffer(value: unknown): value is ArrayBuffer;
  /** False when the host removed SharedArrayBuffer before the bootstrap ran. */
  isSharedArrayBuffer(value: unknown): value is SharedArrayBuffer;
  /** Brand check: true for any DataView (its buffer may be detached). */
  isDataView(value: unknown): value is DataView;
  /** A typed array's [[TypedArrayName]] ("Uint8Array"...), undefined for anything else. */
  typedArrayName(value: unknown): string | undefined;
  /**
   * The bytes of a BufferSource: a Uint8Array over the same memory (not a copy) of an
   * ArrayBuffer, a typed array or a DataView; undefined for anything else, and for
   * SharedArrayBuffer memory unless `allowShared` (WebIDL's [AllowShared]: then a
   * SharedArrayBuffer and any view qualify). By the built-ins of bootstrap time, whatever
   * the guest has done to them since. A detached ArrayBuffer, or a view on one, throws a TypeError.
   */
  bufferSourceBytes(value: unknown, allowShared?: boolean): Uint8Array | undefined;

  // dom-exception.ts
  DOMException: AnyClass;
  isDOMException(value: unknown): boolean;

  // event-loop.ts
  /** The virtual clock in milliseconds, without advancing it. */
  now(): number;
  /** Advances the virtual clock by one small step and returns it (performance.now). */
  tick(): number;
  /** Queues `fn` as a task (a zero-delay timer not subject to clamping). */
  queueTask(fn: () => void): QueuedTask;
  /** Runs `fn` after `ms` virtual milliseconds, outside the guest's timer ids. */
  setInternalTimer(fn: () => void, ms: number): QueuedTask;
  cancelTask(task: QueuedTask): void;

  // events.ts
  Event: AnyClass;
  EventTarget: AnyClass;
  /** Dispatches a trusted event created by the polyfills themselves. */
  fire(target: object, event: object): boolean;
  /** Installs `on<type>` event handler attributes on a prototype (or the global object). */
  defineEventHandlers(proto: object, types: string[]): void;

  // abort.ts
  isAbortSignal(value: unknown): boolean;
  /** Runs `fn` when `signal` aborts (the DOM "add an abort algorithm"). */
  addAbortAlgorithm(signal: object, fn: () => void): void;

  // encoding.ts
  utf8Encode(text: string): Uint8Array;
  /** Decodes with replacement characters and BOM removal, as Blob.text() does. */
  decode(bytes: Uint8Array, label: string): string;
  /** Canonical encoding name for a label, or undefined when unknown. */
  encodingFor(label: string): string | undefined;

  // base64.ts
  base64Encode(bytes: Uint8Array): string;

  // blob.ts
  isBlob(value: unknown): boolean;
  /** The bytes of a Blob; callers must not modify them. */
  blobBytes(blob: object): Uint8Array;
  Blob: AnyClass;

  // url.ts
  /** The URL classes, loading the bundle on first use. */
  urlClasses(): UrlClasses;

  // streams.ts, encoding-streams.ts, compression.ts
  /**
   * Set by the assembly: runs the third-party streams bundle (web-streams-polyfill) with the
   * given bindings for the free names it uses, and returns its classes. Each call runs it anew.
   */
  runStreamsBundle(intrinsics: object): Record<string, AnyClass>;
  /**
   * Set by the assembly: runs the third-party compression bundle (fflate) with the given
   * bindings, and returns its streaming classes. Each call runs it anew.
   */
  runCompressionBundle(intrinsics: object): Record<'Deflate' | 'Gzip' | 'Zlib' | 'Inflate', AnyClass>;
  /**
   * The web streams classes, loading the bundle on first use (which also turns the lazy
   * stream globals into data properties). The same classes as the globals of bootstrap time.
   */
  streamClasses(): Readonly<Record<(typeof STREAM_GLOBALS)[number], AnyClass>>;
  /** True for the polyfill's ReadableStream objects (brand check, no bundle load if none exists yet). */
  isReadableStream(value: unknown): boolean;

  // (add the streams work's members above this line)

  // file.ts
  File: AnyClass;
  isFile(value: unknown): boolean;
  /** A File's name and lastModified, from its internal slots. Brand-checks. */
  fileState(file: object): { name: string; lastModified: number };

  // form-data.ts
  /**
   * Gives `cls.prototype` the WebIDL pair-iterator members (`entries`, `keys`, `values`,
   * `forEach`, `@@iterator`) over `pairsOf(instance)`, which brand-checks; read at every step.
   */
  pairIterable(cls: AnyClass, tag: string, pairsOf: (instance: unknown) => Array<[string, unknown]>): void;
  isFormData(value: unknown): boolean;
  /** The HTML multipart/form-data encoding of a FormData, and the Content-Type naming its boundary. */
  encodeFormData(formData: object): { bytes: Uint8Array; type: string };
  /** A FormData parsed from a body by its MIME type (multipart or urlencoded); a TypeError otherwise. */
  decodeFormData(bytes: Uint8Array, mimeType: { essence: string; parameters: Map<string, string> } | null): object;

  // headers.ts
  Headers: AnyClass;
  /** New Headers filled from a HeadersInit (or undefined) as `new Headers(init)` is, then guarded. */
  createHeaders(init: unknown, guard: 'immutable' | 'request' | 'response' | 'none'): object;
  /** The live header list of a Headers: [lower-case name, value] entries. Brand-checks. */
  headerList(headers: object): Array<[string, string]>;
  /** Fetch's "extract a MIME type" from a Headers' Content-Type, or null on failure. */
  extractMimeType(headers: object): { essence: string; parameters: Map<string, string>; serialized: string } | null;

  // file.ts, form-data.ts, headers.ts, fetch.ts (add the fetch work's members above this line)
}
