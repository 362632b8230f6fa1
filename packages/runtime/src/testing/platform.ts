/**
 * Platform skips that a CI machine turns into failures. A test that needs something of the
 * platform (Linux, a Landlock ABI, a Node 22 host) skips where the machine lacks it, saying why.
 * Where `STRATA_TEST_PLATFORM` declares that the machine has it, the same absence fails the
 * test instead: a machine that should run a test never skips it silently (rust-landlock's
 * `LANDLOCK_CRATE_TEST_ABI` does the same for the Landlock ABI).
 *
 * `STRATA_TEST_PLATFORM` is a list separated by spaces or commas, e.g.
 * `linux landlock-abi=7 seccomp userns root node22-host`. `landlock-abi=7` declares ABIs 1 to
 * 7, so a test that needs `landlock-abi=8` still skips there.
 *
 * @module
 */

/** The environment variable that declares what the machine has. */
export const PLATFORM_ENV = 'STRATA_TEST_PLATFORM';

const NUMBERED = /^([a-z][a-z0-9-]*)=(\d+)$/;

/** The features `STRATA_TEST_PLATFORM` declares (empty when it is unset). */
export function declaredFeatures(env: NodeJS.ProcessEnv = process.env): ReadonlySet<string> {
  return new Set((env[PLATFORM_ENV] ?? '').split(/[\s,]+/).filter((feature) => feature !== ''));
}

/**
 * Whether the machine declares `feature`. A numbered feature (`landlock-abi=8`) is declared by
 * the same name with that number or a higher one.
 */
export function isDeclared(feature: string, env: NodeJS.ProcessEnv = process.env): boolean {
  const declared = declaredFeatures(env);
  if (declared.has(feature)) return true;
  const wanted = NUMBERED.exec(feature);
  if (!wanted) return false;
  return [...declared].some((d) => {
    const have = NUMBERED.exec(d);
    return have !== null && have[1] === wanted[1] && Number(have[2]) >= Number(wanted[2]);
  });
}

/** What a platform test needs: the feature's name, whether this machine has it, and why not. */
export interface PlatformNeed {
  /** The feature, as `STRATA_TEST_PLATFORM` spells it: `linux`, `landlock-abi=8`, `node22-host`. */
  readonly feature: string;
  /** Whether this machine has it (the test's own check). */
  readonly available: boolean;
  /** Why it is missing, for the skip's title or the failure. */
  readonly reason: string;
}

/** What to do with a platform test: run it, skip it saying why, or fail it saying why. */
export type PlatformVerdict = { readonly run: true } | { readonly skip: string } | { readonly fail: string };

/** Decides a platform test (pure: the environment is a parameter). */
export function platformVerdict(need: PlatformNeed, env: NodeJS.ProcessEnv = process.env): PlatformVerdict {
  if (need.available) return { run: true };
  if (isDeclared(need.feature, env)) {
    return { fail: `${PLATFORM_ENV} declares ${need.feature}, but this machine lacks it: ${need.reason}` };
  }
  return { skip: need.reason };
}

/**
 * The two calls of a test runner that {@link platformTest} uses: `test(title, run)` and
 * `test.skip(title, run)` (ava's `test` and `test.serial` have them).
 */
export interface TestRegistrar {
  (title: string, run: (t: any) => any): void;
  skip(title: string, run: (t: any) => any): void;
}

/**
 * A function to call as `test(title, run)` is called: `test` itself where the machine has what
 * the test needs; elsewhere `test.skip`, with the reason in the title; and a failing test where
 * `STRATA_TEST_PLATFORM` declares the feature. Only the call is kept (not `.skip`, `.only`).
 *
 * @example
 * ```ts fragment
 * const onLinux = platformTest(test, { feature: 'linux', available: process.platform === 'linux', reason: 'Linux only' });
 * onLinux('the filter is in force', async (t) => { ... });
 * ```
 */
export function platformTest<Test extends TestRegistrar>(test: Test, need: PlatformNeed, env: NodeJS.ProcessEnv = process.env): Test {
  const verdict = platformVerdict(need, env);
  if ('run' in verdict) return test;
  const register: TestRegistrar['skip'] =
    'skip' in verdict
      ? (title, run) => test.skip(`${title} (skipped: ${verdict.skip})`, run)
      : (title) => test(title, (t: { fail(message: string): void }) => t.fail(verdict.fail));
  return register as unknown as Test;
}
