import test from 'ava';
import { WEB_POLYFILLS } from '@strata/polyfills';
import { IsolatedRuntime, Runtime, type RuntimeOptions } from '../src/index.js';
import { checkNoLeaks } from './helpers/leaks.js';

checkNoLeaks(test);

// Every route the review knows to a removed SharedArrayBuffer or Atomics, tried from the guest.
// Each route answers 'closed', or 'open: …' with what it reached. WebAssembly exists on hosts with
// the JIT (the in-process Runtime here, an IsolatedRuntime with jitless: false) and is absent
// under --jitless, where its routes are closed by construction.
const ROUTES = String.raw`(async () => {
  const tag = (value) => { try { return Object.prototype.toString.call(value); } catch { return ''; } };
  const isShared = (value) => value !== null && typeof value === 'object' && tag(value) === '[object SharedArrayBuffer]';
  const works = (C) => { try { const made = new C(8); return isShared(made) && made.byteLength === 8; } catch { return false; } };
  const openMark = Symbol('open');
  const reached = (value) => {
    if (value !== null && typeof value === 'object' && openMark in value) return value[openMark];
    if (typeof value === 'function' && works(value)) return 'a working SharedArrayBuffer constructor';
    if (isShared(value)) {
      if (works(value.constructor)) return 'a shared buffer whose constructor works';
      if (works(Object.getPrototypeOf(value).constructor)) return "a shared buffer whose prototype's constructor works";
      return 'a shared buffer';
    }
    if (value !== null && typeof value === 'object' && tag(value) === '[object Atomics]') return 'Atomics';
    return undefined;
  };
  const routes = {};
  const route = async (name, attempt) => {
    try {
      const what = reached(await attempt());
      routes[name] = what === undefined ? 'closed' : 'open: ' + what;
    } catch (error) {
      routes[name] = 'closed';
    }
  };
  const DEFINES_SHARED = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 5, 4, 1, 3, 1, 1, 7, 7, 1, 3, 109, 101, 109, 2, 0]);
  const IMPORTS_SHARED = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 2, 9, 1, 1, 101, 1, 109, 2, 3, 1, 1]);
  const sharedDescriptor = { shared: true, initial: 1, maximum: 1 };

  await route('globalThis.SharedArrayBuffer', () => globalThis.SharedArrayBuffer);
  await route('globalThis.Atomics', () => globalThis.Atomics);
  await route('an Atomics object under any global name', () =>
    Object.getOwnPropertyNames(globalThis).map((name) => { try { return globalThis[name]; } catch { return undefined; } }).find((v) => tag(v) === '[object Atomics]'));
  await route('a function made from a string', () => Function('return typeof SharedArrayBuffer === "function" ? SharedArrayBuffer : globalThis.Atomics')());
  await route('globalThis.constructor', () => globalThis.constructor);
  await route('the prototype of a buffer a host function returned', () => Object.getPrototypeOf(hostBytes().buffer).constructor);
  await route('a SharedArrayBuffer a host function returned', () => hostShared());
  await route('structuredClone of a buffer', () => typeof structuredClone === 'function' ? structuredClone(new ArrayBuffer(8)).constructor : undefined);
  if (typeof WebAssembly === 'object') {
    await route('new WebAssembly.Memory({ shared: true }).buffer', () => new WebAssembly.Memory(sharedDescriptor).buffer);
    await route('WebAssembly.Memory.prototype.constructor', () => new WebAssembly.Memory.prototype.constructor(sharedDescriptor).buffer);
    await route('a subclass of WebAssembly.Memory', () => new (class extends WebAssembly.Memory {})(sharedDescriptor).buffer);
    await route('a descriptor whose shared getter says false first', () => {
      let asked = 0;
      return new WebAssembly.Memory({ initial: 1, maximum: 1, get shared() { return asked++ > 0; } }).buffer;
    });
    await route('Memory.prototype.buffer of a memory from Reflect.construct', () =>
      Reflect.get(WebAssembly.Memory.prototype, 'buffer', Reflect.construct(WebAssembly.Memory, [sharedDescriptor])));
    await route('a non-shared memory grown and made resizable', () => {
      const memory = new WebAssembly.Memory({ initial: 1, maximum: 2 });
      memory.grow(1);
      return typeof memory.toResizableBuffer === 'function' ? memory.toResizableBuffer() : memory.buffer;
    });
    await route('new WebAssembly.Module defining a shared memory', () => new WebAssembly.Instance(new WebAssembly.Module(DEFINES_SHARED)).exports.mem.buffer);
    await route('WebAssembly.Module.prototype.constructor', () =>
      new WebAssembly.Instance(new WebAssembly.Module.prototype.constructor(DEFINES_SHARED)).exports.mem.buffer);
    await route('a module from a DataView at an offset', () => {
      const padded = new Uint8Array(DEFINES_SHARED.length + 3);
      padded.set(DEFINES_SHARED, 3);
      return new WebAssembly.Instance(new WebAssembly.Module(new DataView(padded.buffer, 3, DEFINES_SHARED.length))).exports.mem.buffer;
    });
    await route('WebAssembly.compile', async () => new WebAssembly.Instance(await WebAssembly.compile(DEFINES_SHARED.buffer)).exports.mem.buffer);
    await route('WebAssembly.instantiate(bytes)', async () => (await WebAssembly.instantiate(DEFINES_SHARED)).instance.exports.mem.buffer);
    await route('WebAssembly.instantiateStreaming', async () =>
      typeof Response === 'function' && typeof WebAssembly.instantiateStreaming === 'function'
        ? (await WebAssembly.instantiateStreaming(new Response(DEFINES_SHARED))).instance.exports.mem.buffer
        : undefined);
    await route('a module importing a shared memory compiles', () => {
      new WebAssembly.Module(IMPORTS_SHARED);
      return { [openMark]: 'the module compiled' };
    });
  }
  return routes;
})()`;

function bindHostValues(rt: Runtime | IsolatedRuntime): void {
  rt.bindFunction('hostBytes', () => new Uint8Array(8));
  rt.bindFunction('hostShared', () => new SharedArrayBuffer(8));
}

const closed = (routes: Record<string, string>) => Object.entries(routes).filter(([, outcome]) => outcome !== 'closed');

test('Runtime (this process, with the JIT): no route reaches SharedArrayBuffer or Atomics', async (t) => {
  const rt = await Runtime.start({ bootstrap: WEB_POLYFILLS, timeout: 20_000 });
  t.teardown(() => rt.close());
  bindHostValues(rt);
  t.is(await rt.eval('typeof WebAssembly'), 'object', 'this host has the JIT: the WebAssembly routes are tried');
  const routes = (await rt.eval(ROUTES)) as Record<string, string>;
  t.true(Object.keys(routes).length >= 20);
  t.deepEqual(closed(routes), []);
});

for (const jitless of [true, false]) {
  test(`IsolatedRuntime (jitless: ${jitless}): no route reaches SharedArrayBuffer or Atomics`, async (t) => {
    const options: RuntimeOptions & { jitless: boolean; prewarm: false } = { bootstrap: WEB_POLYFILLS, timeout: 20_000, jitless, prewarm: false };
    const rt = await IsolatedRuntime.start(options);
    t.teardown(() => rt.close());
    bindHostValues(rt);
    t.is(await rt.eval('typeof WebAssembly'), jitless ? 'undefined' : 'object');
    const routes = (await rt.eval(ROUTES)) as Record<string, string>;
    t.deepEqual(closed(routes), []);
  });
}

test('allowGlobals keeps SharedArrayBuffer and shared memories working (the routes above do detect them)', async (t) => {
  const rt = await Runtime.start({ bootstrap: WEB_POLYFILLS, allowGlobals: ['SharedArrayBuffer', 'Atomics'], timeout: 20_000 });
  t.teardown(() => rt.close());
  bindHostValues(rt);
  // isolated-vm never settles V8's asynchronous WebAssembly compiles: with nothing refused, those
  // routes would wait forever. The synchronous routes are enough to show the detection works.
  await rt.eval('delete WebAssembly.compile; delete WebAssembly.instantiate; delete WebAssembly.instantiateStreaming');
  const routes = (await rt.eval(ROUTES)) as Record<string, string>;
  t.regex(routes['globalThis.SharedArrayBuffer']!, /^open/);
  t.regex(routes['globalThis.Atomics']!, /^open/);
  t.regex(routes['new WebAssembly.Memory({ shared: true }).buffer']!, /^open/);
  t.regex(routes['new WebAssembly.Module defining a shared memory']!, /^open/);
  t.regex(routes['a module importing a shared memory compiles']!, /^open/);
});

test('a refused shared memory says why and what to do', async (t) => {
  const rt = await Runtime.start({ timeout: 20_000 });
  t.teardown(() => rt.close());
  const message = await rt.eval('try { new WebAssembly.Memory({ shared: true, initial: 1, maximum: 1 }); "made" } catch (e) { e.name + ": " + e.message }');
  t.regex(message as string, /^TypeError: .*SharedArrayBuffer is removed \(allowGlobals: \['SharedArrayBuffer'\] keeps it\)/);
  // Ordinary WebAssembly still works.
  t.is(await rt.eval('new WebAssembly.Memory({ initial: 1 }).buffer.byteLength'), 65_536);
  t.is(await rt.eval('WebAssembly.Module.exports(new WebAssembly.Module(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]))).length'), 0);
});
