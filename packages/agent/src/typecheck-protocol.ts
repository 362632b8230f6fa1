/**
 * What typecheck.ts and its worker thread (typecheck-worker.ts) share: kept apart from both, so
 * that neither loads the other.
 *
 * @module
 */

/** What the parent asks: one check. */
export interface TypecheckRequest {
  readonly code: string;
  readonly declarations: string;
  readonly language: 'javascript' | 'typescript';
}

/** The `typescript` versions whose compiler API the checker uses (TypeScript 7, the native port, has none). */
export const SUPPORTED_TYPESCRIPT = '>=5.5 <7';

/** The worker's error code for a compiler that is not installed. */
export const COMPILER_MISSING = 'ERR_STRATA_TYPESCRIPT_MISSING';

/** The worker's error code for a compiler whose version is not supported. */
export const COMPILER_UNSUPPORTED = 'ERR_STRATA_TYPESCRIPT_UNSUPPORTED';
