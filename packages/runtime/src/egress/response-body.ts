/**
 * The last step of a request in the parent, after the response is read and before the guest (or
 * an AgentSandbox's journal) sees it: the policy's `onResponse` hook, bounded by the request's
 * deadline and its result checked again, then the credentials scrubbed from the body.
 *
 * Response headers are cleaned of the policy's credentials; a body cannot be in general (a server
 * may encode, compress or split what it echoes). The scrub catches the common case, a server that
 * echoes the credential as it received it; `onResponse` is for the rest.
 *
 * @module
 */
import { EgressFailed } from '../errors.js';
import type { EgressRequest } from './check-request.js';
import { policyHeadersFor, secretForms, type ResolvedEgressPolicy } from './egress-policy.js';
import type { EgressResponse } from './perform-request.js';
import { withoutCredentials, redact } from './response-headers.js';

/** What {@link EgressResponseHook} is told besides the response. */
export interface EgressResponseContext {
  /** The request as the guest sent it (without the policy's headers). */
  readonly request: EgressRequest;
  /** The final URL, after any redirects: the origin whose credentials were sent. */
  readonly url: URL;
  /** Aborted at the request's `timeoutMs` or when the caller aborts: stop work then. */
  readonly signal: AbortSignal;
}

/**
 * The policy's `onResponse`: sees each response in the parent, headers already cleaned, body as
 * the server sent it, and returns the response the guest gets (the same object, changed, or a new
 * one). Throwing fails the guest's `fetch` with `EgressFailed` (reason `onResponse`).
 */
export type EgressResponseHook = (response: EgressResponse, context: EgressResponseContext) => EgressResponse | Promise<EgressResponse>;

/** Shown in a body in place of each credential; also the value of {@link REDACTED_HEADER}. */
export const REDACTED = '[redacted]';
/** The response header that tells the guest its body was scrubbed (nothing changes silently). */
export const REDACTED_HEADER = 'x-strata-redacted';
/**
 * The shortest credential form scrubbed from a body. A policy header may carry a short value that
 * is no secret (`x-api-version: 2`); replacing every `2` would ruin bodies. Response headers still
 * drop any value containing even a short one.
 */
export const MIN_BODY_SECRET_CHARS = 8;

const MAX_HEADERS = 1_000;
const MAX_URL_CHARS = 64 * 1024;

/** `response` after the policy's hook and body scrub, for `url` (the final URL) of `request`. */
export async function finishResponse(
  policy: ResolvedEgressPolicy,
  request: EgressRequest,
  url: URL,
  response: EgressResponse,
  signal: AbortSignal,
): Promise<EgressResponse> {
  let result = response;
  if (policy.onResponse !== undefined) result = checkHookResult(policy, url, await runHook(policy.onResponse, result, { request, url, signal }, signal));
  return policy.redactCredentialsInBody ? scrubBody(policy, url, result, signal) : result;
}

/** The hook, until it settles or the request's deadline (or the caller) aborts it. */
async function runHook(hook: EgressResponseHook, response: EgressResponse, context: EgressResponseContext, signal: AbortSignal): Promise<unknown> {
  if (signal.aborted) throw signal.reason;
  let onAbort!: () => void;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    // A synchronous throw is a rejection like an asynchronous one.
    return await Promise.race([Promise.resolve().then(() => hook({ ...response, headers: response.headers.map(([n, v]) => [n, v]) }, context)), aborted]);
  } catch (error) {
    if (signal.aborted) throw error;
    // Only the error's kind: its message may quote the body, credential and all.
    const kind = error instanceof Error ? error.name : typeof error;
    throw new EgressFailed(`the egress policy's onResponse hook threw (${kind}; its message is not shown, it may quote the response)`, 'onResponse');
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/** The hook's answer, checked as a handler's is, and its headers cleaned again. */
function checkHookResult(policy: ResolvedEgressPolicy, url: URL, value: unknown): EgressResponse {
  const bad = (what: string) =>
    new EgressFailed(`the egress policy's onResponse hook returned ${what}; return the response it was given, or one like it`, 'onResponse');
  if (value === null || typeof value !== 'object') throw bad('no response object');
  const { status, statusText, url: finalUrl, redirected, headers, body } = value as Partial<Record<keyof EgressResponse, unknown>>;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 200 || status > 599) throw bad('a status that is not an integer from 200 to 599');
  if (typeof statusText !== 'string' || statusText.length > 1024 || /[\r\n\0]/.test(statusText))
    throw bad('a statusText that is not a short string without CR, LF or NUL');
  if (typeof finalUrl !== 'string' || finalUrl.length > MAX_URL_CHARS) throw bad('a url that is not a string');
  if (typeof redirected !== 'boolean') throw bad('a redirected that is not a boolean');
  if (!Array.isArray(headers) || headers.length > MAX_HEADERS) throw bad(`headers that are not an array of at most ${MAX_HEADERS} [name, value] pairs`);
  const pairs = headers.map((pair: unknown): [string, string] => {
    if (!Array.isArray(pair) || pair.length !== 2 || typeof pair[0] !== 'string' || typeof pair[1] !== 'string')
      throw bad('a header that is not a [name, value] pair of strings');
    return [pair[0].toLowerCase(), pair[1]];
  });
  if (!(body instanceof Uint8Array)) throw bad('a body that is not a Uint8Array');
  if (body.byteLength > policy.maxResponseBytes) throw bad(`a body larger than the egress policy's maxResponseBytes (${policy.maxResponseBytes})`);
  return {
    status,
    statusText: redact(policy, statusText),
    url: finalUrl,
    redirected,
    // The promise holds after the hook too: no header the guest gets carries a credential.
    headers: withoutCredentials(policy, url, pairs),
    body: Object.getPrototypeOf(body) === Uint8Array.prototype ? body : new Uint8Array(body),
  };
}

/**
 * `response` with every occurrence of a credential sent to `url`'s origin (as {@link secretForms}
 * writes them, of at least {@link MIN_BODY_SECRET_CHARS} characters) replaced in the body by
 * {@link REDACTED}, byte for byte in UTF-8; `content-length` follows and {@link REDACTED_HEADER}
 * says it happened. A response without such a credential is returned as it is. The work is two
 * native scans per form over at most `maxResponseBytes`, the output written in place, and it
 * lets the event loop run every {@link SCRUB_YIELD_EVERY} occurrences (stopping if `signal`
 * aborted): a body made of nothing but the credential cannot hold the parent.
 */
export async function scrubBody(policy: ResolvedEgressPolicy, url: URL, response: EgressResponse, signal?: AbortSignal): Promise<EgressResponse> {
  const forms = policyHeadersFor(policy, url)
    .flatMap(([, value]) => secretForms(value))
    .filter((form) => form.length >= MIN_BODY_SECRET_CHARS);
  if (forms.length === 0 || response.body.byteLength === 0) return response;
  let body = Buffer.from(response.body.buffer, response.body.byteOffset, response.body.byteLength);
  let changed = false;
  const replacement = Buffer.from(REDACTED, 'utf8');
  // Longest first: a whole value before the token inside it.
  for (const form of [...new Set(forms)].sort((a, b) => b.length - a.length)) {
    const next = await replaceAll(body, Buffer.from(form, 'utf8'), replacement, signal);
    if (next !== body) {
      body = next;
      changed = true;
    }
  }
  if (!changed) return response;
  const headers = response.headers.filter(([name]) => name !== 'content-length' && name !== REDACTED_HEADER);
  headers.push(['content-length', String(body.byteLength)], [REDACTED_HEADER, 'credential']);
  return { ...response, headers, body: new Uint8Array(body.buffer, body.byteOffset, body.byteLength) };
}

/** Occurrences replaced between two turns of the event loop. */
export const SCRUB_YIELD_EVERY = 65_536;

/** `haystack` with each `needle` replaced (the same Buffer when there is none): counted, then copied into one output buffer. */
async function replaceAll(haystack: Buffer, needle: Buffer, replacement: Buffer, signal: AbortSignal | undefined): Promise<Buffer> {
  let count = 0;
  for (let at = haystack.indexOf(needle); at >= 0; at = haystack.indexOf(needle, at + needle.byteLength)) {
    if (++count % SCRUB_YIELD_EVERY === 0) await nextTurn(signal);
  }
  if (count === 0) return haystack;
  const out = Buffer.allocUnsafe(haystack.byteLength + count * (replacement.byteLength - needle.byteLength));
  let from = 0;
  let written = 0;
  let done = 0;
  for (let at = haystack.indexOf(needle); at >= 0; at = haystack.indexOf(needle, from)) {
    written += haystack.copy(out, written, from, at);
    written += replacement.copy(out, written);
    from = at + needle.byteLength;
    if (++done % SCRUB_YIELD_EVERY === 0) await nextTurn(signal);
  }
  haystack.copy(out, written, from);
  return out;
}

/** One turn of the event loop; the request's deadline (or the caller) stops the scrub there. */
async function nextTurn(signal: AbortSignal | undefined): Promise<void> {
  await new Promise<void>((resolve) => setImmediate(resolve));
  if (signal?.aborted === true) throw signal.reason;
}
