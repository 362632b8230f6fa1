import test from 'ava';
import { createGuest } from './helpers/guest.js';

// The shape a library can observe: keys in order, property attributes, names and lengths,
// constructor-ness and source text. It must be the same with the clock as without.
const SHAPE = `(() => {
  const attributes = (object, key) => {
    const d = Object.getOwnPropertyDescriptor(object, key);
    return d === undefined ? 'missing' : [('value' in d) ? typeof d.value : 'accessor', d.writable, d.enumerable, d.configurable, typeof d.get, typeof d.set].join();
  };
  const isConstructor = (fn) => { try { Reflect.construct(String, [], fn); return true; } catch { return false; } };
  const fn = (f) => [typeof f, f.name, f.length, isConstructor(f), Reflect.ownKeys(f).map(String).join(), String(f).replace(f.name, '')];
  const dtf = Intl.DateTimeFormat.prototype;
  return {
    globals: Reflect.ownKeys(globalThis).map(String),
    globalDate: attributes(globalThis, 'Date'),
    dateKeys: Reflect.ownKeys(Date).map((k) => [String(k), attributes(Date, k)]),
    datePrototypeKeys: Reflect.ownKeys(Date.prototype).map(String),
    constructor: attributes(Date.prototype, 'constructor'),
    Date: fn(Date),
    now: fn(Date.now),
    random: [fn(Math.random), attributes(Math, 'random')],
    mathKeys: Reflect.ownKeys(Math).map(String),
    dtfKeys: Reflect.ownKeys(dtf).map((k) => [String(k), attributes(dtf, k)]),
    format: fn(new Intl.DateTimeFormat().format),
    formatGetter: Object.getOwnPropertyDescriptor(dtf, 'format').get.name,
    formatToParts: [dtf.formatToParts.name, dtf.formatToParts.length, isConstructor(dtf.formatToParts)],
    performance: typeof performance === 'object' ? [Reflect.ownKeys(Object.getPrototypeOf(performance)).map((k) => [String(k), attributes(Object.getPrototypeOf(performance), k)]), JSON.stringify(Object.keys(performance))] : 'none',
  };
})()`;

for (const polyfills of [false, true]) {
  test(`replacements keep the originals' shape${polyfills ? ' (with WEB_POLYFILLS)' : ''}`, (t) => {
    const control = createGuest({ clock: false, polyfills });
    const guest = createGuest({ polyfills });
    try {
      t.deepEqual(guest.value(SHAPE), control.value(SHAPE));
    } finally {
      guest.dispose();
      control.dispose();
    }
  });
}

test('the replacements read as native code, with no source to read', (t) => {
  const guest = createGuest({ clock: { seed: 123456789, at: 987654321000 } });
  try {
    const sources = guest.value<string[]>(`[Date, Date.now, Math.random, new Intl.DateTimeFormat().format].map(String)`);
    for (const source of sources) t.is(source, 'function () { [native code] }');
    // The configuration is not in any source text the guest can print.
    const all = guest.value<string>(
      `[Date, Date.now, Math.random, Intl.DateTimeFormat.prototype.formatToParts, Object.getOwnPropertyDescriptor(Intl.DateTimeFormat.prototype, 'format').get].map(String).join()`,
    );
    t.false(all.includes('123456789'));
    t.false(all.includes('987654321000'));
  } finally {
    guest.dispose();
  }
});
