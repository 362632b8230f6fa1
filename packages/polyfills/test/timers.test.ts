import test from 'ava';
import { MAX_INTERVAL_RUNS, MAX_PENDING_TIMERS } from '../src/index.js';
import { withSandbox } from './helpers/isolate.js';

test('timers fire in order of delay, then of scheduling', async (t) => {
  await withSandbox({}, async (s) => {
    const r = await s.run<string[]>(`new Promise((resolve) => {
      const log = [];
      setTimeout(() => log.push('c30'), 30);
      setTimeout(() => log.push('a10'), 10);
      setTimeout(() => log.push('b10'), 10);
      setTimeout(() => log.push('z0'), 0);
      setTimeout(() => log.push('y'));
      setTimeout(() => log.push('x-1'), -1);
      setTimeout(() => resolve(log), 40);
    })`);
    t.true(r.ok);
    t.deepEqual(r.value, ['z0', 'y', 'x-1', 'a10', 'b10', 'c30']);
    t.is(r.now, 40);
  });
});

test('nothing fires until the host drives the loop, and microtasks run between timers', async (t) => {
  await withSandbox({}, async (s) => {
    s.value(`globalThis.log = []; setTimeout(() => { log.push('t1'); Promise.resolve().then(() => log.push('m1')); }, 5);
      setTimeout(() => log.push('t2'), 5); queueMicrotask(() => log.push('m0')); 0`);
    t.deepEqual(s.value('log'), ['m0']);
    t.is(s.value('__strataEventLoop.pending()'), 2);
    const r = await s.run(`new Promise((resolve) => setTimeout(() => resolve(log), 6))`);
    t.deepEqual(r.value, ['m0', 't1', 'm1', 't2']);
    t.is(s.value('__strataEventLoop.pending()'), 0);
    t.false(s.value('__strataEventLoop.runNext()'));
  });
});

test('virtual time advances exactly by the delays; Date is not affected', async (t) => {
  await withSandbox({}, async (s) => {
    const r = await s.run<number[]>(`(async () => {
      const loop = globalThis.__strataEventLoop;
      const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
      const d0 = Date.now();
      const seen = [loop.now()];
      await sleep(1000); seen.push(loop.now());
      await sleep(250); seen.push(loop.now());
      await sleep(60 * 60 * 1000); seen.push(loop.now());
      seen.push(Date.now() - d0 < 60_000 ? 1 : 0);
      return seen;
    })()`);
    t.deepEqual(r.value, [0, 1000, 1250, 3_601_250, 1]);
  });
});

test('nested timers are scheduled from the time their parent fired', async (t) => {
  await withSandbox({}, async (s) => {
    const r = await s.run<Array<[string, number]>>(`new Promise((resolve) => {
      const loop = globalThis.__strataEventLoop;
      const log = [];
      setTimeout(() => {
        log.push(['outer', loop.now()]);
        setTimeout(() => {
          log.push(['inner', loop.now()]);
          setTimeout(() => { log.push(['innermost', loop.now()]); resolve(log); }, 5);
        }, 20);
      }, 10);
      setTimeout(() => log.push(['sibling', loop.now()]), 25);
    })`);
    t.deepEqual(r.value, [
      ['outer', 10],
      ['sibling', 25],
      ['inner', 30],
      ['innermost', 35],
    ]);
  });
});

test('clearTimeout and clearInterval cancel, also from inside callbacks', async (t) => {
  await withSandbox({}, async (s) => {
    const r = await s.run(`new Promise((resolve) => {
      const log = [];
      const a = setTimeout(() => log.push('a'), 10);
      const b = setTimeout(() => { log.push('b'); clearTimeout(c); }, 5);
      const c = setTimeout(() => log.push('c'), 20);
      clearTimeout(a);
      let n = 0;
      const i = setInterval(() => { log.push('i' + ++n); if (n === 3) clearInterval(i); }, 7);
      // Ids are shared: clearTimeout clears an interval too.
      const j = setInterval(() => log.push('j'), 1);
      clearTimeout(j);
      clearTimeout(); clearTimeout(null); clearTimeout(123456); clearInterval('nope');
      setTimeout(() => resolve({ log, pending: __strataEventLoop.pending() }), 100);
    })`);
    t.deepEqual(r.value, { log: ['b', 'i1', 'i2', 'i3'], pending: 0 });
  });
});

test('timer ids are positive integers, unique across setTimeout and setInterval', async (t) => {
  await withSandbox({}, async (s) => {
    const ids = s.value<number[]>(`[setTimeout(() => {}), setInterval(() => {}, 5), setTimeout('x'), setTimeout(() => {}, 1)]`);
    t.true(ids.every((id) => Number.isInteger(id) && id > 0));
    t.is(new Set(ids).size, ids.length);
  });
});

test('extra arguments are passed and `this` is the global object', async (t) => {
  await withSandbox({}, async (s) => {
    const r = await s.run(`new Promise((resolve) => {
      setTimeout(function (a, b) { resolve({ args: [a, b], self: this === globalThis }); }, 1, 'x', 2);
    })`);
    t.deepEqual(r.value, { args: ['x', 2], self: true });
    const i = await s.run(`new Promise((resolve) => {
      const id = setInterval((...args) => { clearInterval(id); resolve(args); }, 3, 1, 2, 3);
    })`);
    t.deepEqual(i.value, [1, 2, 3]);
  });
});

test('a string handler is ignored, never compiled', async (t) => {
  await withSandbox({}, async (s) => {
    const r = await s.run(`new Promise((resolve) => {
      globalThis.hit = false;
      const id = setTimeout('globalThis.hit = true', 1);
      const id2 = setInterval('globalThis.hit = true', 1);
      setTimeout(() => resolve({ hit: globalThis.hit, ids: typeof id + typeof id2, pending: __strataEventLoop.pending() }), 10);
    })`);
    t.deepEqual(r.value, { hit: false, ids: 'numbernumber', pending: 0 });
  });
});

test('delays follow WebIDL long conversion and HTML clamping', async (t) => {
  await withSandbox({}, async (s) => {
    const r = await s.run<number[]>(`(async () => {
      const loop = globalThis.__strataEventLoop;
      const at = (delay) => new Promise((r) => { const t0 = loop.now(); setTimeout(() => r(loop.now() - t0), delay); });
      return [await at(NaN), await at(-5), await at('12'), await at(7.9), await at(null), await at(Infinity), await at({ valueOf: () => 3 })];
    })()`);
    t.deepEqual(r.value, [0, 0, 12, 7, 0, 0, 3]);
  });
});

test('zero-delay timers nested more than 5 deep are clamped to 4 ms', async (t) => {
  await withSandbox({}, async (s) => {
    const r = await s.run<number[]>(`new Promise((resolve) => {
      const loop = globalThis.__strataEventLoop;
      const times = [];
      const step = () => { times.push(loop.now()); if (times.length < 8) setTimeout(step, 0); else resolve(times); };
      setTimeout(step, 0);
    })`);
    // Levels 1-5 fire at once; from level 6 on, each waits 4 ms.
    t.deepEqual(r.value, [0, 0, 0, 0, 0, 4, 8, 12]);
    const i = await s.run<number[]>(`new Promise((resolve) => {
      const loop = globalThis.__strataEventLoop;
      const t0 = loop.now();
      const times = [];
      const id = setInterval(() => { times.push(loop.now() - t0); if (times.length === 7) { clearInterval(id); resolve(times); } }, 0);
    })`);
    t.deepEqual(i.value, [0, 0, 0, 0, 0, 4, 8]);
  });
});

test('an animation-style loop that re-schedules itself until done completes', async (t) => {
  await withSandbox({}, async (s) => {
    const r = await s.run(`new Promise((resolve) => {
      // What d3-timer or zrender do without requestAnimationFrame.
      const raf = (cb) => setTimeout(() => cb(performance.now()), 16);
      let frames = 0;
      const start = performance.now();
      const frame = (time) => {
        frames++;
        if (time - start < 1000) raf(frame);
        else resolve({ frames, elapsed: Math.round(time - start) });
      };
      raf(frame);
    })`);
    t.true(r.ok);
    const v = r.value as { frames: number; elapsed: number };
    t.is(v.frames, 63);
    t.true(v.elapsed >= 1000 && v.elapsed < 1020);
  });
});

test('a runaway setInterval is cut off and reported', async (t) => {
  await withSandbox({}, async (s) => {
    const r = await s.run(`new Promise(() => {
      globalThis.runs = 0;
      setInterval(() => { runs++; }, 1);
    })`);
    t.false(r.settled);
    t.is(s.value('runs'), MAX_INTERVAL_RUNS);
    t.is(r.steps, MAX_INTERVAL_RUNS);
    t.is(s.value('__strataEventLoop.pending()'), 0);
    const warnings = s.logs().filter((l) => l.level === 'warn');
    t.is(warnings.length, 1);
    t.regex(warnings[0]!.text, /setInterval \d+ \(every 1 ms\) was cut off after 10000 runs/);
  });
});

test('the cut-off only affects the runaway interval, not other timers', async (t) => {
  await withSandbox({}, async (s) => {
    const r = await s.run(`new Promise((resolve) => {
      let runs = 0;
      setInterval(() => { runs++; }, 1);
      let beats = 0;
      const beat = setInterval(() => { if (++beats === 3) clearInterval(beat); }, 5000);
      setTimeout(() => resolve({ runs, beats }), 60_000);
    })`);
    t.deepEqual(r.value, { runs: MAX_INTERVAL_RUNS, beats: 3 });
  });
});

test('an exception in a callback is reported and does not stop the loop', async (t) => {
  await withSandbox({}, async (s) => {
    const r = await s.run(`new Promise((resolve) => {
      setTimeout(() => { throw new RangeError('boom'); }, 1);
      let n = 0;
      const id = setInterval(() => { n++; if (n === 2) throw new Error('again'); if (n === 3) { clearInterval(id); resolve(n); } }, 1);
    })`);
    t.is(r.value, 3);
    const errors = s
      .logs()
      .filter((l) => l.level === 'error')
      .map((l) => l.text);
    t.deepEqual(errors, ['Uncaught RangeError: boom', 'Uncaught Error: again']);
  });
});

test('the host sees a promise that no timer can settle', async (t) => {
  await withSandbox({}, async (s) => {
    const r = await s.run(`new Promise((resolve) => { setTimeout(() => {}, 5); })`);
    t.false(r.settled);
    t.is(r.steps, 1);
    t.is(r.now, 5);
  });
});

test('a rejected promise is a settled outcome', async (t) => {
  await withSandbox({}, async (s) => {
    const r = await s.run(`new Promise((_, reject) => setTimeout(() => reject(new TypeError('nope')), 3))`);
    t.true(r.settled);
    t.false(r.ok);
    t.deepEqual(r.error, { name: 'TypeError', message: 'nope' });
  });
});

test('queueMicrotask runs before timers, in order, and reports exceptions', async (t) => {
  await withSandbox({}, async (s) => {
    const r = await s.run(`new Promise((resolve) => {
      const log = [];
      setTimeout(() => resolve(log), 0);
      queueMicrotask(() => log.push(1));
      queueMicrotask(() => { throw new Error('micro'); });
      Promise.resolve().then(() => log.push(2));
      queueMicrotask(() => log.push(3));
    })`);
    t.deepEqual(r.value, [1, 2, 3]);
    t.deepEqual(
      s.logs().map((l) => l.text),
      ['Uncaught Error: micro'],
    );
    t.throws(() => s.value('queueMicrotask("x")'), { message: /not of type 'Function'/ });
  });
});

test('the hook is frozen, non-writable and non-configurable', async (t) => {
  await withSandbox({}, async (s) => {
    t.deepEqual(
      s.value(`(() => {
        const d = Object.getOwnPropertyDescriptor(globalThis, '__strataEventLoop');
        const hook = d.value;
        try { globalThis.__strataEventLoop = {}; } catch {}
        try { hook.runNext = () => true; } catch {}
        return [d.writable, d.enumerable, d.configurable, Object.isFrozen(hook), globalThis.__strataEventLoop === hook, Object.keys(hook).sort().join()];
      })()`),
      [false, false, false, true, true, 'now,pending,runNext'],
    );
  });
});

test('many cleared timers do not leave the heap growing', async (t) => {
  await withSandbox({}, async (s) => {
    const r = await s.run(`new Promise((resolve) => {
      for (let i = 0; i < 50_000; i++) clearTimeout(setTimeout(() => {}, 1000 + i));
      const kept = [];
      for (let i = 0; i < 5; i++) setTimeout(() => kept.push(i), 10 - i);
      setTimeout(() => resolve({ kept, pending: __strataEventLoop.pending() }), 20);
    })`);
    t.deepEqual(r.value, { kept: [4, 3, 2, 1, 0], pending: 0 });
    t.is(r.steps, 6);
  });
});

test('a timer flood stops at MAX_PENDING_TIMERS with a RangeError; cleared timers make room again', async (t) => {
  await withSandbox({}, async (s) => {
    const made = s.value(`(() => {
      const ids = [];
      try {
        for (let i = 0; i < 2e6; i++) ids.push(setTimeout(() => {}, 1));
        return { made: ids.length, error: 'none' };
      } catch (e) {
        globalThis.flood = ids;
        return { made: ids.length, error: e.name + ': ' + e.message };
      }
    })()`) as { made: number; error: string };
    t.is(made.made, MAX_PENDING_TIMERS);
    t.regex(made.error, /^RangeError: setTimeout: 100000 timers are already pending.*Clear timers/);
    t.throws(() => s.value('setInterval(() => {}, 5)'), { message: /setInterval: 100000 timers are already pending/ });
    // Clearing makes room; the table has no memory of the flood.
    t.is(s.value('for (const id of flood) clearTimeout(id); typeof setTimeout(() => {}, 1)'), 'number');
    t.is(s.value('__strataEventLoop.pending()'), 1);
  });
});
