import { readdirSync, readFileSync } from 'node:fs';
import type { TestFn } from 'ava';
import { discardSpare } from '../../src/isolated/prewarm.js';
import { closeStripper } from '../../src/typescript-input.js';

/** Live child processes of this process, from /proc. */
export function childPids(): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // fields[0] is the state; a zombie is already dead, only not yet reaped.
      if (Number(fields[1]) === process.pid && fields[0] !== 'Z') children.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return children;
}

/** Open file descriptors of this process. */
export function openFds(): string[] {
  return readdirSync('/proc/self/fd');
}

/**
 * Registers a check, after every test of the file, that no child process and no file
 * descriptor was leaked: checked against /proc, not assumed.
 */
export function checkNoLeaks(test: TestFn): void {
  let fdsBefore: number;
  test.before(() => {
    fdsBefore = openFds().length;
  });
  test.after.always('no leaked child process or file descriptor', async (t) => {
    await discardSpare();
    await closeStripper();
    // Polled, not slept: generous bounds (20 s, 10 s) cost nothing when nothing leaked.
    let children = childPids();
    for (let i = 0; i < 200 && children.length > 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      children = childPids();
    }
    if (children.length > 0) t.fail(`leaked child processes: ${children.join(', ')}`);
    // Give closed pipes a moment to be released by libuv.
    let fds = openFds().length;
    for (let i = 0; i < 100 && fds > fdsBefore; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      fds = openFds().length;
    }
    if (fds > fdsBefore) t.fail(`leaked file descriptors: ${fds} open, ${fdsBefore} before the suite`);
  });
}
