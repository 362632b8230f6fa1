/**
 * The type stripper's worker thread (see typescript-input.ts): Node's `module.stripTypeScriptTypes`
 * in strip mode, away from the host's event loop and its WebAssembly instance. A trap in the
 * stripper poisons the instance it ran in, so any failure but an ordinary TypeScript syntax error
 * makes the parent replace this thread.
 *
 * @module
 */
import * as nodeModule from 'node:module';
import { serveBoundedRequests } from './bounded-worker.js';

type Strip = (code: string, options: { mode: 'strip' }) => string;
const strip = (nodeModule as { stripTypeScriptTypes?: Strip }).stripTypeScriptTypes;

// The refusals after which the stripper is still sound.
const RECOVERABLE = new Set(['ERR_INVALID_TYPESCRIPT_SYNTAX', 'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX', 'ERR_NO_TYPESCRIPT']);

// Node warns, once per thread, that the stripper is experimental. That is Strata's concern, not the
// application's (the README says which Node API strips the types): this thread, which runs
// nothing else, drops that one warning; every other warning, and every other thread's, stays.
const emitWarning = process.emitWarning.bind(process);
process.emitWarning = ((warning: string | Error, ...rest: never[]) => {
  if (String(warning).includes('stripTypeScriptTypes')) return;
  emitWarning(warning, ...rest);
}) as typeof process.emitWarning;

serveBoundedRequests<string, string>(
  (code) => {
    if (strip === undefined) throw Object.assign(new Error('this Node.js has no module.stripTypeScriptTypes'), { code: 'ERR_NO_TYPESCRIPT' });
    return strip(code, { mode: 'strip' });
  },
  {
    recoverable: (error) => RECOVERABLE.has(String((error as { code?: unknown } | null)?.code)),
    // Loads the stripper's WebAssembly before the thread reports ready.
    warmUp: () => {
      try {
        strip?.('let warm: number', { mode: 'strip' });
      } catch {
        // A Node.js without TypeScript says so on the first request.
      }
    },
  },
);
