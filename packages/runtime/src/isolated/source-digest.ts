/**
 * The SHA-256 of a bootstrap script, which names its build-time code cache in the worker
 * (src/bootstrap-code-cache.ts). Computed in the parent, once per distinct script: the worker
 * would have to load node:crypto for it.
 *
 * @module
 */
import { createHash } from 'node:crypto';

// A start sends the same few scripts again and again; 568 KB of WEB_POLYFILLS takes about 1 ms.
const digests = new Map<string, string>();
const MAX_DIGESTS = 16;

/** The hex SHA-256 of `source`'s UTF-8 bytes. */
export function sourceDigest(source: string): string {
  let digest = digests.get(source);
  if (digest === undefined) {
    digest = createHash('sha256').update(source, 'utf8').digest('hex');
    digests.set(source, digest);
    if (digests.size > MAX_DIGESTS) digests.delete(digests.keys().next().value!);
  }
  return digest;
}
