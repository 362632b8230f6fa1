/**
 * The request a redirect leads to, pure: fetch's method and header rules for 301/302/303/307/308.
 * The result is an ordinary guest request, checked against the whole policy again before it is sent.
 *
 * @module
 */
import { originKey } from './allow-pattern.js';
import type { EgressRequest } from './check-request.js';
import { BODY_HEADERS, CROSS_ORIGIN_DROPPED } from './header-rules.js';

/** The statuses followed as redirects. */
export const REDIRECT_STATUSES: readonly number[] = Object.freeze([301, 302, 303, 307, 308]);

/**
 * The next request after `status` with `location` from `request` (sent to `from`): `undefined`
 * when there is nothing to follow (not a redirect, or no Location: the response is the answer),
 * a string when the Location cannot be followed.
 */
export function planRedirect(request: EgressRequest, from: URL, status: number, location: string | undefined): EgressRequest | string | undefined {
  if (!REDIRECT_STATUSES.includes(status) || location === undefined) return undefined;
  let to: URL;
  try {
    to = new URL(location, from);
  } catch {
    return `the server redirected (${status}) to ${JSON.stringify(location.slice(0, 200))}, which is not a URL`;
  }
  const method = request.method.toUpperCase();
  const becomesGet = (status === 303 && method !== 'GET' && method !== 'HEAD') || ((status === 301 || status === 302) && method === 'POST');
  const crossOrigin = originKey(to) !== originKey(from);
  const headers = request.headers.filter(([name]) => {
    const lower = name.toLowerCase();
    return !(becomesGet && BODY_HEADERS.includes(lower)) && !(crossOrigin && CROSS_ORIGIN_DROPPED.includes(lower));
  });
  const next: EgressRequest = { url: to.href, method: becomesGet ? 'GET' : request.method, headers };
  if (!becomesGet && request.body !== undefined) next.body = request.body;
  if (request.redirect !== undefined) next.redirect = request.redirect;
  return next;
}
