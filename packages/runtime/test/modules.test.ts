import test from 'ava';
import { JsError, ModuleNotFound, ValueNotTransferable } from '../src/index.js';
import { inMode, RUNTIME_MODES } from './helpers/runtime.js';

for (const [mode, runtimeFor] of RUNTIME_MODES) {
  test(inMode(mode, 'evalModule returns the exports of a module importing static modules'), async (t) => {
    const rt = await runtimeFor(t);
    rt.addModule('math', 'export const add = (a, b) => a + b; export default 10;');
    rt.addModule('consts', 'import base from "math"; export const base2 = base * 2;');
    t.deepEqual(await rt.evalModule('import { add } from "math"; import { base2 } from "consts"; export const sum = add(base2, 1);'), { sum: 21 });
  });

  test(inMode(mode, 'a specifier the host did not register is refused'), async (t) => {
    const rt = await runtimeFor(t);
    const error = await t.throwsAsync(rt.evalModule('import fs from "node:fs"; export const x = 1;'), { instanceOf: ModuleNotFound });
    t.is(error?.code, 'ERR_STRATA_MODULE_NOT_FOUND');
    t.regex(error?.message ?? '', /node:fs.*did not register/);
  });

  test(inMode(mode, 'dynamic import() is refused'), async (t) => {
    const rt = await runtimeFor(t);
    rt.addModule('lib', 'export const x = 1;');
    const out = await rt.eval('import("lib").then(() => "loaded", (e) => "refused: " + e.message)');
    t.regex(out as string, /^refused/);
  });

  test(inMode(mode, 'setModuleResolver maps specifiers; refusing returns ModuleNotFound'), async (t) => {
    const rt = await runtimeFor(t);
    rt.addModule('lib/a.js', 'export const a = "A";');
    rt.setModuleResolver((specifier, referrer) => {
      if (specifier.startsWith('./')) return `lib/${specifier.slice(2)}`;
      return specifier === 'blocked' ? undefined : specifier;
    });
    t.deepEqual(await rt.evalModule('import { a } from "./a.js"; export const out = a + "!";'), { out: 'A!' });
    await t.throwsAsync(rt.evalModule('import x from "blocked"; export default x;'), { instanceOf: ModuleNotFound, message: /refused by the module resolver/ });
  });

  test(inMode(mode, 'setModuleLoader supplies sources (sync and async) and may refuse'), async (t) => {
    const rt = await runtimeFor(t);
    const asked: string[] = [];
    rt.setModuleLoader(async (specifier) => {
      asked.push(specifier);
      return specifier === 'virtual:answer' ? 'export default 42;' : undefined;
    });
    t.deepEqual(await rt.evalModule('import answer from "virtual:answer"; export const a = answer;'), { a: 42 });
    await t.throwsAsync(rt.evalModule('import x from "virtual:other"; export default x;'), { instanceOf: ModuleNotFound });
    t.deepEqual(asked, ['virtual:answer', 'virtual:other']);
  });

  test(inMode(mode, 'module exports that are not transferable are refused'), async (t) => {
    const rt = await runtimeFor(t);
    await t.throwsAsync(rt.evalModule('export function helper() {}'), { instanceOf: ValueNotTransferable, message: /helper/ });
  });

  test(inMode(mode, 'a module that throws is a JsError'), async (t) => {
    const rt = await runtimeFor(t);
    await t.throwsAsync(rt.evalModule('throw new TypeError("in module")'), { instanceOf: JsError, message: /in module/ });
    await t.throwsAsync(rt.evalModule('export const = ;'), { instanceOf: JsError, message: /SyntaxError/ });
  });

  test(inMode(mode, 'top-level await in a module is awaited'), async (t) => {
    const rt = await runtimeFor(t);
    rt.bindFunction('later', async () => 5);
    t.deepEqual(await rt.evalModule('export const v = await later();'), { v: 5 });
  });
}
