import test from 'ava';
import { JsError, RuntimeTimeout, type RuntimeOptions } from '../src/index.js';
import { checkNoLeaks } from './helpers/leaks.js';
import { BOTH_RUNTIMES, type AnyRuntime } from './helpers/runtime.js';

checkNoLeaks(test);

// Import cycles are legal ECMAScript (test262's module-code has them): they link, evaluate in the
// specification's order, and every step of linking is bounded by the timeout — in both runtimes.

for (const [kind, start] of BOTH_RUNTIMES) {
  const withRuntime = async (t: import('ava').ExecutionContext, options: RuntimeOptions = {}): Promise<AnyRuntime> => {
    const rt = await start({ timeout: 20_000, ...options });
    t.teardown(() => rt.close());
    return rt;
  };

  test(`${kind}: two modules that import each other link and run as the specification says`, async (t) => {
    const rt = await withRuntime(t);
    rt.addModule('a', "import { b, early } from 'b'; export const a = 'A'; export function hello() { return 'hi'; } export const fromA = [b, early];");
    // b runs first (a waits for its dependency): a's function declaration is already initialised,
    // a's `const` is still in its temporal dead zone.
    rt.addModule(
      'b',
      "import { a, hello } from 'a'; let early; try { early = a; } catch (e) { early = e.constructor.name; } export const b = 'B' + hello(); export { early };",
    );
    t.deepEqual(await rt.evalModule("import { a, fromA } from 'a'; export const out = [a, ...fromA];"), { out: ['A', 'Bhi', 'ReferenceError'] });
  });

  test(`${kind}: a three-module cycle evaluates its leaves first`, async (t) => {
    const rt = await withRuntime(t);
    rt.addModule('log', 'export const order = [];');
    rt.addModule('x', "import { order } from 'log'; import 'y'; order.push('x');");
    rt.addModule('y', "import { order } from 'log'; import 'z'; order.push('y');");
    rt.addModule('z', "import { order } from 'log'; import 'x'; order.push('z');");
    t.deepEqual(await rt.evalModule("import { order } from 'log'; import 'x'; export const out = [...order];"), { out: ['z', 'y', 'x'] });
    // The same instances serve a later evaluation: nothing runs twice.
    t.deepEqual(await rt.evalModule("import { order } from 'log'; import 'z'; export const out = [...order];"), { out: ['z', 'y', 'x'] });
  });

  test(`${kind}: a module that imports itself sees its own bindings`, async (t) => {
    const rt = await withRuntime(t);
    rt.addModule('self', "import * as me from 'self'; export const name = 'self'; export const seen = me.name;");
    t.deepEqual(await rt.evalModule("import { seen } from 'self'; export const out = seen;"), { out: 'self' });
    t.deepEqual(await rt.evalModule("import * as me from 'strata:main'; export const x = 1; export const y = me.x + 1;"), { x: 1, y: 2 });
  });

  test(`${kind}: a cycle with top-level await finishes once the awaiting module has`, async (t) => {
    const rt = await withRuntime(t);
    rt.addModule('a', "import { b } from 'b'; export const a = 'A' + b;");
    rt.addModule('b', "import 'a'; await Promise.resolve(); export const b = 'B';");
    t.deepEqual(await rt.evalModule("import { a } from 'a'; export const out = a;"), { out: 'AB' });
  });

  test(`${kind}: a module that throws inside a cycle is the guest's error, and the runtime stays usable`, async (t) => {
    const rt = await withRuntime(t);
    // p waits for q, q runs first and reads p's binding in its temporal dead zone.
    rt.addModule('p', "import 'q'; export const p = 1;");
    rt.addModule('q', "import { p } from 'p'; export const q = p + 1;");
    await t.throwsAsync(rt.evalModule("import { p } from 'p'; export const out = p;"), {
      instanceOf: JsError,
      message: /ReferenceError|before initialization/,
    });
    t.is(await rt.eval('1 + 1'), 2);
  });

  test(`${kind}: a module loader that never answers is a RuntimeTimeout, and the runtime stays usable`, async (t) => {
    const rt = await withRuntime(t, { timeout: 300 });
    rt.setModuleLoader((specifier) => (specifier === 'never' ? new Promise<string>(() => undefined) : undefined));
    rt.addModule('ok', "export const ok = 'ok';");
    await t.throwsAsync(rt.evalModule("import 'never'; export const x = 1;"), { instanceOf: RuntimeTimeout, message: /did not link/ });
    t.deepEqual(await rt.evalModule("import { ok } from 'ok'; export const out = ok;"), { out: 'ok' });
  });
}
