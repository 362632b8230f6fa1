import type { TestFn } from 'ava';

// The leak check is the runtime's own test helper (compiled beside its tests in this repository):
// no child process and no file descriptor left after a file's tests, checked against /proc. It
// discards the runtime's prewarmed spare through the same module instance the runtime loaded.
const runtimeHelpers = (await import(new URL('../../../../runtime/dist/test/helpers/leaks.js', import.meta.url).href)) as {
  checkNoLeaks: (test: TestFn) => void;
};

/** See packages/runtime/test/helpers/leaks.ts. */
export const checkNoLeaks: (test: TestFn) => void = runtimeHelpers.checkNoLeaks;

/** Resolves once `check` returns true, polling (every 10 ms, at most `tries` times); false if it never did. */
export async function eventually(check: () => boolean, tries = 1000): Promise<boolean> {
  for (let i = 0; i < tries; i++) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return check();
}

/** A promise and the function that resolves it. */
export function gate<T = void>(): { promise: Promise<T>; open: (value: T) => void } {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}
