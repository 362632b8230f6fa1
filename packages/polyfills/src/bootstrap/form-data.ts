import type { GlobalObject, Internal } from './internal.js';

/**
 * Installs `FormData` (XHR standard) without its form-element constructor
 * argument, and the helpers fetch.ts needs for bodies: the HTML
 * multipart/form-data encoding, and Fetch's multipart/form-data and
 * application/x-www-form-urlencoded parsers for `body.formData()`. Also the
 * WebIDL pair-iterator members (`entries`, `keys`, `values`, `forEach`,
 * `@@iterator`) that FormData and Headers share.
 *
 * Self-contained: its source text is embedded in `WEB_POLYFILLS`.
 *
 * @internal
 */
export function installFormData(g: GlobalObject, internal: Internal): void {
  const { defineProperty, getPrototypeOf, setPrototypeOf } = Object;
  const apply = Reflect.apply;
  const fromCharCode = String.fromCharCode;
  const File = internal.File;
  const random = Math.random;
  // "UTF-8 decode without BOM": a leading U+FEFF is kept.
  const decoder = new g.TextDecoder('utf-8', { ignoreBOM: true }) as { decode(bytes: Uint8Array): string };
  const utf8 = (bytes: Uint8Array): string => decoder.decode(bytes);

  type Pair = [string, unknown];

  // WebIDL pair iterators: live over the pairs at each step, as the spec's index-based iterator is.
  const iteratorPrototype = getPrototypeOf(getPrototypeOf([][Symbol.iterator]())) as object;
  internal.pairIterable = (cls, tag, pairsOf) => {
    class Iterator {
      #target: object;
      #kind: number;
      #index = 0;
      constructor(target: object, kind: number) {
        this.#target = target;
        this.#kind = kind;
      }
      next(): IteratorResult<unknown> {
        if (!(#target in this)) throw new TypeError('Illegal invocation');
        const pairs = pairsOf(this.#target);
        if (this.#index >= pairs.length) return { value: undefined, done: true };
        const [key, value] = pairs[this.#index++]!;
        return { value: this.#kind === 0 ? key : this.#kind === 1 ? value : [key, value], done: false };
      }
    }
    setPrototypeOf(Iterator.prototype, iteratorPrototype);
    internal.webidl(Iterator, `${tag} Iterator`);
    delete (Iterator.prototype as { constructor?: unknown }).constructor;
    const proto = cls.prototype as Record<PropertyKey, unknown>;
    const methods = {
      entries(this: object) {
        pairsOf(this);
        return new Iterator(this, 2);
      },
      keys(this: object) {
        pairsOf(this);
        return new Iterator(this, 0);
      },
      values(this: object) {
        pairsOf(this);
        return new Iterator(this, 1);
      },
      forEach(this: object, callback: unknown, thisArg: unknown = undefined) {
        pairsOf(this);
        if (typeof callback !== 'function') {
          throw new TypeError(`Failed to execute 'forEach' on '${tag}': parameter 1 is not of type 'Function'.`);
        }
        for (let i = 0, pairs = pairsOf(this); i < pairs.length; i++, pairs = pairsOf(this)) {
          apply(callback, thisArg, [pairs[i]![1], pairs[i]![0], this]);
        }
      },
    };
    for (const name of ['entries', 'keys', 'values', 'forEach'] as const) {
      defineProperty(proto, name, { value: methods[name], writable: true, enumerable: true, configurable: true });
    }
    defineProperty(proto, Symbol.iterator, { value: methods.entries, writable: true, configurable: true });
  };

  const required = (what: string, count: number, given: number): void => {
    if (given < count) {
      throw new TypeError(`Failed to execute '${what}' on 'FormData': ${count} argument${count > 1 ? 's' : ''} required, but only ${given} present.`);
    }
  };
  const usv = (value: unknown): string => `${value as string}`.toWellFormed();

  // XHR "create an entry": Blobs become Files, named "blob" unless a filename is given.
  const entry = (what: string, args: IArguments): [string, unknown] => {
    required(what, 2, args.length);
    const name = usv(args[0]);
    const value: unknown = args[1];
    if (!internal.isBlob(value)) {
      if (args.length > 2) throw new TypeError(`Failed to execute '${what}' on 'FormData': parameter 2 is not of type 'Blob'.`);
      return [name, usv(value)];
    }
    const blob = value as { type: string; name?: string; lastModified?: number };
    const isFile = internal.isFile(value);
    if (isFile && args[2] === undefined) return [name, value];
    const filename = args[2] === undefined ? 'blob' : usv(args[2]);
    return [name, new File([value], filename, { type: blob.type, lastModified: isFile ? blob.lastModified : undefined })];
  };

  let formDataEntries: (fd: unknown) => Pair[];
  class FormData {
    #entries: Pair[] = [];

    constructor(form: unknown = undefined) {
      // No HTMLFormElement exists here.
      if (form !== undefined) throw new TypeError("Failed to construct 'FormData': parameter 1 is not of type 'HTMLFormElement'.");
    }

    static #check(value: unknown): FormData {
      if (value === null || typeof value !== 'object' || !(#entries in value)) throw new TypeError('Illegal invocation');
      return value as FormData;
    }

    static {
      internal.isFormData = (value) => value !== null && typeof value === 'object' && #entries in value;
      formDataEntries = (fd) => FormData.#check(fd).#entries;
    }

    append(_name: unknown, _value: unknown, _filename: unknown = undefined): void {
      const entries = FormData.#check(this).#entries;
      entries.push(entry('append', arguments));
    }

    delete(name: unknown): void {
      const self = FormData.#check(this);
      required('delete', 1, arguments.length);
      const key = usv(name);
      self.#entries = self.#entries.filter((e) => e[0] !== key);
    }

    get(name: unknown): unknown {
      const entries = FormData.#check(this).#entries;
      required('get', 1, arguments.length);
      const key = usv(name);
      const found = entries.find((e) => e[0] === key);
      return found === undefined ? null : found[1];
    }

    getAll(name: unknown): unknown[] {
      const entries = FormData.#check(this).#entries;
      required('getAll', 1, arguments.length);
      const key = usv(name);
      return entries.filter((e) => e[0] === key).map((e) => e[1]);
    }

    has(name: unknown): boolean {
      const entries = FormData.#check(this).#entries;
      required('has', 1, arguments.length);
      const key = usv(name);
      return entries.some((e) => e[0] === key);
    }

    set(_name: unknown, _value: unknown, _filename: unknown = undefined): void {
      const self = FormData.#check(this);
      const e = entry('set', arguments);
      const i = self.#entries.findIndex((x) => x[0] === e[0]);
      if (i < 0) self.#entries.push(e);
      else self.#entries = [...self.#entries.slice(0, i), e, ...self.#entries.slice(i + 1).filter((x) => x[0] !== e[0])];
    }
  }

  internal.webidl(FormData, 'FormData');
  internal.pairIterable(FormData, 'FormData', (fd) => formDataEntries(fd));
  internal.platformBrands.push(internal.isFormData);

  // Bytes to a string of one char per byte, and back ("isomorphic" decode/encode).
  const latin1 = (bytes: Uint8Array): string => {
    let s = '';
    for (let i = 0; i < bytes.length; i += 8192) s += apply(fromCharCode, null, bytes.subarray(i, i + 8192) as unknown as number[]);
    return s;
  };
  const bytesOf = (s: string): Uint8Array => {
    const out = new Uint8Array(s.length);
    for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
    return out;
  };
  const concat = (chunks: Uint8Array[]): Uint8Array => {
    let size = 0;
    for (const c of chunks) size += c.length;
    const out = new Uint8Array(size);
    let offset = 0;
    for (const c of chunks) {
      out.set(c, offset);
      offset += c.length;
    }
    return out;
  };

  // HTML's multipart/form-data encoding: names and string values get CRLF line breaks;
  // names and filenames escape '"', CR and LF.
  const crlf = (s: string): string => s.replace(/\r(?!\n)|(?<!\r)\n/g, '\r\n');
  const escape = (s: string): string => s.replace(/[\n\r"]/g, (c) => (c === '\n' ? '%0A' : c === '\r' ? '%0D' : '%22'));
  const BOUNDARY_CHARS = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  internal.encodeFormData = (fd) => {
    let boundary = '----StrataFormBoundary';
    for (let i = 0; i < 16; i++) boundary += BOUNDARY_CHARS[Math.floor(random() * 62)];
    const chunks: Uint8Array[] = [];
    for (const [name, value] of formDataEntries(fd)) {
      let head = `--${boundary}\r\nContent-Disposition: form-data; name="${escape(crlf(name))}"`;
      if (typeof value === 'string') {
        chunks.push(internal.utf8Encode(`${head}\r\n\r\n${crlf(value)}\r\n`));
      } else {
        const file = value as { name: string; type: string };
        head += `; filename="${escape(file.name)}"\r\nContent-Type: ${file.type || 'application/octet-stream'}\r\n\r\n`;
        chunks.push(internal.utf8Encode(head), internal.blobBytes(value as object), bytesOf('\r\n'));
      }
    }
    chunks.push(bytesOf(`--${boundary}--\r\n`));
    return { bytes: concat(chunks), type: `multipart/form-data; boundary=${boundary}` };
  };

  // Fetch's multipart/form-data parser, on the bytes as a one-char-per-byte string. Lenient
  // where RFC 2046 is: a preamble before the first boundary and an epilogue after the last.
  const parseMultipart = (bytes: Uint8Array, boundary: string): Pair[] | null => {
    const input = latin1(bytes);
    const delimiter = `--${boundary}`;
    let position = input.startsWith(delimiter) ? 0 : input.indexOf(`\r\n${delimiter}`);
    if (position < 0 || boundary === '') return null;
    if (position > 0) position += 2;
    const entries: Pair[] = [];
    // "parse a multipart/form-data name": up to the closing quote, with %0A, %0D and %22 decoded.
    const quoted = (): string | null => {
      const end = input.slice(position).search(/[\n\r"]/);
      if (end < 0 || input[position + end] !== '"') return null;
      const name = input.slice(position, position + end).replace(/%0A|%0D|%22/g, (c) => (c === '%0A' ? '\n' : c === '%0D' ? '\r' : '"'));
      position += end + 1;
      return utf8(bytesOf(name));
    };
    for (;;) {
      if (!input.startsWith(delimiter, position)) return null;
      position += delimiter.length;
      if (input.startsWith('--', position)) return entries;
      if (!input.startsWith('\r\n', position)) return null;
      position += 2;
      let name: string | null = null;
      let filename: string | null = null;
      let contentType: string | null = null;
      // The part's headers, up to an empty line.
      while (!input.startsWith('\r\n', position)) {
        const colon = input.slice(position).search(/[\n\r:]/);
        if (colon < 0 || input[position + colon] !== ':') return null;
        const header = input
          .slice(position, position + colon)
          .replace(/^[\t ]+|[\t ]+$/g, '')
          .toLowerCase();
        if (!/^[!#$%&'*+\-.^_\x60|~0-9a-z]+$/.test(header)) return null;
        position += colon + 1;
        while (input[position] === ' ' || input[position] === '\t') position++;
        if (header === 'content-disposition') {
          name = filename = null;
          if (!input.startsWith('form-data; name="', position)) return null;
          position += 17;
          name = quoted();
          if (name === null) return null;
          if (input.startsWith('; filename="', position)) {
            position += 12;
            filename = quoted();
            if (filename === null) return null;
          }
        } else {
          let end = input.slice(position).search(/[\n\r]/);
          if (end < 0) end = input.length - position;
          if (header === 'content-type') contentType = input.slice(position, position + end).replace(/[\t ]+$/, '');
          position += end;
        }
        if (!input.startsWith('\r\n', position)) return null;
        position += 2;
      }
      if (name === null) return null;
      position += 2;
      const end = input.indexOf(`\r\n${delimiter}`, position);
      if (end < 0) return null;
      const body = bytes.subarray(position, end);
      position = end + 2;
      if (filename === null) entries.push([name, utf8(body)]);
      else {
        contentType ??= 'text/plain';
        entries.push([name, new File([body], filename, { type: /^[\0-\x7f]*$/.test(contentType) ? contentType : '' })]);
      }
    }
  };

  // The application/x-www-form-urlencoded parser (URL standard).
  const percentDecode = (s: string): string =>
    utf8(bytesOf(s.replace(/\+/g, ' ').replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => fromCharCode(parseInt(hex, 16)))));
  const parseUrlencoded = (bytes: Uint8Array): Pair[] => {
    const entries: Pair[] = [];
    for (const sequence of latin1(bytes).split('&')) {
      if (sequence === '') continue;
      const eq = sequence.indexOf('=');
      const decode = percentDecode;
      entries.push(eq < 0 ? [decode(sequence), ''] : [decode(sequence.slice(0, eq)), decode(sequence.slice(eq + 1))]);
    }
    return entries;
  };

  internal.decodeFormData = (bytes, mimeType) => {
    let entries: Pair[] | null = null;
    if (mimeType?.essence === 'multipart/form-data') {
      const boundary = mimeType.parameters.get('boundary');
      // Compared as bytes, so kept one char per byte as the header's value is.
      entries = boundary === undefined ? null : parseMultipart(bytes, boundary);
      if (entries === null) throw new TypeError('Failed to parse the body as multipart/form-data.');
    } else if (mimeType?.essence === 'application/x-www-form-urlencoded') {
      entries = parseUrlencoded(bytes);
    } else {
      throw new TypeError('The body is not multipart/form-data or application/x-www-form-urlencoded: it has no form data.');
    }
    const fd = new FormData();
    formDataEntries(fd).push(...entries);
    return fd;
  };

  internal.define('FormData', FormData);
}
