/**
 * Checking the model's code against the tools' declarations before anything runs, with the
 * TypeScript compiler API: a hallucinated tool, a missing field or a wrong argument type comes
 * back as diagnostics at the code's own lines. Opt-in (`typecheck: true`), because it costs: the
 * compiler (`typescript` >=5.5 <7, an optional peer dependency) is loaded on first use and the
 * standard library's declarations are parsed once, in a worker thread of their own; each check then
 * parses only the cell, in that thread, off the host's event loop, within a time budget
 * ({@link DEFAULT_TYPECHECK_TIMEOUT_MS} by default). A check that runs past it, or that the
 * compiler cannot finish (deep nesting overflows its stack), is {@link TypeCheckFailed}, and the
 * thread is replaced.
 * TypeScript is checked as TypeScript. JavaScript is checked as JavaScript (`checkJs`), and of its
 * diagnostics only those about the API are kept: a name or property that does not exist, a call
 * with the wrong arguments, a value that does not fit a type the declarations give. Inference
 * complaints (`let x = 1; x = 'a'`) are JavaScript the model may write, not a misuse of a tool.
 *
 * @module
 */
import { InvalidOption } from '@strata/runtime';
import { BoundedWorker } from '@strata/runtime/bounded-worker';
import { TypeCheckFailed } from './errors.js';
import { COMPILER_MISSING, COMPILER_UNSUPPORTED, type TypecheckRequest } from './typecheck-protocol.js';

/** One problem the compiler found in the code, at the code's own line and column (from 1). */
export interface TypeDiagnostic {
  readonly line: number;
  readonly column: number;
  readonly message: string;
  /** TypeScript's code (`TS2339`). */
  readonly code: string;
}

/** How long one check may take, by default, in ms (the compiler's first load is not counted). */
export const DEFAULT_TYPECHECK_TIMEOUT_MS = 5_000;

// How long the checker's thread may take to load the compiler and parse the standard library.
const START_TIMEOUT_MS = 60_000;

// The compiler's heap: a check past it fails (TypeCheckFailed) instead of growing the host.
const CHECKER_HEAP_MB = 512;

let checker: BoundedWorker<TypecheckRequest, TypeDiagnostic[]> | undefined;

/** Options of {@link typecheck}. */
export interface TypecheckOptions {
  /** How long the check may take, in ms, before it is stopped (`TypeCheckFailed`). Default {@link DEFAULT_TYPECHECK_TIMEOUT_MS}. */
  readonly timeout?: number;
}

/** Throws {@link InvalidOption} unless `timeout` is a positive whole number of ms a timer can wait; `name` names it in the message. */
export function checkTypecheckTimeout(timeout: unknown, name: string): void {
  if (!Number.isInteger(timeout) || (timeout as number) <= 0 || (timeout as number) > 2 ** 31 - 1) {
    throw new InvalidOption(`${name} must be a positive whole number of ms (got ${String(timeout)})`);
  }
}

/**
 * Type-checks `code` (a cell: top-level await allowed) against `declarations` (a bridge's
 * `declarations()`, or several joined), in the checker's worker thread. Resolves to the problems,
 * none when it checks.
 *
 * ```ts
 * const diagnostics = await typecheck('await tools.forecast({})', bridge.declarations());
 * formatDiagnostics(diagnostics); // "1:13 TS2339 Property 'forecast' does not exist on type …"
 * ```
 *
 * Rejects with `InvalidOption` (from `@strata/runtime`) when the `typescript` package is not
 * installed or its version is not supported (the message names it), or for a bad `timeout`;
 * {@link TypeCheckFailed} when the check runs past `timeout` or the compiler fails on the code.
 */
export async function typecheck(
  code: string,
  declarations: string,
  language: 'javascript' | 'typescript' = 'javascript',
  options: TypecheckOptions = {},
): Promise<TypeDiagnostic[]> {
  if (typeof code !== 'string' || typeof declarations !== 'string') throw new InvalidOption('typecheck: code and declarations must be strings');
  if (language !== 'javascript' && language !== 'typescript')
    throw new InvalidOption(`typecheck: language must be 'javascript' or 'typescript' (got ${String(language)})`);
  const timeout = options.timeout ?? DEFAULT_TYPECHECK_TIMEOUT_MS;
  checkTypecheckTimeout(timeout, 'typecheck: timeout (typecheckTimeout)');
  checker ??= new BoundedWorker({
    script: new URL('./typecheck-worker.js', import.meta.url),
    startTimeout: START_TIMEOUT_MS,
    resourceLimits: { maxOldGenerationSizeMb: CHECKER_HEAP_MB },
  });
  const outcome = await checker.run({ code, declarations, language }, timeout);
  switch (outcome.status) {
    case 'ok':
      return outcome.value;
    case 'timeout':
      throw new TypeCheckFailed(
        `the type check took longer than ${timeout} ms (typecheckTimeout) and was stopped: simplify or split the code, raise typecheckTimeout, or run it without typecheck`,
      );
    case 'crashed':
      throw new TypeCheckFailed(
        `the type checker failed on this code (its thread died: ${outcome.message}): simplify or split the code, or run it without typecheck`,
      );
    case 'unavailable':
      throw new TypeCheckFailed(`the type checker's worker thread could not be started (${outcome.message}); nothing was checked`);
    case 'error': {
      const { code: errorCode, name, message } = outcome.error;
      if (errorCode === COMPILER_MISSING || errorCode === COMPILER_UNSUPPORTED) throw new InvalidOption(message);
      throw new TypeCheckFailed(
        `the type checker failed on this code (${name}: ${message.split('\n', 1)[0]}), most likely because it is nested too deeply: simplify it, or run it without typecheck`,
      );
    }
  }
}

/** Terminates the checker's thread (a later check starts a new one): for tests that count threads. */
export async function closeTypechecker(): Promise<void> {
  await checker?.close();
}

/** Diagnostics as the text of an error: one line each, `line:column TS2339 message`. */
export function formatDiagnostics(diagnostics: readonly TypeDiagnostic[]): string {
  return diagnostics.map((d) => `${d.line > 0 ? `${d.line}:${d.column} ` : ''}${d.code} ${d.message}`).join('\n');
}
