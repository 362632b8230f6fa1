import type { AnyClass, GlobalObject, Internal } from './internal.js';

/**
 * Installs `Request`, `Response` and `fetch` (Fetch standard), as server
 * runtimes have them: no CORS, no forbidden headers, no `window`.
 *
 * Bodies keep their bytes until a stream is asked for (`body`), so text(),
 * json() and the others never load the streams bundle unless a stream was
 * given. `fetch` builds a Request and hands a plain copy of it to the
 * host's transport, `__strataFetch(request): Promise<response>`, captured
 * here and deleted from the global (see FETCH_GLOBAL in constants.ts).
 * Without one, `fetch` rejects with a TypeError saying so.
 *
 * Self-contained: its source text is embedded in `WEB_POLYFILLS`.
 *
 * @internal
 */
export function installFetch(g: GlobalObject, internal: Internal): void {
  const { defineProperty, getOwnPropertyDescriptor, keys } = Object;
  const apply = Reflect.apply;
  const U8 = Uint8Array;
  const objectToString = Object.prototype.toString;
  const AbortSignal = g.AbortSignal as AnyClass & { any(signals: object[]): object };
  const abortAny = AbortSignal.any;
  const signalAborted = getOwnPropertyDescriptor(AbortSignal.prototype, 'aborted')!.get!;
  const signalReason = getOwnPropertyDescriptor(AbortSignal.prototype, 'reason')!.get!;
  const followSignals = (signals: object[]): object => apply(abortAny, AbortSignal, [signals]);
  const { Blob, DOMException } = internal;

  const TRANSPORT = internal.hostGlobals.fetch;
  const CANCEL = internal.hostGlobals.fetchCancel;
  const transport: unknown = g[TRANSPORT];
  const cancelTransport: unknown = g[CANCEL];
  Reflect.deleteProperty(g, TRANSPORT);
  Reflect.deleteProperty(g, CANCEL);
  // Each call of the transport is numbered, so an abort can name the request it cancels.
  let nextRequestId = 1;

  const TOKEN = /^[!#$%&'*+\-.^_\x60|~0-9A-Za-z]+$/;
  const NULL_BODY_STATUS = [101, 103, 204, 205, 304];
  const REDIRECT_STATUS = [301, 302, 303, 307, 308];
  const usv = (value: unknown): string => `${value as string}`.toWellFormed();
  const noop = (): void => {};
  // A copy of the bytes of an ArrayBuffer or a view (one on a SharedArrayBuffer too), or undefined.
  const copyOf = (value: unknown): Uint8Array | undefined =>
    internal.isSharedArrayBuffer(value) ? undefined : internal.bufferSourceBytes(value, true)?.slice();

  // ---- bodies -------------------------------------------------------------------------------

  // A body holds its bytes until a stream is asked for; `source` is false for a body given as a
  // ReadableStream (the spec's null source). `used` marks reads this file made or saw.
  interface Body {
    bytes: Uint8Array | null;
    stream: object | null;
    used: boolean;
    source: boolean;
  }
  type Reader = object;
  interface Streams {
    ReadableStream: AnyClass;
    getReader: (this: object) => Reader;
    locked: (this: object) => boolean;
    tee: (this: object) => [object, object];
    read: (this: Reader) => Promise<{ done: boolean; value: unknown }>;
    cancelReader: (this: Reader, reason: unknown) => Promise<void>;
  }
  let cached: Streams | undefined;
  // The stream classes load on first need: most bodies never become streams.
  const streams = (): Streams => {
    if (cached === undefined) {
      const { ReadableStream, ReadableStreamDefaultReader } = internal.streamClasses();
      const p = ReadableStream.prototype as Pick<Streams, 'getReader' | 'tee'>;
      const r = ReadableStreamDefaultReader.prototype as { read: Streams['read']; cancel: Streams['cancelReader'] };
      cached = {
        ReadableStream,
        getReader: p.getReader,
        locked: getOwnPropertyDescriptor(p, 'locked')!.get as Streams['locked'],
        tee: p.tee,
        read: r.read,
        cancelReader: r.cancel,
      };
    }
    return cached;
  };

  const newBody = (bytes: Uint8Array | null, stream: object | null = null): Body => ({ bytes, stream, used: false, source: stream === null });
  // Streams keep web-streams-polyfill's [[disturbed]] slot as `_disturbed`.
  const disturbed = (b: Body): boolean => b.used || (b.stream !== null && (b.stream as { _disturbed?: unknown })._disturbed === true);
  const locked = (b: Body): boolean => b.stream !== null && apply(streams().locked, b.stream, []);
  const unusable = (b: Body | null): boolean => b !== null && (disturbed(b) || locked(b));
  const unusableError = (what: string, b: Body): TypeError =>
    new TypeError(`${what}: the body is unusable: ${disturbed(b) ? 'it has already been read' : 'its stream is locked to a reader'}.`);

  // The body's stream, made from its bytes on first request: a byte stream of 64 KiB chunks.
  const streamOf = (b: Body): object => {
    if (b.stream === null) {
      // A body read already (text()...) gives an empty stream, as a fully read one would be.
      let bytes = b.used || b.bytes === null ? new U8(0) : b.bytes;
      let position = 0;
      b.bytes = null;
      const stream: object = new (streams().ReadableStream)({
        type: 'bytes',
        pull(controller: { enqueue(chunk: Uint8Array): void; close(): void }) {
          if (b.stream === stream) b.used = true;
          if (position < bytes.length) {
            const n = Math.min(65536, bytes.length - position);
            controller.enqueue(bytes.slice(position, position + n));
            position += n;
          }
          if (position >= bytes.length) controller.close();
        },
        cancel() {
          if (b.stream === stream) b.used = true;
          bytes = new U8(0);
        },
      });
      b.stream = stream;
    }
    return b.stream;
  };

  const concat = (chunks: Uint8Array[], size: number): Uint8Array => {
    const out = new U8(size);
    let offset = 0;
    for (const c of chunks) {
      out.set(c, offset);
      offset += c.length;
    }
    return out;
  };

  // Reads a body to its end (the caller checked it is usable): its bytes, not to be modified.
  const readBody = async (b: Body, hold: (reader: Reader) => void = noop): Promise<Uint8Array> => {
    b.used = true;
    if (b.stream === null) {
      const bytes = b.bytes ?? new U8(0);
      b.bytes = null;
      return bytes;
    }
    const s = streams();
    const reader = apply(s.getReader, b.stream, []);
    hold(reader);
    const chunks: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      const { done, value } = await apply(s.read, reader, []);
      if (done) return concat(chunks, size);
      if (internal.typedArrayName(value) !== 'Uint8Array') {
        const error = new TypeError('The body stream gave a chunk that is not a Uint8Array.');
        apply(s.cancelReader, reader, [error]).then(undefined, noop);
        throw error;
      }
      chunks.push(value as Uint8Array);
      size += (value as Uint8Array).length;
    }
  };

  // Fetch's "clone a body": a stream body is teed, a body of bytes shares them (they are never modified).
  const cloneBody = (b: Body | null): Body | null => {
    if (b === null) return null;
    if (b.stream === null) return { bytes: b.bytes, stream: null, used: false, source: b.source };
    const [one, two] = apply(streams().tee, b.stream, []);
    b.stream = one;
    return { bytes: null, stream: two, used: false, source: b.source };
  };

  // Takes a body for a new Request (the spec's proxy): the old one is left disturbed and locked.
  const takeBody = (b: Body): Body => {
    b.used = true;
    if (b.stream === null) {
      const taken = newBody(b.bytes);
      b.bytes = null;
      return taken;
    }
    const s = streams();
    const reader = apply(s.getReader, b.stream, []);
    const proxy = new s.ReadableStream(
      {
        pull: (controller: { enqueue(chunk: unknown): void; close(): void }) =>
          apply(s.read, reader, []).then(({ done, value }) => (done ? controller.close() : controller.enqueue(value))),
        cancel: (reason: unknown) => apply(s.cancelReader, reader, [reason]),
      },
      { highWaterMark: 0 },
    );
    return { bytes: null, stream: proxy, used: false, source: b.source };
  };

  // A URLSearchParams' serialisation, or undefined; the URL bundle loads only for one.
  const searchParams = (value: unknown): string | undefined => {
    if (value === null || typeof value !== 'object' || apply(objectToString, value, []) !== '[object URLSearchParams]') return undefined;
    try {
      return apply(internal.urlClasses().URLSearchParams.prototype.toString, value, []) as string;
    } catch {
      return undefined;
    }
  };

  // Fetch's "extract a body": the body and the Content-Type it implies.
  const extract = (object: unknown, keepalive: boolean, what: string): [Body, string | null] => {
    if (internal.isReadableStream(object)) {
      if (keepalive) throw new TypeError(`${what}: a keepalive request cannot have a ReadableStream body.`);
      const b = newBody(null, object as object);
      if (unusable(b)) throw new TypeError(`${what}: the ReadableStream body is locked or has been read from.`);
      return [b, null];
    }
    if (internal.isBlob(object)) {
      const type = (object as { type: string }).type;
      return [newBody(internal.blobBytes(object as object)), type === '' ? null : type];
    }
    const bytes = copyOf(object);
    if (bytes !== undefined) return [newBody(bytes), null];
    if (internal.isFormData(object)) {
      const { bytes, type } = internal.encodeFormData(object as object);
      return [newBody(bytes), type];
    }
    const params = searchParams(object);
    if (params !== undefined) return [newBody(internal.utf8Encode(params)), 'application/x-www-form-urlencoded;charset=UTF-8'];
    return [newBody(internal.utf8Encode(`${object as string}`)), 'text/plain;charset=UTF-8'];
  };

  // What Request and Response share: their body and their headers (for the MIME type).
  interface Owner {
    body: Body | null;
    headers: object;
  }
  let requestOf: (value: unknown) => RequestState | undefined;
  let responseOf: (value: unknown) => ResponseState | undefined;

  // The Body mixin's members, made anew for each class (each prototype has its own functions).
  const bodyMixin = (cls: AnyClass, name: string, stateOf: (value: unknown) => Owner | undefined): void => {
    const ownerOf = (value: unknown): Owner => {
      const owner = stateOf(value);
      if (owner === undefined) throw new TypeError('Illegal invocation');
      return owner;
    };
    const consume = async (self: unknown, what: string): Promise<[Uint8Array, Owner]> => {
      const owner = ownerOf(self);
      const b = owner.body;
      if (b === null) return [new U8(0), owner];
      if (unusable(b)) throw unusableError(`Failed to execute '${what}' on '${name}'`, b);
      return [await readBody(b), owner];
    };
    const members = {
      get body(): object | null {
        const b = ownerOf(this).body;
        return b === null ? null : streamOf(b);
      },
      get bodyUsed(): boolean {
        const b = ownerOf(this).body;
        return b !== null && disturbed(b);
      },
      async arrayBuffer(): Promise<ArrayBuffer> {
        return (await consume(this, 'arrayBuffer'))[0].slice().buffer;
      },
      async blob(): Promise<object> {
        const [bytes, owner] = await consume(this, 'blob');
        return new Blob([bytes], { type: internal.extractMimeType(owner.headers)?.serialized ?? '' });
      },
      async bytes(): Promise<Uint8Array> {
        return (await consume(this, 'bytes'))[0].slice();
      },
      async formData(): Promise<object> {
        const [bytes, owner] = await consume(this, 'formData');
        return internal.decodeFormData(bytes, internal.extractMimeType(owner.headers));
      },
      async json(): Promise<unknown> {
        return JSON.parse(internal.decode((await consume(this, 'json'))[0], 'utf-8'));
      },
      async text(): Promise<string> {
        return internal.decode((await consume(this, 'text'))[0], 'utf-8');
      },
    };
    for (const key of keys(members)) {
      defineProperty(cls.prototype, key, getOwnPropertyDescriptor(members, key)!);
    }
  };

  // ---- Request ------------------------------------------------------------------------------

  interface RequestState extends Owner {
    method: string;
    url: string;
    signal: object;
    mode: string;
    credentials: string;
    cache: string;
    redirect: string;
    referrer: string;
    referrerPolicy: string;
    integrity: string;
    keepalive: boolean;
    priority: string;
  }

  const parseURL = (input: string, what: string): { href: string; username: string; password: string } => {
    const { URL } = internal.urlClasses();
    try {
      return new URL(input);
    } catch {
      throw new TypeError(`${what}: Invalid URL '${input}' (there is no base URL here: a URL must be absolute).`);
    }
  };

  // RequestInit's members, read in WebIDL's (lexicographic) order and converted.
  const ENUMS: Record<string, [string, string[]]> = {
    cache: ['RequestCache', ['default', 'no-store', 'reload', 'no-cache', 'force-cache', 'only-if-cached']],
    credentials: ['RequestCredentials', ['omit', 'same-origin', 'include']],
    duplex: ['RequestDuplex', ['half']],
    mode: ['RequestMode', ['navigate', 'same-origin', 'no-cors', 'cors']],
    priority: ['RequestPriority', ['high', 'low', 'auto']],
    redirect: ['RequestRedirect', ['follow', 'error', 'manual']],
    referrerPolicy: [
      'ReferrerPolicy',
      [
        '',
        'no-referrer',
        'no-referrer-when-downgrade',
        'same-origin',
        'origin',
        'strict-origin',
        'origin-when-cross-origin',
        'strict-origin-when-cross-origin',
        'unsafe-url',
      ],
    ],
  };
  const INIT_KEYS = [
    'body',
    'cache',
    'credentials',
    'duplex',
    'headers',
    'integrity',
    'keepalive',
    'method',
    'mode',
    'priority',
    'redirect',
    'referrer',
    'referrerPolicy',
    'signal',
    'window',
  ];
  const dictionary = (init: unknown, what: string, members: string[]): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    if (init === undefined || init === null) return out;
    if (typeof init !== 'object' && typeof init !== 'function') throw new TypeError(`${what}: the init argument is not an object.`);
    for (const key of members) {
      let value = (init as Record<string, unknown>)[key];
      if (value === undefined) continue;
      const e = ENUMS[key];
      if (e !== undefined) {
        value = `${value as string}`;
        if (!e[1].includes(value as string)) {
          throw new TypeError(`${what}: The provided value '${value as string}' is not a valid enum value of type ${e[0]}.`);
        }
      } else if (key === 'integrity' || key === 'statusText') value = `${value as string}`;
      else if (key === 'referrer') value = usv(value);
      else if (key === 'keepalive') value = !!value;
      else if (key === 'method') value = `${value as string}`;
      else if (key === 'signal' && value !== null && !internal.isAbortSignal(value)) {
        throw new TypeError(`${what}: member signal is not of type AbortSignal.`);
      }
      out[key] = value;
    }
    return out;
  };

  let adoptRequest: RequestState | null = null;

  class Request {
    #s: RequestState;

    constructor(input: unknown, init: unknown = undefined) {
      if (adoptRequest !== null) {
        this.#s = adoptRequest;
        adoptRequest = null;
        return;
      }
      const what = "Failed to construct 'Request'";
      if (arguments.length < 1) throw new TypeError(`${what}: 1 argument required, but only 0 present.`);
      const from = requestOf(input);
      const o = dictionary(init, what, INIT_KEYS);
      let s: RequestState;
      if (from === undefined) {
        const url = parseURL(usv(input), what);
        if (url.username !== '' || url.password !== '') {
          throw new TypeError(`${what}: the URL '${url.href}' includes credentials (give them in a header instead).`);
        }
        s = {
          method: 'GET',
          url: url.href,
          headers: null!,
          body: null,
          signal: null!,
          mode: 'cors',
          credentials: 'same-origin',
          cache: 'default',
          redirect: 'follow',
          referrer: 'about:client',
          referrerPolicy: '',
          integrity: '',
          keepalive: false,
          priority: 'auto',
        };
      } else {
        s = { ...from, body: null };
      }
      let signal: object | null = from === undefined ? null : from.signal;
      if (keys(o).length > 0) {
        if (s.mode === 'navigate') s.mode = 'same-origin';
        s.referrer = 'about:client';
        s.referrerPolicy = '';
      }
      if (o.referrer !== undefined) {
        const referrer = o.referrer as string;
        s.referrer = referrer === '' ? '' : parseURL(referrer, what).href;
      }
      if (o.mode === 'navigate') throw new TypeError(`${what}: mode 'navigate' is for browser navigations only.`);
      for (const key of ['referrerPolicy', 'mode', 'credentials', 'cache', 'redirect', 'integrity', 'keepalive', 'priority'] as const) {
        if (o[key] !== undefined) (s as unknown as Record<string, unknown>)[key] = o[key];
      }
      if (s.cache === 'only-if-cached' && s.mode !== 'same-origin') {
        throw new TypeError(`${what}: cache 'only-if-cached' can be set only with mode 'same-origin'.`);
      }
      if (o.method !== undefined) {
        const method = o.method as string;
        if (!TOKEN.test(method)) throw new TypeError(`${what}: '${method}' is not a valid HTTP method.`);
        const upper = method.toUpperCase();
        if (upper === 'CONNECT' || upper === 'TRACE' || upper === 'TRACK') {
          throw new TypeError(`${what}: '${method}' HTTP method is unsupported.`);
        }
        s.method = ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'POST', 'PUT'].includes(upper) ? upper : method;
      }
      if ('signal' in o) signal = o.signal as object | null;
      if (o.window !== undefined && o.window !== null) throw new TypeError(`${what}: 'window' can only be null.`);
      s.signal = followSignals(signal === null ? [] : [signal]);
      if (s.mode === 'no-cors' && !['GET', 'HEAD', 'POST'].includes(s.method)) {
        throw new TypeError(`${what}: '${s.method}' is unsupported in no-cors mode.`);
      }
      s.headers = internal.createHeaders(o.headers !== undefined ? o.headers : from === undefined ? undefined : internal.headerList(from.headers), 'request');
      const inputBody = from === undefined ? null : from.body;
      const hasInitBody = o.body !== undefined && o.body !== null;
      if ((hasInitBody || inputBody !== null) && (s.method === 'GET' || s.method === 'HEAD')) {
        throw new TypeError(`${what}: a ${s.method} request cannot have a body.`);
      }
      let initBody: Body | null = null;
      if (hasInitBody) {
        const [b, type] = extract(o.body, s.keepalive, what);
        initBody = b;
        const list = internal.headerList(s.headers);
        if (type !== null && !list.some((e) => e[0] === 'content-type')) list.push(['content-type', type]);
      }
      const body = initBody ?? inputBody;
      if (body !== null && !body.source) {
        if (initBody !== null && o.duplex === undefined) {
          throw new TypeError(`${what}: a ReadableStream body needs the option duplex: 'half'.`);
        }
        if (s.mode !== 'same-origin' && s.mode !== 'cors') throw new TypeError(`${what}: a ReadableStream body needs mode 'cors' or 'same-origin'.`);
      }
      if (initBody === null && inputBody !== null) {
        if (unusable(inputBody)) throw unusableError(what, inputBody);
        s.body = takeBody(inputBody);
      } else s.body = body;
      this.#s = s;
    }

    static {
      requestOf = (value) => (value !== null && typeof value === 'object' && #s in value ? (value as Request).#s : undefined);
      internal.platformBrands.push((v) => #s in v);
    }

    static #state(value: unknown): RequestState {
      const s = requestOf(value);
      if (s === undefined) throw new TypeError('Illegal invocation');
      return s;
    }

    get method(): string {
      return Request.#state(this).method;
    }
    get url(): string {
      return Request.#state(this).url;
    }
    get headers(): object {
      return Request.#state(this).headers;
    }
    get destination(): string {
      Request.#state(this);
      return '';
    }
    get referrer(): string {
      return Request.#state(this).referrer;
    }
    get referrerPolicy(): string {
      return Request.#state(this).referrerPolicy;
    }
    get mode(): string {
      return Request.#state(this).mode;
    }
    get credentials(): string {
      return Request.#state(this).credentials;
    }
    get cache(): string {
      return Request.#state(this).cache;
    }
    get redirect(): string {
      return Request.#state(this).redirect;
    }
    get integrity(): string {
      return Request.#state(this).integrity;
    }
    get keepalive(): boolean {
      return Request.#state(this).keepalive;
    }
    get isReloadNavigation(): boolean {
      Request.#state(this);
      return false;
    }
    get isHistoryNavigation(): boolean {
      Request.#state(this);
      return false;
    }
    get signal(): object {
      return Request.#state(this).signal;
    }
    get duplex(): string {
      Request.#state(this);
      return 'half';
    }

    clone(): Request {
      const s = Request.#state(this);
      if (unusable(s.body)) throw unusableError("Failed to execute 'clone' on 'Request'", s.body!);
      adoptRequest = {
        ...s,
        headers: internal.createHeaders(internal.headerList(s.headers), 'request'),
        body: cloneBody(s.body),
        signal: followSignals([s.signal]),
      };
      return new Request(undefined);
    }
  }
  bodyMixin(Request, 'Request', (v) => requestOf(v));

  // ---- Response -----------------------------------------------------------------------------

  interface ResponseState extends Owner {
    type: string;
    status: number;
    statusText: string;
    url: string;
    redirected: boolean;
    guard: 'immutable' | 'response';
  }

  // WebIDL unsigned short.
  const unsignedShort = (value: unknown): number => {
    const n = Math.trunc(+(value as number));
    return Number.isFinite(n) ? ((n % 65536) + 65536) % 65536 : 0;
  };

  // Fetch's "initialize a response".
  const initialize = (s: ResponseState, init: unknown, body: [Body, string | null] | null, what: string): void => {
    const o = dictionary(init, what, ['headers', 'status', 'statusText']);
    const status = o.status === undefined ? 200 : unsignedShort(o.status);
    const statusText = o.statusText === undefined ? '' : (o.statusText as string);
    if (status < 200 || status > 599) throw new RangeError(`${what}: the status ${status} is outside the range 200 to 599.`);
    if (!/^[\t\x20-\x7e\x80-\xff]*$/.test(statusText)) throw new TypeError(`${what}: the statusText '${statusText}' is not a valid reason phrase.`);
    s.status = status;
    s.statusText = statusText;
    s.headers = internal.createHeaders(o.headers, 'response');
    if (body !== null) {
      if (NULL_BODY_STATUS.includes(status)) throw new TypeError(`${what}: a response with status ${status} cannot have a body.`);
      s.body = body[0];
      const list = internal.headerList(s.headers);
      if (body[1] !== null && !list.some((e) => e[0] === 'content-type')) list.push(['content-type', body[1]]);
    }
  };

  const newResponseState = (): ResponseState => ({
    type: 'default',
    status: 200,
    statusText: '',
    url: '',
    redirected: false,
    headers: null!,
    body: null,
    guard: 'response',
  });

  let adoptResponse: ResponseState | null = null;
  // Filled by Response's static block: a Response of the given state (fetch's responses).
  let fromState: (s: ResponseState) => { status: number };

  class Response {
    #s: ResponseState;

    constructor(body: unknown = null, init: unknown = undefined) {
      if (adoptResponse !== null) {
        this.#s = adoptResponse;
        adoptResponse = null;
        return;
      }
      const what = "Failed to construct 'Response'";
      const s = newResponseState();
      initialize(s, init, body === null || body === undefined ? null : extract(body, false, what), what);
      this.#s = s;
    }

    static {
      responseOf = (value) => (value !== null && typeof value === 'object' && #s in value ? (value as Response).#s : undefined);
      internal.platformBrands.push((v) => #s in v);
    }

    static #state(value: unknown): ResponseState {
      const s = responseOf(value);
      if (s === undefined) throw new TypeError('Illegal invocation');
      return s;
    }

    static #adopt(s: ResponseState): Response {
      adoptResponse = s;
      return new Response();
    }

    static {
      fromState = (s) => Response.#adopt(s);
    }

    static error(): Response {
      return Response.#adopt({ ...newResponseState(), type: 'error', status: 0, headers: internal.createHeaders(undefined, 'immutable'), guard: 'immutable' });
    }

    static redirect(url: unknown, status: unknown = 302): Response {
      const what = "Failed to execute 'redirect' on 'Response'";
      if (arguments.length < 1) throw new TypeError(`${what}: 1 argument required, but only 0 present.`);
      const href = parseURL(usv(url), what).href;
      const code = unsignedShort(status);
      if (!REDIRECT_STATUS.includes(code)) throw new RangeError(`${what}: ${code} is not a redirect status (301, 302, 303, 307, 308).`);
      return Response.#adopt({ ...newResponseState(), status: code, headers: internal.createHeaders([['location', href]], 'immutable'), guard: 'immutable' });
    }

    static json(data: unknown, init: unknown = undefined): Response {
      const what = "Failed to execute 'json' on 'Response'";
      const text = JSON.stringify(data) as string | undefined;
      if (text === undefined) throw new TypeError(`${what}: the data cannot be serialised to JSON.`);
      const s = newResponseState();
      initialize(s, init, [newBody(internal.utf8Encode(text)), 'application/json'], what);
      return Response.#adopt(s);
    }

    get type(): string {
      return Response.#state(this).type;
    }
    // Without the fragment.
    get url(): string {
      return Response.#state(this).url.replace(/#.*/s, '');
    }
    get redirected(): boolean {
      return Response.#state(this).redirected;
    }
    get status(): number {
      return Response.#state(this).status;
    }
    get ok(): boolean {
      const { status } = Response.#state(this);
      return status >= 200 && status <= 299;
    }
    get statusText(): string {
      return Response.#state(this).statusText;
    }
    get headers(): object {
      return Response.#state(this).headers;
    }

    clone(): Response {
      const s = Response.#state(this);
      if (unusable(s.body)) throw unusableError("Failed to execute 'clone' on 'Response'", s.body!);
      return Response.#adopt({ ...s, headers: internal.createHeaders(internal.headerList(s.headers), s.guard), body: cloneBody(s.body) });
    }
  }
  bodyMixin(Response, 'Response', (v) => responseOf(v));
  for (const name of ['error', 'redirect', 'json']) defineProperty(Response, name, { enumerable: true });

  // ---- fetch --------------------------------------------------------------------------------

  const NO_NETWORK =
    "fetch is not available: the host gave this sandbox no network access (Strata: pass an egress policy, e.g. egress: { allow: ['https://api.example.com/*'] })";

  interface HostResponse {
    status?: unknown;
    statusText?: unknown;
    url?: unknown;
    redirected?: unknown;
    headers?: unknown;
    body?: unknown;
  }

  // The host's answer as a Response (type "basic", immutable headers), or a TypeError.
  const fromHost = (r: HostResponse, s: RequestState): { status: number } => {
    const invalid = (why: string): TypeError => new TypeError(`fetch failed: the host's transport gave an invalid response (${why}).`);
    if (r === null || typeof r !== 'object') throw invalid('not an object');
    const status = r.status;
    if (typeof status !== 'number' || !Number.isInteger(status) || status < 200 || status > 599) throw invalid(`status ${String(status)}`);
    let headers: object;
    try {
      headers = internal.createHeaders(r.headers ?? [], 'immutable');
    } catch (e) {
      throw invalid(`headers: ${(e as Error).message}`);
    }
    const raw = r.body;
    const bytes = raw === undefined || raw === null ? new U8(0) : copyOf(raw);
    if (bytes === undefined) throw invalid('the body is not a Uint8Array');
    return fromState({
      type: 'basic',
      status,
      statusText: typeof r.statusText === 'string' ? r.statusText : '',
      url: typeof r.url === 'string' && r.url !== '' ? r.url : s.url,
      redirected: r.redirected === true,
      headers,
      body: NULL_BODY_STATUS.includes(status) || s.method === 'HEAD' ? null : newBody(bytes),
      guard: 'immutable',
    });
  };

  // A transport's rejection: an AbortError stays one, anything else is the network error (a TypeError).
  const fromHostError = (e: unknown): Error => {
    let name: unknown;
    let message: unknown;
    try {
      name = (e as { name?: unknown } | null)?.name;
      message = (e as { message?: unknown } | null)?.message;
      if (typeof message !== 'string') message = e === undefined || e === null ? 'fetch failed' : String(e);
    } catch {
      message = 'fetch failed';
    }
    return name === 'AbortError' ? new DOMException((message as string) || 'The operation was aborted.', 'AbortError') : new TypeError(message as string);
  };

  function fetch(input: unknown, init: unknown = undefined): Promise<unknown> {
    const count = arguments.length;
    return new Promise((resolve, reject) => {
      if (count < 1) throw new TypeError("Failed to execute 'fetch': 1 argument required, but only 0 present.");
      const request = new Request(input, init);
      const s = requestOf(request)!;
      const signal = s.signal;
      let done = false;
      let reader: Reader | null = null;
      // Set once the transport has the request: an abort then tells the host to stop it.
      let sentId = 0;
      const settle = (fn: (value: unknown) => void, value: unknown): void => {
        if (done) return;
        done = true;
        fn(value);
      };
      // Fetch's "abort the fetch() call": reject with the reason and cancel the request's body.
      const abort = (): void => {
        if (done) return;
        const reason: unknown = apply(signalReason, signal, []);
        settle(reject, reason);
        if (sentId !== 0 && typeof cancelTransport === 'function') {
          try {
            apply(cancelTransport, undefined, [sentId]);
          } catch {
            // The host stops the request at its own deadline anyway.
          }
        }
        try {
          if (reader !== null) apply(streams().cancelReader, reader, [reason]).then(undefined, noop);
          else if (s.body?.stream && !locked(s.body)) (s.body.stream as { cancel(r: unknown): Promise<void> }).cancel(reason).then(undefined, noop);
        } catch {
          // Cancelling is a courtesy to the stream's source.
        }
      };
      if (apply(signalAborted, signal, [])) return abort();
      if (typeof transport !== 'function') return settle(reject, new TypeError(NO_NETWORK));
      internal.addAbortAlgorithm(signal, abort);
      const send = async (): Promise<void> => {
        const body = s.body === null ? undefined : await readBody(s.body, (r) => (reader = r));
        reader = null;
        if (done) return;
        const headers = internal.headerList(s.headers).map(([name, value]): [string, string] => [name, value]);
        if (!headers.some((e) => e[0] === 'accept')) headers.push(['accept', '*/*']);
        const plain: Record<string, unknown> = {
          url: s.url.replace(/#.*/s, ''),
          method: s.method,
          headers,
          redirect: s.redirect === 'follow' ? 'follow' : 'manual',
        };
        if (body !== undefined) plain.body = body;
        let answer: HostResponse;
        try {
          sentId = nextRequestId++;
          answer = (await apply(transport, undefined, [plain, sentId])) as HostResponse;
        } catch (e) {
          throw fromHostError(e);
        }
        if (done) return;
        const response = fromHost(answer, s);
        if (s.redirect === 'error' && REDIRECT_STATUS.includes(response.status)) {
          throw new TypeError(`fetch failed: ${plain.url as string} answered with a redirect (${response.status}) and the request's redirect mode is 'error'.`);
        }
        settle(resolve, response);
      };
      send().then(undefined, (e: unknown) => settle(reject, e));
    });
  }

  internal.webidl(Request, 'Request');
  internal.webidl(Response, 'Response');
  internal.define('Request', Request);
  internal.define('Response', Response);
  internal.define('fetch', fetch);
}
