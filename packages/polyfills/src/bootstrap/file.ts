import type { GlobalObject, Internal } from './internal.js';

/**
 * Installs `File` (File API): a Blob with a `name` and a `lastModified`
 * time (by default `Date.now()`, looked up at the time: a clock layer may
 * replace `Date`).
 *
 * Self-contained: its source text is embedded in `WEB_POLYFILLS`.
 *
 * @internal
 */
export function installFile(_g: GlobalObject, internal: Internal): void {
  class File extends internal.Blob {
    #name: string;
    #lastModified: number;

    constructor(fileBits: unknown, fileName: unknown, options: unknown = undefined) {
      if (arguments.length < 2) {
        throw new TypeError(`Failed to construct 'File': 2 arguments required, but only ${arguments.length} present.`);
      }
      super(fileBits, options);
      // USVString: lone surrogates become U+FFFD.
      this.#name = `${fileName as string}`.toWellFormed();
      const lastModified = (options as { lastModified?: unknown } | null | undefined)?.lastModified;
      // WebIDL long long (a time in milliseconds; beyond 2^53 precision is gone anyway).
      const ms = lastModified === undefined ? Date.now() : Math.trunc(+(lastModified as number));
      this.#lastModified = Number.isFinite(ms) ? ms + 0 : 0;
    }

    static {
      internal.isFile = (value) => value !== null && typeof value === 'object' && #name in value;
      internal.fileState = (file) => {
        if (!internal.isFile(file)) throw new TypeError('Illegal invocation');
        return { name: (file as File).#name, lastModified: (file as File).#lastModified };
      };
    }

    get name(): string {
      if (!(#name in this)) throw new TypeError('Illegal invocation');
      return this.#name;
    }

    get lastModified(): number {
      if (!(#name in this)) throw new TypeError('Illegal invocation');
      return this.#lastModified;
    }
  }

  internal.File = File;
  internal.webidl(File, 'File');
  internal.define('File', File);
}
