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
  if (value === '') return value;
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
