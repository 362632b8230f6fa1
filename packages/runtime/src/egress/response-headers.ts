/**
 * The response headers the guest sees, pure. Where the parent added credentials, what the server
 * derives from them stays with the parent: `Set-Cookie` is dropped there, and any header whose
 * value contains a credential the parent sent (a server echoing it back) is dropped everywhere.
 *
 * @module
 */
import { policyHeadersFor, policySecrets, secretForms, type ResolvedEgressPolicy } from './egress-policy.js';

const SESSION_HEADERS: readonly string[] = Object.freeze(['set-cookie', 'set-cookie2']);

/** `raw` (Node's `rawHeaders`: name, value, name, value…) as lower-case pairs, filtered for the guest. */
export function guestResponseHeaders(policy: ResolvedEgressPolicy, url: URL, raw: readonly string[]): [string, string][] {
  const pairs: [string, string][] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) pairs.push([raw[i]!.toLowerCase(), raw[i + 1]!]);
  return withoutCredentials(policy, url, pairs);
}

/** `pairs` (lower-case names) without what must stay with the parent for `url`'s origin: the same rules for the server's headers and for an `onResponse` hook's. */
export function withoutCredentials(policy: ResolvedEgressPolicy, url: URL, pairs: readonly (readonly [string, string])[]): [string, string][] {
  const credentials = policyHeadersFor(policy, url).flatMap(([, value]) => secretForms(value));
  const headers: [string, string][] = [];
  for (const [name, value] of pairs) {
    if (credentials.length > 0 && SESSION_HEADERS.includes(name)) continue;
    if (credentials.some((secret) => value.includes(secret))) continue;
    headers.push([name, value]);
  }
  return headers;
}

/** `text` with every credential of the policy replaced, for text from the server or the network. */
export function redact(policy: ResolvedEgressPolicy, text: string): string {
  let result = text;
  for (const secret of policySecrets(policy)) result = result.split(secret).join('[redacted]');
  return result;
}
