import test from 'ava';
import { CrashLedger, DEFAULT_CRASH_BUDGET } from '../src/isolated/crash-budget.js';

test('the default budget is three crashes a minute', (t) => {
  t.deepEqual(DEFAULT_CRASH_BUDGET, { crashes: 3, windowMs: 60_000 });
});

test('a tenant is refused once it reaches the budget within the window, and accepted again when the oldest crash leaves it', (t) => {
  const ledger = new CrashLedger({ crashes: 2, windowMs: 1_000 });
  t.deepEqual(ledger.check('a', 0), { allowed: true });
  ledger.record('a', 100);
  t.deepEqual(ledger.check('a', 150), { allowed: true }, 'one crash is the cost of doing business');
  ledger.record('a', 400);
  t.deepEqual(ledger.check('a', 500), { allowed: false, crashes: 2, retryAfterMs: 600 }, 'allowed again at 1100, when the crash at 100 leaves');
  t.deepEqual(ledger.check('b', 500), { allowed: true }, 'another tenant is unaffected');
  t.deepEqual(ledger.check('a', 1_099), { allowed: false, crashes: 2, retryAfterMs: 1 });
  t.deepEqual(ledger.check('a', 1_100), { allowed: true });
  t.deepEqual(ledger.counts(1_100), { a: 1 });
  t.deepEqual(ledger.counts(1_400), {}, 'a tenant whose crashes all left the window is forgotten');
});

test('past the budget, retryAfter waits for enough crashes to leave, not just the oldest', (t) => {
  const ledger = new CrashLedger({ crashes: 2, windowMs: 1_000 });
  for (const at of [0, 10, 20, 30]) ledger.record('x', at);
  // Four in the window, budget two: all but the newest must leave (the one at 20 last) before x is allowed.
  t.deepEqual(ledger.check('x', 40), { allowed: false, crashes: 4, retryAfterMs: 980 });
  t.deepEqual(ledger.check('x', 1_010), { allowed: false, crashes: 2, retryAfterMs: 10 });
  t.deepEqual(ledger.check('x', 1_020), { allowed: true });
});
