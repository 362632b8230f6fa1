import test from 'ava';
import { createSandbox, MODES, type Sandbox } from './helpers/isolate.js';

let s: Sandbox;
test.before(async () => {
  s = await createSandbox();
});
test.after.always(() => s.dispose());

test('listeners run in order with the event, this and phase', (t) => {
  t.deepEqual(
    s.value(`(() => {
      const target = new EventTarget();
      const log = [];
      target.addEventListener('ping', function (e) { log.push(['a', this === target, e.target === target, e.currentTarget === target, e.eventPhase, e.type]); });
      target.addEventListener('ping', { handleEvent(e) { log.push(['obj', this !== target]); } });
      target.addEventListener('ping', (e) => log.push(['capture', e.eventPhase]), true);
      target.addEventListener('pong', () => log.push(['wrong type']));
      const e = new Event('ping');
      const result = target.dispatchEvent(e);
      log.push([result, e.eventPhase, e.currentTarget, e.target === target, e.isTrusted]);
      return log;
    })()`),
    [
      ['capture', 2],
      ['a', true, true, true, 2, 'ping'],
      ['obj', true],
      [true, 0, null, true, false],
    ],
  );
});

test('duplicates are ignored; removeEventListener matches callback and capture', (t) => {
  t.deepEqual(
    s.value(`(() => {
      const target = new EventTarget();
      let n = 0;
      const f = () => n++;
      target.addEventListener('x', f);
      target.addEventListener('x', f);
      target.addEventListener('x', f, { capture: true });
      target.dispatchEvent(new Event('x'));
      target.removeEventListener('x', f, true);
      target.dispatchEvent(new Event('x'));
      target.removeEventListener('x', f, { capture: false });
      target.dispatchEvent(new Event('x'));
      target.addEventListener('x', null);
      return n;
    })()`),
    3,
  );
});

test('once, and removal during dispatch', (t) => {
  t.deepEqual(
    s.value(`(() => {
      const target = new EventTarget();
      const log = [];
      const b = () => log.push('b');
      target.addEventListener('x', () => log.push('once'), { once: true });
      target.addEventListener('x', () => { log.push('a'); target.removeEventListener('x', b); target.addEventListener('x', () => log.push('late')); });
      target.addEventListener('x', b);
      target.dispatchEvent(new Event('x'));
      target.dispatchEvent(new Event('x'));
      return log;
    })()`),
    ['once', 'a', 'a', 'late'],
  );
});

test('stopImmediatePropagation, stopPropagation, preventDefault and passive', (t) => {
  t.deepEqual(
    s.value(`(() => {
      const target = new EventTarget();
      const log = [];
      target.addEventListener('x', (e) => { log.push(1); e.stopImmediatePropagation(); });
      target.addEventListener('x', () => log.push(2));
      const first = target.dispatchEvent(new Event('x'));
      const t2 = new EventTarget();
      t2.addEventListener('y', (e) => { e.stopPropagation(); log.push('capture'); }, true);
      t2.addEventListener('y', () => log.push('bubble-skipped'));
      t2.dispatchEvent(new Event('y'));
      const t3 = new EventTarget();
      t3.addEventListener('z', (e) => e.preventDefault(), { passive: true });
      const passive = new Event('z', { cancelable: true });
      const passiveResult = t3.dispatchEvent(passive);
      t3.addEventListener('z', (e) => e.preventDefault());
      const cancelable = new Event('z', { cancelable: true });
      const notCancelable = new Event('z');
      return [log, first, passiveResult, passive.defaultPrevented, t3.dispatchEvent(cancelable), cancelable.defaultPrevented, cancelable.returnValue, t3.dispatchEvent(notCancelable)];
    })()`),
    [[1, 'capture'], true, true, false, false, true, false, true],
  );
});

test('signal removes a listener; an aborted signal adds none', (t) => {
  t.deepEqual(
    s.value(`(() => {
      const target = new EventTarget();
      const c = new AbortController();
      let n = 0;
      target.addEventListener('x', () => n++, { signal: c.signal });
      target.dispatchEvent(new Event('x'));
      c.abort();
      target.dispatchEvent(new Event('x'));
      target.addEventListener('x', () => n += 100, { signal: AbortSignal.abort() });
      target.dispatchEvent(new Event('x'));
      let error = '';
      try { target.addEventListener('x', () => {}, { signal: {} }); } catch (e) { error = e.constructor.name; }
      return [n, error];
    })()`),
    [1, 'TypeError'],
  );
});

test('a throwing listener is reported and the others still run', (t) => {
  const before = s.logs().length;
  t.deepEqual(
    s.value(`(() => {
      const target = new EventTarget();
      const log = [];
      target.addEventListener('x', () => { throw new Error('listener failed'); });
      target.addEventListener('x', {});
      target.addEventListener('x', () => log.push('after'));
      return [target.dispatchEvent(new Event('x')), log];
    })()`),
    [true, ['after']],
  );
  const reports = s
    .logs()
    .slice(before)
    .map((l) => l.text);
  t.is(reports[0], 'Uncaught Error: listener failed');
  t.regex(reports[1]!, /^Uncaught TypeError: .*handleEvent/);
});

test('dispatching an event twice at once throws InvalidStateError; re-dispatch later works', (t) => {
  t.deepEqual(
    s.value(`(() => {
      const target = new EventTarget();
      const e = new Event('x');
      let inner = '';
      let count = 0;
      target.addEventListener('x', () => { count++; try { target.dispatchEvent(e); } catch (err) { inner = err.name; } });
      target.dispatchEvent(e);
      target.dispatchEvent(e);
      return [inner, count];
    })()`),
    ['InvalidStateError', 2],
  );
  t.throws(() => s.value(`new EventTarget().dispatchEvent({ type: 'x' })`), { message: /not of type 'Event'/ });
});

test('Event and CustomEvent carry the init dictionary', (t) => {
  t.deepEqual(
    s.value(`(() => {
      const e = new Event('a', { bubbles: true, cancelable: true, composed: true });
      const c = new CustomEvent('b', { detail: { n: 1 } });
      const d = Object.getOwnPropertyDescriptor(e, 'isTrusted');
      return [e.type, e.bubbles, e.cancelable, e.composed, e.defaultPrevented, e.isTrusted, typeof e.timeStamp,
        c.detail.n, new CustomEvent('x').detail, c instanceof Event, Event.AT_TARGET, e.BUBBLING_PHASE,
        typeof d.get, d.configurable, Object.prototype.toString.call(c), e.composedPath().length];
    })()`),
    ['a', true, true, true, false, false, 'number', 1, null, true, 2, 3, 'function', false, '[object CustomEvent]', 0],
  );
  t.throws(() => s.value(`new Event()`), { message: /1 argument required/ });
});

test('EventTarget can be subclassed, and on<event> handlers keep their place', (t) => {
  t.deepEqual(
    s.value(`(() => {
      class Emitter extends EventTarget { emit(type) { return this.dispatchEvent(new CustomEvent(type, { detail: type, cancelable: true })); } }
      const em = new Emitter();
      const log = [];
      em.addEventListener('ping', (e) => log.push('first:' + e.detail));
      return [em.emit('ping'), log, em instanceof EventTarget];
    })()`),
    [true, ['first:ping'], true],
  );
  // AbortSignal's onabort: set, replaced in place, and returning false cancels.
  t.deepEqual(
    s.value(`(() => {
      const c = new AbortController();
      const log = [];
      c.signal.addEventListener('abort', () => log.push('before'));
      c.signal.onabort = () => log.push('handler-1');
      c.signal.addEventListener('abort', () => log.push('after'));
      c.signal.onabort = function (e) { log.push('handler-2:' + (this === c.signal) + ':' + e.isTrusted); };
      c.abort();
      const r = [typeof c.signal.onabort, log];
      c.signal.onabort = 'not a function';
      r.push(c.signal.onabort);
      return r;
    })()`),
    ['function', ['before', 'handler-2:true:true', 'after'], null],
  );
});

test('ErrorEvent carries its init dictionary, converted as WebIDL does', (t) => {
  t.deepEqual(
    s.value(`(() => {
      const e = new ErrorEvent('error', { message: 'm', filename: 'f.js', lineno: 3, colno: 4.9, error: { n: 1 }, cancelable: true });
      const d = new ErrorEvent('x');
      const c = new ErrorEvent('x', { lineno: -1, colno: 2 ** 32 + 5, message: { toString() { return 'str'; } }, filename: 'a\\uD800b', error: null });
      const n = new ErrorEvent('x', { lineno: NaN, colno: '7' });
      return [e.type, e.message, e.filename, e.lineno, e.colno, e.error.n, e.cancelable, e.bubbles, e.isTrusted,
        e instanceof ErrorEvent, e instanceof Event, Object.prototype.toString.call(e),
        d.message, d.filename, d.lineno, d.colno, d.error === undefined, d.cancelable,
        c.lineno, c.colno, c.message, c.filename === 'a\\uFFFDb', c.error, n.lineno, n.colno,
        ['message', 'filename', 'lineno', 'colno', 'error'].every((k) => Object.keys(ErrorEvent.prototype).includes(k))];
    })()`),
    [
      'error',
      'm',
      'f.js',
      3,
      4,
      1,
      true,
      false,
      false,
      true,
      true,
      '[object ErrorEvent]',
      '',
      '',
      0,
      0,
      true,
      false,
      4294967295,
      5,
      'str',
      true,
      null,
      0,
      7,
      true,
    ],
  );
});

test('ErrorEvent reads its members in WebIDL order, and checks its arguments and brand', (t) => {
  t.deepEqual(
    s.value(`(() => {
      const order = [];
      const init = {};
      for (const k of ['message', 'error', 'lineno', 'bubbles', 'filename', 'colno', 'composed', 'cancelable']) {
        Object.defineProperty(init, k, { get() { order.push(k); return undefined; } });
      }
      new ErrorEvent('x', init);
      const thrown = (fn) => { try { fn(); return 'none'; } catch (e) { return e.constructor.name; } };
      const getter = Object.getOwnPropertyDescriptor(ErrorEvent.prototype, 'message').get;
      return [order, thrown(() => new ErrorEvent()), thrown(() => new ErrorEvent('x', 5)),
        thrown(() => new ErrorEvent('x', { message: Symbol() })), thrown(() => new ErrorEvent('x', { lineno: 1n })),
        thrown(() => getter.call(new Event('error'))), thrown(() => ErrorEvent('x'))];
    })()`),
    [
      ['bubbles', 'cancelable', 'composed', 'colno', 'error', 'filename', 'lineno', 'message'],
      'TypeError',
      'TypeError',
      'TypeError',
      'TypeError',
      'TypeError',
      'TypeError',
    ],
  );
});

for (const [mode, options] of MODES) {
  test(`the global object is an event target, as in a worker${mode}`, async (t) => {
    const g = await createSandbox(options);
    try {
      t.deepEqual(
        g.value(`(() => {
          'use strict';
          const log = [];
          const f = function (e) { log.push([e.type, this === globalThis, e.target === globalThis, e.currentTarget === globalThis, e.isTrusted]); };
          addEventListener('x', f); // a bare call: this is undefined
          const r1 = dispatchEvent(new Event('x'));
          self.addEventListener('y', f);
          globalThis.dispatchEvent(new CustomEvent('y'));
          const { removeEventListener: remove, dispatchEvent: dispatch } = globalThis;
          remove('x', f);
          dispatch(new Event('x')); // removed: nothing
          EventTarget.prototype.dispatchEvent.call(undefined, new Event('y'));
          // A separate target does not see the global's listeners, nor the global its.
          const other = new EventTarget();
          other.dispatchEvent(new Event('y'));
          other.addEventListener('z', f);
          dispatchEvent(new Event('z'));
          addEventListener('c', (e) => e.preventDefault());
          const r2 = dispatchEvent(new Event('c', { cancelable: true }));
          const descriptors = ['addEventListener', 'removeEventListener', 'dispatchEvent'].map((k) => {
            const d = Object.getOwnPropertyDescriptor(globalThis, k);
            return [typeof d.value, d.writable, d.enumerable, d.configurable];
          });
          const thrown = (fn) => { try { fn(); return 'none'; } catch (e) { return e.name; } };
          return [log, r1, r2, self.addEventListener === addEventListener, addEventListener === EventTarget.prototype.addEventListener,
            globalThis instanceof EventTarget, descriptors,
            thrown(() => addEventListener.call({}, 'x', f)), thrown(() => dispatchEvent({ type: 'x' })),
            thrown(() => structuredClone(globalThis))];
        })()`),
        [
          [
            ['x', true, true, true, false],
            ['y', true, true, true, false],
            ['y', true, true, true, false],
          ],
          true,
          false,
          true,
          true,
          false,
          [
            ['function', true, false, true],
            ['function', true, false, true],
            ['function', true, false, true],
          ],
          'TypeError',
          'TypeError',
          'DataCloneError',
        ],
      );
    } finally {
      g.dispose();
    }
  });
}
