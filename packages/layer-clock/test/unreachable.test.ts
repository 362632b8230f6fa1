import test from 'ava';
import { createGuest } from './helpers/guest.js';

// Kept in script scope before the clock loads: guest code can name these bindings, but
// nothing reachable from globalThis leads to them, so the walk below can compare against them.
const KEEP_ORIGINALS = `const __originals = new Map([
  ['the original Date', Date],
  ['the original Date.now', Date.now],
  ['the original Math.random', Math.random],
  ['the original Intl.DateTimeFormat#format getter', Object.getOwnPropertyDescriptor(Intl.DateTimeFormat.prototype, 'format').get],
  ['the original Intl.DateTimeFormat#formatToParts', Intl.DateTimeFormat.prototype.formatToParts],
]);`;

// Breadth-first over everything reachable by own properties (values, getters, setters) and
// prototypes, from globalThis and from values the guest can make; returns the path to every
// original it meets.
const WALK = `(() => {
  const f = new Intl.DateTimeFormat();
  class Later extends Date {}
  const roots = [
    ['globalThis', globalThis],
    ['new Date()', new Date()],
    ['Date()', Date()],
    ['new Intl.DateTimeFormat()', f],
    ['new Intl.DateTimeFormat().format', f.format],
    ['class Later extends Date', Later],
    ['new Later()', new Later()],
    ['Reflect.construct(Date, [], Object)', Reflect.construct(Date, [], Object)],
  ];
  const paths = new Map(roots.map(([path, value]) => [value, path]));
  const queue = roots.map(([, value]) => value);
  const found = [];
  const visit = (value, path) => {
    if ((typeof value === 'object' && value !== null) || typeof value === 'function') {
      if (!paths.has(value)) { paths.set(value, path); queue.push(value); }
    }
  };
  for (let i = 0; i < queue.length; i++) {
    const object = queue[i];
    const path = paths.get(object);
    for (const [name, original] of __originals) if (object === original) found.push(name + ' at ' + path);
    if (typeof object !== 'object' && typeof object !== 'function') continue;
    visit(Object.getPrototypeOf(object), 'Object.getPrototypeOf(' + path + ')');
    for (const key of Reflect.ownKeys(object)) {
      const desc = Object.getOwnPropertyDescriptor(object, key);
      const name = path + (typeof key === 'string' ? '.' + key : '[' + String(key) + ']');
      visit(desc.value, name);
      visit(desc.get, name + ' (get)');
      visit(desc.set, name + ' (set)');
    }
  }
  return { found, visited: queue.length };
})()`;

test('the originals are unreachable from anything the guest can reach', (t) => {
  for (const polyfills of [false, true]) {
    const guest = createGuest({ before: [KEEP_ORIGINALS], polyfills });
    try {
      const { found, visited } = guest.value<{ found: string[]; visited: number }>(WALK);
      t.deepEqual(found, [], `with polyfills: ${polyfills}`);
      t.true(visited > 500, `the walk visited only ${visited} objects`);
    } finally {
      guest.dispose();
    }
  }
});

test('the walk finds an original when one is reachable', (t) => {
  // Without the clock, every original is reachable: the walk is not vacuous.
  const guest = createGuest({ before: [KEEP_ORIGINALS], clock: false });
  try {
    const { found } = guest.value<{ found: string[] }>(WALK);
    t.true(found.includes('the original Date at globalThis.Date'));
    t.true(found.includes('the original Math.random at globalThis.Math.random'));
  } finally {
    guest.dispose();
  }
});

test('the originals stay unreachable after the guest rewires Date.prototype.constructor and deletes replacements', (t) => {
  const guest = createGuest({ before: [KEEP_ORIGINALS] });
  try {
    guest.value(`Date.prototype.constructor = function Other() {}; delete Math.random; delete Intl.DateTimeFormat.prototype.formatToParts;`);
    t.deepEqual(guest.value<{ found: string[] }>(WALK).found, []);
  } finally {
    guest.dispose();
  }
});

test('no caller, stack frame or proxy trap hands the guest an original', (t) => {
  const guest = createGuest({ before: [KEEP_ORIGINALS] });
  try {
    // Sloppy functions called back from inside the originals (by valueOf, toPrimitive, a
    // proxy trap) look at their caller and at the functions on the stack.
    const seen = guest.value<string[]>(`(function () {
      const seen = [];
      const frames = [];
      Error.prepareStackTrace = (error, callSites) => callSites.map((site) => site.getFunction());
      function spy() {
        seen.push(spy.caller);
        for (const fn of new Error().stack) frames.push(fn);
        return 0;
      }
      const probe = { valueOf: spy };
      new Date(probe);
      new Date(2020, probe);
      Date.UTC(probe);
      Date(probe);
      new Intl.DateTimeFormat().format(probe);
      new Intl.DateTimeFormat().formatToParts(probe);
      new Date(probe).toLocaleString();
      Reflect.construct(Date, [], new Proxy(function () {}, { get(target, key, receiver) { seen.push(target, receiver); spy(); return Date.prototype; } }));
      Reflect.construct(Date, [probe], new Proxy(function () {}, { get(target, key, receiver) { seen.push(target, receiver); return Date.prototype; } }));
      class Later extends Date { constructor() { super(); spy(); } }
      new Later();
      Error.prepareStackTrace = undefined;
      const names = [];
      for (const value of [...seen, ...frames]) for (const [name, original] of __originals) if (value === original) names.push(name);
      return names;
    })()`);
    t.deepEqual(seen, []);
  } finally {
    guest.dispose();
  }
});
