/**
 * The effects of an egress request, in the parent: resolve the host once, check the addresses,
 * connect to exactly those (pinned: no second lookup), send, follow redirects only after checking
 * each against the whole policy, and stream the response body under its cap and the deadline.
 *
 * @module
 */
import { promises as dns } from 'node:dns';
import * as http from 'node:http';
import * as https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { EgressFailed, EgressRefused } from '../errors.js';
import { effectivePort } from './allow-pattern.js';
import { checkAddresses, checkRequest, describeUrl, type EgressRequest, type ResolvedAddress } from './check-request.js';
import { assertResolvedPolicy, policyHeadersFor, type ResolvedEgressPolicy } from './egress-policy.js';
import { planRedirect } from './redirect-plan.js';
import { finishResponse } from './response-body.js';
import { guestResponseHeaders, redact } from './response-headers.js';

/** The response handed back to the guest, as plain data. */
export interface EgressResponse {
  status: number;
  statusText: string;
  /** The final URL, after any redirects. */
  url: string;
  redirected: boolean;
  /** Lower-case names, in the server's order; credentials and what derives from them removed. */
  headers: [string, string][];
  body: Uint8Array;
}

/** Resolves a host name to every address it has (as `dns.lookup` with `all: true`). */
export type HostLookup = (hostname: string) => Promise<readonly ResolvedAddress[]>;

/** How the parent performs requests; none of this is the guest's to choose. */
export interface PerformRequestOptions {
  /** Aborts the request (`EgressFailed`, reason `aborted`). */
  signal?: AbortSignal;
  /** Host name resolution; default `dns.lookup` (the system resolver). Called once per connection. */
  lookup?: HostLookup;
  /** Certificate authorities trusted for https: instead of Node's bundled ones (a private CA, tests). */
  ca?: string | Buffer | readonly (string | Buffer)[];
}

const systemLookup: HostLookup = async (hostname) => (await dns.lookup(hostname, { all: true, order: 'verbatim' })) as ResolvedAddress[];

/**
 * Performs a guest's request under `policy`. Refusals throw `EgressRefused` before anything is
 * sent to the refused URL; failures and limits throw `EgressFailed`. Neither ever contains a
 * credential the policy adds. The response then goes through the policy's `onResponse` and
 * body scrub (`response-body.ts`), within the same `timeoutMs`.
 */
export async function performRequest(policy: ResolvedEgressPolicy, request: EgressRequest, options: PerformRequestOptions = {}): Promise<EgressResponse> {
  assertResolvedPolicy(policy);
  const deadline = startDeadline(policy.timeoutMs, options.signal);
  const progress: Progress = { where: '' };
  try {
    const { response, url } = await followRedirects(policy, request, options, deadline.signal, progress);
    return await finishResponse(policy, request, url, response, deadline.signal);
  } catch (error) {
    throw explainFailure(policy, error, deadline, progress.where);
  } finally {
    deadline.dispose();
  }
}

/** Where the request is, for messages. */
interface Progress {
  where: string;
}

async function followRedirects(
  policy: ResolvedEgressPolicy,
  first: EgressRequest,
  options: PerformRequestOptions,
  signal: AbortSignal,
  progress: Progress,
): Promise<{ response: EgressResponse; url: URL }> {
  let request = first;
  for (let redirects = 0; ; redirects++) {
    const decision = checkRequest(policy, request);
    if (!decision.ok) throw new EgressRefused(redirects === 0 ? decision.reason : `redirect refused: ${decision.reason}`, decision.rule);
    const { url, method } = decision;
    progress.where = `${method} ${describeUrl(url)}`;
    const addresses = await resolveHost(url, options.lookup ?? systemLookup, signal);
    const addressCheck = checkAddresses(policy, url, addresses);
    if (!addressCheck.ok) throw new EgressRefused(redirects === 0 ? addressCheck.reason : `redirect refused: ${addressCheck.reason}`, addressCheck.rule);
    const response = await send(policy, url, method, request, addresses, options, signal);
    const next = request.redirect === 'manual' ? undefined : planRedirect(request, url, response.statusCode ?? 0, response.headers.location);
    if (next === undefined) {
      const body = await readBody(policy, response, method, signal);
      return {
        url,
        response: {
          status: response.statusCode ?? 0,
          statusText: redact(policy, response.statusMessage ?? ''),
          url: url.href,
          redirected: redirects > 0,
          headers: guestResponseHeaders(policy, url, response.rawHeaders),
          body,
        },
      };
    }
    response.destroy();
    if (typeof next === 'string') throw new EgressRefused(`redirect refused: ${redact(policy, next)}`, 'url');
    if (redirects >= policy.maxRedirects) {
      throw new EgressFailed(`more than ${policy.maxRedirects} redirects (the egress policy's maxRedirects)`, 'maxRedirects');
    }
    request = next;
  }
}

/** The addresses to connect to: the literal IP, or the one lookup of the name. */
async function resolveHost(url: URL, lookup: HostLookup, signal: AbortSignal): Promise<readonly ResolvedAddress[]> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const literal = isIP(host);
  if (literal !== 0) return [{ address: host, family: literal as 4 | 6 }];
  let addresses: readonly ResolvedAddress[];
  try {
    addresses = await untilAborted(lookup(host), signal);
  } catch (error) {
    if (signal.aborted) throw error;
    throw new EgressFailed(`could not resolve ${host} (${errorCode(error)})`, 'dns');
  }
  if (!Array.isArray(addresses)) throw new EgressFailed(`could not resolve ${host} (the lookup gave no list of addresses)`, 'dns');
  return Object.freeze(addresses.map(({ address, family }) => Object.freeze({ address, family })));
}

/** Sends one request to the checked addresses and waits for the response head. */
function send(
  policy: ResolvedEgressPolicy,
  url: URL,
  method: string,
  request: EgressRequest,
  addresses: readonly ResolvedAddress[],
  options: PerformRequestOptions,
  signal: AbortSignal,
): Promise<http.IncomingMessage> {
  const transport = url.protocol === 'https:' ? https : http;
  const requestOptions: https.RequestOptions = {
    protocol: url.protocol,
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port: effectivePort(url),
    path: `${url.pathname}${url.search}`,
    method,
    headers: outgoingHeaders(policy, url, request),
    // A fresh connection per request: never a pooled socket to an address checked for another request.
    agent: false,
    lookup: pinnedLookup(addresses),
    signal,
  };
  if (options.ca !== undefined) requestOptions.ca = options.ca as string | Buffer | (string | Buffer)[];
  return new Promise((resolve, reject) => {
    const outgoing = transport.request(requestOptions, resolve);
    outgoing.once('error', reject);
    outgoing.end(request.body === undefined ? undefined : Buffer.from(request.body.buffer, request.body.byteOffset, request.body.byteLength));
  });
}

/** The guest's headers (checked), then the parent's: identity encoding and the policy headers for this origin. */
function outgoingHeaders(policy: ResolvedEgressPolicy, url: URL, request: EgressRequest): http.OutgoingHttpHeaders {
  // A Map: a guest header may be called __proto__.
  const headers = new Map<string, string[]>();
  for (const [name, value] of request.headers) {
    const lower = name.toLowerCase();
    headers.set(lower, [...(headers.get(lower) ?? []), value]);
  }
  headers.set('accept-encoding', ['identity']);
  for (const [name, value] of policyHeadersFor(policy, url)) headers.set(name, [value]);
  return Object.fromEntries([...headers].map(([name, values]) => [name, values.length === 1 ? values[0] : values]));
}

/** A `lookup` that answers with the addresses already checked, whatever it is asked: the connection cannot be re-resolved. */
function pinnedLookup(addresses: readonly ResolvedAddress[]): LookupFunction {
  return ((_hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options.all === true)
      callback(
        null,
        addresses.map(({ address, family }) => ({ address, family })),
      );
    else callback(null, addresses[0]!.address, addresses[0]!.family);
  }) as LookupFunction;
}

/** The response body, streamed and cut off past `maxResponseBytes` (never buffered beyond it). */
async function readBody(policy: ResolvedEgressPolicy, response: http.IncomingMessage, method: string, signal: AbortSignal): Promise<Uint8Array> {
  const cap = policy.maxResponseBytes;
  const declared = Number(response.headers['content-length']);
  if (method !== 'HEAD' && Number.isFinite(declared) && declared > cap) {
    response.destroy();
    throw new EgressFailed(`the response body (Content-Length ${declared}) is larger than the egress policy's maxResponseBytes (${cap})`, 'maxResponseBytes');
  }
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of response as AsyncIterable<Buffer>) {
    total += chunk.byteLength;
    if (total > cap) {
      response.destroy();
      throw new EgressFailed(`the response body is larger than the egress policy's maxResponseBytes (${cap}); it was cut off`, 'maxResponseBytes');
    }
    chunks.push(chunk);
  }
  if (!response.complete) {
    if (signal.aborted) throw signal.reason;
    throw new EgressFailed('the connection closed before the response body was complete', 'network');
  }
  const body = Buffer.concat(chunks, total);
  return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
}

interface Deadline {
  readonly signal: AbortSignal;
  timedOut(): boolean;
  callerAborted(): boolean;
  dispose(): void;
}

/** One abort for the whole request: the policy's `timeoutMs` or the caller's signal, whichever comes first. */
function startDeadline(timeoutMs: number, caller: AbortSignal | undefined): Deadline {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new Error('timeoutMs'));
  }, timeoutMs);
  const onAbort = (): void => controller.abort(new Error('aborted'));
  if (caller?.aborted === true) onAbort();
  else caller?.addEventListener('abort', onAbort, { once: true });
  return {
    signal: controller.signal,
    timedOut: () => timedOut,
    callerAborted: () => !timedOut && controller.signal.aborted,
    dispose: () => {
      clearTimeout(timer);
      caller?.removeEventListener('abort', onAbort);
    },
  };
}

/** Every error as an Egress error whose message (and cause) carry no credential, even one a server sent back. */
function explainFailure(policy: ResolvedEgressPolicy, error: unknown, deadline: Deadline, where: string): Error {
  const prefix = where === '' ? '' : `${where}: `;
  if (error instanceof EgressRefused) return new EgressRefused(redact(policy, error.message), error.rule);
  if (error instanceof EgressFailed)
    return new EgressFailed(redact(policy, error.message.startsWith(prefix) ? error.message : `${prefix}${error.message}`), error.reason);
  if (deadline.timedOut())
    return new EgressFailed(redact(policy, `${prefix}no complete response within the egress policy's timeoutMs (${policy.timeoutMs} ms)`), 'timeoutMs');
  if (deadline.callerAborted()) return new EgressFailed(redact(policy, `${prefix}aborted by the caller`), 'aborted');
  // Node's own error is not kept as the cause: some carry the raw bytes the server sent.
  const detail = redact(policy, `${errorCode(error)}: ${error instanceof Error ? error.message : String(error)}`);
  return new EgressFailed(redact(policy, `${prefix}network error (${detail})`), 'network', { cause: new Error(detail) });
}

function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'ERROR';
}

function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
