/**
 * V8 code caches of scripts every worker compiles in its guest's isolate (Strata's prelude, and
 * `WEB_POLYFILLS`), made at build time by workers with the default flags
 * (scripts/make-worker-cache.mjs) and shipped in the package as `dist/src/worker/bootstrap.cache`.
 * A worker is a fresh process: without them its first isolate parses each script from source
 * (`WEB_POLYFILLS`: about 10 ms under `--jitless`).
 *
 * V8 checks a cache against its version, a hash of its flags and the source's length only, so
 * each cache is kept under the worker flags it was made with (`strictEval` adds a flag) and a key
 * that names its source exactly: `prelude <setup JSON>` for the prelude (a pure function of the
 * setup and this package's code), `sha256 <hex>` for a bootstrap script, whose digest the parent
 * computes and sends with the configuration. The file holds no sources, and a worker reads only
 * what it uses (on this project's VM every fresh page costs: 1.5 MB read took 5 ms). It is the
 * package's, written by a build that ran only Strata's own code; a worker cannot write it.
 *
 * The format: the line `strata-bootstrap-cache 4`, a 32-bit count, a table with the byte lengths
 * of each entry's flags, key and cache, then every entry's flags and key (Latin-1), then every
 * cache, so that a worker reads the table and the keys, then only the caches it will use: its
 * prelude's, and those of the bootstrap scripts it was configured with.
 *
 * @module
 */

import { closeSync, openSync, readSync } from 'node:fs';

const MAGIC = 'strata-bootstrap-cache 4\n';
const ENTRY_HEADER_BYTES = 12;

/** One cache as the build gives it: the worker's flags, the key of its script, and V8's cache of it. */
export interface CodeCacheEntry {
  readonly flags: string;
  readonly key: string;
  readonly cache: Uint8Array;
}

/** The key of the prelude made for `setupJson`. */
export const preludeKey = (setupJson: string): string => `prelude ${setupJson}`;

/** The key of a bootstrap script whose SHA-256 is `hex`. */
export const digestKey = (hex: string): string => `sha256 ${hex}`;

/** The flags a cache is kept under: this process's Node and V8 options, as the worker was started. */
export function workerFlags(): string {
  return process.execArgv.join(' ');
}

/** The file for `entries`. */
export function encodeCodeCaches(entries: readonly CodeCacheEntry[]): Buffer {
  const table = Buffer.alloc(MAGIC.length + 4 + entries.length * ENTRY_HEADER_BYTES);
  table.write(MAGIC, 0, 'latin1');
  table.writeUInt32LE(entries.length, MAGIC.length);
  const names: Buffer[] = [];
  let at = MAGIC.length + 4;
  for (const { flags, key, cache } of entries) {
    const [flagBytes, keyBytes] = [Buffer.from(flags, 'latin1'), Buffer.from(key, 'latin1')];
    table.writeUInt32LE(flagBytes.length, at);
    table.writeUInt32LE(keyBytes.length, at + 4);
    table.writeUInt32LE(cache.length, at + 8);
    at += ENTRY_HEADER_BYTES;
    names.push(flagBytes, keyBytes);
  }
  return Buffer.concat([table, ...names, ...entries.map(({ cache }) => Buffer.from(cache.buffer, cache.byteOffset, cache.length))]);
}

/** Reads `length` bytes at `position` of `fd`, or throws when the file ends first. */
function readAt(fd: number, position: number, length: number): Buffer {
  const bytes = Buffer.allocUnsafe(length);
  let done = 0;
  while (done < length) {
    const n = readSync(fd, bytes, done, length - done, position + done);
    if (n === 0) throw new Error('a bootstrap cache file cut short');
    done += n;
  }
  return bytes;
}

/**
 * The caches of the file at `path` made under `flags` whose key `wanted` accepts, by key. Reads
 * the table and keys, then those caches alone.
 *
 * @throws Error when the file cannot be read or is not one (a wrong header, lengths past its end).
 */
export function readCodeCaches(path: string | URL, wanted: (key: string) => boolean, flags: string = workerFlags()): Map<string, ArrayBuffer> {
  const fd = openSync(path, 'r');
  try {
    const head = readAt(fd, 0, MAGIC.length + 4);
    if (head.toString('latin1', 0, MAGIC.length) !== MAGIC) throw new Error('not a Strata bootstrap cache file');
    const count = head.readUInt32LE(MAGIC.length);
    if (count > 4096) throw new Error('a bootstrap cache file with too many entries');
    const table = readAt(fd, head.length, count * ENTRY_HEADER_BYTES);
    const lengths = Array.from(
      { length: count },
      (_, i) => [0, 4, 8].map((field) => table.readUInt32LE(i * ENTRY_HEADER_BYTES + field)) as [number, number, number],
    );
    const nameBytes = lengths.reduce((sum, [flagBytes, keyBytes]) => sum + flagBytes + keyBytes, 0);
    const names = readAt(fd, head.length + table.length, nameBytes);
    const caches = new Map<string, ArrayBuffer>();
    let name = 0;
    let cache = head.length + table.length + nameBytes;
    for (const [flagBytes, keyBytes, cacheBytes] of lengths) {
      const key = names.toString('latin1', name + flagBytes, name + flagBytes + keyBytes);
      if (names.toString('latin1', name, name + flagBytes) === flags && wanted(key)) {
        const bytes = readAt(fd, cache, cacheBytes);
        // A read this large has an ArrayBuffer of its own (not Node's pool): handed over, not copied
        // (a copy costs fresh pages, and on this project's VM each one costs about 12 µs).
        const own = bytes.byteOffset === 0 && bytes.buffer.byteLength === cacheBytes;
        caches.set(key, own ? (bytes.buffer as ArrayBuffer) : (bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + cacheBytes) as ArrayBuffer));
      }
      name += flagBytes + keyBytes;
      cache += cacheBytes;
    }
    return caches;
  } finally {
    closeSync(fd);
  }
}
