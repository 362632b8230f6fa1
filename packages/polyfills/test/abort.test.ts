import test from 'ava';
import { createSandbox, type Sandbox } from './helpers/isolate.js';

let s: Sandbox;
test.before(async () => {
  s = await createSandbox();
});
test.after.always(() => s.dispose());

test('abort() sets aborted and reason, fires abort once', (t) => {
  t.deepEqual(
    s.value(`(() => {
      const c = new AbortController();
      const log = [];
      c.signal.addEventListener('abort', (e) => log.push([e.type, e.isTrusted, e.target === c.signal, c.signal.aborted]));
      const before = c.signal.aborted;
      c.abort('why');
      c.abort('again');
      return [before, c.signal.aborted, c.signal.reason, log];
    })()`),
    [false, true, 'why', [['abort', true, true, true]]],
  );
});

test('the default reason is an AbortError DOMException; throwIfAborted throws it', (t) => {
  t.deepEqual(
    s.value(`(() => {
      const c = new AbortController();
      c.signal.throwIfAborted();
      c.abort();
      let thrown;
      try { c.signal.throwIfAborted(); } catch (e) { thrown = e; }
      const r = c.signal.reason;
      return [r instanceof DOMException, r.name, r.code, thrown === r, AbortSignal.abort().reason.name, AbortSignal.abort(0).reason];
    })()`),
    [true, 'AbortError', 20, true, 'AbortError', 0],
  );
});

test('AbortSignal cannot be constructed; members are brand-checked', (t) => {
  t.throws(() => s.value(`new AbortSignal()`), { message: /Illegal constructor/ });
  t.throws(() => s.value(`Object.getOwnPropertyDescriptor(AbortSignal.prototype, 'aborted').get.call({})`), { message: /Illegal invocation/ });
  t.deepEqual(s.value(`[Object.prototype.toString.call(new AbortController().signal), new AbortController().signal instanceof EventTarget]`), [
    '[object AbortSignal]',
    true,
  ]);
});

test('AbortSignal.timeout() aborts on virtual time with a TimeoutError', async (t) => {
  const r = await s.run(`(async () => {
    const loop = globalThis.__strataEventLoop;
    const t0 = loop.now();
    const signal = AbortSignal.timeout(5000);
    const before = signal.aborted;
    await new Promise((resolve) => signal.addEventListener('abort', resolve));
    return [before, signal.aborted, signal.reason.name, signal.reason instanceof DOMException, loop.now() - t0];
  })()`);
  t.deepEqual(r.value, [false, true, 'TimeoutError', true, 5000]);
  t.throws(() => s.value(`AbortSignal.timeout(-1)`), { message: /unsigned long long/ });
  t.throws(() => s.value(`AbortSignal.timeout(NaN)`), { message: /unsigned long long/ });
});

test('a sleep that honours a signal, as libraries write it', async (t) => {
  const r = await s.run(`(async () => {
    const sleep = (ms, signal) => new Promise((resolve, reject) => {
      signal.throwIfAborted();
      const id = setTimeout(resolve, ms);
      signal.addEventListener('abort', () => { clearTimeout(id); reject(signal.reason); }, { once: true });
    });
    const c = new AbortController();
    const t0 = __strataEventLoop.now();
    setTimeout(() => c.abort(new Error('cancelled')), 100);
    try { await sleep(10_000, c.signal); return 'slept'; } catch (e) { return [e.message, __strataEventLoop.now() - t0, __strataEventLoop.pending()]; }
  })()`);
  t.deepEqual(r.value, ['cancelled', 100, 0]);
});

test('AbortSignal.any() follows its sources', (t) => {
  t.deepEqual(
    s.value(`(() => {
      const a = new AbortController();
      const b = new AbortController();
      const any = AbortSignal.any([a.signal, b.signal]);
      const nested = AbortSignal.any([any]);
      const log = [];
      a.signal.onabort = () => log.push('a:' + any.aborted);
      any.onabort = () => log.push('any');
      nested.onabort = () => log.push('nested');
      b.abort('b-reason');
      a.abort('a-reason');
      const pre = AbortSignal.any([new AbortController().signal, AbortSignal.abort('already')]);
      return [any.aborted, any.reason, nested.reason, log, pre.aborted, pre.reason, AbortSignal.any([]).aborted];
    })()`),
    // a aborts after any did: any keeps b's reason and fires only once.
    [true, 'b-reason', 'b-reason', ['any', 'nested', 'a:true'], true, 'already', false],
  );
});
