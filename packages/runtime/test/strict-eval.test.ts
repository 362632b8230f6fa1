import test from 'ava';
import { inMode, RUNTIME_MODES } from './helpers/runtime.js';

// Every route to code generation from strings the reference lists, plus a few more.
const routes: [string, string][] = [
  ['direct eval', 'eval("1")'],
  ['indirect eval', '(0, eval)("1")'],
  ['globalThis.eval', 'globalThis.eval("1")'],
  ['an alias of eval taken before shadowing it', 'const e = eval; { let eval = 1; e("1") }'],
  ['new Function', 'new Function("return 1")()'],
  ['Function called without new', 'Function("return 1")()'],
  ['(function(){}).constructor', '(function () {}).constructor("return 1")()'],
  ['[].constructor.constructor', '[].constructor.constructor("return 1")()'],
  ['Object.constructor', 'Object.constructor("return 1")()'],
  ['Reflect.construct(Function)', 'Reflect.construct(Function, ["return 1"])()'],
  ['Reflect.apply(Function)', 'Reflect.apply(Function, null, ["return 1"])()'],
  ['a subclass of Function', 'class F extends Function {}; new F("return 1")()'],
  ['AsyncFunction', '(async function () {}).constructor("return 1")'],
  ['GeneratorFunction', '(function* () {}).constructor("yield 1")'],
  ['AsyncGeneratorFunction', '(async function* () {}).constructor("yield 1")'],
  ['Object.getPrototypeOf(async () => {}).constructor', 'Object.getPrototypeOf(async () => {}).constructor("return 1")'],
  ['the descriptor of Function.prototype.constructor', 'Object.getOwnPropertyDescriptor(Function.prototype, "constructor").value("return 1")'],
  ['a bound Function', 'Function.bind(null, "return 1")()()'],
];

for (const [mode, runtimeFor] of RUNTIME_MODES) {
  for (const [label, code] of routes) {
    test(inMode(mode, `strictEval: ${label} throws EvalError`), async (t) => {
      const rt = await runtimeFor(t, { strictEval: true });
      const out = await rt.eval(`try { ${code}; 'ALLOWED' } catch (e) { e.name + ': ' + e.message }`);
      t.is(out, 'EvalError: Code generation from strings disallowed for this context');
    });
  }
}

for (const [mode, runtimeFor] of RUNTIME_MODES) {
  test(inMode(mode, 'strictEval: the guest cannot put the constructors back'), async (t) => {
    const rt = await runtimeFor(t, { strictEval: true });
    const out = await rt.eval(`
      'use strict';
      const r = [];
      try { Function.prototype.constructor = 1 } catch (e) { r.push(e.name) }
      try { Object.defineProperty(Function.prototype, 'constructor', { value: 1 }) } catch (e) { r.push(e.name) }
      try { delete globalThis.eval; r.push(typeof eval) } catch (e) { r.push(e.name) }
      try { globalThis.Function = function () {}; r.push('replaced') } catch (e) { r.push(e.name) }
      r
    `);
    t.deepEqual(out, ['TypeError', 'TypeError', 'TypeError', 'TypeError']);
    t.regex((await rt.eval('try { eval("1") } catch (e) { e.name }')) as string, /EvalError/);
  });

  test(inMode(mode, 'strictEval: functions still work as values (instanceof, call, bind, toString)'), async (t) => {
    const rt = await runtimeFor(t, { strictEval: true });
    t.deepEqual(
      await rt.eval(
        'const f = function (a) { return a + 1 }; [f instanceof Function, f.call(null, 1), f.bind(null, 2)(), typeof f.toString(), (async () => 1) instanceof Function]',
      ),
      [true, 2, 3, 'string', true],
    );
  });

  test(inMode(mode, "strictEval: the host's own scripts, bootstrap and modules still run; a bootstrap cannot generate code either"), async (t) => {
    const rt = await runtimeFor(t, {
      strictEval: true,
      bootstrap: 'globalThis.fromBootstrap = 7; try { new Function("return 7"); globalThis.generated = true } catch (e) { globalThis.generated = e.name }',
    });
    t.is(await rt.eval('fromBootstrap'), 7);
    // Tamed before the first bootstrap: a library loaded as a bootstrap keeps no code generator.
    t.is(await rt.eval('generated'), 'EvalError');
    t.is(await rt.eval('1 + 2'), 3);
    rt.addModule('lib', 'export const v = 5;');
    t.deepEqual(await rt.evalModule('import { v } from "lib"; export const w = v * 2;'), { w: 10 });
  });

  test(inMode(mode, 'without strictEval, eval and Function work'), async (t) => {
    const rt = await runtimeFor(t);
    t.deepEqual(await rt.eval('[eval("1 + 1"), new Function("return 3")()]'), [2, 3]);
  });
}
