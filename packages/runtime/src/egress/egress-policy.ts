/**
 * The host's egress policy: which URLs a guest's `fetch` may reach, with which methods, which
 * credentials the parent adds, and the limits of each request. Validated once, then frozen.
 *
 * @module
 */
import { InvalidOption } from '../errors.js';
import { addressScope, isIP } from './address-scope.js';
import { canonicalHost, originKey, parseAllowPattern, type AllowPattern } from './allow-pattern.js';
import { forbiddenHeaderReason, isHeaderName, isHeaderValue } from './header-rules.js';
import type { EgressResponseHook } from './response-body.js';

/**
 * What a guest's `fetch` may reach. Nothing is reachable unless a pattern in `allow` matches.
 * Times in milliseconds, sizes in bytes; every limit is always on.
 */
export interface EgressPolicy {
  /**
   * URL patterns, e.g. `'https://api.example.com/v1/*'`: scheme, host and port (the scheme's
   * default when omitted) must match exactly, after URL normalisation; the path matches exactly,
   * or as a prefix when the pattern ends in `*` (`/v1/*` matches `/v1/` and below, not `/v1`).
   * Any query string is allowed under a matching path. Hosts cannot be wildcards.
   */
  allow: readonly string[];
  /**
   * Methods the guest may use (case-insensitive; sent upper case). Default `['GET', 'HEAD']`:
   * a guest writes only where the policy says so. `CONNECT`, `TRACE` and `TRACK` are never allowed.
   */
  methods?: readonly string[];
  /**
   * Headers the parent adds, by origin (`'https://api.example.com'`): credentials the guest never
   * sees. The guest may not set a header of the same name for that origin, and they are never
   * sent to another origin (not after a redirect either). Each origin must be allowed by `allow`.
   *
   * Response headers are cleaned of them (a header whose value contains one is dropped, and so is
   * `Set-Cookie` from that origin); a response body cannot be in general. A server that echoes
   * the credential as it got it is scrubbed by {@link EgressPolicy.redactCredentialsInBody}; one
   * that encodes, compresses or splits it is not: check such bodies in
   * {@link EgressPolicy.onResponse}.
   */
  headers?: Readonly<Record<string, Readonly<Record<string, string>>>>;
  /**
   * Replace, in each response body, every occurrence of a credential of `headers` sent to that
   * origin (the whole value, each word of 8 characters or more such as the token of
   * `Bearer <token>`, and their percent-encoded forms; byte for byte in UTF-8; forms shorter than
   * 8 characters are left) with `[redacted]`, fixing `content-length` and adding the response
   * header `x-strata-redacted: credential`. Default `true`: the guest never needs the credential,
   * and a token long enough to be one does not occur in other data by chance. `false` leaves
   * bodies as the server sent them (binary data that must stay byte-exact, or an `onResponse`
   * that checks them itself).
   */
  redactCredentialsInBody?: boolean;
  /**
   * Runs in the parent on every response, after it is read in full (at most `maxResponseBytes`)
   * and before the guest, or an `AgentSandbox`'s journal, sees it: headers already cleaned, the
   * body as the server sent it. Return the response the guest gets (the one given, changed, or a
   * new one); it is checked as an egress handler's answer is, its headers are cleaned again, and
   * then `redactCredentialsInBody` applies to its body. Bounded by the request's `timeoutMs`
   * (`context.signal` aborts then). A throw, a rejection or a malformed answer fails the guest's
   * `fetch` with `EgressFailed` (reason `onResponse`), whose message names only the error's kind.
   */
  onResponse?: EgressResponseHook;
  /**
   * Host names (as written in `allow`) that may resolve to loopback, private, link-local,
   * unique-local or CGNAT addresses. Any other name that resolves to one is refused (a public
   * name pointed at an internal address, DNS rebinding). A pattern with a literal IP address
   * names that address and needs no entry. Default none.
   */
  privateNetworkHosts?: readonly string[];
  /** Largest response body; a longer one is cut off while streaming (`EgressFailed`). Default 10 MiB, at most 32 MiB (it crosses to the worker in one message). */
  maxResponseBytes?: number;
  /** Largest request body; a longer one is refused before anything is sent. Default 1 MiB, at most 8 MiB (it crosses from the worker in one message). */
  maxRequestBytes?: number;
  /** Wall-clock limit of the whole request: DNS, connect, redirects, headers and body. Default 30 000. */
  timeoutMs?: number;
  /** Redirects followed before the request fails (`EgressFailed`); 0 follows none. Default 5. */
  maxRedirects?: number;
}

/**
 * {@link EgressPolicy} checked, defaults filled in, frozen. The credentials of `headers` are held
 * apart (see {@link policyHeadersFor}), so a resolved policy can be logged or inspected safely.
 */
export interface ResolvedEgressPolicy {
  readonly allow: readonly AllowPattern[];
  readonly methods: readonly string[];
  /** The origins that have policy headers, and those headers' names (lower case); never their values. */
  readonly headerNames: Readonly<Record<string, readonly string[]>>;
  /** Canonical host names, as {@link canonicalHost} writes them. */
  readonly privateNetworkHosts: readonly string[];
  readonly maxResponseBytes: number;
  readonly maxRequestBytes: number;
  readonly timeoutMs: number;
  readonly maxRedirects: number;
  readonly redactCredentialsInBody: boolean;
  readonly onResponse?: EgressResponseHook;
}

const MiB = 1024 * 1024;
const KNOWN_FIELDS = [
  'allow',
  'methods',
  'headers',
  'privateNetworkHosts',
  'maxResponseBytes',
  'maxRequestBytes',
  'timeoutMs',
  'maxRedirects',
  'redactCredentialsInBody',
  'onResponse',
];
/** Methods that are never allowed: a tunnel, or a request echoed back (with any credentials). */
export const NEVER_METHODS: readonly string[] = Object.freeze(['CONNECT', 'TRACE', 'TRACK']);
/** The largest `maxResponseBytes`: a response crosses from the parent to the worker in one frame (64 MiB). */
const MAX_RESPONSE_BYTES = 32 * MiB;
/** The largest `maxRequestBytes`: a request crosses from the worker to the parent in one frame (16 MiB). */
const MAX_REQUEST_BYTES = 8 * MiB;
const DEFAULT_METHODS: readonly string[] = Object.freeze(['GET', 'HEAD']);
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** The policy headers of each resolved policy, by origin key: kept out of the policy object itself. */
const POLICY_HEADERS = new WeakMap<ResolvedEgressPolicy, ReadonlyMap<string, readonly (readonly [string, string])[]>>();

/** Validates an egress policy and fills in defaults; `InvalidOption` names the field that is wrong. */
export function resolveEgressPolicy(policy: unknown): ResolvedEgressPolicy {
  if (policy === null || typeof policy !== 'object' || Array.isArray(policy)) {
    throw invalid("policy must be an object such as { allow: ['https://api.example.com/v1/*'] }");
  }
  const given = policy as Record<string, unknown>;
  const unknownFields = Object.keys(given).filter((key) => !KNOWN_FIELDS.includes(key));
  if (unknownFields.length > 0) throw invalid(`unknown field ${JSON.stringify(unknownFields[0])}; known fields: ${KNOWN_FIELDS.join(', ')}`);
  const allow = resolveAllow(given['allow']);
  const headers = resolveHeaders(given['headers'], allow);
  const resolved: ResolvedEgressPolicy = Object.freeze({
    allow,
    methods: resolveMethods(given['methods']),
    headerNames: Object.freeze(Object.fromEntries([...headers].map(([origin, pairs]) => [origin, Object.freeze(pairs.map(([name]) => name))]))),
    privateNetworkHosts: resolvePrivateHosts(given['privateNetworkHosts'], allow),
    maxResponseBytes: limit('maxResponseBytes', given['maxResponseBytes'], 10 * MiB, 1, MAX_RESPONSE_BYTES),
    maxRequestBytes: limit('maxRequestBytes', given['maxRequestBytes'], MiB, 0, MAX_REQUEST_BYTES),
    timeoutMs: limit('timeoutMs', given['timeoutMs'], 30_000, 1),
    maxRedirects: limit('maxRedirects', given['maxRedirects'], 5, 0, 20),
    redactCredentialsInBody: flag('redactCredentialsInBody', given['redactCredentialsInBody'], true),
    ...resolveHook(given['onResponse']),
  });
  POLICY_HEADERS.set(resolved, headers);
  return resolved;
}

/** Throws unless `policy` came from {@link resolveEgressPolicy}: a policy as written is never trusted unchecked. */
export function assertResolvedPolicy(policy: ResolvedEgressPolicy): void {
  if (!POLICY_HEADERS.has(policy)) throw new InvalidOption('egress policy: pass the result of resolveEgressPolicy(policy), not the policy object itself');
}

/** The headers the parent adds for `url`'s origin (lower-case names); none for an origin without any. */
export function policyHeadersFor(policy: ResolvedEgressPolicy, url: URL): readonly (readonly [string, string])[] {
  assertResolvedPolicy(policy);
  return POLICY_HEADERS.get(policy)?.get(originKey(url)) ?? [];
}

/**
 * Every credential of the policy, of every origin, in the forms it could come back in: whole,
 * each word of 8 characters or more (the token of `Bearer <token>`), and percent-encoded.
 * What must never appear in a message or a response header.
 */
export function policySecrets(policy: ResolvedEgressPolicy): readonly string[] {
  return [...(POLICY_HEADERS.get(policy)?.values() ?? [])].flatMap((pairs) => pairs.flatMap(([, value]) => secretForms(value)));
}

/** `value` as {@link policySecrets} looks for it. */
export function secretForms(value: string): string[] {
  const words = value.split(/\s+/).filter((word) => word.length >= 8);
  const forms = [value, ...words].flatMap((form) => [form, encodeURIComponent(form), encodeURI(form)]);
  return [...new Set(forms)].filter((form) => form !== '').sort((a, b) => b.length - a.length);
}

function resolveAllow(allow: unknown): readonly AllowPattern[] {
  if (!Array.isArray(allow) || allow.length === 0) {
    throw invalid("allow must be a non-empty array of URL patterns such as 'https://api.example.com/v1/*' (nothing is reachable otherwise)");
  }
  return Object.freeze(
    allow.map((source: unknown, i) => {
      if (typeof source !== 'string') throw invalid(`allow[${i}] must be a string (got ${typeof source})`);
      const pattern = parseAllowPattern(source);
      if (typeof pattern === 'string') throw invalid(`allow[${i}] (${JSON.stringify(source)}): ${pattern}`);
      const literal = addressScope(pattern.host.replace(/^\[|\]$/g, ''));
      if (literal?.scope === 'never') throw invalid(`allow[${i}] (${JSON.stringify(source)}): ${literal.range} addresses are never reachable`);
      return pattern;
    }),
  );
}

function resolveMethods(methods: unknown): readonly string[] {
  if (methods === undefined) return DEFAULT_METHODS;
  if (!Array.isArray(methods) || methods.length === 0) throw invalid("methods must be a non-empty array of HTTP methods such as ['GET', 'POST']");
  const resolved = methods.map((method: unknown, i) => {
    if (typeof method !== 'string' || !TOKEN.test(method)) throw invalid(`methods[${i}] must be an HTTP method name (got ${String(method)})`);
    const upper = method.toUpperCase();
    if (NEVER_METHODS.includes(upper))
      throw invalid(`methods[${i}]: ${upper} is never allowed (${NEVER_METHODS.join(', ')} are refused whatever the policy says)`);
    return upper;
  });
  return Object.freeze([...new Set(resolved)]);
}

function resolveHeaders(headers: unknown, allow: readonly AllowPattern[]): Map<string, readonly (readonly [string, string])[]> {
  const byOrigin = new Map<string, readonly (readonly [string, string])[]>();
  if (headers === undefined) return byOrigin;
  if (headers === null || typeof headers !== 'object' || Array.isArray(headers)) {
    throw invalid("headers must be an object by origin, such as { 'https://api.example.com': { authorization: 'Bearer …' } }");
  }
  for (const [origin, fields] of Object.entries(headers)) {
    const where = `headers[${JSON.stringify(origin)}]`;
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      throw invalid(`${where}: the key must be an origin such as 'https://api.example.com'`);
    }
    if (url.pathname !== '/' || url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '' || origin.endsWith('/')) {
      throw invalid(`${where}: the key must be an origin only (scheme, host and optional port), such as 'https://api.example.com'`);
    }
    const key = originKey(url);
    if (!allow.some((p) => `${p.protocol}//${p.host}:${p.port}` === key))
      throw invalid(`${where}: no pattern in allow reaches this origin; add one, or remove these headers`);
    if (byOrigin.has(key)) throw invalid(`${where}: this origin is given twice (keys are compared after normalisation)`);
    if (fields === null || typeof fields !== 'object' || Array.isArray(fields)) throw invalid(`${where} must be an object of header names to values`);
    const pairs: (readonly [string, string])[] = [];
    for (const [name, value] of Object.entries(fields as Record<string, unknown>)) {
      const field = `${where}.${name}`;
      const lower = name.toLowerCase();
      if (!isHeaderName(name)) throw invalid(`${field}: not a valid header name`);
      const forbidden = forbiddenHeaderReason(lower);
      if (forbidden !== undefined) throw invalid(`${field}: ${forbidden}`);
      // Never the value in a message: it is a credential.
      if (typeof value !== 'string' || !isHeaderValue(value)) throw invalid(`${field}: the value must be a string without CR, LF or NUL (value not shown)`);
      if (pairs.some(([n]) => n === lower)) throw invalid(`${field}: given twice (header names are case-insensitive)`);
      pairs.push(Object.freeze([lower, value] as const));
    }
    byOrigin.set(key, Object.freeze(pairs));
  }
  return byOrigin;
}

function resolvePrivateHosts(hosts: unknown, allow: readonly AllowPattern[]): readonly string[] {
  if (hosts === undefined) return Object.freeze([]);
  if (!Array.isArray(hosts)) throw invalid("privateNetworkHosts must be an array of host names such as ['db.internal']");
  return Object.freeze(
    hosts.map((host: unknown, i) => {
      const where = `privateNetworkHosts[${i}]`;
      if (typeof host !== 'string' || host === '') throw invalid(`${where} must be a host name`);
      let url: URL;
      try {
        url = new URL(`http://${host}`);
      } catch {
        throw invalid(`${where} (${JSON.stringify(host)}) is not a host name`);
      }
      if (url.port !== '' || url.pathname !== '/' || url.username !== '' || host.includes('/'))
        throw invalid(`${where} (${JSON.stringify(host)}): give the host name only, without scheme, port or path`);
      const canonical = canonicalHost(url);
      if (isIP(canonical.replace(/^\[|\]$/g, '')) !== 0)
        throw invalid(`${where} (${JSON.stringify(host)}): an IP address in allow is already explicit; list host names here`);
      if (!allow.some((p) => p.host === canonical))
        throw invalid(`${where} (${JSON.stringify(host)}): no pattern in allow names this host; add one, or remove it`);
      return canonical;
    }),
  );
}

function limit(name: string, value: unknown, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `an integer >= ${min}` : `an integer from ${min} to ${max}`;
    throw invalid(`${name} must be ${range} (got ${String(value)}); egress limits cannot be turned off`);
  }
  return value;
}

function flag(name: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw invalid(`${name} must be true or false (got ${String(value)})`);
  return value;
}

function resolveHook(hook: unknown): { onResponse?: EgressResponseHook } {
  if (hook === undefined) return {};
  if (typeof hook !== 'function') throw invalid('onResponse must be a function (response, { request, url, signal }) => response');
  return { onResponse: hook as EgressResponseHook };
}

function invalid(message: string): InvalidOption {
  return new InvalidOption(`egress policy: ${message}`);
}
