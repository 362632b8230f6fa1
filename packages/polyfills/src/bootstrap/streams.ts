import type { GlobalObject, Internal } from './internal.js';

/**
 * Installs the WHATWG Streams classes (`ReadableStream` and its readers and
 * controllers, `WritableStream`, `TransformStream`, the queuing strategies),
 * from the web-streams-polyfill bundle that `scripts/bundle.mjs` builds, and
 * `Blob.prototype.stream()`.
 *
 * Lazily, as url.ts does: each global starts as an accessor, and the first
 * read of any of them (or a call of `internal.streamClasses()`, which
 * `Blob.prototype.stream`, the encoder and compression streams make) runs
 * the bundle and turns all of them into ordinary data properties. Parsing the
 * bundle's text cannot be deferred; running it can.
 *
 * The bundle runs against bindings captured here, at bootstrap time: the
 * built-ins it names, `queueMicrotask`, `AbortController` (each
 * WritableStreamDefaultController's `signal`), `structuredClone`, and a
 * stand-in `globalThis` holding only the `DOMException` it looks up there
 * (for pipeTo's AbortError). A guest that replaced any of them before its
 * first stream does not change what the streams do.
 *
 * Self-contained: its source text is embedded in `WEB_POLYFILLS`.
 *
 * @internal
 */
export function installStreams(g: GlobalObject, internal: Internal): void {
  const { defineProperty, getOwnPropertyDescriptor, freeze } = Object;
  const apply = Reflect.apply;
  const names = internal.streamGlobals;
  type Classes = ReturnType<Internal['streamClasses']>;

  // What the bundle sees as `globalThis` (and `self`, `global`): only what it reads from it.
  const scope = freeze({ __proto__: null, DOMException: internal.DOMException });
  // Its only use of `Function` is `Function.prototype.apply.call(f, thisArg, args)`; the global
  // may already be gone (a host that disables code generation replaces it).
  const functionStandIn = freeze({
    __proto__: null,
    prototype: freeze({ __proto__: null, apply: freeze({ __proto__: null, call: (f: () => unknown, t: unknown, args: unknown[]) => apply(f, t, args) }) }),
  });
  const intrinsics = freeze({
    __proto__: null,
    globalThis: scope,
    self: scope,
    global: scope,
    queueMicrotask: g.queueMicrotask,
    structuredClone: g.structuredClone,
    AbortController: g.AbortController,
    Object,
    Promise,
    Symbol,
    Number,
    Math,
    String,
    Function: functionStandIn,
    Error,
    TypeError,
    RangeError,
    ArrayBuffer,
    DataView,
    Uint8Array,
    isFinite,
  });

  let classes: Classes | undefined;
  // No stream can exist before the bundle ran; then, ReadableStream's `locked` getter is the brand.
  let isReadableStream = (_value: unknown): boolean => false;
  internal.streamClasses = internal.defineLazyGroup(names, (): Classes => {
    const loaded = internal.runStreamsBundle(intrinsics);
    const picked: Record<string, unknown> = { __proto__: null } as never;
    for (const name of names) picked[name] = loaded[name];
    classes = freeze(picked) as Classes;
    isReadableStream = internal.brandCheck(getOwnPropertyDescriptor(classes.ReadableStream.prototype, 'locked')?.get);
    return classes;
  });
  internal.isReadableStream = (value) => isReadableStream(value);

  // structuredClone refuses streams, readers, controllers and strategies (platform objects
  // that are not serializable) instead of copying their internal slots as plain data.
  internal.platformBrands.push((v) => {
    if (classes === undefined) return false;
    for (const name of names) if (v instanceof classes[name]) return true;
    return false;
  });

  // Blob.prototype.stream(): a byte stream of the blob's bytes, in chunks of at most 64 KiB
  // (each a fresh Uint8Array the reader may keep), answering BYOB reads in the reader's buffer.
  const CHUNK = 65536;
  const U8 = Uint8Array;
  const setBytes = U8.prototype.set;
  const slice = U8.prototype.slice;
  const subarray = U8.prototype.subarray;

  const methods = {
    stream(this: unknown): unknown {
      const bytes = internal.blobBytes(this as object);
      const { ReadableStream } = internal.streamClasses();
      const size = bytes.length;
      let position = 0;
      return new ReadableStream({
        type: 'bytes',
        pull(controller: { byobRequest: { view: object; respond(n: number): void } | null; enqueue(chunk: Uint8Array): void; close(): void }) {
          if (position < size) {
            const request = controller.byobRequest;
            if (request !== null && request !== undefined) {
              // The bytes the BYOB request's view covers (a typed array or a DataView).
              const target = internal.bufferSourceBytes(request.view, true)!;
              const n = Math.min(target.length, size - position);
              apply(setBytes, target, [apply(subarray, bytes, [position, position + n])]);
              position += n;
              request.respond(n);
            } else {
              const n = Math.min(CHUNK, size - position);
              controller.enqueue(apply(slice, bytes, [position, position + n]));
              position += n;
            }
          }
          if (position >= size) controller.close();
        },
      });
    },
  };
  // An operation of Blob, like the others: writable, enumerable, configurable.
  defineProperty(internal.Blob.prototype, 'stream', {
    value: methods.stream,
    writable: true,
    enumerable: true,
    configurable: true,
  });
}
