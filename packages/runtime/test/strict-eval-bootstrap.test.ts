// strictEval covers code that a bootstrap script loaded: code generation is tamed before the
// first bootstrap runs, so a library that captures `Function` or `eval` while loading keeps the
// tamed ones.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import test from 'ava';
import { IsolatedRuntime, Runtime } from '../src/index.js';
import { startRestored } from './helpers/runtime.js';

const require = createRequire(import.meta.url);
const LODASH = readFileSync(require.resolve('lodash/lodash.min.js'), 'utf8');
// lodash looks for the global object as `self` or `global`, else asks Function('return this').
const SELF = 'globalThis.self = globalThis;';

// A library that keeps every code generator it can reach at load time.
const CAPTURING_LIBRARY = `
  const capturedEval = eval;
  const CapturedFunction = Function;
  const ViaPrototype = (function () {}).constructor;
  const AsyncFunction = (async function () {}).constructor;
  const GeneratorFunction = (function* () {}).constructor;
  const AsyncGeneratorFunction = (async function* () {}).constructor;
  const indirectEval = globalThis.eval;
  const descriptorEval = Object.getOwnPropertyDescriptor(globalThis, 'eval').value;
  globalThis.lib = {
    direct: (s) => capturedEval(s),
    indirect: (s) => (0, indirectEval)(s),
    descriptor: (s) => descriptorEval(s),
    make: (s) => CapturedFunction(s)(),
    construct: (s) => new CapturedFunction(s)(),
    reflect: (s) => Reflect.construct(CapturedFunction, [s])(),
    prototype: (s) => ViaPrototype(s)(),
    asyncFunction: (s) => AsyncFunction(s),
    generator: (s) => GeneratorFunction(s),
    asyncGenerator: (s) => AsyncGeneratorFunction(s),
  };
`;
const ROUTES = ['direct', 'indirect', 'descriptor', 'make', 'construct', 'reflect', 'prototype', 'asyncFunction', 'generator', 'asyncGenerator'];

const RUNTIMES = {
  Runtime: (bootstrap: string[], strictEval: boolean) => Runtime.start({ bootstrap, strictEval }),
  // The library loaded inside the snapshot: what it captured there is tamed after restore too.
  'Runtime from a snapshot': (bootstrap: string[], strictEval: boolean) => startRestored({ bootstrap, strictEval }),
  IsolatedRuntime: (bootstrap: string[], strictEval: boolean) => IsolatedRuntime.start({ bootstrap, strictEval }),
};

for (const [kind, start] of Object.entries(RUNTIMES)) {
  test(`${kind}: every code generator a bootstrap captured is refused under strictEval`, async (t) => {
    await using rt = await start([CAPTURING_LIBRARY], true);
    for (const route of ROUTES) {
      const seen = await rt.eval(`try { lib.${route}('return 6 * 7'); 'ran' } catch (e) { e instanceof EvalError ? 'refused' : String(e) }`);
      t.is(seen, 'refused', route);
    }
  });

  test(`${kind}: without strictEval the same library generates code (the control)`, async (t) => {
    await using rt = await start([CAPTURING_LIBRARY], false);
    t.is(await rt.eval("lib.make('return 6 * 7')"), 42);
    t.is(await rt.eval("lib.direct('6 * 7')"), 42);
  });

  test(`${kind}: lodash as a bootstrap cannot compile a template under strictEval`, async (t) => {
    await using strict = await start([SELF, LODASH], true);
    t.is(await strict.eval('_.chunk([1, 2, 3, 4], 2).length'), 2, 'lodash loaded and works');
    const seen = await strict.eval(
      "try { _.template('<%= (function () { return 6 * 7 })() %>')() } catch (e) { e instanceof EvalError ? 'refused' : String(e) }",
    );
    t.is(seen, 'refused');
    await using open = await start([SELF, LODASH], false);
    t.is(await open.eval("_.template('<%= (function () { return 6 * 7 })() %>')()"), '42', 'the control: lodash compiles it without strictEval');
  });
}
