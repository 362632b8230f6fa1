/**
 * Milliseconds on the machine's monotonic clock, for measuring spans in the worker. Not
 * `performance.now()`: its first use loads `perf_hooks`, which costs a `--jitless` worker several
 * milliseconds of start-up to compile.
 *
 * @module
 */

/** Now, in milliseconds (fractional) since an arbitrary moment; only differences mean anything. */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}
