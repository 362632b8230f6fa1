/**
 * Bootstrap scripts a worker reads from an installed file instead of receiving their text with
 * the configuration: today `WEB_POLYFILLS`, whose exact text `@strata/polyfills` ships as
 * `web-polyfills.txt`. On this project's VM the 568 KB through the pipe cost about 16 ms of a
 * start (the parent's encoding, the worker's reassembly and decoding; every fresh page costs
 * here), and blocked the parent's event loop for 5 ms of it; reading the file costs the worker
 * about 2 ms.
 *
 * The parent reads the file once per process and uses it only if its text is the script's, and
 * sends its path with the fingerprint of its bytes (the watchdog addon's FNV-1a 64); the worker
 * reads it, checks the fingerprint and refuses to start on a mismatch (the file changed since:
 * an upgrade under a running process), so it never runs another text under the script's name,
 * nor with the script's code cache (src/worker/worker-host.ts). Without the addon (not Linux)
 * the text is sent as before.
 *
 * @module
 */
import { readFileSync } from 'node:fs';
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
let webPolyfills: { readonly text: string; readonly file: BootstrapFile } | null | undefined;

/** The file a worker may read `source` from, when it is `WEB_POLYFILLS` as installed. */
export async function bootstrapFileFor(source: string): Promise<BootstrapFile | undefined> {
  if (source.length < WORTH_A_FILE) return undefined;
  if (webPolyfills === undefined) webPolyfills = await readWebPolyfills();
  return webPolyfills !== null && source === webPolyfills.text ? webPolyfills.file : undefined;
}

async function readWebPolyfills(): Promise<{ text: string; file: BootstrapFile } | null> {
  try {
    const { WEB_POLYFILLS } = await import('@strata/polyfills');
    const path = requireHere.resolve('@strata/polyfills/web-polyfills.txt');
    const bytes = readFileSync(path);
    // a file from another build than the module this process loaded is not used
    if (bytes.toString('utf8') !== WEB_POLYFILLS) return null;
    return { text: WEB_POLYFILLS, file: Object.freeze({ path, fingerprint: loadWatchdog().fingerprint(bytes) }) };
  } catch {
    return null; // no such file (an older @strata/polyfills), or no addon: the text is sent
  }
}
