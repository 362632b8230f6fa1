import type { GlobalObject, Internal, QueuedTask } from './internal.js';

/**
 * Installs `FileReader` and `ProgressEvent` (File API). Reads complete as
 * tasks on the virtual-time queue, so they finish when the host drives the
 * event loop, in the event order the standard gives: loadstart, progress,
 * load, loadend (or abort, loadend).
 *
 * Self-contained: its source text is embedded in `WEB_POLYFILLS`.
 *
 * @internal
 */
export function installFileReader(_g: GlobalObject, internal: Internal): void {
  const Event = internal.Event;
  const EventTarget = internal.EventTarget;
  const EMPTY = 0;
  const LOADING = 1;
  const DONE = 2;

  class ProgressEvent extends Event {
    #lengthComputable: boolean;
    #loaded: number;
    #total: number;

    constructor(type: unknown, eventInitDict: unknown = undefined) {
      if (arguments.length === 0) {
        throw new TypeError("Failed to construct 'ProgressEvent': 1 argument required, but only 0 present.");
      }
      super(type, eventInitDict);
      const init = (eventInitDict ?? {}) as { lengthComputable?: unknown; loaded?: unknown; total?: unknown };
      this.#lengthComputable = !!init.lengthComputable;
      this.#loaded = Math.trunc(+(init.loaded ?? 0)) || 0;
      this.#total = Math.trunc(+(init.total ?? 0)) || 0;
    }

    get lengthComputable(): boolean {
      return this.#lengthComputable;
    }
    get loaded(): number {
      return this.#loaded;
    }
    get total(): number {
      return this.#total;
    }
  }

  type Kind = 'ArrayBuffer' | 'BinaryString' | 'Text' | 'DataURL';

  class FileReader extends EventTarget {
    #state = EMPTY;
    #result: unknown = null;
    #error: unknown = null;
    #tasks: QueuedTask[] = [];

    static #check(reader: unknown): FileReader {
      if (reader === null || typeof reader !== 'object' || !(#state in reader)) throw new TypeError('Illegal invocation');
      return reader as FileReader;
    }

    get readyState(): number {
      return FileReader.#check(this).#state;
    }
    get result(): unknown {
      return FileReader.#check(this).#result;
    }
    get error(): unknown {
      return FileReader.#check(this).#error;
    }

    readAsArrayBuffer(blob: unknown): void {
      FileReader.#read(this, 'ArrayBuffer', blob, undefined, arguments.length);
    }
    readAsBinaryString(blob: unknown): void {
      FileReader.#read(this, 'BinaryString', blob, undefined, arguments.length);
    }
    readAsText(blob: unknown, encoding: unknown = undefined): void {
      FileReader.#read(this, 'Text', blob, encoding, arguments.length);
    }
    readAsDataURL(blob: unknown): void {
      FileReader.#read(this, 'DataURL', blob, undefined, arguments.length);
    }

    abort(): void {
      const fr = FileReader.#check(this);
      if (fr.#state !== LOADING) {
        fr.#result = null;
        return;
      }
      fr.#state = DONE;
      fr.#result = null;
      for (const t of fr.#tasks) internal.cancelTask(t);
      fr.#tasks = [];
      FileReader.#progress(fr, 'abort', 0, 0);
      if (fr.#state !== LOADING) FileReader.#progress(fr, 'loadend', 0, 0);
    }

    static #progress(fr: FileReader, type: string, loaded: number, total: number): void {
      internal.fire(fr, new ProgressEvent(type, { lengthComputable: true, loaded, total }));
    }

    // File API "read operation".
    static #read(target: unknown, kind: Kind, blob: unknown, encoding: unknown, argc: number): void {
      const fr = FileReader.#check(target);
      const what = `Failed to execute 'readAs${kind}' on 'FileReader'`;
      if (argc === 0) throw new TypeError(`${what}: 1 argument required, but only 0 present.`);
      if (!internal.isBlob(blob)) throw new TypeError(`${what}: parameter 1 is not of type 'Blob'.`);
      const label = encoding === undefined ? undefined : `${encoding as string}`;
      if (fr.#state === LOADING) {
        throw new internal.DOMException(`${what}: The object is already busy reading Blobs.`, 'InvalidStateError');
      }
      fr.#state = LOADING;
      fr.#result = null;
      fr.#error = null;
      const bytes = internal.blobBytes(blob as object);
      const type = (blob as { type: string }).type;
      const total = bytes.length;
      const tasks: QueuedTask[] = [];
      fr.#tasks = tasks;
      tasks.push(internal.queueTask(() => FileReader.#progress(fr, 'loadstart', 0, total)));
      tasks.push(
        internal.queueTask(() => {
          FileReader.#progress(fr, 'progress', total, total);
          // A progress listener may have aborted or restarted the read.
          if (fr.#tasks !== tasks) return;
          fr.#tasks = [];
          fr.#state = DONE;
          fr.#result = FileReader.#packageData(bytes, kind, label, type);
          FileReader.#progress(fr, 'load', total, total);
          if (fr.#state !== LOADING) FileReader.#progress(fr, 'loadend', total, total);
        }),
      );
    }

    // File API "package data".
    static #packageData(bytes: Uint8Array, kind: Kind, label: string | undefined, type: string): unknown {
      switch (kind) {
        case 'ArrayBuffer':
          return bytes.slice().buffer;
        case 'BinaryString': {
          const parts: string[] = [];
          for (let i = 0; i < bytes.length; i += 8192) {
            parts.push(String.fromCharCode.apply(null, bytes.subarray(i, i + 8192) as unknown as number[]));
          }
          return parts.join('');
        }
        case 'DataURL':
          return `data:${type || 'application/octet-stream'};base64,${internal.base64Encode(bytes)}`;
        case 'Text': {
          // A BOM decides the encoding; then the label; else UTF-8.
          let encoding = (label !== undefined && internal.encodingFor(label)) || 'utf-8';
          if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) encoding = 'utf-8';
          else if (bytes[0] === 0xfe && bytes[1] === 0xff) encoding = 'utf-16be';
          else if (bytes[0] === 0xff && bytes[1] === 0xfe) encoding = 'utf-16le';
          return internal.decode(bytes, encoding);
        }
      }
    }
  }

  for (const [key, value] of [
    ['EMPTY', EMPTY],
    ['LOADING', LOADING],
    ['DONE', DONE],
  ] as const) {
    const desc = { value, writable: false, enumerable: true, configurable: false };
    Object.defineProperty(FileReader, key, desc);
    Object.defineProperty(FileReader.prototype, key, desc);
  }
  internal.defineEventHandlers(FileReader.prototype, ['loadstart', 'progress', 'load', 'abort', 'error', 'loadend']);
  internal.webidl(ProgressEvent, 'ProgressEvent');
  internal.webidl(FileReader, 'FileReader');
  internal.define('ProgressEvent', ProgressEvent);
  internal.define('FileReader', FileReader);
}
