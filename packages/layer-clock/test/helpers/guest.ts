import ivm from 'isolated-vm';
import { WEB_POLYFILLS } from '@strata/polyfills';
import { clockBootstrap } from '../../src/index.js';

/** A context to run guest code in, set up the way a Strata worker sets one up. */
export interface Guest {
  readonly isolate: ivm.Isolate;
  readonly context: ivm.Context;
  /** Evaluates a script and copies its completion value out. */
  value<T = unknown>(code: string): T;
  /** Drives WEB_POLYFILLS' event loop until it has nothing left (timers fire on virtual time). */
  drain(maxSteps?: number): number;
  dispose(): void;
}

export interface GuestOptions {
  /** The clock's options; `false` leaves the clock out (a control context). Default `{}`. */
  clock?: { at?: Date | number | string; seed?: number } | false;
  /** Load WEB_POLYFILLS before the clock, as the runtime's bootstrap does. Default false. */
  polyfills?: boolean;
  /** Scripts run first, e.g. to keep references to the originals in script scope (not on globalThis). */
  before?: string[];
  /** Scripts run after the clock and before the guest, e.g. to disable code generation. */
  after?: string[];
  /** Replaces clockBootstrap(clock), e.g. with a deliberately broken one. */
  bootstrap?: string;
}

export function createGuest(options: GuestOptions = {}): Guest {
  const isolate = new ivm.Isolate({ memoryLimit: 64 });
  try {
    const context = isolate.createContextSync();
    for (const script of options.before ?? []) context.evalSync(script);
    if (options.polyfills) context.evalSync(WEB_POLYFILLS, { filename: 'strata-web-polyfills.js' });
    if (options.bootstrap !== undefined) context.evalSync(options.bootstrap);
    else if (options.clock !== false) context.evalSync(clockBootstrap(options.clock ?? {}));
    for (const script of options.after ?? []) context.evalSync(script);
    return {
      isolate,
      context,
      value<T>(code: string): T {
        return context.evalSync(code, { copy: true }) as T;
      },
      drain(maxSteps = 10_000): number {
        let steps = 0;
        while (steps < maxSteps && context.evalSync('__strataEventLoop.runNext()') === true) steps++;
        return steps;
      },
      dispose() {
        if (!isolate.isDisposed) isolate.dispose();
      },
    };
  } catch (error) {
    isolate.dispose();
    throw error;
  }
}

/**
 * What the strict-eval runtime option does after the bootstrap scripts: every way to `eval`
 * and to the function constructors throws an EvalError.
 */
export const DISABLE_CODE_GENERATION = `(() => {
  const refuse = function () { throw new EvalError('Code generation from strings disallowed for this context'); };
  for (const proto of [Function.prototype, Object.getPrototypeOf(async function () {}), Object.getPrototypeOf(function* () {}), Object.getPrototypeOf(async function* () {})]) {
    Object.defineProperty(proto, 'constructor', { value: refuse, writable: false, enumerable: false, configurable: false });
  }
  Object.defineProperty(globalThis, 'Function', { value: refuse, writable: false, enumerable: false, configurable: false });
  Object.defineProperty(globalThis, 'eval', { value: refuse, writable: false, enumerable: false, configurable: false });
})();`;

/** `evalInGuest` as a SelfTestContext offers it: each call in a fresh, throwaway isolate set up by `setup`. */
export function freshGuestEvaluator(setup: GuestOptions): (code: string) => Promise<unknown> {
  return async (code) => {
    const guest = createGuest(setup);
    try {
      return guest.value(code);
    } finally {
      guest.dispose();
    }
  };
}

/** The default frozen time, 2026-01-01T00:00:00.000Z. */
export const AT = Date.UTC(2026, 0, 1);
