/**
 * The URL patterns of an egress allow-list, parsed once and matched against parsed URLs.
 * Both sides go through Node's WHATWG `URL`, so case, IDNA, percent-encoded hosts, numeric IPv4
 * forms and `..` segments are normalised the same way before they are compared.
 *
 * @module
 */

/** One allow-list entry, parsed. */
export interface AllowPattern {
  /** The pattern as written, for messages. */
  readonly source: string;
  /** `'http:'` or `'https:'`. */
  readonly protocol: string;
  /** The host as {@link canonicalHost} gives it. */
  readonly host: string;
  /** The port, the scheme's default filled in. */
  readonly port: number;
  /** The path; with `prefix` it is matched as a prefix, otherwise exactly. */
  readonly path: string;
  readonly prefix: boolean;
}

const DEFAULT_PORTS: Readonly<Record<string, number>> = { 'http:': 80, 'https:': 443 };

/** Parses one pattern; a string saying what is wrong with it, or the pattern. */
export function parseAllowPattern(source: string): AllowPattern | string {
  if (source.includes('?') || source.includes('#')) return 'a pattern has no query or fragment: a query string is allowed under any matching path';
  const star = source.indexOf('*');
  if (star !== -1 && star !== source.length - 1) {
    return "'*' is allowed only as the last character, as a path prefix wildcard (hosts cannot be wildcards: list each host)";
  }
  const prefix = star !== -1;
  let url: URL;
  try {
    url = new URL(prefix ? source.slice(0, -1) : source);
  } catch {
    return "it is not an absolute URL such as 'https://api.example.com/v1/*'";
  }
  if (DEFAULT_PORTS[url.protocol] === undefined) return `only http: and https: URLs can be allowed (got ${url.protocol})`;
  if (url.username !== '' || url.password !== '') return 'a pattern cannot contain a user name or password: put credentials in policy.headers';
  const host = canonicalHost(url);
  if (host === '') return 'it has no host';
  return Object.freeze({ source, protocol: url.protocol, host, port: effectivePort(url), path: url.pathname, prefix });
}

/** `url` matches `pattern`: same scheme, host and port, and the path exactly or under the prefix. */
export function matchesPattern(pattern: AllowPattern, url: URL): boolean {
  if (url.protocol !== pattern.protocol || canonicalHost(url) !== pattern.host || effectivePort(url) !== pattern.port) return false;
  return pattern.prefix ? url.pathname.startsWith(pattern.path) : url.pathname === pattern.path;
}

/**
 * The host as compared and connected to: the parser's (lower case, punycode, IPv4 in dotted
 * form, IPv6 in brackets) without a trailing dot, which names the same DNS name.
 */
export function canonicalHost(url: URL): string {
  return url.hostname.endsWith('.') ? url.hostname.slice(0, -1) : url.hostname;
}

/** The port, the scheme's default when the URL has none. */
export function effectivePort(url: URL): number {
  return url.port === '' ? (DEFAULT_PORTS[url.protocol] ?? 0) : Number(url.port);
}

/** The origin as policy.headers keys are compared: scheme, canonical host, port always written. */
export function originKey(url: URL): string {
  return `${url.protocol}//${canonicalHost(url)}:${effectivePort(url)}`;
}
