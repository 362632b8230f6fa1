import test from 'ava';
import type { ConsoleEntry } from '../src/index.js';
import { inMode, RUNTIME_MODES } from './helpers/runtime.js';

for (const [mode, runtimeFor] of RUNTIME_MODES) {
  test(inMode(mode, 'onConsole receives every console call with its level and stream'), async (t) => {
    const rt = await runtimeFor(t);
    const entries: ConsoleEntry[] = [];
    const stop = rt.onConsole((entry) => entries.push(entry));
    await rt.eval(
      'console.log("a", 1, { b: [2] }); console.info("i"); console.warn("w"); console.error(new TypeError("e")); console.debug(2n); console.assert(false, "x"); console.count(); console.count()',
    );
    stop();
    await rt.eval('console.log("after unsubscribe")');
    t.deepEqual(
      entries.map((e) => [e.level, e.stream, e.text.split('\n')[0]]),
      [
        ['log', 'stdout', 'a 1 { b: [ 2 ] }'],
        ['info', 'stdout', 'i'],
        ['warn', 'stderr', 'w'],
        ['error', 'stderr', 'TypeError: e'],
        ['debug', 'stdout', '2n'],
        ['assert', 'stderr', 'Assertion failed: x'],
        ['count', 'stdout', 'default: 1'],
        ['count', 'stdout', 'default: 2'],
      ],
    );
  });

  test(inMode(mode, 'captureConsole collects output until stopped'), async (t) => {
    const rt = await runtimeFor(t);
    const capture = rt.captureConsole();
    await rt.eval('console.log("one"); console.error("two")');
    capture.stop();
    await rt.eval('console.log("three")');
    t.is(capture.stdout, 'one\n');
    t.is(capture.stderr, 'two\n');
    t.false(capture.truncated);
  });

  test(inMode(mode, 'console formatting survives cycles, Maps, Sets and hostile objects'), async (t) => {
    const rt = await runtimeFor(t);
    const capture = rt.captureConsole();
    await rt.eval(
      'const o = { n: 1 }; o.self = o; console.log(o, new Map([[1, 2]]), new Set(["s"]), Symbol("q"), function named() {}, { get g() { throw new Error("boom") } })',
    );
    capture.stop();
    t.is(capture.stdout, '{ n: 1, self: [Circular] } Map(1) { 1 => 2 } Set(1) { "s" } Symbol(q) [Function: named] { g: [Getter/Setter] }\n');
  });

  test(inMode(mode, 'a throwing console listener does not break the guest'), async (t) => {
    const rt = await runtimeFor(t);
    rt.onConsole(() => {
      throw new Error('listener bug');
    });
    t.is(await rt.eval('console.log("x"); 5'), 5);
  });
}
