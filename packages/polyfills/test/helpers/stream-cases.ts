import type { ExecutionContext } from 'ava';
import { createSandbox, type Sandbox, type SandboxOptions } from './isolate.js';

/**
 * A conformance case of the streams tests (streams, encoding-streams, compression), run in the
 * guest: [what, body of an async function, expected value]. The body returns what it observed;
 * it runs in a sandbox with the helpers of {@link STREAM_HELPERS}.
 */
export type StreamCase = readonly [what: string, body: string, expected: unknown];

/**
 * Guest helpers for asynchronous cases. They keep their own `Promise` and `setTimeout`, so a
 * case may replace the globals. `nameOf(e)` is an error's name, or the value itself;
 * `thrown(fn)` / `rejected(promise)` give that for what `fn` throws or `promise` rejects with
 * ('none' / 'fulfilled' otherwise); `state(promise)` is 'pending', 'fulfilled' or 'rejected' after
 * every microtask and due task has run; `tick()` waits for those; `rd(result)` is a read result
 * as [value, done] (undefined as 'undefined'); `collect(stream)` reads a stream to its end with
 * `for await`; `arr(view)` is an ArrayBufferView's (or ArrayBuffer's) bytes as an array;
 * `concatBytes(views)` one Uint8Array of them all.
 */
export const STREAM_HELPERS = `(() => {
  const P = Promise;
  const wait = setTimeout;
  const g = globalThis;
  g.nameOf = (e) => (e !== null && typeof e === 'object' && 'name' in e ? String(e.name) : e === undefined ? 'undefined' : e);
  g.thrown = (fn) => { try { fn(); return 'none'; } catch (e) { return nameOf(e); } };
  g.rejected = async (p) => { try { await p; return 'fulfilled'; } catch (e) { return nameOf(e); } };
  g.tick = () => new P((resolve) => wait(resolve, 0));
  g.state = async (p) => {
    let s = 'pending';
    P.resolve(p).then(() => { s = 'fulfilled'; }, () => { s = 'rejected'; });
    await tick();
    return s;
  };
  g.rd = (r) => [r.value === undefined ? 'undefined' : r.value, r.done];
  g.collect = async (rs) => { const out = []; for await (const c of rs) out.push(c); return out; };
  g.arr = (v) => Array.from(ArrayBuffer.isView(v) ? new Uint8Array(v.buffer, v.byteOffset, v.byteLength) : new Uint8Array(v));
  g.concatBytes = (chunks) => {
    const all = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
    let o = 0;
    for (const c of chunks) { all.set(new Uint8Array(c.buffer, c.byteOffset, c.byteLength), o); o += c.byteLength; }
    return all;
  };
})(); 0`;

export async function streamSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const s = await createSandbox(options);
  s.value(STREAM_HELPERS);
  return s;
}

/** Runs the cases one after the other in `s`, each as `(async () => { body })()`. */
export async function checkCases(t: ExecutionContext, s: Sandbox, cases: readonly StreamCase[]): Promise<void> {
  for (const [what, body, expected] of cases) {
    const r = await s.run(`(async () => { ${body} })()`);
    t.true(r.settled, `${what}: still pending`);
    t.deepEqual(r.ok ? r.value : { rejected: r.error }, expected, what);
  }
}
