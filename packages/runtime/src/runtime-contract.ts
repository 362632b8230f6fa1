/**
 * The contract both engines keep: {@link StrataRuntime}, which `Runtime` (an isolate in this
 * process) and `IsolatedRuntime` (a `Runtime` in a supervised worker process) implement, so code
 * that only runs guest code takes either. Beside it, what the contract's methods take and return,
 * and the argument checks both engines make in the same words before anything crosses.
 *
 * Types only and pure checks: the engines import this module, never the other way round.
 *
 * @module
 */
import { isAsciiIdentifier } from '@strata/wire';
import type { ConsoleCapture, ConsoleEntry } from './console-capture.js';
import { InvalidOption } from './errors.js';
import type { ModuleLoader, ModuleResolver } from './module-registry.js';
import type { ResolvedRuntimeOptions } from './options.js';

/** A host function bound into the guest with {@link StrataRuntime.bindFunction}. Sync or async. */
export type HostFunction = (...args: any[]) => unknown;

/** Options of {@link StrataRuntime.eval} and {@link StrataRuntime.execute}. */
export interface EvalOptions {
  /** The script's name in stack traces. Default `<eval>`. */
  filename?: string;
  /**
   * The code's language. Default `'javascript'`. With `'typescript'` the types are stripped in
   * this process (for an `IsolatedRuntime`, in the parent, before the code is sent to the
   * worker) by Node's `module.stripTypeScriptTypes` in strip mode (Node.js 22.13 or later):
   * types become whitespace, so errors keep their lines and columns. Nothing is transformed:
   * an enum, a namespace with values, a parameter property or `import x = require(…)` is the
   * guest's `SyntaxError`, saying what to write instead, as is TypeScript that does not parse.
   */
  language?: 'javascript' | 'typescript';
}

/** Options of {@link StrataRuntime.evalModule}. */
export interface EvalModuleOptions {
  /** The module's own specifier: its name in stack traces and the referrer of its imports. Default `strata:main`. */
  specifier?: string;
  /**
   * The module's language, as {@link EvalOptions.language}: with `'typescript'` its types
   * (`import type` declarations included) are stripped in this process. Modules it imports are
   * JavaScript.
   */
  language?: 'javascript' | 'typescript';
}

/**
 * What `execute(code)` returns: it never throws for the run's own failure (a guest exception, a
 * timeout, a result too large, a crash); the failure is described here instead.
 */
export interface ExecutionResult {
  /** `'ok'` when the code ran and its result crossed; `'error'` otherwise. */
  readonly status: 'ok' | 'error';
  /** Console output on stdout during the run, capped at `maxOutputBytes`. */
  readonly stdout: string;
  /** Console output on stderr during the run, capped at `maxOutputBytes`. */
  readonly stderr: string;
  /** The completion value (a returned promise awaited); `undefined` on error. */
  readonly result: unknown;
  /** The error's message; `undefined` when `status` is `'ok'`. */
  readonly error: string | undefined;
  /**
   * The error's kind: the guest's error name for a guest exception (`'TypeError'`), else the
   * Strata error class (`'RuntimeTimeout'`, `'ResultTooLarge'`, `'HeapLimitExceeded'`, …).
   */
  readonly errorType: string | undefined;
  /** Whether stdout or stderr was cut at `maxOutputBytes`. */
  readonly truncated: boolean;
}

/**
 * A Strata runtime, in this process (`Runtime`) or in a sandboxed worker (`IsolatedRuntime`): a
 * guest realm that runs code one command at a time, with host functions, host-registered
 * modules and a captured console. Write code that only runs guest code against this type, and
 * it takes either engine.
 *
 * ```ts
 * async function total(rt: StrataRuntime, prices: Record<string, number>): Promise<unknown> {
 *   rt.bindFunction('price', (sku: string) => prices[sku]);
 *   return rt.eval("price('A1') + price('B2')");
 * }
 * ```
 */
export interface StrataRuntime extends AsyncDisposable {
  /** The resolved options the guest's isolate runs with (for an `IsolatedRuntime`, its worker's `Runtime`). */
  readonly options: ResolvedRuntimeOptions;

  /**
   * Whether the runtime is closed: by {@link StrataRuntime.close}, or because it can no longer
   * be trusted (a `Runtime` whose heap passed its limit, an `IsolatedRuntime` whose worker is gone).
   */
  readonly closed: boolean;

  /**
   * Evaluates a script and returns its completion value; a returned promise is awaited (timers
   * of `WEB_POLYFILLS` run on virtual time meanwhile). `language: 'typescript'` strips the types
   * first, in this process ({@link EvalOptions.language}): an `IsolatedRuntime`'s worker only
   * ever receives JavaScript.
   *
   * It rejects with {@link JsError} (the guest's exception; a `SyntaxError` too for TypeScript
   * that needs a transform), {@link RuntimeTimeout}, {@link HeapLimitExceeded} (the runtime is
   * closed), {@link ValueNotTransferable}, {@link ResultTooLarge} or {@link PromiseNeverSettled};
   * with {@link InvalidOption} for a bad `language`.
   *
   * ```ts
   * await rt.eval('const n: number = 6; n * 7', { language: 'typescript' }); // 42
   * ```
   */
  eval(code: string, options?: EvalOptions): Promise<unknown>;

  /**
   * Like {@link StrataRuntime.eval} but never throws for the run's own failure (for an
   * `IsolatedRuntime`, a crash or a hard timeout included): the outcome, the console output of
   * the run (each stream capped at `maxOutputBytes`) and the error, if any, come back as an
   * {@link ExecutionResult}. TypeScript that does not strip is the run's own failure
   * (`errorType: 'SyntaxError'`); a bad `language` throws {@link InvalidOption}.
   */
  execute(code: string, options?: EvalOptions): Promise<ExecutionResult>;

  /**
   * Evaluates an ES module and returns its namespace as a plain object of its exports. Its
   * imports resolve only to modules the host registered ({@link StrataRuntime.addModule}, or the
   * resolver and loader), asked in this process (an `IsolatedRuntime`'s worker asks its parent
   * for each); anything else is refused with {@link ModuleNotFound}. Exports must be
   * {@link Transferable}. `language: 'typescript'` strips the module's types first, in this
   * process ({@link EvalModuleOptions.language}); the modules it imports are JavaScript.
   */
  evalModule(source: string, options?: EvalModuleOptions): Promise<Record<string, unknown>>;

  /**
   * Binds a host function as a global of the guest. Arguments arrive as copies of
   * {@link Transferable} values; the return value (or the value a returned promise resolves
   * to) is copied back. A thrown error reaches the guest with its class name and, unless
   * `redactHostErrors` is false, the message "host function failed". Your function runs in this
   * process, with your authority: validate its arguments.
   */
  bindFunction(name: string, fn: HostFunction): void;

  /**
   * Binds an object as a global of the guest: its function-valued properties (at any depth)
   * become host functions, everything else must be {@link Transferable} data and is copied.
   */
  bindObject(name: string, object: Record<string, unknown>): void;

  /**
   * Removes a global bound with {@link StrataRuntime.bindFunction} or
   * {@link StrataRuntime.bindObject}. Its host functions stop working at once, including copies
   * the guest kept: a call throws.
   */
  revoke(name: string): void;

  /** Registers a module the guest may import by exactly this specifier. */
  addModule(specifier: string, source: string): void;

  /**
   * Sets the function that maps an import specifier to a canonical one (e.g. a relative path
   * against its referrer). Returning `undefined` refuses the import.
   */
  setModuleResolver(resolver: ModuleResolver | undefined): void;

  /**
   * Sets the function that supplies a module's source by canonical specifier, for modules not
   * registered with {@link StrataRuntime.addModule}. Returning `undefined` refuses the import.
   * Never return source chosen by the guest: that is code made from data.
   */
  setModuleLoader(loader: ModuleLoader | undefined): void;

  /** Calls `listener` for every `console.*` call of the guest. Returns a function that unsubscribes it. */
  onConsole(listener: (entry: ConsoleEntry) => void): () => void;

  /**
   * Starts collecting the guest's console output into a {@link ConsoleCapture} (each stream
   * capped at `maxOutputBytes`) until its `stop()`. Without a listener or a capture, console
   * output is dropped: it never reaches this process's stdout.
   */
  captureConsole(): ConsoleCapture;

  /**
   * Closes the runtime: a `Runtime` disposes its isolate, an `IsolatedRuntime` kills its worker
   * and resolves once it has exited. Idempotent; later calls fail with {@link RuntimeClosed}.
   */
  close(): Promise<void>;
}

/**
 * Maximum nesting of a value that crosses between host and guest (the value itself is depth 0);
 * the wire's decoder allows the same.
 */
export const MAX_VALUE_DEPTH = 64;

/**
 * Refuses a name no global can be bound under: anything but an ASCII identifier.
 *
 * @param method - the call that was given the name, to start the message (`bindFunction`).
 * @throws {@link InvalidOption}
 */
export function assertBindName(name: unknown, method: string): asserts name is string {
  if (typeof name !== 'string' || !isAsciiIdentifier(name)) {
    throw new InvalidOption(`${method}: name must be a JavaScript identifier (got ${JSON.stringify(name)})`);
  }
}

/** Throws {@link InvalidOption} when what `bindFunction(name, fn)` was given for `fn` is not a function. */
export function assertHostFunction(name: string, fn: unknown): asserts fn is HostFunction {
  if (typeof fn !== 'function') throw new InvalidOption(`bindFunction(${JSON.stringify(name)}): fn must be a function`);
}

/** Throws {@link InvalidOption} when what `bindObject(name, object)` was given for `object` is not a plain object (an array is not). */
export function assertBindableObject(name: string, object: unknown): asserts object is Record<string, unknown> {
  if (object === null || typeof object !== 'object' || Array.isArray(object)) {
    throw new InvalidOption(`bindObject(${JSON.stringify(name)}): object must be a plain object`);
  }
}
