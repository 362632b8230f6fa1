/**
 * What the worker's bundle reaches of the file that compiled it (`worker-entry.cts`): whether
 * its code cache was refused, a new cache, and `import()`. Undefined outside a worker (the parent,
 * a test importing the modules), where `import()` works as usual.
 *
 * @module
 */

/** See `worker-entry.cts`. */
export interface WorkerEntryHandle {
  readonly codeCacheRejected: boolean | undefined;
  createCodeCache(): Uint8Array;
  importModule(specifier: string): Promise<unknown>;
}

/** The entry's handle, when this code runs in a worker started from `worker-entry.cjs`. */
export function workerEntry(): WorkerEntryHandle | undefined {
  return (globalThis as { [key: symbol]: WorkerEntryHandle | undefined })[Symbol.for('strata.worker.entry')];
}

/** `import(specifier)`: through the worker's entry in a worker (its bundle runs in a `vm.Script`), else directly. */
export function importModule(specifier: string): Promise<unknown> {
  const entry = workerEntry();
  return entry === undefined ? import(specifier) : entry.importModule(specifier);
}
