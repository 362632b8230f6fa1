/**
 * The ABI ≥ 8 stacking: once the worker has loaded everything, a second Landlock domain that
 * denies every filesystem access, on every thread at once (`LANDLOCK_RESTRICT_SELF_TSYNC`).
 *
 * Who decides what, and why:
 * - the parent's probe test-fires it in a throwaway child ({@link stackTestFire}); if that fails,
 *   the capability lists `tsync-stack` as missing, so `'auto'` degrades with a warning and
 *   `'require'` refuses, instead of every worker failing in its seal.
 * - the worker stacks in the layer's `seal` hook — after every layer's `apply` (seccomp loads its
 *   addon there) and after the runtime opened what it keeps open (its memory watchdog's /proc
 *   files), before any `selfTest` — and only when its capability, as the probe found it, provides
 *   `tsync-stack` ({@link sealStackDecision}). The capability reaches `seal` in its context.
 *
 * @module
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { LayerCapability } from '@strata/runtime/layers';
import { LayerConfigError } from '@strata/runtime/layers';
import { TEST_FIRE_MARKER } from './test-fire-marker.js';

/** The first Landlock ABI with thread sync (Linux 7.0). */
export const STACK_MIN_ABI = 8;

/** The capability word for the stacking: in `provides` when test-fired, in `missing` when the test-fire failed. */
export const STACK_WORD = 'tsync-stack';

/** What the report says when the domain was stacked. */
export const STACKED = 'deny-all-fs (TSYNC)';

const TEST_FIRE_SCRIPT = fileURLToPath(new URL('./test-fire.js', import.meta.url));
// Required when a probe spawns its child (in the parent), not at import: the worker imports this
// module too, and node:child_process costs each worker's start milliseconds of compiling (Node's
// own modules compile from source under --jitless).
const childProcess = (): typeof import('node:child_process') => createRequire(import.meta.url)('node:child_process') as typeof import('node:child_process');

/** The layer's `stackAfterLoad` option: a boolean, `true` when not given. Throws naming what is wrong. */
export function checkStackAfterLoad(value: unknown): boolean {
  if (value === undefined) return true;
  if (typeof value !== 'boolean')
    throw new LayerConfigError('landlock', `landlock(): option "stackAfterLoad" must be true or false; got ${JSON.stringify(value) ?? String(value)}`);
  return value;
}

/** The parent's verdict on stacking: whether the worker will stack, and the capability's words for it. */
export interface StackPlan {
  readonly stack: boolean;
  /** For the capability's detail: what will happen, or why not. */
  readonly detail: string;
  /** The word for `provides` (stacking test-fired) or `missing` (test-fire failed); none when not applicable. */
  readonly provides?: typeof STACK_WORD;
  readonly missing?: typeof STACK_WORD;
}

/**
 * The parent's decision, pure but for `testFire`, which is called only when the stacking is wanted
 * and the ABI has thread sync (it returns why the test-fire failed, or undefined).
 */
export function planStack(abi: number, stackAfterLoad: boolean, testFire: () => string | undefined): StackPlan {
  if (!stackAfterLoad) return { stack: false, detail: 'off (stackAfterLoad: false)' };
  if (abi < STACK_MIN_ABI) return { stack: false, detail: `not available on ABI ${abi} (needs ${STACK_MIN_ABI})` };
  const gap = testFire();
  if (gap !== undefined) return { stack: false, detail: `the test-fire failed: ${gap}`, missing: STACK_WORD };
  return { stack: true, detail: `${STACKED}, test-fired`, provides: STACK_WORD };
}

/** What the worker's seal does: stack, or report why not. */
export type WorkerStack = { readonly stack: true } | { readonly stack: false; readonly stacked: string };

/**
 * The worker's decision, from the capability the parent's probe found for these options (pure):
 * stack exactly when it provides {@link STACK_WORD}, which the probe says only on ABI ≥ 8, with
 * `stackAfterLoad`, after a successful test-fire. Otherwise the report says why not, in the
 * probe's words (`capability.detail.stackAfterLoad`).
 */
export function sealStackDecision(capability: LayerCapability): WorkerStack {
  if (capability.provides.includes(STACK_WORD)) return { stack: true };
  if (capability.missing.includes(STACK_WORD))
    return { stack: false, stacked: `not stacked: the probe's test-fire failed (${STACK_WORD} is missing; see capability.detail.stackAfterLoad)` };
  const why = capability.detail?.['stackAfterLoad'];
  return { stack: false, stacked: typeof why === 'string' ? why : 'not stacked: the probe did not plan it' };
}

/** The test-fire's answer is the same for the whole process: it runs once. */
let fired: { gap: string | undefined } | undefined;

/** Runs the test-fire child (once per process); undefined when it stacked and was denied as expected, else why not. */
export function stackTestFire(): string | undefined {
  fired ??= { gap: runStackTestFire() };
  return fired.gap;
}

/** Runs the test-fire child (native/../src/test-fire.ts) now: no side effect on this process. */
export function runStackTestFire(): string | undefined {
  const child = childProcess().spawnSync(process.execPath, [TEST_FIRE_SCRIPT], {
    env: {},
    encoding: 'utf8',
    timeout: 20_000,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (child.error) return `the stack test-fire could not run: ${child.error.message}`;
  if (child.signal) return `the stack test-fire child died of ${child.signal}`;
  if (child.status !== 0 || !child.stdout.includes(TEST_FIRE_MARKER))
    return child.stderr.trim().split('\n').pop() || `the stack test-fire exited with status ${child.status}`;
  return undefined;
}
