/**
 * Bootstrap scripts a worker reads from an installed file instead of receiving their text with
 * the configuration: today `WEB_POLYFILLS`, whose exact text `@strata/polyfills` ships as
 * `web-polyfills.txt`. On this project's VM the 568 KB through the pipe cost about 16 ms of a
 * start (the parent's encoding, the worker's reassembly and decoding; every fresh page costs
 * here), and blocked the parent's event loop for 5 ms of it; reading the file costs the worker
 * about 2 ms.
 *
 * The parent reads the file once (again when it was replaced), uses it only if its text is the
 * script's, and sends its path with the fingerprint of its bytes (the watchdog addon's FNV-1a 64);
 * the worker reads it, checks the fingerprint and refuses to start on a mismatch (replaced within
 * that start), so it never runs another text under the script's name, nor with the script's code
 * cache (src/worker/bootstrap-files.ts). Without the addon (not Linux) the text is sent as before.
 *
 * @module
 */
import { readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadWatchdog } from '../native/native-paths.js';

/** Where a worker finds a bootstrap script's text: the file, and the fingerprint of its bytes. */
export interface BootstrapFile {
  readonly path: string;
  readonly fingerprint: string;
}

// Below this a script's text costs less through the pipe than a file read.
const WORTH_A_FILE = 64 * 1024;
const requireHere = createRequire(import.meta.url);

interface Known {
  readonly text: string;
  readonly file: BootstrapFile | undefined;
  /** The file as it was read: a start that finds it otherwise reads it again. */
  readonly identity: string;
}
const known = new Map<string, Known>();

/**
 * The file a worker may read `source` from, when it is `WEB_POLYFILLS` as installed (`file`: a
 * path to read instead, for tests). Each call checks the file is the one read before (its inode,
 * size and modification time, one `stat`): a file replaced under a running process, as by an
 * upgrade, is read again, and used only if it still holds the text this process has.
 */
export async function bootstrapFileFor(source: string, file?: string): Promise<BootstrapFile | undefined> {
  if (source.length < WORTH_A_FILE) return undefined;
  let webPolyfills: string;
  let path: string;
  try {
    ({ WEB_POLYFILLS: webPolyfills } = await import('@strata/polyfills'));
    path = file ?? requireHere.resolve('@strata/polyfills/web-polyfills.txt');
  } catch {
    return undefined; // an older @strata/polyfills, without the file: the text is sent
  }
  if (source !== webPolyfills) return undefined;
  const identity = identityOf(path);
  if (identity === undefined) return undefined;
  let entry = known.get(path);
  if (entry === undefined || entry.identity !== identity || entry.text !== webPolyfills) {
    entry = { text: webPolyfills, file: readFile(path, webPolyfills), identity };
    known.set(path, entry);
  }
  return entry.file;
}

function identityOf(path: string): string | undefined {
  try {
    const stat = statSync(path, { bigint: true });
    return `${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeNs}`;
  } catch {
    return undefined;
  }
}

function readFile(path: string, text: string): BootstrapFile | undefined {
  try {
    const bytes = readFileSync(path);
    // a file from another build than the module this process loaded is not used
    if (bytes.toString('utf8') !== text) return undefined;
    return Object.freeze({ path, fingerprint: loadWatchdog().fingerprint(bytes) });
  } catch {
    return undefined; // unreadable, or no addon (not Linux): the text is sent
  }
}
