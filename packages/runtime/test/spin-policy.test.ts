import test from 'ava';
import { GIVE_UP_FACTOR, MAX_SPIN_MICROS, SpinPolicy } from '../src/worker/spin-policy.js';

test('a new policy does not spin: a worker spins only once it has seen a short wait', (t) => {
  t.is(new SpinPolicy().micros, 0);
  t.is(new SpinPolicy().microsAfterWaking, 0);
});

test('after a short wait it spins for twice as long, in whole microseconds, at least 20 and at most the maximum', (t) => {
  const policy = new SpinPolicy();
  policy.waited(40.2);
  t.is(policy.micros, 81);
  policy.waited(3);
  t.is(policy.micros, 20);
  policy.waited(MAX_SPIN_MICROS);
  t.is(policy.micros, MAX_SPIN_MICROS);
});

test('after a wait longer than the maximum, and short of the give-up, it spins the maximum: the slow round trips after an idle moment', (t) => {
  const policy = new SpinPolicy();
  policy.waited(MAX_SPIN_MICROS + 1);
  t.is(policy.micros, MAX_SPIN_MICROS);
  policy.waited(GIVE_UP_FACTOR * MAX_SPIN_MICROS);
  t.is(policy.micros, MAX_SPIN_MICROS);
  t.is(policy.microsAfterWaking, 0, 'a writer that woke its reader spins only after waits within the longest spin');
  policy.waited(40);
  t.is(policy.microsAfterWaking, 80);
});

test('after a wait longer than the give-up it stops spinning: an idle worker costs nothing', (t) => {
  const policy = new SpinPolicy();
  policy.waited(50);
  policy.waited(GIVE_UP_FACTOR * MAX_SPIN_MICROS + 1);
  t.is(policy.micros, 0);
  policy.waited(5_000_000);
  t.is(policy.micros, 0);
  const parent = new SpinPolicy(100);
  parent.waited(GIVE_UP_FACTOR * 100 + 1);
  t.is(parent.micros, 0, 'the give-up scales with the longest spin');
});
