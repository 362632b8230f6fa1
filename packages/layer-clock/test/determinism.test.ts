import test from 'ava';
import { execFile } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const fixture = fileURLToPath(new URL('./fixtures/run-guest.js', import.meta.url));

// Everything a guest can print that depends on the time or on randomness.
const PROGRAM = `
print(Date.now(), new Date().toISOString(), Date());
print(new Date(), new Date().toLocaleString(), new Date().toLocaleString('ja-JP', { timeZone: 'Asia/Tokyo' }));
print(new Intl.DateTimeFormat().format(), JSON.stringify(new Intl.DateTimeFormat('en-GB', { dateStyle: 'full', timeStyle: 'full', timeZone: 'UTC' }).formatToParts()));
print(Array.from({ length: 5 }, () => Math.random()).join());
print(performance.timeOrigin, performance.now(), performance.now());
print(JSON.stringify({ created: new Date(), id: Math.random().toString(36).slice(2) }));
setTimeout(() => print('after 1s:', Date.now(), performance.now(), Math.random()), 1000);
(async () => {
  await new Promise((resolve) => setTimeout(resolve, 250));
  print('after 250ms:', new Date().toISOString(), Math.random());
})();
`;

async function output(options: { at: number; seed: number }, flags: string[] = []): Promise<string> {
  const { stdout } = await run(process.execPath, [...flags, fixture, JSON.stringify({ ...options, program: PROGRAM })], { timeout: 15_000 });
  return stdout;
}

test('same seed and clock: byte-identical output from fresh processes', async (t) => {
  const options = { at: Date.UTC(2026, 0, 1), seed: 7 };
  const first = await output(options);
  await sleep(50); // a later start must not show
  const second = await output(options);
  t.is(first, second);
  t.regex(first, /^1767225600000 2026-01-01T00:00:00\.000Z /);
  t.regex(first, /after 250ms: 2026-01-01T00:00:00\.000Z/);
  t.regex(first, /after 1s: 1767225600000 /);
  t.is(first.split('\n').length, 9);
});

test('another seed or another clock: different output', async (t) => {
  const base = await output({ at: 0, seed: 1 });
  t.not(await output({ at: 0, seed: 2 }), base);
  t.not(await output({ at: 1000, seed: 1 }), base);
});
