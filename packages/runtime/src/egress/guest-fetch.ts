/**
 * Between the guest's `fetch` and the host: the handler a runtime's `egress` option becomes, the
 * handler that performs requests under a policy, and the one function every runtime answers the
 * guest's `fetch` with. What arrives from the guest (or a compromised worker) is checked here
 * before any handler sees it; what a handler gives back is checked before the guest sees it.
 *
 * @module
 */
import { EgressFailed, EgressRefused, InvalidOption } from '../errors.js';
import { GuestFacingError } from '../host-errors.js';
import type { EgressRequest } from './check-request.js';
import { resolveEgressPolicy, type EgressPolicy } from './egress-policy.js';
import type { EgressResponse, HostLookup } from './perform-request.js';

// The globals through which a runtime offers the bootstrap scripts its `fetch` transport and the
// cancelling of a request: named once, in @strata/polyfills (the bootstrap's contract); removed
// before guest code runs. The constants subpath, not the main entry: the bootstrap's 568 KB of
// source is not loaded for its names.
export { FETCH_CANCEL_GLOBAL, FETCH_GLOBAL } from '@strata/polyfills/constants';

/** What a handler is told besides the request. */
export interface EgressContext {
  /** Aborted when the runtime closes: stop work on the request. */
  readonly signal: AbortSignal;
}

/**
 * Answers the guest's `fetch` in the host: the request as plain data in, the response as plain
 * data out. `egress: policy` makes one with {@link egressHandler}; pass your own to answer from a
 * cache, a recording or a test double. Throw `EgressRefused` or `EgressFailed` to give the guest
 * your message; any other error reaches the guest as "fetch failed" (with its message only when
 * `redactHostErrors` is false).
 */
export type EgressHandler = (request: EgressRequest, context: EgressContext) => Promise<EgressResponse>;

/** How {@link egressHandler} performs requests; none of it is the guest's to choose. */
export interface EgressHandlerOptions {
  /** Host name resolution (as `dns.lookup` with `all: true`); default the system resolver. */
  lookup?: HostLookup;
  /** Certificate authorities trusted for https: instead of Node's bundled ones (a private CA). */
  ca?: string | Buffer | readonly (string | Buffer)[];
}

/**
 * A handler that performs each request of the guest under `policy`, in this process: checked
 * against the allow-list, methods and headers, the host resolved once and its addresses checked,
 * every redirect checked again, the policy's credentials added for their origin only, the body
 * streamed under its cap, all within `timeoutMs`.
 *
 * @throws `InvalidOption` naming the field of `policy` or `options` that is wrong.
 */
export function egressHandler(policy: EgressPolicy, options: EgressHandlerOptions = {}): EgressHandler {
  const resolved = resolveEgressPolicy(policy);
  if (options === null || typeof options !== 'object') throw new InvalidOption('egressHandler(policy, options): options must be an object');
  const unknown = Object.keys(options).filter((key) => key !== 'lookup' && key !== 'ca');
  if (unknown.length > 0) throw new InvalidOption(`egressHandler options: unknown field ${JSON.stringify(unknown[0])}; known fields: lookup, ca`);
  if (options.lookup !== undefined && typeof options.lookup !== 'function') throw new InvalidOption('egressHandler options: lookup must be a function');
  const { lookup, ca } = options;
  // Loaded on the first request: a worker's Runtime imports this module too, and never needs Node's http.
  return async (request, context) => {
    const { performRequest } = await import('./perform-request.js');
    return performRequest(resolved, request, {
      ...(lookup === undefined ? {} : { lookup }),
      ...(ca === undefined ? {} : { ca }),
      ...(context?.signal === undefined ? {} : { signal: context.signal }),
    });
  };
}

/** The `egress` option, checked: a policy becomes its handler, a function is the handler. */
export function resolveEgressOption(egress: unknown): EgressHandler | undefined {
  if (egress === undefined) return undefined;
  if (typeof egress === 'function') return egress as EgressHandler;
  if (egress === null || typeof egress !== 'object' || Array.isArray(egress)) {
    throw new InvalidOption("egress must be a policy such as { allow: ['https://api.example.com/v1/*'] }, or a function answering the guest's requests");
  }
  return egressHandler(egress as EgressPolicy);
}

/** What the guest's fetch rejects with when the host gave no egress. */
export const NO_EGRESS =
  "fetch is not allowed: this sandbox has no egress policy, so it reaches no network. The host allows URLs with the egress option, e.g. egress: { allow: ['https://api.example.com/v1/*'] }";

/**
 * Requests one runtime has in flight at once (as a browser's per-host limit); the guest's others
 * wait their turn. It bounds what a guest can make the host hold: at most this many responses
 * of `maxResponseBytes` each, per runtime.
 */
export const MAX_CONCURRENT_REQUESTS = 6;

/**
 * One runtime's requests: each answered by the egress in force, at most
 * {@link MAX_CONCURRENT_REQUESTS} at once, each cancellable by the guest (its `AbortSignal`) by the
 * id it was sent with, all aborted when the runtime closes.
 */
export class GuestFetches {
  readonly #closing: () => AbortSignal;
  readonly #inFlight = new Map<number, AbortController>();
  #running = 0;
  readonly #waiting: (() => void)[] = [];

  /** @param closing - the signal that aborts when the runtime closes, asked for at the first request. */
  constructor(closing: () => AbortSignal) {
    this.#closing = closing;
  }

  /**
   * Answers one call of the guest's fetch transport. Never lets a handler's raw error through:
   * every failure is a {@link GuestFacingError} (`TypeError`, or `AbortError` for an aborted
   * request) whose message says what was refused or failed and carries no credential.
   */
  async answer(handler: EgressHandler | undefined, sent: unknown, id: unknown, redact: boolean): Promise<EgressResponse> {
    if (handler === undefined) throw new GuestFacingError('TypeError', NO_EGRESS);
    const request = toRequest(sent);
    if (id !== undefined && (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1)) throw malformed('the request id must be a positive integer');
    if (typeof id === 'number' && this.#inFlight.has(id)) throw malformed(`request id ${id} is already in flight`);
    const cancel = new AbortController();
    if (typeof id === 'number') this.#inFlight.set(id, cancel);
    const signal = AbortSignal.any([this.#closing(), cancel.signal]);
    try {
      await this.#turn(signal);
      try {
        let response: unknown;
        try {
          // Cancelled while it waited (or before a microtask let it start): never sent.
          if (signal.aborted) throw new GuestFacingError('AbortError', 'fetch aborted before it was sent');
          response = await handler(request, { signal });
        } catch (error) {
          throw toGuestError(error, redact);
        }
        return toResponse(response, request.url);
      } finally {
        this.#running--;
        this.#waiting.shift()?.();
      }
    } finally {
      if (typeof id === 'number') this.#inFlight.delete(id);
    }
  }

  /** The guest aborted request `id`: stop it (waiting or in flight); its answer is ignored anyway. Unknown ids are ignored. */
  cancel(id: unknown): void {
    if (typeof id === 'number') this.#inFlight.get(id)?.abort(new Error('cancelled by the guest'));
  }

  /** Waits for a free place (ends early, rejected, when `signal` aborts), then takes it. */
  async #turn(signal: AbortSignal): Promise<void> {
    if (this.#running >= MAX_CONCURRENT_REQUESTS) {
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => {
          const at = this.#waiting.indexOf(go);
          if (at >= 0) this.#waiting.splice(at, 1);
          reject(new GuestFacingError('AbortError', 'fetch aborted before it was sent'));
        };
        const go = () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        };
        if (signal.aborted) return onAbort();
        signal.addEventListener('abort', onAbort, { once: true });
        this.#waiting.push(go);
      });
    }
    this.#running++;
  }
}

const MAX_HEADERS = 1_000;
const MAX_URL_CHARS = 64 * 1024;
const MAX_RESPONSE_BODY = 32 * 1024 * 1024;

/** What the guest sent, as a fresh, frozen request; a malformed one is refused before any handler sees it. */
const malformed = (what: string) => new GuestFacingError('TypeError', `fetch: the request is malformed: ${what}`);

function toRequest(sent: unknown): EgressRequest {
  if (sent === null || typeof sent !== 'object') throw malformed('not an object');
  const { url, method, headers, body, redirect } = sent as Record<string, unknown>;
  if (typeof url !== 'string' || url.length > MAX_URL_CHARS) throw malformed(`url must be a string of at most ${MAX_URL_CHARS} characters`);
  if (typeof method !== 'string' || method.length === 0 || method.length > 64) throw malformed('method must be a short string');
  if (!Array.isArray(headers) || headers.length > MAX_HEADERS) throw malformed(`headers must be an array of at most ${MAX_HEADERS} [name, value] pairs`);
  const pairs = headers.map((pair: unknown) => {
    if (!Array.isArray(pair) || pair.length !== 2 || typeof pair[0] !== 'string' || typeof pair[1] !== 'string')
      throw malformed('each header must be a [name, value] pair of strings');
    return Object.freeze([pair[0], pair[1]] as const);
  });
  if (body !== undefined && !(body instanceof Uint8Array)) throw malformed('body must be a Uint8Array when given');
  if (redirect !== undefined && redirect !== 'follow' && redirect !== 'manual') throw malformed("redirect must be 'follow' or 'manual'");
  return Object.freeze({
    url,
    method,
    headers: Object.freeze(pairs),
    ...(body === undefined ? {} : { body: body as Uint8Array }),
    redirect: (redirect ?? 'follow') as 'follow' | 'manual',
  });
}

/** A handler's failure as the guest sees it. */
function toGuestError(error: unknown, redact: boolean): GuestFacingError {
  if (error instanceof EgressRefused) return new GuestFacingError('TypeError', `fetch refused by the host's egress policy: ${error.message}`);
  if (error instanceof EgressFailed) return new GuestFacingError(error.reason === 'aborted' ? 'AbortError' : 'TypeError', `fetch failed: ${error.message}`);
  if (error instanceof GuestFacingError) return error;
  if (redact) return new GuestFacingError('TypeError', "fetch failed: the host's egress handler failed");
  const message = error instanceof Error ? error.message : String(error);
  return new GuestFacingError('TypeError', `fetch failed: ${message.slice(0, 4096)}`);
}

/** A handler's answer, checked and copied: the guest gets exactly these fields. */
function toResponse(response: unknown, requestUrl: string): EgressResponse {
  const bad = (what: string) => new GuestFacingError('TypeError', `fetch failed: the host's egress handler returned ${what}`);
  if (response === null || typeof response !== 'object') throw bad('no response object');
  const {
    status,
    statusText = '',
    url = requestUrl,
    redirected = false,
    headers = [],
    body = new Uint8Array(0),
  } = response as Partial<Record<keyof EgressResponse, unknown>>;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 200 || status > 599) throw bad('a status that is not an integer from 200 to 599');
  if (typeof statusText !== 'string' || statusText.length > 1024 || /[\r\n\0]/.test(statusText))
    throw bad('a statusText that is not a short string without CR, LF or NUL');
  if (typeof url !== 'string' || url.length > MAX_URL_CHARS) throw bad('a url that is not a string');
  if (typeof redirected !== 'boolean') throw bad('a redirected that is not a boolean');
  if (!Array.isArray(headers) || headers.length > MAX_HEADERS) throw bad(`headers that are not an array of at most ${MAX_HEADERS} [name, value] pairs`);
  const pairs: [string, string][] = headers.map((pair: unknown) => {
    if (!Array.isArray(pair) || pair.length !== 2 || typeof pair[0] !== 'string' || typeof pair[1] !== 'string')
      throw bad('a header that is not a [name, value] pair of strings');
    return [pair[0], pair[1]];
  });
  if (!(body instanceof Uint8Array)) throw bad('a body that is not a Uint8Array');
  if (body.byteLength > MAX_RESPONSE_BODY) throw bad(`a body larger than ${MAX_RESPONSE_BODY} bytes`);
  // A plain Uint8Array (not a Buffer or a subclass): the wire and the isolate copy exactly that.
  // One that is already plain goes as it is: a body of up to 32 MiB is not copied for nothing
  // (the worker checks the parent's answer again, and the egress engine's is plain).
  const plain = Object.getPrototypeOf(body) === Uint8Array.prototype ? body : new Uint8Array(body);
  return { status, statusText, url, redirected, headers: pairs, body: plain };
}
