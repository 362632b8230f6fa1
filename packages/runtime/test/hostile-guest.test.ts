import test from 'ava';
import { HeapLimitExceeded, IsolatedRuntime, JsError, RuntimeTimeout, StrataError, WorkerCrashed } from '../src/index.js';
import { checkNoLeaks } from './helpers/leaks.js';

checkNoLeaks(test);

/** Runs `code` in a fresh runtime and returns the error it ended in, with the time it took. */
async function crash(code: string, options: Parameters<typeof IsolatedRuntime.start>[0] = {}): Promise<{ error: unknown; ms: number; rt: IsolatedRuntime }> {
  const rt = await IsolatedRuntime.start(options);
  const started = performance.now();
  const error = await rt.eval(code).then(
    () => undefined,
    (e: unknown) => e,
  );
  return { error, ms: performance.now() - started, rt };
}

const contained = (error: unknown) => error instanceof WorkerCrashed || error instanceof RuntimeTimeout;

// The hard deadline (requestTimeout) is timeout + 2 s = 4 s here. The margin after it covers the
// kill, the exit of a process holding GiBs and a loaded machine; the code would otherwise run for
// minutes, or until an OS limit.
const DEADLINE_MS = 4_000;
const MARGIN_MS = 10_000;

test("the seed's abort: new Array(2 ** 32 - 1).fill(0) ends in WorkerCrashed or RuntimeTimeout within the deadline plus 10 s", async (t) => {
  const { error, ms, rt } = await crash('new Array(2 ** 32 - 1).fill(0)', { timeout: 2_000 });
  t.true(contained(error), String(error));
  t.true(ms < DEADLINE_MS + MARGIN_MS, `took ${ms} ms`);
  t.true(rt.closed);
  await using next = await IsolatedRuntime.start();
  t.is(await next.eval('1 + 1'), 2);
});

test("the seed's uninterruptible sort ends within the deadline plus 10 s", async (t) => {
  const { error, ms, rt } = await crash('const a = []; a[2 ** 32 - 2] = 1; a.sort()', { timeout: 2_000 });
  t.true(contained(error), String(error));
  t.true(ms < DEADLINE_MS + MARGIN_MS, `took ${ms} ms`);
  t.true(rt.closed);
  await using next = await IsolatedRuntime.start();
  t.is(await next.eval('"still fine"'), 'still fine');
});

test('WebAssembly memory (jitless: false) is stopped by maxMemory', async (t) => {
  const code = `
    const memory = new WebAssembly.Memory({ initial: 1, maximum: 65536 });
    for (;;) { const before = memory.buffer.byteLength; memory.grow(160); new Uint8Array(memory.buffer, before).fill(1); }
  `;
  const { error, rt } = await crash(code, { jitless: false, maxMemory: 256 * 1024 * 1024, timeout: 20_000 });
  t.true(error instanceof WorkerCrashed, String(error));
  t.is((error as WorkerCrashed).reason, 'maxMemory');
  t.true(rt.closed);
});

test('with the default jitless, there is no WebAssembly at all', async (t) => {
  await using rt = await IsolatedRuntime.start();
  t.is(await rt.eval('typeof WebAssembly'), 'undefined');
});

test('a resizable buffer cannot grow past maxBufferBytes (a catchable RangeError)', async (t) => {
  await using rt = await IsolatedRuntime.start({ maxMemory: 512 * 1024 * 1024 });
  const out = await rt.eval('const b = new ArrayBuffer(1, { maxByteLength: 2 ** 32 }); try { b.resize(2 ** 31); "grew" } catch (e) { e.name }');
  t.is(out, 'RangeError');
  t.is(await rt.eval('1'), 1);
});

test('maxBufferBytes counts live bytes in the worker: garbage does not accumulate toward the cap', async (t) => {
  await using rt = await IsolatedRuntime.start({ maxBufferBytes: 8 * 1024 * 1024, maxHeapSize: 64 * 1024 * 1024 });
  // 400 MiB allocated in total, never more than 1 MiB live.
  t.is(await rt.eval('let n = 0; for (let i = 0; i < 400; i++) n += new Uint8Array(1024 * 1024).length; n'), 400 * 1024 * 1024);
  t.is(await rt.eval('typeof gc'), 'undefined', "the worker's gc() is never the guest's");
});

test('a huge string ends in an error, never a host crash', async (t) => {
  await using rt = await IsolatedRuntime.start({ timeout: 10_000 });
  const error = await rt.eval('let s = "x"; for (;;) s += s').catch((e: unknown) => e);
  t.true(error instanceof StrataError, String(error));
});

test('deep recursion is a RangeError in the guest; the runtime stays usable', async (t) => {
  await using rt = await IsolatedRuntime.start();
  const error = await t.throwsAsync(rt.eval('function f() { return f() + 1 } f()'), { instanceOf: JsError });
  t.is(error?.guestName, 'RangeError');
  t.is(await rt.eval('2'), 2);
});

test('an output flood is capped and the soft timeout stops it', async (t) => {
  await using rt = await IsolatedRuntime.start({ timeout: 500 });
  // Long lines: the cap is reached after ~70 of them however loaded the machine is (console time
  // is the guest's time, charged to its budget).
  const result = await rt.execute('const line = "flood ".repeat(200); for (;;) console.log(line)');
  t.is(result.status, 'error');
  t.is(result.errorType, 'RuntimeTimeout');
  t.true(result.truncated);
  t.true(result.stdout.length <= 64 * 1024 + 20);
});

test('a host-call flood trips maxHostCalls and the worker is killed', async (t) => {
  await using rt = await IsolatedRuntime.start({ maxHostCalls: 100 });
  let calls = 0;
  rt.bindFunction('tool', () => ++calls);
  const error = await rt.eval('for (;;) tool()').catch((e: unknown) => e);
  t.true(error instanceof WorkerCrashed, String(error));
  t.is((error as WorkerCrashed).reason, 'maxHostCalls');
  t.is(calls, 100);
  t.true(rt.closed);
});

test('maxInflightHostCalls: extra calls get an error and never reach the function', async (t) => {
  await using rt = await IsolatedRuntime.start({ maxInflightHostCalls: 3 });
  let reached = 0;
  let openGate: () => void = () => {};
  const gate = new Promise<void>((resolve) => (openGate = resolve));
  rt.bindFunction('slow', async () => {
    reached++;
    await gate; // held in flight until the guest has made all ten calls
    return 'ok';
  });
  // The guest says when it has made all ten calls; a console line is not a host call.
  rt.onConsole((entry) => entry.text === 'all called' && openGate());
  const out = (await rt.eval(
    'const calls = Array.from({ length: 10 }, () => slow()); console.log("all called"); Promise.allSettled(calls).then((r) => r.map((x) => x.status))',
  )) as string[];
  t.is(out.filter((s) => s === 'fulfilled').length, 3);
  t.is(out.filter((s) => s === 'rejected').length, 7);
  t.is(reached, 3);
});

test('a slow host function is not charged to requestTimeout, but maxHostWait bounds it', async (t) => {
  // The tool waits 2.5 times requestTimeout; the guest's own time around the call is milliseconds,
  // so even a loaded machine stays far below requestTimeout unless the wait were charged.
  await using rt = await IsolatedRuntime.start({ timeout: 200, requestTimeout: 1_000, maxHostWait: 10_000 });
  rt.bindFunction('slowTool', () => new Promise((resolve) => setTimeout(() => resolve('done'), 2_500)));
  t.is(await rt.eval('slowTool()'), 'done');
  await using strict = await IsolatedRuntime.start({ maxHostWait: 300 });
  strict.bindFunction('never', () => new Promise(() => {}));
  await t.throwsAsync(strict.eval('never()'), { instanceOf: RuntimeTimeout, message: /maxHostWait/ });
});

test('the heap limit closes the runtime with HeapLimitExceeded', async (t) => {
  await using rt = await IsolatedRuntime.start({ maxHeapSize: 32 * 1024 * 1024, timeout: 20_000 });
  await t.throwsAsync(rt.eval('const a = []; for (;;) a.push(new Array(1e5).fill(1))'), { instanceOf: HeapLimitExceeded });
  t.true(rt.closed);
  await t.throwsAsync(rt.eval('1'), { instanceOf: HeapLimitExceeded });
});

test('escape attempts through bound functions find nothing', async (t) => {
  await using rt = await IsolatedRuntime.start();
  rt.bindFunction('tool', () => 1);
  const out = await rt.eval(`[
    typeof tool.constructor.constructor('return typeof process')(),
    tool.constructor.constructor('return typeof process')(),
    (() => { try { return tool.caller } catch (e) { return e.name } })(),
    typeof require, typeof process, typeof fetch,
  ]`);
  t.deepEqual(out, ['string', 'undefined', 'TypeError', 'undefined', 'undefined', 'undefined']);
});
