import type { GlobalObject, Internal } from './internal.js';

/**
 * Installs `Headers` (Fetch standard): names validated as tokens and
 * compared case-insensitively, values with surrounding HTTP whitespace
 * stripped and CR, LF and NUL refused, combined with ", " by `get()`,
 * `getSetCookie()`, iteration sorted by name with each Set-Cookie apart.
 * Guards: "immutable" refuses changes (responses of fetch, Response.error()
 * and Response.redirect()); the others ("request", "response", "none")
 * filter nothing, as in server runtimes, where the host's egress policy, not
 * the guest, decides what goes out. Also Fetch's "extract a MIME type".
 *
 * Self-contained: its source text is embedded in `WEB_POLYFILLS`.
 *
 * @internal
 */
export function installHeaders(_g: GlobalObject, internal: Internal): void {
  const { getOwnPropertyDescriptor, ownKeys } = Reflect;
  type Guard = 'immutable' | 'request' | 'response' | 'none';
  type Entry = [name: string, value: string];

  const TOKEN = /^[!#$%&'*+\-.^_\x60|~0-9A-Za-z]+$/;
  const fail = (what: string, message: string): never => {
    throw new TypeError(`Failed to execute '${what}' on 'Headers': ${message}`);
  };
  const required = (what: string, count: number, given: number): void => {
    if (given < count) fail(what, `${count} argument${count > 1 ? 's' : ''} required, but only ${given} present.`);
  };
  // WebIDL ByteString.
  const byteString = (value: unknown, what: string): string => {
    const s = `${value as string}`;
    if (/[^\0-\xff]/.test(s)) fail(what, `the value '${s}' has characters above U+00FF (it is not a ByteString).`);
    return s;
  };
  const checkName = (name: unknown, what: string): string => {
    const s = byteString(name, what);
    if (!TOKEN.test(s)) fail(what, `Invalid name: '${s}'.`);
    return s.toLowerCase();
  };
  // Normalise (strip leading and trailing HTTP whitespace), then validate.
  const checkValue = (value: unknown, what: string): string => {
    const s = byteString(value, what).replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, '');
    if (/[\0\n\r]/.test(s)) fail(what, `Invalid value: '${s}'.`);
    return s;
  };

  class Headers {
    #list: Entry[] = [];
    #guard: Guard = 'none';
    #sorted: Entry[] | null = null;

    constructor(init: unknown = undefined) {
      if (init !== undefined) Headers.#fill(this, init, "construct 'Headers'");
    }

    static #check(value: unknown): Headers {
      if (value === null || typeof value !== 'object' || !(#list in value)) throw new TypeError('Illegal invocation');
      return value as Headers;
    }

    // Fetch's "fill": init is a sequence of pairs or a record (WebIDL converts it whole first).
    static #fill(headers: Headers, init: unknown, what: string): void {
      if (init === null || (typeof init !== 'object' && typeof init !== 'function')) {
        throw new TypeError(`Failed to ${what}: The provided value is not of type '(record<ByteString, ByteString> or sequence<sequence<ByteString>>)'.`);
      }
      const pairs: string[][] = [];
      const iterator = (init as { [Symbol.iterator]?: unknown })[Symbol.iterator];
      if (iterator !== undefined && iterator !== null) {
        if (typeof iterator !== 'function') throw new TypeError(`Failed to ${what}: The object's @@iterator is not callable.`);
        for (const item of { [Symbol.iterator]: () => Reflect.apply(iterator, init, []) as Iterator<unknown> }) {
          if (item === null || (typeof item !== 'object' && typeof item !== 'function')) {
            throw new TypeError(`Failed to ${what}: The provided value cannot be converted to a sequence.`);
          }
          pairs.push(Array.from(item as Iterable<unknown>, (v) => byteString(v, 'append')));
        }
      } else {
        for (const key of ownKeys(init)) {
          const desc = getOwnPropertyDescriptor(init, key);
          if (desc === undefined || !desc.enumerable) continue;
          if (typeof key === 'symbol') throw new TypeError(`Failed to ${what}: a Symbol key cannot be a header name.`);
          pairs.push([byteString(key, 'append'), byteString((init as Record<string, unknown>)[key], 'append')]);
        }
      }
      for (const pair of pairs) {
        if (pair.length !== 2) {
          throw new TypeError(`Failed to ${what}: a header must be a [name, value] pair, not ${pair.length} item${pair.length === 1 ? '' : 's'}.`);
        }
        Headers.#append(headers, pair[0], pair[1], 'append');
      }
    }

    static #mutable(headers: Headers, what: string, name: unknown, value: unknown): Entry {
      const entry: Entry = [checkName(name, what), checkValue(value, what)];
      if (headers.#guard === 'immutable') fail(what, 'Headers are immutable.');
      headers.#sorted = null;
      return entry;
    }

    static #append(headers: Headers, name: unknown, value: unknown, what: string): void {
      headers.#list.push(Headers.#mutable(headers, what, name, value));
    }

    static {
      internal.createHeaders = (init, guard) => {
        const headers = new Headers();
        if (init !== undefined) Headers.#fill(headers, init, "construct 'Headers'");
        headers.#guard = guard;
        return headers;
      };
      internal.headerList = (headers) => {
        const h = Headers.#check(headers);
        h.#sorted = null;
        return h.#list;
      };
      internal.platformBrands.push((v) => #list in v);
    }

    append(name: unknown, value: unknown): void {
      const self = Headers.#check(this);
      required('append', 2, arguments.length);
      Headers.#append(self, name, value, 'append');
    }

    delete(name: unknown): void {
      const self = Headers.#check(this);
      required('delete', 1, arguments.length);
      const [key] = Headers.#mutable(self, 'delete', name, '');
      self.#list = self.#list.filter((e) => e[0] !== key);
    }

    get(name: unknown): string | null {
      const self = Headers.#check(this);
      required('get', 1, arguments.length);
      const key = checkName(name, 'get');
      const values = self.#list.filter((e) => e[0] === key).map((e) => e[1]);
      return values.length === 0 ? null : values.join(', ');
    }

    getSetCookie(): string[] {
      return Headers.#check(this)
        .#list.filter((e) => e[0] === 'set-cookie')
        .map((e) => e[1]);
    }

    has(name: unknown): boolean {
      const self = Headers.#check(this);
      required('has', 1, arguments.length);
      const key = checkName(name, 'has');
      return self.#list.some((e) => e[0] === key);
    }

    set(name: unknown, value: unknown): void {
      const self = Headers.#check(this);
      required('set', 2, arguments.length);
      const entry = Headers.#mutable(self, 'set', name, value);
      const i = self.#list.findIndex((e) => e[0] === entry[0]);
      if (i < 0) self.#list.push(entry);
      else self.#list = [...self.#list.slice(0, i), entry, ...self.#list.slice(i + 1).filter((e) => e[0] !== entry[0])];
    }

    // "sort and combine", cached until the list changes.
    static #pairs(value: unknown): Entry[] {
      const self = Headers.#check(value);
      if (self.#sorted === null) {
        const names = [...new Set(self.#list.map((e) => e[0]))].sort();
        const sorted: Entry[] = [];
        for (const name of names) {
          const values = self.#list.filter((e) => e[0] === name).map((e) => e[1]);
          if (name === 'set-cookie') for (const v of values) sorted.push([name, v]);
          else sorted.push([name, values.join(', ')]);
        }
        self.#sorted = sorted;
      }
      return self.#sorted;
    }

    static {
      internal.webidl(Headers, 'Headers');
      internal.pairIterable(Headers, 'Headers', Headers.#pairs);
    }
  }

  // MIME Sniffing's "parse a MIME type".
  const HTTP_QUOTED = /^[\t\x20-\x7e\x80-\xff]*$/;
  const parseMimeType = (input: string): { essence: string; parameters: Map<string, string> } | null => {
    const s = input.replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, '');
    const slash = s.indexOf('/');
    if (slash < 0) return null;
    const type = s.slice(0, slash);
    let position = s.indexOf(';', slash);
    if (position < 0) position = s.length;
    const subtype = s.slice(slash + 1, position).replace(/[\t\n\r ]+$/, '');
    if (!TOKEN.test(type) || !TOKEN.test(subtype)) return null;
    const parameters = new Map<string, string>();
    while (position < s.length) {
      position++; // the ';'
      while (/[\t\n\r ]/.test(s[position] ?? '')) position++;
      let end = position;
      while (end < s.length && s[end] !== ';' && s[end] !== '=') end++;
      const name = s.slice(position, end).toLowerCase();
      position = end;
      if (s[position] === ';') continue;
      position++; // the '='
      if (position >= s.length) break;
      let value = '';
      if (s[position] === '"') {
        // "collect an HTTP quoted string", extracting the value.
        position++;
        for (;;) {
          while (position < s.length && s[position] !== '"' && s[position] !== '\\') value += s[position++];
          if (position >= s.length) break;
          const c = s[position++];
          if (c === '\\') {
            if (position >= s.length) {
              value += '\\';
              break;
            }
            value += s[position++];
          } else break;
        }
        while (position < s.length && s[position] !== ';') position++;
      } else {
        end = s.indexOf(';', position);
        if (end < 0) end = s.length;
        value = s.slice(position, end).replace(/[\t\n\r ]+$/, '');
        position = end;
        if (value === '') continue;
      }
      if (name !== '' && TOKEN.test(name) && HTTP_QUOTED.test(value) && !parameters.has(name)) parameters.set(name, value);
    }
    return { essence: `${type}/${subtype}`.toLowerCase(), parameters };
  };

  // Fetch's "get, decode, and split" of a header value: commas inside quoted strings stay.
  const split = (value: string): string[] => {
    const values: string[] = [];
    let current = '';
    let position = 0;
    for (;;) {
      while (position < value.length && value[position] !== '"' && value[position] !== ',') current += value[position++];
      if (value[position] === '"') {
        const start = position++;
        for (;;) {
          while (position < value.length && value[position] !== '"' && value[position] !== '\\') position++;
          if (position >= value.length) break;
          if (value[position++] === '\\') {
            if (position >= value.length) break;
            position++;
          } else break;
        }
        current += value.slice(start, position);
        if (position < value.length) continue;
      }
      values.push(current.replace(/^[\t ]+|[\t ]+$/g, ''));
      current = '';
      if (position >= value.length) return values;
      position++; // the ','
    }
  };

  const serialize = (essence: string, parameters: Map<string, string>): string => {
    let s = essence;
    for (const [name, value] of parameters) {
      s += `;${name}=${value !== '' && TOKEN.test(value) ? value : `"${value.replace(/["\\]/g, '\\$&')}"`}`;
    }
    return s;
  };

  // Fetch's "extract a MIME type": the last valid Content-Type, keeping an earlier charset of the same essence.
  internal.extractMimeType = (headers) => {
    const list = internal.headerList(headers).filter((e) => e[0] === 'content-type');
    if (list.length === 0) return null;
    let charset: string | undefined;
    let essence: string | undefined;
    let mimeType: { essence: string; parameters: Map<string, string> } | null = null;
    for (const value of split(list.map((e) => e[1]).join(', '))) {
      const parsed = parseMimeType(value);
      if (parsed === null || parsed.essence === '*/*') continue;
      mimeType = parsed;
      if (parsed.essence !== essence) {
        charset = parsed.parameters.get('charset');
        essence = parsed.essence;
      } else if (!parsed.parameters.has('charset') && charset !== undefined) {
        parsed.parameters.set('charset', charset);
      }
    }
    return mimeType === null ? null : { ...mimeType, serialized: serialize(mimeType.essence, mimeType.parameters) };
  };

  internal.Headers = Headers;
  internal.define('Headers', Headers);
}
