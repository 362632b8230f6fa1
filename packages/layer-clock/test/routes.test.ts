import test from 'ava';
import { createGuest } from './helpers/guest.js';

const at = Date.UTC(2031, 6, 15, 13, 14, 15, 678);
const iso = new Date(at).toISOString();

// Each expression must give the frozen time (as epoch ms) however the guest reaches for it.
const mustFreeze: Array<[route: string, expression: string]> = [
  ['Date.now()', 'Date.now()'],
  ['Date.now() again', 'Date.now(), Date.now()'],
  ['new Date()', 'new Date().getTime()'],
  ['new Date', 'new Date; (new Date).getTime()'],
  ['new Date(...[])', 'new Date(...[]).getTime()'],
  ['Date() (whole seconds)', 'Date.parse(Date()) + 678'],
  ['Date() ignores its arguments', 'Date.parse(Date(0, 1, 2)) + 678'],
  ['Date.prototype.constructor', 'new Date.prototype.constructor().getTime()'],
  ['(new Date(0)).constructor', 'new (new Date(0).constructor)().getTime()'],
  ['Object.getPrototypeOf(new Date(0)).constructor', 'new (Object.getPrototypeOf(new Date(0)).constructor)().getTime()'],
  ['Reflect.construct(Date, [])', 'Reflect.construct(Date, []).getTime()'],
  ['Reflect.construct(Date, [], Object)', 'Date.prototype.getTime.call(Reflect.construct(Date, [], Object))'],
  ['class extends Date', 'class Later extends Date {}; new Later().getTime()'],
  ['class extends Date: static now', 'class Later extends Date {}; Later.now()'],
  ['class extends Date with its own constructor', 'class Later extends Date { constructor() { super(); this.extra = 1; } }; new Later().getTime()'],
  ['Date.bind(null)', 'new (Date.bind(null))().getTime()'],
  ['Date.now.call(other)', 'Date.now.call({})'],
  ['Date.now detached', 'const { now } = Date; now()'],
  ['JSON.stringify(new Date())', 'Date.parse(JSON.parse(JSON.stringify(new Date())))'],
  [
    'Intl.DateTimeFormat#format()',
    `Date.parse(new Intl.DateTimeFormat('en-US', { timeZone: 'UTC', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' }).format().replace(/(\\d+)\\/(\\d+)\\/(\\d+), (.*)/, '$3-$1-$2T$4Z')) + 678`,
  ],
  [
    'Intl.DateTimeFormat#format(undefined)',
    `new Intl.DateTimeFormat('en-US', { timeZone: 'UTC', fractionalSecondDigits: 3, second: 'numeric' }).format(undefined) === '15.678' ? ${at} : 0`,
  ],
  [
    'Intl.DateTimeFormat().format() detached',
    `(() => { const { format } = Intl.DateTimeFormat('en-US', { timeZone: 'UTC', minute: 'numeric', second: 'numeric' }); return format() === '14:15' ? ${at} : format(); })()`,
  ],
  [
    'Intl.DateTimeFormat#formatToParts()',
    `new Intl.DateTimeFormat('en-US', { timeZone: 'UTC', year: 'numeric' }).formatToParts().find((p) => p.type === 'year').value === '2031' ? ${at} : 0`,
  ],
  [
    'Intl.DateTimeFormat.prototype.formatToParts.call',
    `Intl.DateTimeFormat.prototype.formatToParts.call(new Intl.DateTimeFormat('en-US', { timeZone: 'UTC', year: 'numeric' }))[0].value === '2031' ? ${at} : 0`,
  ],
  [
    'a subclass of Intl.DateTimeFormat',
    `(() => { class F extends Intl.DateTimeFormat {} return new F('en-US', { timeZone: 'UTC', year: 'numeric' }).format() === '2031' ? ${at} : 0; })()`,
  ],
  [
    'the legacy Intl.DateTimeFormat.call(object) form',
    `(() => { const o = Intl.DateTimeFormat.call(Object.create(Intl.DateTimeFormat.prototype), 'en-US', { timeZone: 'UTC', year: 'numeric' }); return o.format() === '2031' ? ${at} : o.format(); })()`,
  ],
  [
    'toLocaleString of new Date()',
    `new Date().toLocaleString('en-US', { timeZone: 'UTC' }) === new Date(${at}).toLocaleString('en-US', { timeZone: 'UTC' }) ? ${at} : 0`,
  ],
  ['after the guest replaces Date.prototype.constructor', 'Date.prototype.constructor = function Other() {}; new Date().getTime() + Date.now() - ' + at],
  [
    'after the guest replaces Intl.DateTimeFormat',
    'const Original = Intl.DateTimeFormat; Intl.DateTimeFormat = function () {}; Date.now() + new Original().format().length * 0',
  ],
];

for (const [route, expression] of mustFreeze) {
  test(`must freeze: ${route}`, (t) => {
    const guest = createGuest({ clock: { at } });
    try {
      t.is(guest.value(expression), at);
    } finally {
      guest.dispose();
    }
  });
}

test('must freeze: Date() is the string of the frozen time', (t) => {
  const guest = createGuest({ clock: { at } });
  try {
    t.is(guest.value('Date()'), guest.value(`new Date(${at}).toString()`));
    t.is(guest.value('new Date().toISOString()'), iso);
  } finally {
    guest.dispose();
  }
});

test('must freeze: the clock never advances', (t) => {
  const guest = createGuest({ clock: { at }, polyfills: true });
  try {
    t.deepEqual(
      guest.value(
        `(() => { const seen = new Set(); const t0 = performance.now(); while (performance.now() - t0 < 50) seen.add(Date.now()); return [...seen]; })()`,
      ),
      [at],
    );
    guest.value(`globalThis.fired = []; setTimeout(() => fired.push(Date.now(), new Date().getTime()), 10_000)`);
    guest.drain();
    t.deepEqual(guest.value('fired'), [at, at]);
  } finally {
    guest.dispose();
  }
});

// Each expression must give the same result with the clock as without it: the frozen clock
// only answers "now"; parsing, arithmetic and formatting of given dates are the original's.
const mustKeep: string[] = [
  'new Date(2020, 1, 29, 12, 30, 15, 250).toString()',
  'new Date(2020, 1, 29).getTime()',
  'new Date(2020, 13).toISOString()',
  "new Date('2020-02-29T12:00:00Z').toISOString()",
  "new Date('2020-02-29').getTime()",
  "new Date('March 7, 2019 10:00:00').getTime()",
  'new Date(0).toISOString()',
  'new Date(-1).toISOString()',
  'new Date(8.64e15).toISOString()',
  'String(new Date(8.64e15 + 1))',
  'String(new Date(NaN))',
  'String(new Date(undefined))',
  'new Date(null).getTime()',
  "new Date('not a date').getTime()",
  'new Date(new Date(1234)).getTime()',
  'new Date({ valueOf() { return 42; } }).getTime()',
  "new Date({ [Symbol.toPrimitive]() { return '1999-12-31T23:59:59Z'; } }).getTime()",
  'Date.UTC(2020, 0, 1, 2, 3, 4, 5)',
  'Date.UTC(2020)',
  "Date.parse('2020-01-01T00:00:00+02:00')",
  "Date.parse('Tue, 01 Jan 2019 00:00:00 GMT')",
  'new Date(2024, 0, 31).setMonth(1)',
  'new Date(Date.UTC(2024, 0, 1) + 86_400_000 * 60).toISOString()',
  '(new Date(2020, 0, 1) - new Date(2019, 0, 1)) / 86_400_000',
  'new Date(2020, 5, 15).getTimezoneOffset()',
  "new Date(0).toLocaleString('en-US', { timeZone: 'UTC' })",
  "new Date(0).toLocaleDateString('de-DE', { timeZone: 'UTC' })",
  "new Intl.DateTimeFormat('en-US', { timeZone: 'UTC', dateStyle: 'full', timeStyle: 'long' }).format(0)",
  "new Intl.DateTimeFormat('en-US', { timeZone: 'UTC' }).format(new Date(86_400_000))",
  "JSON.stringify(new Intl.DateTimeFormat('en-US', { timeZone: 'UTC' }).formatToParts(0))",
  "new Intl.DateTimeFormat('en-US', { timeZone: 'UTC' }).formatRange(0, 86_400_000 * 3)",
  "JSON.stringify(new Intl.DateTimeFormat('fr-FR', { timeZone: 'Europe/Paris', hour: 'numeric' }).resolvedOptions())",
  'JSON.stringify(Intl.DateTimeFormat().resolvedOptions())',
  '(() => { try { new Intl.DateTimeFormat().format(NaN); } catch (e) { return e.name; } })()',
  '(() => { try { new Intl.DateTimeFormat().formatRange(undefined, 0); } catch (e) { return e.name; } })()',
  "(() => { try { Intl.DateTimeFormat.prototype.format; } catch (e) { return e.name + ': ' + e.message; } })()",
  '(() => { try { Intl.DateTimeFormat.prototype.formatToParts.call({}); } catch (e) { return e.name; } })()',
  "(() => { try { Date.prototype.getTime.call({}); } catch (e) { return e.name + ': ' + e.message; } })()",
  '(() => { try { new Date(Symbol()); } catch (e) { return e.name; } })()',
  '(() => { try { new Date.now(); } catch (e) { return e.name; } })()',
  '(() => { try { new Math.random(); } catch (e) { return e.name; } })()',
  'Object.prototype.toString.call(new Date(0))',
  'new Date(0) instanceof Date',
  'Reflect.construct(Date, [0]) instanceof Date',
  'Object.getPrototypeOf(new Date(0)) === Date.prototype',
  'Date.prototype.constructor === Date',
  'Object.getPrototypeOf(Date) === Function.prototype',
  'class Later extends Date { twice() { return this.getTime() * 2; } }; new Later(21).twice()',
  'class Later extends Date {}; new Later(0) instanceof Later && new Later(0) instanceof Date',
  'typeof Date + typeof Date.now + typeof Date.prototype + typeof Math.random',
  '[Date.length, Date.name, Date.now.length, Date.now.name, Date.UTC.length, Date.parse.name, Math.random.length, Math.random.name]',
  '[Intl.DateTimeFormat().format.length, Intl.DateTimeFormat().format.name, Intl.DateTimeFormat.prototype.formatToParts.length, Intl.DateTimeFormat.prototype.formatToParts.name]',
  "Object.getOwnPropertyDescriptor(Intl.DateTimeFormat.prototype, 'format').get.name",
  '(() => { const f = new Intl.DateTimeFormat(); return f.format === f.format && f.format !== new Intl.DateTimeFormat().format; })()',
  'String(Date.now).replace(/now/, "")',
  'String(Math.random).replace(/random/, "")',
  'String(Intl.DateTimeFormat().format)',
  'String(Date).replace(/Date/, "")',
  "typeof Math.random() === 'number' && Math.random() < 1 && Math.random() >= 0",
];

for (const expression of mustKeep) {
  test(`must keep: ${expression}`, (t) => {
    const control = createGuest({ clock: false });
    const guest = createGuest({ clock: { at } });
    try {
      t.deepEqual(guest.value(expression), control.value(expression));
    } finally {
      guest.dispose();
      control.dispose();
    }
  });
}
