/**
 * The throwaway child of the probe's stack test-fire: does what the worker's apply would on
 * ABI ≥ 8, then checks it worked. A thread started before the stack (a worker thread) and
 * libuv's pool must be denied a file as much as the main thread (thread sync), and the process
 * must go on running. Prints the marker line when all holds; otherwise one line on stderr and
 * exit status 1, which the parent turns into `tsync-stack` under `missing`.
 *
 * Run as `node test-fire.js`; never imported by the layer but for the marker.
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { errnoOf } from '@strata/runtime/layers';
import { loadAddon } from './addon.js';
import { TEST_FIRE_MARKER } from './test-fire-marker.js';

/** The line the child prints when everything worked. */
export { TEST_FIRE_MARKER };

const THREAD = `
  const { parentPort } = require('node:worker_threads');
  const { readFileSync } = require('node:fs');
  parentPort.on('message', (path) => {
    try { readFileSync(path); parentPort.postMessage('none'); } catch (error) { parentPort.postMessage(error.code); }
  });`;

async function main(): Promise<void> {
  const addon = loadAddon();
  const file = fileURLToPath(new URL('../../package.json', import.meta.url));
  if (errnoOf(() => readFileSync(file)) !== 'none') throw new Error(`${file} is unreadable before the stack`);
  const thread = new Worker(THREAD, { eval: true });
  await once(thread, 'online');
  addon.stackDenyAll();
  const mainThread = errnoOf(() => readFileSync(file));
  thread.postMessage(file);
  const [earlierThread] = (await once(thread, 'message')) as [string];
  const pool = await readFile(file).then(
    () => 'none',
    (error: NodeJS.ErrnoException) => error.code ?? error.message,
  );
  await thread.terminate();
  if (mainThread !== 'EACCES' || earlierThread !== 'EACCES' || pool !== 'EACCES') {
    throw new Error(
      `after the stack, reading a file gave ${mainThread} on the main thread, ${earlierThread} on a thread started before it, ${pool} on libuv's pool; expected EACCES on all`,
    );
  }
  process.stdout.write(`${TEST_FIRE_MARKER}\n`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    // The addon's errors already say `strata-landlock: <step>: <reason>`.
    process.stderr.write(`${message.startsWith('strata-landlock: ') ? message : `strata-landlock: stack test-fire: ${message}`}\n`);
    process.exit(1);
  });
}
