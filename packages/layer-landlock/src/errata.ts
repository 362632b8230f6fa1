/**
 * Landlock errata: fixes the kernel reports with `landlock_create_ruleset(NULL, 0,
 * LANDLOCK_CREATE_RULESET_ERRATA)` (mainline Linux 6.15; distributions backport it to older
 * kernels, e.g. Debian's 6.1.192 answers it, so the release alone does not say whether the query
 * works: EINVAL means this kernel lacks it). Bit N-1 set: erratum N is fixed in the running
 * kernel (1: TCP rights no longer apply to other stream sockets, ABI 4; 2: scoped signals between
 * threads of one process, ABI 6; 3: disconnected directories, ABI 1). Reported, never acted on:
 * the kernel docs advise against weakening a sandbox because an erratum is not fixed.
 *
 * @module
 */
// node:util, not node:os's errno table: the worker has node:util loaded, and node:os costs a
// --jitless worker about a millisecond of every start to compile (the layer is Linux only).
import { getSystemErrorName } from 'node:util';

/** The errata bitmask, or `'unknown (…)'` saying why the kernel could not be asked. */
export type Errata = number | string;

/** Linux's EINVAL, on every architecture. */
const EINVAL = 22;

/** `EINVAL` for 22, and so on; the number itself when the name is unknown. */
export function errnoName(errno: number): string {
  const name = Number.isInteger(errno) && errno > 0 ? getSystemErrorName(-errno) : '';
  return /^E[A-Z0-9]+$/.test(name) ? name : `errno ${errno}`;
}

/** What the kernel answered (the bitmask, or -errno), as an {@link Errata}. */
export function errataFromKernel(answer: number): Errata {
  if (answer >= 0) return answer;
  const errno = -answer;
  return errno === EINVAL ? 'unknown (EINVAL: the kernel predates LANDLOCK_CREATE_RULESET_ERRATA, Linux 6.15)' : `unknown (${errnoName(errno)})`;
}

/** What an older strata-landlock build, whose `--print-abi` printed the ABI only, tells about errata. */
export const ERRATA_FROM_OLD_HELPER: Errata = 'unknown (this strata-landlock build predates errata reporting: run `npm rebuild @strata/layer-landlock`)';
