/**
 * The egress policy's decisions, pure: is this guest request allowed, may this host's resolved
 * addresses be connected to. `performRequest` asks both before every connection, redirects included.
 *
 * @module
 */
import type { EgressRule } from '../errors.js';
import { addressScope } from './address-scope.js';
import { canonicalHost, matchesPattern } from './allow-pattern.js';
import { assertResolvedPolicy, NEVER_METHODS, policyHeadersFor, type ResolvedEgressPolicy } from './egress-policy.js';
import { forbiddenHeaderReason, isHeaderName, isHeaderValue } from './header-rules.js';

/** A guest's request, as plain data from the isolate. */
export interface EgressRequest {
  url: string;
  method: string;
  /** In order; a name may repeat. */
  headers: readonly (readonly [string, string])[];
  body?: Uint8Array;
  /** As fetch's `redirect`: follow (default; each hop checked first), or return the 3xx as it is. */
  redirect?: 'follow' | 'manual';
}

/** A decision: allowed (with the URL and method as they will be sent), or refused with the rule and a reason to show. */
export type EgressDecision = { readonly ok: true; readonly url: URL; readonly method: string } | EgressRefusal;

/** A refusal: the rule that refused and a reason fit to show the guest (no credentials in it). */
export interface EgressRefusal {
  readonly ok: false;
  readonly rule: EgressRule;
  readonly reason: string;
}

/** One resolved address of a host, as `dns.lookup` gives it. */
export interface ResolvedAddress {
  readonly address: string;
  readonly family: 4 | 6;
}

/**
 * Whether the policy allows `request`: its shape, scheme, URL, method, headers and body size.
 * DNS is the other half ({@link checkAddresses}). Never throws for a bad request: it refuses it.
 */
export function checkRequest(policy: ResolvedEgressPolicy, request: EgressRequest): EgressDecision {
  assertResolvedPolicy(policy);
  const shape = shapeProblem(request);
  if (shape !== undefined) return refuse('request', `the request is malformed: ${shape}`);
  let url: URL;
  try {
    url = new URL(request.url);
  } catch {
    return refuse('url', `${JSON.stringify(cut(request.url))} is not an absolute URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return refuse('scheme', `only http: and https: URLs can be fetched (got ${url.protocol})`);
  if (url.username !== '' || url.password !== '')
    return refuse('userinfo', 'a URL with a user name or password is refused: the host adds credentials through the egress policy');
  url.hash = '';
  url.hostname = canonicalHost(url);
  const where = describeUrl(url);
  // A server that decodes %2F or %5C after routing could see a path outside the allowed prefix.
  if (/%(2f|5c)/i.test(url.pathname))
    return refuse('path', `${where}: an encoded '/' or '\\' in the path is refused (it could leave the allowed path on the server)`);
  if (!policy.allow.some((pattern) => matchesPattern(pattern, url))) {
    return refuse('allow', `${where} is not in the egress allow-list; to permit it, add a matching pattern to the policy's allow`);
  }
  const method = request.method.toUpperCase();
  if (!isHeaderName(request.method)) return refuse('method', `${JSON.stringify(cut(request.method))} is not an HTTP method`);
  if (NEVER_METHODS.includes(method)) return refuse('method', `${method} is never allowed`);
  if (!policy.methods.includes(method)) {
    return refuse('method', `${method} ${where} is refused: the egress policy allows ${policy.methods.join(', ')}; add ${method} to its methods to permit it`);
  }
  const header = headerProblem(policy, url, request.headers);
  if (header !== undefined) return refuse('header', `${where}: ${header}`);
  if (request.body !== undefined) {
    if (method === 'GET' || method === 'HEAD') return refuse('body', `a ${method} request cannot have a body`);
    if (request.body.byteLength > policy.maxRequestBytes) {
      return refuse(
        'body',
        `the request body (${request.body.byteLength} bytes) is larger than the egress policy's maxRequestBytes (${policy.maxRequestBytes})`,
      );
    }
  }
  return { ok: true, url, method };
}

/**
 * Whether the addresses `url`'s host resolved to may be connected to. A literal IP in the URL
 * matched a pattern that names it, so only never-reachable ranges are refused; a name resolving
 * to a loopback or private address is refused unless the policy lists it in `privateNetworkHosts`.
 * Every address must pass: the connection may use any of them.
 */
export function checkAddresses(policy: ResolvedEgressPolicy, url: URL, addresses: readonly ResolvedAddress[]): { readonly ok: true } | EgressRefusal {
  assertResolvedPolicy(policy);
  const host = canonicalHost(url);
  const literal = addressScope(host.replace(/^\[|\]$/g, '')) !== undefined;
  if (addresses.length === 0) return refuse('address', `${host} resolved to no address`);
  for (const { address } of addresses) {
    const scope = addressScope(address);
    if (scope === undefined) return refuse('address', `${host} resolved to ${JSON.stringify(cut(address))}, which is not an IP address`);
    if (scope.scope === 'never') return refuse('address', `${host} resolves to ${address}, a ${scope.range} address, which is never reachable`);
    if (scope.scope === 'private' && !literal && !policy.privateNetworkHosts.includes(host)) {
      return refuse(
        'address',
        `${host} resolves to ${address}, a ${scope.range} address; list ${host} in the egress policy's privateNetworkHosts if it is meant to be on the private network`,
      );
    }
  }
  return { ok: true };
}

/** The URL for messages: origin and path, no query (it may carry the guest's tokens into logs). */
export function describeUrl(url: URL): string {
  return `${url.origin}${url.pathname}`;
}

function headerProblem(policy: ResolvedEgressPolicy, url: URL, headers: readonly (readonly [string, string])[]): string | undefined {
  const credentialNames = new Set(policyHeadersFor(policy, url).map(([name]) => name));
  for (const [name, value] of headers) {
    if (!isHeaderName(name)) return `${JSON.stringify(cut(name))} is not a valid header name`;
    const lower = name.toLowerCase();
    const forbidden = forbiddenHeaderReason(lower);
    if (forbidden !== undefined) return `the guest may not set ${lower}: ${forbidden}`;
    if (credentialNames.has(lower)) return `the guest may not set ${lower}: the host adds it for this origin`;
    if (!isHeaderValue(value)) return `the value of ${lower} has CR, LF, NUL or another character a header cannot carry`;
  }
  return undefined;
}

function shapeProblem(request: EgressRequest): string | undefined {
  if (request === null || typeof request !== 'object') return 'expected an object { url, method, headers, body? }';
  if (typeof request.url !== 'string') return 'url must be a string';
  if (typeof request.method !== 'string') return 'method must be a string';
  if (!Array.isArray(request.headers)) return 'headers must be an array of [name, value] pairs';
  for (const pair of request.headers) {
    if (!Array.isArray(pair) || pair.length !== 2 || typeof pair[0] !== 'string' || typeof pair[1] !== 'string')
      return 'headers must be an array of [name, value] string pairs';
  }
  if (request.body !== undefined && !(request.body instanceof Uint8Array)) return 'body must be a Uint8Array';
  if (request.redirect !== undefined && request.redirect !== 'follow' && request.redirect !== 'manual') return "redirect must be 'follow' or 'manual'";
  return undefined;
}

function refuse(rule: EgressRule, reason: string): EgressRefusal {
  return { ok: false, rule, reason };
}

function cut(text: string): string {
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
