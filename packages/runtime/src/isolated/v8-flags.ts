/**
 * The command-line flags of the worker process: the hardening every worker runs with, and the
 * validation of the V8 flags a host passes in `v8Flags`.
 *
 * The worker is started as `node ...flags.node ...flags.v8 <worker script>` (with an empty
 * environment, so no `NODE_OPTIONS` can add to it), where `flags = buildWorkerFlags(options)`.
 * Node passes the V8 flags to V8 before V8 starts; after that `--freeze-flags-after-init` makes
 * any further flag change a fatal error (`v8.setFlagsFromString` aborts the process), so these
 * flags are what the worker runs with for its whole life.
 *
 * Pure: no I/O; the flags V8 knows come from the generated {@link V8_FLAG_CATALOG}.
 *
 * @module
 */

import { InvalidOption } from '../errors.js';
import { V8_FLAG_CATALOG, V8_FLAG_CATALOG_SOURCE, type V8FlagType } from './v8-flag-catalog.js';

/** Backtracks a regular expression may take before V8 re-runs it on its linear-time engine. V8's own default, pinned. */
export const REGEXP_BACKTRACKS_BEFORE_FALLBACK = 50_000;

/** The V8 flag of the `jitless` option (on by default): no executable memory at run time, and so no WebAssembly. */
export const JITLESS_V8_FLAG = '--jitless';

/**
 * The V8 flags every worker runs with, whatever its options, in command-line order:
 *
 * - `--enable-experimental-regexp-engine-on-excessive-backtracks` and
 *   `--regexp-backtracks-before-fallback=50000`: a catastrophic regular expression
 *   (`/(a*)*b/.test('a'.repeat(40))`) switches to V8's linear-time engine after 50 000
 *   backtracks and returns, instead of running until the deadline kills the worker.
 * - `--freeze-flags-after-init`: once V8 has started, changing a flag is a fatal error, so a
 *   bug that reaches V8's flag setter cannot switch a protection off. (Node itself sets
 *   `--no-freeze-flags-after-init` before it reads the command line; this flag overrides it.)
 */
export const ALWAYS_ON_V8_FLAGS: readonly string[] = Object.freeze([
  '--enable-experimental-regexp-engine-on-excessive-backtracks',
  `--regexp-backtracks-before-fallback=${REGEXP_BACKTRACKS_BEFORE_FALLBACK}`,
  '--freeze-flags-after-init',
]);

/** The hardening V8 flags of a worker with default options (`jitless` on): {@link JITLESS_V8_FLAG}, then {@link ALWAYS_ON_V8_FLAGS}. */
export const DEFAULT_HARDENING_V8_FLAGS: readonly string[] = Object.freeze([JITLESS_V8_FLAG, ...ALWAYS_ON_V8_FLAGS]);

/**
 * Node options (not V8 flags) every worker runs with. `--disable-sigusr1`: SIGUSR1 does not
 * open Node's inspector, which would give whoever can signal the worker a debugger on it.
 */
export const WORKER_NODE_OPTIONS: readonly string[] = Object.freeze(['--disable-sigusr1']);

/**
 * The V8 flag of `strictEval: true`, always last among the V8 flags so that no flag before it
 * can undo it. isolated-vm's contexts do not honour it (eval still works in them), which is why
 * Strata also tames eval in JavaScript; it is on the command line as well for the worker's own
 * Node context and as a second line should isolated-vm start honouring it.
 */
export const STRICT_EVAL_V8_FLAG = '--disallow-code-generation-from-strings';

/** One row of {@link V8_FLAG_POLICY}. */
export interface V8FlagRule {
  /**
   * Which flags the row refuses, written on their normalised spelling without a value:
   * `--name` matches `--name` and `--name=value`, `--no-name` the switched-off boolean,
   * `--[no-]name` both. `*` is any run of name characters, `{a,b}` either alternative. Whole
   * families (`--[no-]{expose-*,...}`) are refused in both forms: their `--no-` forms change
   * nothing, and Node takes some of them itself (`--no-expose-gc`, `--no-prof`). A row refuses
   * every spelling V8 takes of what it matches (`-name`, `_` for `-`, `--noname`), whatever
   * the value.
   */
  readonly pattern: string;
  /** Why it is refused and what to do instead: the error message says this. */
  readonly reason: string;
}

/** One {@link V8_FLAG_POLICY} row. */
function rule(pattern: string, reason: string): V8FlagRule {
  return Object.freeze({ pattern, reason });
}

/**
 * Why the seed rows of {@link V8_FLAG_POLICY} refuse. V8 draws the seed of the isolate's random
 * generator (behind `Math.random` and the hash seed of strings and property keys) and of its
 * memory-mapping hints afresh at every start, so each worker differs; these flags make every
 * worker the same (a Node 24 experiment: with `--random-seed=1` or `--predictable` two workers
 * draw the same `Math.random()` sequence and map V8's memory at the same addresses).
 */
const FIXES_RANDOMNESS =
  'it fixes a seed V8 randomises with, or makes V8 predictable, so that every worker is the same: ' +
  '--random-seed and --predictable fix the generator behind Math.random and the hash seed of strings and property keys, and the addresses V8 maps memory at; ' +
  '--hash-seed and --no-rehash-snapshot fix the hash seed. A guest could then predict Math.random(), precompute hash collisions (hash flooding) ' +
  "and know where V8's memory is (ASLR); remove it. For a reproducible Math.random, use the `clock: { seed }` option, which adds the clock layer " +
  "(it also freezes the guest's clock): it seeds the guest's Math.random only, not V8's hashing or memory layout";

/**
 * V8 flags that exist but are refused in `v8Flags`; the first matching row gives the reason.
 * Every other flag of {@link V8_FLAG_CATALOG} is accepted. It is a denylist over V8's ~850
 * flags: when a Node update changes the catalog, its test fails, and the new flags are reviewed
 * against this table (the test also fails when a row no longer matches any flag).
 */
export const V8_FLAG_POLICY: readonly V8FlagRule[] = Object.freeze([
  // Strata's own switches: each is set in one place, so nothing can contradict it.
  rule('--[no-]jitless', 'the JIT is governed by the `jitless` option (default true): pass `jitless: false` instead'),
  rule(
    '--[no-]disallow-code-generation-from-strings',
    "strict eval is the `strictEval` option: isolated-vm's contexts ignore this V8 flag, so Strata puts it last on the command line and also tames eval in JavaScript; pass `strictEval: true` instead",
  ),
  rule(
    '--no-{freeze-flags-after-init,enable-experimental-regexp-engine-on-excessive-backtracks}',
    'it would switch off hardening every worker runs with; remove it',
  ),
  rule('--regexp-backtracks-before-fallback', `Strata pins the linear-time regexp fallback at ${REGEXP_BACKTRACKS_BEFORE_FALLBACK} backtracks; remove it`),

  // Limits that belong to Strata's options.
  rule(
    '--{max-old-space-size,max-semi-space-size,min-semi-space-size,max-heap-size,initial-heap-size,initial-old-space-size,max-shared-heap-size,initial-shared-heap-size}',
    "heap sizes are the `maxHeapSize` (guest heap) and `maxMemory` (worker process) options: these flags size the worker's own heap and can silently lower the guest's (--max-heap-size=16 makes a 128 MiB isolate die at 16 MiB); use those options instead",
  ),
  rule(
    '--stack-size',
    "V8 trusts it: raised past the real stack, deep recursion crashes the worker with SIGSEGV instead of throwing RangeError (in the worker's own code, and in guest code isolated-vm runs on the worker's main thread, as its synchronous calls do); remove it",
  ),

  // Code V8 does not ship.
  rule(
    '--{harmony,harmony-*,js-*,future,*-future,turbolev,turbolev-*,json-stringify-fast-path,regexp-possessive-quantifier}',
    'it turns on V8 code that is not shipped (in-progress or staged language features, or a compiler tier): not hardened for untrusted code, and some features add globals Strata does not tame (ShadowRealm brings fresh intrinsics and its own evaluate). Shipped features are on already; to switch features off, --no-js-shipping, --no-harmony-shipping and --no-js-<feature> / --no-harmony-<feature> are accepted',
  ),
  rule(
    '--{wasm-staging,experimental-wasm-*,wasm-jitless*}',
    'it turns on unshipped WebAssembly features, or the Wasm interpreter that would bring WebAssembly back under jitless (WebAssembly memory is outside every Strata limit); remove it',
  ),

  // V8 internals within the guest's reach; memory-safety checks off.
  rule(
    '--[no-]{expose-*,allow-natives-*,allow-unsafe-function-constructor}',
    "it puts V8 internals within the guest's reach (gc(), %-natives, the memory corruption API, ...); remove it",
  ),
  rule(
    '--no-{fixed-array-bounds-checks,turbo-typer-hardening,wasm-bounds-checks,wasm-stack-checks,memory-protection-keys}',
    'it switches off a safety check V8 ships on (bounds checks, typer hardening, protection keys for code memory); remove it',
  ),
  rule(
    '--{disable-write-barriers,mock-arraybuffer-allocator*,multi-mapped-mock-allocator,v8-os-page-size,shared-heap,shared-string-table}',
    'it makes memory unsafe or shares it between isolates; remove it',
  ),

  // Randomisation: every worker draws its own seeds. Whole name families, so that a seed flag a
  // later V8 adds is refused too: *seed* is --random-seed, --hash-seed, --fuzzer-random-seed and
  // --testing-prng-seed; *predictable* also --predictable-and-random-seed-is-0, through which
  // --predictable sets random_seed=12347, and --verify-predictable, which implies --predictable.
  rule('--[no-]{*seed*,*predictable*,*suppress-randomness}', FIXES_RANDOMNESS),
  rule('--no-{rehash-snapshot,randomize-*}', FIXES_RANDOMNESS),

  // The worker's output channels and files belong to the supervisor.
  rule(
    '--[no-]{trace*,turboshaft-trace-*,minor-ms-trace-*,stack-trace-on-illegal,*print*,log*,prof,prof-*,ll-prof,perf-*,perfetto-*,gdbjit*,dump-*,redirect-code-traces*,heap-snapshot-on-*,profile-deserialization,profile-heap-snapshot,vtune-*,etw-*,enable-etw-*,interpreted-frames-native-stack,rcs*,runtime-call-stats,*-stats*,*-statistics,map-counters,gc-fake-mmap,gc-verbose,turbo-profiling*,help}',
    "diagnostic output: V8 writes it to the worker's stdout and stderr, which carry Strata's protocol and error reports, or to files the sandboxed worker cannot write; debug with the in-process Runtime instead",
  ),

  // V8's flag machinery, its test, debug and fuzzing modes, and its build tools.
  rule(
    '--[no-]{experimental,abort-on-contradictory-flags,exit-on-contradictory-flags,allow-overwriting-for-next-flag}',
    "V8's flag machinery (--exit-on-contradictory-flags would make a worker exit with status 0 on a contradiction); remove it",
  ),
  rule(
    '--[no-]{*stress*,*always-*,force-*,*testing*,test-*,*assert*,*break-on-entry,local-off-stack-check,strict-termination-checks,*fuzz*,sandbox-*,verify-*,turbo-verify*,*gc-interval,deopt-every-n-times,debug-code,slow-debug-code,enable-slow-asserts,check-handle-count,slow-histograms,manual-evacuation-candidates-selection,randomize-all-allocations,turboshaft-enable-debug-features,csa-trap-on-node,parse-only,abort-on-*}',
    'a V8 test, debug or fuzzing mode (some abort the process, some skip checks); remove it',
  ),
  rule(
    '--{embedded-src,embedded-variant,startup-src,startup-blob,target-arch,target-os,target-is-simulator,turbo-profiling-input,turbo-log-builtins-count-input,dump-builtins-hashes-to-file,reorder-builtins,extensible-ro-snapshot}',
    "a flag of V8's build tools (mksnapshot); remove it",
  ),
]);

/** Options of {@link buildWorkerFlags}. */
export interface WorkerFlagOptions {
  /** Run V8 without a JIT (and so without WebAssembly). Default true. */
  jitless?: boolean;
  /** Forbid code generation from strings: adds {@link STRICT_EVAL_V8_FLAG}, last. Default false. */
  strictEval?: boolean;
  /** The host's own V8 flags, validated by {@link validateV8Flags}. Default none. */
  v8Flags?: readonly string[];
}

/** The worker's flags: the command line is `node ...node ...v8 <worker script>`. */
export interface WorkerFlags {
  /** V8 flags, in order: hardening, the host's `v8Flags` (normalised), then the strict-eval flag. */
  v8: string[];
  /** Node options; they must come before the script. */
  node: string[];
}

/** Options of {@link validateV8Flags}. */
export interface ValidateV8FlagsOptions {
  /** Whether the worker runs with `strictEval: true` (only changes what a refusal says). Default false. */
  strictEval?: boolean;
}

/**
 * The exact flags of a worker, in order. V8 applies its flags in order and the last mention of
 * a flag wins, so the hardening comes first, the host's validated `v8Flags` after it (none of
 * which may switch the hardening off), and `--disallow-code-generation-from-strings` last.
 * `--freeze-flags-after-init` takes effect when V8 initialises, after every command-line flag has
 * been applied, so its place only matters against its own negation, which is refused.
 *
 * @throws InvalidOption for an unknown option key, a non-boolean `jitless` or `strictEval`, or a
 *   refused V8 flag (see {@link validateV8Flags}).
 */
export function buildWorkerFlags(options: WorkerFlagOptions = {}): WorkerFlags {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new InvalidOption(`worker flag options must be an object (got ${describe(options)})`);
  }
  for (const key of Object.keys(options)) {
    if (key !== 'jitless' && key !== 'strictEval' && key !== 'v8Flags') {
      throw new InvalidOption(`unknown option ${JSON.stringify(key)}; known options: jitless, strictEval, v8Flags`);
    }
  }
  const jitless = options.jitless ?? true;
  const strictEval = options.strictEval ?? false;
  if (typeof jitless !== 'boolean') throw new InvalidOption(`jitless must be true or false (got ${describe(jitless)})`);
  if (typeof strictEval !== 'boolean') throw new InvalidOption(`strictEval must be true or false (got ${describe(strictEval)})`);
  const user = validateV8Flags(options.v8Flags ?? [], { strictEval });
  return {
    v8: [...(jitless ? DEFAULT_HARDENING_V8_FLAGS : ALWAYS_ON_V8_FLAGS), ...user, ...(strictEval ? [STRICT_EVAL_V8_FLAG] : [])],
    node: [...WORKER_NODE_OPTIONS],
  };
}

/**
 * Validates the host's V8 flags and returns them normalised: `--name`, `--no-name` or
 * `--name=value`, with dashes (V8 accepts `_` too, and `--noname` for `--no-name`).
 *
 * Each flag must be one array element, exist in the V8 of the Node the worker runs on
 * ({@link V8_FLAG_CATALOG}), not be refused by {@link V8_FLAG_POLICY} (checked as soon as the
 * name is known, so a refused flag says why in any spelling and with any value), be spelt
 * `--name` in lower case without spaces, and take `=value` exactly when it is not a boolean (a
 * well-formed value of its type). Anything else is refused, never ignored.
 *
 * @throws InvalidOption naming the first offending flag, with what to do instead.
 */
export function validateV8Flags(flags: readonly string[], options: ValidateV8FlagsOptions = {}): string[] {
  if (!Array.isArray(flags)) throw new InvalidOption(`v8Flags must be an array of strings (got ${describe(flags)})`);
  const strictEval = options.strictEval ?? false;
  if (typeof strictEval !== 'boolean') throw new InvalidOption(`strictEval must be true or false (got ${describe(strictEval)})`);
  return flags.map((flag: unknown, index) => normaliseFlag(flag, index, strictEval));
}

// --- parsing ----------------------------------------------------------------------------------

interface FlagSpec {
  readonly type: V8FlagType;
  readonly defaultValue: string;
}

const CATALOG: ReadonlyMap<string, FlagSpec> = new Map(V8_FLAG_CATALOG.map(([name, type, defaultValue]) => [name, { type, defaultValue }] as const));

const COMPILED_POLICY = V8_FLAG_POLICY.map((rule) => ({ rule, regex: globToRegExp(rule.pattern) }));

const BOOLEAN_TYPES: ReadonlySet<V8FlagType> = new Set(['bool', 'maybe_bool']);

function normaliseFlag(raw: unknown, index: number, strictEval: boolean): string {
  const where = `v8Flags[${index}]`;
  if (typeof raw !== 'string') throw new InvalidOption(`${where} must be a string (got ${describe(raw)})`);
  const refuse = (problem: string): never => {
    throw new InvalidOption(`${where} ${describe(raw)} ${problem}`);
  };
  if (/\s/u.test(raw)) {
    refuse('contains whitespace: pass each flag as its own array element, written --name or --name=value with no spaces');
  }
  // V8 also takes one leading dash: such a flag is resolved, so that a refused one says why.
  const dashes = raw.startsWith('--') ? 2 : raw.startsWith('-') ? 1 : 0;
  const twoDashes = (): never => refuse(`is not written as a V8 flag: write it with two leading dashes, --${raw.slice(dashes)}`);
  if (dashes === 0) twoDashes();
  const body = raw.slice(dashes);
  const eq = body.indexOf('=');
  const written = eq < 0 ? body : body.slice(0, eq);
  const value = eq < 0 ? undefined : body.slice(eq + 1);
  if (written === '') refuse('is not a flag: write --name or --name=value');
  if (/[A-Z]/u.test(written)) refuse(`is not a V8 flag: V8 flag names are lower case (--${written.toLowerCase()})`);
  if (!/^[a-z0-9_-]+$/u.test(written)) refuse('is not a V8 flag: a name has only a-z, 0-9, - and _');

  const name = written.replaceAll('_', '-');
  let base = name;
  let negated = false;
  if (!CATALOG.has(name)) {
    const stripped = name.startsWith('no-') ? name.slice(3) : name.startsWith('no') ? name.slice(2) : undefined;
    if (stripped !== undefined && CATALOG.has(stripped)) {
      base = stripped;
      negated = true;
    } else {
      const guess = closestFlag(name);
      refuse(
        `is not a V8 flag of Node ${V8_FLAG_CATALOG_SOURCE.node} (V8 ${V8_FLAG_CATALOG_SOURCE.v8})` +
          (guess === undefined ? '' : `; did you mean ${guess}?`) +
          ' v8Flags takes V8 flags only (`node --v8-options` lists them), not Node options',
      );
    }
  }
  const spec = CATALOG.get(base);
  if (spec === undefined) return refuse('is not a V8 flag'); // unreachable: base is in the catalog

  // The policy first: a refused flag is refused in every spelling and whatever its value
  // (--random-seed=0 too, and --random-seed on its own, whose value would be the next element).
  const key = negated ? `--no-${base}` : `--${base}`;
  const hit = COMPILED_POLICY.find(({ regex }) => regex.test(key));
  if (hit !== undefined) {
    const contradiction = strictEval && key === `--no-${STRICT_EVAL_V8_FLAG.slice(2)}` ? 'contradicts strictEval: true; ' : '';
    refuse(`is refused (${hit.rule.pattern}): ${contradiction}${hit.rule.reason}`);
  }
  if (dashes !== 2) twoDashes();

  let canonical: string;
  if (BOOLEAN_TYPES.has(spec.type)) {
    if (value !== undefined) {
      refuse(`gives a value to a boolean flag: write --${base} to switch it on or --no-${base} to switch it off`);
    }
    canonical = negated ? `--no-${base}` : `--${base}`;
  } else {
    if (negated) refuse(`is not a V8 flag: only boolean flags have a --no- form, and --${base} takes a value (${describeType(spec.type)})`);
    if (value === undefined) refuse(`needs a value: write --${base}=<${describeType(spec.type)}>`);
    const problem = checkValue(spec.type, value ?? '');
    if (problem !== undefined) refuse(`has an invalid value: --${base} takes ${problem}`);
    canonical = `--${base}=${value}`;
  }
  return canonical;
}

const INT_RANGE: Readonly<Record<string, readonly [bigint, bigint]>> = {
  int: [-(2n ** 31n), 2n ** 31n - 1n],
  uint: [0n, 2n ** 32n - 1n],
  uint64: [0n, 2n ** 64n - 1n],
  size_t: [0n, 2n ** 64n - 1n],
};

/** What is wrong with `value` for a flag of `type`, or undefined when it is well formed. */
function checkValue(type: V8FlagType, value: string): string | undefined {
  const range = INT_RANGE[type];
  if (range !== undefined) {
    const [min, max] = range;
    const expected = `an integer from ${min} to ${max}`;
    if (!/^-?(?:0|[1-9][0-9]*)$/u.test(value)) return `${expected} (got ${JSON.stringify(value)})`;
    const n = BigInt(value);
    return n < min || n > max ? `${expected} (got ${value})` : undefined;
  }
  if (type === 'float') {
    const ok = /^-?(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:e[+-]?[0-9]+)?$/iu.test(value) && Number.isFinite(Number(value));
    return ok ? undefined : `a finite decimal number (got ${JSON.stringify(value)})`;
  }
  // string: printable ASCII without spaces (whitespace was refused already).
  return /^[!-~]+$/u.test(value) ? undefined : `a non-empty value of printable ASCII (got ${JSON.stringify(value)})`;
}

function describeType(type: V8FlagType): string {
  return type === 'string' ? 'text' : type === 'float' ? 'number' : 'integer';
}

/** Compiles a {@link V8FlagRule.pattern} to an anchored regular expression. */
function globToRegExp(pattern: string): RegExp {
  let source = '';
  let depth = 0;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] ?? '';
    if (pattern.startsWith('[no-]', i)) {
      source += '(?:no-)?';
      i += 4;
    } else if (c === '*') source += '[a-z0-9-]*';
    else if (c === '{') {
      source += '(?:';
      depth++;
    } else if (c === '}' && depth > 0) {
      source += ')';
      depth--;
    } else if (c === ',' && depth > 0) source += '|';
    else if (/[a-z0-9-]/u.test(c)) source += c;
    else throw new Error(`bad character ${JSON.stringify(c)} in V8 flag pattern ${pattern}`);
  }
  if (depth !== 0) throw new Error(`unbalanced braces in V8 flag pattern ${pattern}`);
  return new RegExp(`^${source}$`, 'u');
}

/** The catalog flag closest to an unknown name, when one is close enough to be a typo. */
function closestFlag(name: string): string | undefined {
  const negated = name.startsWith('no-');
  const target = negated ? name.slice(3) : name;
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(target.length / 5)) + 1;
  for (const candidate of CATALOG.keys()) {
    if (Math.abs(candidate.length - target.length) >= bestDistance) continue;
    const distance = editDistance(target, candidate, bestDistance);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  if (best === undefined) return undefined;
  return negated && BOOLEAN_TYPES.has(CATALOG.get(best)?.type ?? 'int') ? `--no-${best}` : `--${best}`;
}

/** Levenshtein distance, or `limit` once it is known to be at least `limit`. */
function editDistance(a: string, b: string, limit: number): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const cell = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost);
      current.push(cell);
      rowMin = Math.min(rowMin, cell);
    }
    if (rowMin >= limit) return limit;
    previous = current;
  }
  return Math.min(previous[b.length] ?? limit, limit);
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
  if (typeof value === 'bigint') return `${value}n`;
  if (value === null || typeof value !== 'object') return String(value);
  return Array.isArray(value) ? 'an array' : 'an object';
}
