/**
 * The throwaway child of the probe's test-fire: installs the same filter the layer would, on
 * every thread, then does what a Node worker does (allocate, run a timer, start and join a
 * worker thread, read a file it already has open, write to stdout) and prints the marker line.
 * If the filter would kill the process (SIGSYS under architecture emulation, for example), the
 * parent sees a signal instead of the marker, and the layer reports itself unavailable.
 *
 * Run as `node test-fire.js`; never imported by the layer.
 *
 * @module
 */
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { loadAddon } from './addon.js';
import { archOf } from './constants.js';
import { ioUringCallsOf, programFor, readFilterTemplates, templateFor } from './filter-templates.js';
import { ioUringMayBeInUse } from './io-uring.js';
import { TEST_FIRE_MARKER } from './test-fire-marker.js';

/** The line the child prints when everything worked. */
export { TEST_FIRE_MARKER };

async function main(): Promise<void> {
  const arch = archOf(process.arch);
  if (!arch) throw new Error(`unsupported architecture ${process.arch}`);
  const addon = loadAddon();
  // The worker's filter exactly: the build's template for this architecture, with this pid.
  const templates = readFilterTemplates();
  const allowIoUringEnter = ioUringMayBeInUse(addon, ioUringCallsOf(templates, arch));
  addon.install(programFor(templateFor(templates, arch, allowIoUringEnter), process.pid));
  const blocks = Array.from({ length: 64 }, (_, i) => Buffer.alloc(1 << 16, i));
  await new Promise((resolve) => setTimeout(resolve, 5));
  const fromThread = await new Promise<unknown>((resolve, reject) => {
    const worker = new Worker('require("node:worker_threads").parentPort.postMessage(6 * 7)', { eval: true });
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  if (fromThread !== 42 || blocks.length !== 64 || addon.mode() !== 2) throw new Error('the filtered child misbehaved');
  process.stdout.write(`${TEST_FIRE_MARKER}\n`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((error: unknown) => {
    process.stderr.write(`strata-seccomp: test-fire failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
