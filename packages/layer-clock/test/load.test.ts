import test from 'ava';
import { clockBootstrap } from '../src/index.js';
import { AT, createGuest, DISABLE_CODE_GENERATION } from './helpers/guest.js';

test('loads where eval and the function constructors throw', (t) => {
  const guest = createGuest({ before: [DISABLE_CODE_GENERATION], polyfills: true });
  try {
    t.throws(() => guest.value('eval("1")'), { message: /Code generation/ });
    t.is(guest.value('Date.now()'), AT);
    t.is(guest.value('new Intl.DateTimeFormat("en-US", { timeZone: "UTC" }).format()'), '1/1/2026');
  } finally {
    guest.dispose();
  }
});

test('runs strict and defines no global', (t) => {
  const control = createGuest({ clock: false, polyfills: true });
  const guest = createGuest({ polyfills: true });
  try {
    const keys = 'Reflect.ownKeys(globalThis).map(String)';
    t.deepEqual(guest.value(keys), control.value(keys));
    const source = clockBootstrap();
    t.regex(source, /^\(function \(\) \{\n'use strict';\n/);
    t.notRegex(source, /\beval\s*\(|new Function|\bFunction\s*\(/);
  } finally {
    guest.dispose();
    control.dispose();
  }
});

test('the script is compact and self-contained', (t) => {
  const source = clockBootstrap({ at: AT, seed: 5 });
  // About 12 KB with the seeded crypto replacements: the bound catches unplanned growth.
  t.true(source.length < 13_000, `${source.length} characters`);
  t.true(source.includes('{"at":1767225600000,"seed":5}'));
  t.false(source.includes('import '));
  t.false(source.includes('require('));
});

test('WEB_POLYFILLS still work on top of the frozen clock', (t) => {
  const guest = createGuest({ polyfills: true });
  try {
    guest.value(`globalThis.out = []; setTimeout(() => out.push(structuredClone(new Date()).getTime(), structuredClone(new Date(5)).getTime()), 100);`);
    guest.drain();
    t.deepEqual(guest.value('out'), [AT, 5]);
  } finally {
    guest.dispose();
  }
});

test('loading it twice keeps the last configuration and still hides the originals', (t) => {
  const guest = createGuest({ clock: { seed: 1, at: 0 }, after: [clockBootstrap({ seed: 2, at: 1000 })] });
  try {
    t.deepEqual(guest.value('[Date.now(), new Date().getTime()]'), [1000, 1000]);
  } finally {
    guest.dispose();
  }
});
