import test from 'ava';
import { createSandbox, MODES, type SandboxOptions } from './isolate.js';

/**
 * A conformance case: [what, guest expression, expected value]. The expression may be a
 * promise (it is awaited); its value is compared as JSON, `undefined` as the string
 * '(undefined)'. In the guest, `thrown(fn)` gives the name of the error `fn` throws (or
 * 'none'), `rejected(promise)` the name of the error it rejects with (or 'none').
 */
export type Case = readonly [what: string, expression: string, expected: unknown];

/** Guest code for a ReadableStream of the chunks that `chunks` (guest code: an array) evaluates to. */
export const stream = (chunks: string): string => `new ReadableStream({ start(c) { for (const x of ${chunks}) c.enqueue(x); c.close(); } })`;

export const GUEST_HELPERS = `
globalThis.thrown = (fn) => { try { fn(); return 'none'; } catch (e) { return e?.name ?? typeof e; } };
globalThis.rejected = async (p) => { try { await p; return 'none'; } catch (e) { return e?.name ?? typeof e; } };
0`;

/**
 * Declares one test per suite, each run twice: as is and with code generation disabled before the
 * bootstrap (NO_CODE_GENERATION). `options.before` runs first (e.g. to define a transport).
 */
export function caseSuites(suites: Record<string, readonly Case[]>, options: SandboxOptions = {}): void {
  for (const [mode, { before: extra = '' }] of MODES) {
    for (const [suite, cases] of Object.entries(suites)) {
      test(`${suite}${mode}`, async (t) => {
        const s = await createSandbox({ ...options, before: `${options.before ?? ''}\n${extra}` });
        try {
          s.value(GUEST_HELPERS);
          for (const [what, expression, expected] of cases) {
            // An unexpected exception becomes the value, so the case fails with its name and message.
            const r = await s.run(`(async () => {
              try {
                const v = await (${expression});
                return v === undefined ? '(undefined)' : JSON.parse(JSON.stringify(v));
              } catch (e) {
                return { unexpected: String(e?.name), message: String(e?.message) };
              }
            })()`);
            t.deepEqual(r.settled ? r.value : { settled: false }, expected, `${what}: ${expression}`);
          }
          t.deepEqual(s.logs(), [], 'nothing was reported');
        } finally {
          s.dispose();
        }
      });
    }
  }
}
