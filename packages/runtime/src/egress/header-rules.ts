/**
 * Which request headers the guest (and the policy) may set. The parent owns the connection:
 * framing, hop-by-hop and proxy headers are its own, so a guest can neither smuggle a second
 * request nor steer the connection.
 *
 * @module
 */

/** Header names only the parent sets, with the reason given when a guest (or the policy) tries. */
const PARENT_HEADERS: ReadonlyMap<string, string> = new Map(
  Object.entries({
    host: 'the parent sets Host from the URL',
    'content-length': 'the parent sets Content-Length from the body',
    'transfer-encoding': 'the parent frames the body',
    connection: 'a hop-by-hop header: the parent manages the connection',
    'keep-alive': 'a hop-by-hop header: the parent manages the connection',
    'proxy-connection': 'a hop-by-hop header: the parent manages the connection',
    upgrade: 'a hop-by-hop header: protocol upgrades are not supported',
    te: 'a hop-by-hop header: the parent manages the connection',
    trailer: 'a hop-by-hop header: the parent frames the body',
    expect: 'the parent sends the body at once',
    'http2-settings': 'a hop-by-hop header: the parent manages the connection',
    'accept-encoding': 'the parent asks for identity encoding, so size limits count the bytes the guest gets',
  }),
);

/** Why `name` (lower case) may not be set by the guest or the policy; `undefined` when it may. */
export function forbiddenHeaderReason(name: string): string | undefined {
  const reason = PARENT_HEADERS.get(name);
  if (reason !== undefined) return reason;
  if (name.startsWith('proxy-')) return 'proxy headers are not sent: requests go directly to the allowed origin';
  return undefined;
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// Tab and visible ASCII and obs-text: no CR, LF, NUL or other control characters.
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** `name` is an HTTP token. */
export function isHeaderName(name: string): boolean {
  return TOKEN.test(name);
}

/** `value` can be sent as one header line: no CR, LF, NUL or other controls, Latin-1 only. */
export function isHeaderValue(value: string): boolean {
  return FIELD_VALUE.test(value);
}

/** Guest headers dropped when a redirect leaves the origin (as fetch does with Authorization). */
export const CROSS_ORIGIN_DROPPED: readonly string[] = Object.freeze(['authorization', 'cookie']);

/** Headers that describe a body, dropped when a redirect turns the request into a GET. */
export const BODY_HEADERS: readonly string[] = Object.freeze(['content-type', 'content-encoding', 'content-language', 'content-location']);
