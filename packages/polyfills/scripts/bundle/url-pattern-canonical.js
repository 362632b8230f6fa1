// Imported by urlpattern-polyfill in the URL bundle (scripts/bundle.mjs, `urlPatternToStandard`): the URL Pattern
// standard's "canonicalize a port" and "canonicalize a hostname", which run the URL parser with a
// state override on a dummy URL and turn its failure into a TypeError. urlpattern-polyfill 10.1.0
// checks its own character lists instead, so "8\t0" or "80x" (port 80 to any URL) and
// "example.com/path" (host example.com) were refused where the standard and browsers accept them.
import { basicURLParse, serializeHost } from 'whatwg-url';

// A special scheme, as the polyfill's own dummy URL (https://example.com) has: `\` ends a host.
const DUMMY = 'https://dummy.invalid';

/** The canonical port of `value` (digits up to the first other code point), or TypeError. */
export function strataCanonicalPort(value, protocol) {
  // Tab and newline are dropped before anything (the URL parser's first step); what is left of
  // "\t" is the empty port, as Node's URLPattern has it, not a failure.
  if (value.replace(/[\t\n\r]/g, '') === '') return '';
  const url = basicURLParse(DUMMY);
  // The scheme only decides which port is the default one (and so serialises as ''): none
  // unless the protocol is known.
  url.scheme = protocol ?? '';
  if (basicURLParse(value, { url, stateOverride: 'port' }) === null) throw new TypeError(`Invalid port '${value}'.`);
  return url.port === null ? '' : String(url.port);
}

/** The canonical host of `value` (up to the first `/`, `?`, `#` or `\`), or TypeError. */
export function strataCanonicalHostname(value) {
  if (value === '') return value;
  const url = basicURLParse(DUMMY);
  if (basicURLParse(value, { url, stateOverride: 'hostname' }) === null) throw new TypeError(`Invalid hostname '${value}'`);
  return url.host === null ? '' : serializeHost(url.host);
}

const SPECIAL_SCHEMES = ['ftp', 'file', 'http', 'https', 'ws', 'wss'];

/**
 * The canonical pathname of `value`: the URL parser's path start state (so `?` and `#` are
 * percent-encoded, not the start of a query or fragment), or its opaque path state when
 * `protocol` is given and not special.
 */
export function strataCanonicalPathname(value, protocol) {
  if (value === '') return value;
  if (protocol !== undefined && protocol !== '' && !SPECIAL_SCHEMES.includes(protocol)) return strataCanonicalOpaquePathname(value);
  const leadingSlash = value[0] === '/';
  // The standard's dummy URL has no scheme, so it is not special: `\` is a character of the
  // path, not a separator (as in Node's URLPattern).
  const url = basicURLParse('strata-dummy://dummy.invalid');
  url.path = [];
  basicURLParse(leadingSlash ? value : `/-${value}`, { url, stateOverride: 'path start' });
  const path = `/${url.path.join('/')}`;
  return leadingSlash ? path : path.slice(2);
}

/** The canonical opaque pathname of `value` (a URL such as `data:text/plain,x` has one). */
export function strataCanonicalOpaquePathname(value) {
  if (value === '') return value;
  const url = basicURLParse('strata-dummy:x');
  url.path = '';
  basicURLParse(value, { url, stateOverride: 'opaque path' });
  return url.path;
}

/** The canonical protocol of `value` (an ASCII letter, then letters, digits, `+`, `-`, `.`; lower-cased), or TypeError. */
export function strataCanonicalProtocol(value) {
  if (value === '') return value;
  const scheme = value.replace(/[\t\n\r]/g, '');
  if (!/^[A-Za-z][-+.A-Za-z0-9]*$/.test(scheme)) throw new TypeError(`Invalid protocol '${value}'.`);
  return scheme.toLowerCase();
}

/** The canonical search of `value` (the URL parser's query state: a `?` or `#` in it stays, encoded as a query does). */
export function strataCanonicalSearch(value) {
  if (value === '') return value;
  const url = basicURLParse(DUMMY);
  url.query = '';
  basicURLParse(value, { url, stateOverride: 'query' });
  return url.query ?? '';
}

/** The canonical hash of `value` (the URL parser's fragment state: a `#` in it stays). */
export function strataCanonicalHash(value) {
  if (value === '') return value;
  const url = basicURLParse(DUMMY);
  url.fragment = '';
  basicURLParse(value, { url, stateOverride: 'fragment' });
  return url.fragment ?? '';
}
