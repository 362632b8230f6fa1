import test from 'ava';
import { PERFORMANCE_TICK_MS } from '@strata/polyfills';
import { createGuest } from './helpers/guest.js';

const at = Date.UTC(2030, 0, 1);

test('performance.timeOrigin is the frozen time; performance.now() keeps counting virtual time', (t) => {
  const guest = createGuest({ clock: { at }, polyfills: true });
  try {
    t.deepEqual(guest.value('[performance.timeOrigin, JSON.stringify(performance)]'), [at, `{"timeOrigin":${at}}`]);
    t.is(guest.value('performance.timeOrigin + performance.now() - Date.now()'), PERFORMANCE_TICK_MS);
    guest.value(`globalThis.out = []; setTimeout(() => out.push(performance.now(), Date.now(), performance.timeOrigin), 500)`);
    guest.drain();
    const [now, date, origin] = guest.value<number[]>('out');
    t.true(now! > 500);
    t.is(date, at);
    t.is(origin, at);
  } finally {
    guest.dispose();
  }
});

test('performance is not invented where the host has none', (t) => {
  const guest = createGuest({ clock: { at } });
  try {
    t.is(guest.value('typeof performance'), 'undefined');
  } finally {
    guest.dispose();
  }
});

test("a host's own performance object gets the same origin, attributes kept", (t) => {
  const guest = createGuest({
    clock: { at },
    before: [`Object.defineProperty(globalThis, 'performance', { value: { timeOrigin: 5, now() { return 1; } }, writable: true, configurable: true })`],
  });
  try {
    t.deepEqual(guest.value('[performance.timeOrigin, performance.now(), Object.keys(performance).join()]'), [at, 1, 'timeOrigin,now']);
  } finally {
    guest.dispose();
  }
});

test('the timeOrigin getter looks like the one it replaces', (t) => {
  const guest = createGuest({ clock: { at }, polyfills: true });
  try {
    t.is(guest.value(`Object.getOwnPropertyDescriptor(Object.getPrototypeOf(performance), 'timeOrigin').get.call({})`), at);
    t.is(guest.value(`Object.getOwnPropertyDescriptor(Object.getPrototypeOf(performance), 'timeOrigin').get.name`), 'get timeOrigin');
  } finally {
    guest.dispose();
  }
});
