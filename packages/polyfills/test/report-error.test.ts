import test from 'ava';
import { MODES, type Sandbox, withSandbox } from './helpers/isolate.js';

// HTML's "report an exception", as the guest sees it: reportError() and every
// exception nobody caught (timer callbacks, microtasks, event listeners)
// dispatch a trusted, cancelable ErrorEvent named "error" at the global
// object; only when no listener cancelled it does the report go to
// console.error('Uncaught', error). The global is an event target (as a
// WorkerGlobalScope is), with HTML's special onerror handler. Each test gets
// its own sandbox: global listeners would otherwise leak between tests.

const errors = (s: Sandbox): string[] =>
  s
    .logs()
    .filter((l) => l.level === 'error')
    .map((l) => l.text);

for (const [mode, options] of MODES) {
  test(`reportError dispatches an ErrorEvent at the global, then reports to the console${mode}`, async (t) => {
    await withSandbox(options, (s) => {
      s.value(`globalThis.seen = [];
        addEventListener('error', function (e) {
          seen.push([this === globalThis, e instanceof ErrorEvent, e instanceof Event, e.type, e.isTrusted, e.cancelable,
            e.bubbles, e.message, e.filename, e.lineno, e.colno, e.error === globalThis.err ? 'err' : e.error,
            e.target === globalThis, e.currentTarget === globalThis, e.eventPhase, e.defaultPrevented]);
        }); 0`);
      // The location is where the error was created (line 1, column 18 here: `new`).
      s.context.evalSync(`globalThis.err = new TypeError('boom');\nreportError(err); reportError('plain'); reportError(42);`, {
        filename: 'guest.js',
      });
      t.deepEqual(s.value('seen'), [
        [true, true, true, 'error', true, true, false, 'Uncaught TypeError: boom', 'guest.js', 1, 18, 'err', true, true, 2, false],
        [true, true, true, 'error', true, true, false, 'Uncaught plain', '', 0, 0, 'plain', true, true, 2, false],
        [true, true, true, 'error', true, true, false, 'Uncaught 42', '', 0, 0, 42, true, true, 2, false],
      ]);
      // Nobody cancelled them: the console report is as without listeners.
      t.deepEqual(errors(s), ['Uncaught TypeError: boom', 'Uncaught plain', 'Uncaught 42']);
    });
  });

  test(`preventDefault() in an error listener suppresses the console report${mode}`, async (t) => {
    await withSandbox(options, (s) => {
      t.deepEqual(
        s.value(`(() => {
          const log = [];
          addEventListener('error', (e) => { if (e.error.quiet) e.preventDefault(); });
          addEventListener('error', (e) => log.push([e.error.message, e.defaultPrevented]));
          const quiet = new Error('quiet'); quiet.quiet = true;
          reportError(quiet);
          reportError(new Error('loud'));
          return log;
        })()`),
        [
          ['quiet', true],
          ['loud', false],
        ],
      );
      t.deepEqual(errors(s), ['Uncaught Error: loud']);
    });
  });

  test(`a passive listener cannot cancel the report${mode}`, async (t) => {
    await withSandbox(options, (s) => {
      s.value(`addEventListener('error', (e) => e.preventDefault(), { passive: true }); reportError(new Error('still reported')); 0`);
      t.deepEqual(errors(s), ['Uncaught Error: still reported']);
    });
  });

  test(`exceptions in timers, microtasks and listeners are dispatched at the global${mode}`, async (t) => {
    await withSandbox(options, async (s) => {
      const r = await s.run(`new Promise((resolve) => {
        const seen = [];
        addEventListener('error', (e) => {
          seen.push([e.message, e.error instanceof Error, e.isTrusted, e.cancelable, e.filename, e.lineno > 0 && e.colno > 0]);
          if (e.error.message !== 'loud') e.preventDefault();
        });
        setTimeout(() => { throw new RangeError('timer'); }, 5);
        let n = 0;
        const id = setInterval(() => { if (++n === 2) { clearInterval(id); throw new Error('loud'); } }, 1);
        queueMicrotask(() => { throw new SyntaxError('micro'); });
        const target = new EventTarget();
        target.addEventListener('x', () => { throw new TypeError('listener'); });
        target.dispatchEvent(new Event('x'));
        const c = new AbortController();
        c.signal.onabort = () => { throw new Error('onabort'); };
        c.abort();
        setTimeout(() => resolve(seen), 10);
      })`);
      t.deepEqual(r.value, [
        ['Uncaught TypeError: listener', true, true, true, '<isolated-vm>', true],
        ['Uncaught Error: onabort', true, true, true, '<isolated-vm>', true],
        ['Uncaught SyntaxError: micro', true, true, true, '<isolated-vm>', true],
        ['Uncaught Error: loud', true, true, true, '<isolated-vm>', true],
        ['Uncaught RangeError: timer', true, true, true, '<isolated-vm>', true],
      ]);
      // Only the one no listener cancelled reached the console.
      t.deepEqual(errors(s), ['Uncaught Error: loud']);
    });
  });

  test(`onerror gets (message, filename, lineno, colno, error) and returning true cancels${mode}`, async (t) => {
    await withSandbox(options, (s) => {
      s.value(`globalThis.calls = [];
        onerror = function (...args) {
          calls.push([this === globalThis, args.length, args[0], args[1], args[2], args[3], args[4] === globalThis.err ? 'err' : args[4]]);
          return args[4] === globalThis.err;
        }; 0`);
      s.context.evalSync(`globalThis.err = new Error('handled');\nreportError(err); reportError('not handled');`, { filename: 'h.js' });
      t.deepEqual(s.value('calls'), [
        [true, 5, 'Uncaught Error: handled', 'h.js', 1, 18, 'err'],
        [true, 5, 'Uncaught not handled', '', 0, 0, 'not handled'],
      ]);
      // Returning true cancelled the first; false does not cancel an ErrorEvent at the global.
      t.deepEqual(errors(s), ['Uncaught not handled']);
      s.value(`onerror = () => false; reportError('false does not cancel'); 0`);
      t.deepEqual(errors(s).slice(1), ['Uncaught false does not cancel']);
    });
  });

  test(`onerror is an event handler attribute of the global${mode}`, async (t) => {
    await withSandbox(options, (s) => {
      t.deepEqual(
        s.value(`(() => {
          const d = Object.getOwnPropertyDescriptor(globalThis, 'onerror');
          const log = [];
          const initial = onerror;
          addEventListener('error', () => log.push('before'));
          const first = () => { log.push('first'); };
          onerror = first;
          addEventListener('error', () => log.push('after'));
          const same = onerror === first && self.onerror === first;
          // Replacing the handler keeps its place among the listeners.
          onerror = () => { log.push('second'); return true; };
          reportError('x');
          onerror = 'not a function';
          const cleared = onerror;
          reportError('y');
          // A plain Event named error: the handler gets the event, and false cancels it.
          let arg;
          onerror = (e) => { arg = e; return false; };
          const plain = new Event('error', { cancelable: true });
          const notCanceled = dispatchEvent(plain);
          // Off the global the special handling does not apply: FileReader's
          // onerror gets the event alone, and true does not cancel.
          const fr = new FileReader();
          let args = -1;
          fr.onerror = (...a) => { args = a.length; return true; };
          const frResult = fr.dispatchEvent(new ErrorEvent('error', { cancelable: true }));
          return [typeof d.get, typeof d.set, d.enumerable, d.configurable, initial, same, log, cleared,
            notCanceled, arg === plain, args, frResult];
        })()`),
        ['function', 'function', false, true, null, true, ['before', 'second', 'after', 'before', 'after', 'before', 'after'], null, false, true, 1, true],
      );
      t.deepEqual(errors(s), ['Uncaught y']);
    });
  });

  test(`removeEventListener removes a global error listener${mode}`, async (t) => {
    await withSandbox(options, (s) => {
      t.deepEqual(
        s.value(`(() => {
          let n = 0;
          const f = (e) => { n++; e.preventDefault(); };
          addEventListener('error', f);
          reportError('one');
          removeEventListener('error', f, true); // another capture flag: not removed
          reportError('two');
          removeEventListener('error', f);
          reportError('three');
          const c = new AbortController();
          addEventListener('error', f, { signal: c.signal });
          reportError('four');
          c.abort();
          reportError('five');
          addEventListener('error', f, { once: true });
          reportError('six');
          reportError('seven');
          return n;
        })()`),
        4,
      );
      t.deepEqual(errors(s), ['Uncaught three', 'Uncaught five', 'Uncaught seven']);
    });
  });

  test(`an exception inside error handling goes to the console and does not loop${mode}`, async (t) => {
    await withSandbox(options, async (s) => {
      t.deepEqual(
        s.value(`(() => {
          const log = [];
          let depth = 0;
          addEventListener('error', (e) => {
            log.push('throwing:' + e.message);
            depth++;
            if (depth > 10) return; // would only be reached by a loop
            throw new Error('in listener ' + depth);
          });
          addEventListener('error', (e) => {
            log.push('second:' + e.message);
            reportError(new Error('reported from a listener'));
          });
          onerror = () => { throw new Error('in onerror'); };
          reportError(new Error('original'));
          // Error reporting mode is over: the next report is dispatched again.
          reportError(new Error('next'));
          return [log, depth];
        })()`),
        [['throwing:Uncaught Error: original', 'second:Uncaught Error: original', 'throwing:Uncaught Error: next', 'second:Uncaught Error: next'], 2],
      );
      t.deepEqual(errors(s), [
        'Uncaught Error: in listener 1',
        'Uncaught Error: reported from a listener',
        'Uncaught Error: in onerror',
        'Uncaught Error: original',
        'Uncaught Error: in listener 2',
        'Uncaught Error: reported from a listener',
        'Uncaught Error: in onerror',
        'Uncaught Error: next',
      ]);
      // A listener that throws on every timer exception does not stop the loop either.
      const r = await s.run(`new Promise((resolve) => {
        let n = 0;
        const id = setInterval(() => { if (++n === 3) { clearInterval(id); resolve(n); } throw new Error('tick ' + n); }, 1);
      })`);
      t.is(r.value, 3);
    });
  });

  test(`reporting survives hostile errors and a guest that replaced String and Object.create${mode}`, async (t) => {
    await withSandbox(options, (s) => {
      t.deepEqual(
        s.value(`(() => {
          const seen = [];
          addEventListener('error', (e) => { seen.push([e.message, e.filename, e.lineno]); e.preventDefault(); });
          globalThis.String = () => { throw new Error('String replaced'); };
          Object.create = () => { throw new Error('Object.create replaced'); };
          Object.defineProperty(Object.prototype, 'cancelable', { get() { throw new Error('read'); }, configurable: true });
          const hostile = new Proxy({}, { get() { throw new Error('trap'); } });
          reportError(hostile);
          reportError({ get message() { throw new Error('getter'); }, stack: 'x\\n    at evil.js:7:8' });
          reportError({ name: 'N', message: 'm', stack: 'N: m\\n    at async Promise.all (index 0)\\n    at f (lib.js:3:4)' });
          delete Object.prototype.cancelable;
          return seen;
        })()`),
        [
          ['Uncaught', '', 0],
          ['Uncaught', 'evil.js', 7],
          ['Uncaught N: m', 'lib.js', 3],
        ],
      );
      t.deepEqual(errors(s), []);
    });
  });
}

test('without any listener, reports are exactly as before', async (t) => {
  await withSandbox({}, async (s) => {
    const r = await s.run(`new Promise((resolve) => {
      reportError(new TypeError('a'));
      setTimeout(() => { throw new RangeError('b'); }, 1);
      queueMicrotask(() => { throw 'c'; });
      setTimeout(() => resolve(onerror), 2);
    })`);
    t.is(r.value, null);
    t.deepEqual(errors(s), ['Uncaught TypeError: a', 'Uncaught c', 'Uncaught RangeError: b']);
  });
});
