/**
 * The Seatbelt profile, as a pure function of what the worker may read: SBPL text that denies
 * everything by default and allows only what an already-started Node worker needs. Also the rules
 * as data, and {@link checkProfile}, which reads SBPL text back and names anything it allows
 * beyond that (the tests use it, and `apply` runs it before `sandbox_init`).
 *
 * @module
 */

/** One path the worker may read. */
export interface ReadRule {
  /**
   * An absolute, normalised real path. Seatbelt matches the path the kernel resolved, after
   * symlinks (`/tmp` is `/private/tmp` on macOS), so a path through a symlink would never match.
   */
  readonly path: string;
  /** `'subpath'`: the directory and everything beneath it; `'literal'`: exactly this path. */
  readonly kind: 'subpath' | 'literal';
}

/** What {@link seatbeltProfile} is computed from. */
export interface ProfileInput {
  /** What the worker may read (data and metadata); nothing else is readable. Order does not matter. */
  readonly reads: readonly ReadRule[];
}

/** A filter of a rule: a path, a sysctl name, or `(target self)`. */
export type ProfileFilter =
  | {
      /** `subpath`/`literal`: a path rule; `sysctl-name`: one sysctl. */
      readonly kind: 'subpath' | 'literal' | 'sysctl-name';
      /** The path or the sysctl name. */
      readonly value: string;
    }
  | {
      /** Which process a signal or process-information rule is about. */
      readonly kind: 'target';
      /** Only ever the process itself. */
      readonly value: 'self';
    };

/** One rule of the profile, as data. An allow rule always has at least one filter. */
export interface ProfileRule {
  /** `allow` or `deny`; a later rule wins over an earlier one it overlaps. */
  readonly action: 'allow' | 'deny';
  /** Seatbelt operation names (`file-read-data`, `sysctl-read`, `signal`...). */
  readonly operations: readonly string[];
  /** What the rule is limited to; none for the denials. */
  readonly filters: readonly ProfileFilter[];
  /** Why the rule is there (written above it in the profile as a comment). */
  readonly why: string;
}

/** A sysctl the worker may read, and why. */
export interface SysctlName {
  /** The sysctl's name, e.g. `hw.ncpu`. */
  readonly name: string;
  /** Who reads it after start, and for what. */
  readonly why: string;
}

/**
 * The sysctls the worker may read: what Node, libuv and V8 ask for after start (a new isolate's
 * heap, a thread pool started late). uname() (`kern.hostname`, `kern.osrelease`...), the boot
 * time, the load average and CPU model stay unreadable: nothing in the worker asks for them
 * after start, and the host name identifies the machine.
 */
export const SYSCTL_NAMES: readonly SysctlName[] = Object.freeze(
  [
    { name: 'hw.activecpu', why: "sysconf(_SC_NPROCESSORS_ONLN): libuv's uv_available_parallelism(), V8's processor count" },
    { name: 'hw.memsize', why: "V8's SysInfo::AmountOfPhysicalMemory() and libuv's uv_get_total_memory(), asked when a heap is sized" },
    { name: 'hw.ncpu', why: 'sysconf(_SC_NPROCESSORS_CONF) and std::thread::hardware_concurrency() (isolated-vm, V8 platform sizing)' },
    {
      name: 'hw.pagesize',
      why: 'getpagesize() asks it once and caches it; allowed in case the first ask comes after the profile (V8 reserves every isolate heap in pages)',
    },
    { name: 'hw.pagesize_compat', why: "the page size under its compatibility name (Chromium's profiles allow both)" },
  ].map((s) => Object.freeze(s)),
);

/** The operations an allow rule of this profile may name; anything else is refused by {@link checkProfile}. */
export const ALLOWED_OPERATIONS: readonly string[] = Object.freeze([
  'file-read-data',
  'file-read-metadata',
  'sysctl-read',
  'signal',
  'process-info-pidinfo',
  'process-info-setcontrol',
]);

/** What the profile must never allow (a partial list for tests and reviewers: {@link checkProfile} allows only {@link ALLOWED_OPERATIONS}). */
export const FORBIDDEN_OPERATIONS: readonly string[] = Object.freeze([
  'default',
  'file-read*',
  'file-read-xattr',
  'file-write*',
  'file-write-data',
  'file-write-create',
  'file-write-unlink',
  'file-ioctl',
  'file-map-executable',
  'process-fork',
  'process-exec',
  'process-exec*',
  'network*',
  'network-outbound',
  'network-inbound',
  'network-bind',
  'system-socket',
  'mach-lookup',
  'mach-register',
  'ipc-posix-shm*',
  'ipc-posix-sem',
  'iokit-open',
  'iokit-get-properties',
  'nvram*',
  'process-info*',
  'sysctl-write',
  'user-preference-read',
]);

const FILE_OPERATIONS = ['file-read-data', 'file-read-metadata'];
const SELF_OPERATIONS = ['signal', 'process-info-pidinfo', 'process-info-setcontrol'];

/** Checks one read path; throws a TypeError naming what is wrong. */
export function checkProfilePath(path: unknown, where = 'seatbeltProfile()'): string {
  if (typeof path !== 'string') throw new TypeError(`${where}: a read path must be a string; got ${typeof path}`);
  const shown = JSON.stringify(path);
  if (!path.startsWith('/')) throw new TypeError(`${where}: read paths must be absolute; got ${shown}`);
  if (path.includes('\0')) throw new TypeError(`${where}: read paths must not contain NUL; got ${shown}`);
  // A double quote or a backslash would end or escape the SBPL string the path is written in;
  // control characters have no business in a path and could hide a line from a reviewer.
  if (/["\\]/.test(path))
    throw new TypeError(`${where}: read paths must not contain a double quote or a backslash (they would change the profile's SBPL); got ${shown}`);
  if (/[\u0001-\u001f\u007f]/.test(path)) throw new TypeError(`${where}: read paths must not contain control characters; got ${shown}`);
  if (path === '/') throw new TypeError(`${where}: the root directory cannot be a read path (it would allow reading everything)`);
  if (path.endsWith('/') || path.includes('//') || path.split('/').some((part) => part === '.' || part === '..')) {
    throw new TypeError(`${where}: read paths must be normalised (no trailing /, no //, no . or .. components); got ${shown}`);
  }
  return path;
}

function isBeneath(path: string, parent: string): boolean {
  return path === parent || path.startsWith(`${parent}/`);
}

/**
 * The read rules as the profile writes them: checked, sorted by path (so the profile does not
 * depend on the order they were found in), without duplicates or entries beneath a subpath.
 */
export function normalizeReads(reads: readonly ReadRule[]): ReadRule[] {
  if (!Array.isArray(reads)) throw new TypeError('seatbeltProfile(): input.reads must be an array of { path, kind }');
  const checked = reads.map((r: Partial<ReadRule> | null) => {
    if (r === null || typeof r !== 'object') throw new TypeError('seatbeltProfile(): each read must be { path, kind }');
    if (r.kind !== 'subpath' && r.kind !== 'literal')
      throw new TypeError(`seatbeltProfile(): a read's kind must be 'subpath' or 'literal'; got ${JSON.stringify(r.kind)}`);
    return { path: checkProfilePath(r.path), kind: r.kind };
  });
  checked.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : a.kind === b.kind ? 0 : a.kind === 'subpath' ? -1 : 1));
  const subpaths = checked.filter((r) => r.kind === 'subpath');
  const out: ReadRule[] = [];
  for (const rule of checked) {
    if (out.some((o) => o.path === rule.path)) continue;
    if (subpaths.some((s) => s.path !== rule.path && isBeneath(rule.path, s.path))) continue;
    out.push(Object.freeze(rule));
  }
  return out;
}

/** The profile's rules, in order (a later rule wins over an earlier one it overlaps). */
export function profileRules(input: ProfileInput): ProfileRule[] {
  if (input === null || typeof input !== 'object') throw new TypeError('seatbeltProfile(): input must be { reads }');
  const reads = normalizeReads(input.reads);
  const rules: ProfileRule[] = [
    {
      action: 'deny',
      operations: ['default'],
      filters: [],
      why: 'Everything not allowed below is refused: files, network, fork and exec, Mach services, IOKit, IPC.',
    },
    {
      action: 'deny',
      operations: ['process-info*', 'iokit-get-properties', 'nvram*'],
      filters: [],
      // crbug.com/799149: some macOS versions leave these out of (deny default).
      why: "Not covered by (deny default) on every macOS: other processes' arguments and environment, the hardware UUID, NVRAM.",
    },
  ];
  // An allow without filters would allow every path: with no reads, no file rule at all.
  if (reads.length > 0) {
    rules.push({
      action: 'allow',
      operations: FILE_OPERATIONS,
      filters: reads.map((r) => ({ kind: r.kind, value: r.path })),
      why: "Reads (data and metadata, no xattrs) of the runtime's own files only: Node, the installed dependencies, the @strata packages, the layer's readPaths.",
    });
  }
  rules.push(
    {
      action: 'allow',
      operations: ['sysctl-read'],
      filters: SYSCTL_NAMES.map((s) => ({ kind: 'sysctl-name', value: s.name })),
      why: `The sysctls Node, libuv and V8 read after start: ${SYSCTL_NAMES.map((s) => s.name).join(', ')} (page size, CPU count, memory size).`,
    },
    {
      action: 'allow',
      operations: ['signal'],
      filters: [{ kind: 'target', value: 'self' }],
      why: 'Signals to the worker itself only (Node and the runtime may signal themselves); never the parent or anyone else.',
    },
    {
      action: 'allow',
      operations: ['process-info-pidinfo', 'process-info-setcontrol'],
      filters: [{ kind: 'target', value: 'self' }],
      why: 'Its own process information only: threads name themselves (pthread_setname_np is a proc_info setcontrol call) and libraries read their own pidinfo.',
    },
  );
  return rules.map((r) =>
    Object.freeze({ ...r, operations: Object.freeze([...r.operations]), filters: Object.freeze(r.filters.map((f) => Object.freeze({ ...f }))) }),
  );
}

function renderFilter(filter: ProfileFilter): string {
  return filter.kind === 'target' ? `(target ${filter.value})` : `(${filter.kind} "${filter.value}")`;
}

/**
 * The SBPL text of the worker's Seatbelt profile: `(version 1)`, `(deny default)`, then only the
 * rules of {@link profileRules}. Deterministic: the same reads, in any order, give the same text.
 * Throws a TypeError for a read path that is not absolute and normalised, is `/`, or holds NUL,
 * a control character, a double quote or a backslash.
 */
export function seatbeltProfile(input: ProfileInput): string {
  const lines = ['(version 1)', '; @strata/layer-seatbelt: deny by default; every allow says why.'];
  for (const rule of profileRules(input)) {
    lines.push(`; ${rule.why}`);
    const head = `(${rule.action} ${rule.operations.join(' ')}`;
    if (rule.filters.length === 0) lines.push(`${head})`);
    else lines.push(head, ...rule.filters.map((f, i) => `  ${renderFilter(f)}${i === rule.filters.length - 1 ? ')' : ''}`));
  }
  return `${lines.join('\n')}\n`;
}

// --- reading SBPL back ----------------------------------------------------------------------

/** A parsed SBPL form: a symbol, a string literal, or a list. */
export type SbplForm =
  | string
  | {
      /** The value of a string literal, unescaped. */
      readonly string: string;
    }
  | readonly SbplForm[];

/** Parses the SBPL subset the profile is written in (lists, symbols, "strings", ; comments). Throws a SyntaxError. */
export function parseSbpl(text: string): SbplForm[] {
  let at = 0;
  const stack: SbplForm[][] = [[]];
  while (at < text.length) {
    const c = text[at]!;
    if (/\s/.test(c)) at++;
    else if (c === ';') {
      const end = text.indexOf('\n', at);
      at = end < 0 ? text.length : end + 1;
    } else if (c === '(') {
      stack.push([]);
      at++;
    } else if (c === ')') {
      if (stack.length < 2) throw new SyntaxError(`SBPL: unbalanced ) at offset ${at}`);
      const list = stack.pop()!;
      stack[stack.length - 1]!.push(list);
      at++;
    } else if (c === '"') {
      let value = '';
      at++;
      for (;;) {
        if (at >= text.length) throw new SyntaxError('SBPL: unterminated string');
        const d = text[at]!;
        if (d === '"') break;
        if (d === '\\') {
          at++;
          if (at >= text.length) throw new SyntaxError('SBPL: unterminated string');
        }
        value += text[at]!;
        at++;
      }
      at++;
      stack[stack.length - 1]!.push({ string: value });
    } else {
      const match = /^[^\s()";]+/.exec(text.slice(at))!;
      stack[stack.length - 1]!.push(match[0]);
      at += match[0].length;
    }
  }
  if (stack.length !== 1) throw new SyntaxError('SBPL: unbalanced (');
  return stack[0]!;
}

const isList = (form: SbplForm): form is readonly SbplForm[] => Array.isArray(form);
const show = (form: SbplForm): string => (isList(form) ? `(${form.map(show).join(' ')})` : typeof form === 'string' ? form : JSON.stringify(form.string));

/** The problems with one allow rule's filters, for operations of one kind. */
function filterProblems(operations: readonly string[], filters: readonly SbplForm[]): string[] {
  const problems: string[] = [];
  const what = `(allow ${operations.join(' ')} ...)`;
  if (filters.length === 0) return [`${what} has no filter: it would allow every ${operations.join('/')}`];
  const kinds = operations.every((o) => FILE_OPERATIONS.includes(o))
    ? ['subpath', 'literal']
    : operations.every((o) => o === 'sysctl-read')
      ? ['sysctl-name']
      : operations.every((o) => SELF_OPERATIONS.includes(o))
        ? ['target']
        : undefined;
  if (kinds === undefined) return [`${what} mixes operations of different kinds`];
  for (const filter of filters) {
    const ok =
      isList(filter) &&
      filter.length === 2 &&
      typeof filter[0] === 'string' &&
      kinds.includes(filter[0]) &&
      (filter[0] === 'target' ? filter[1] === 'self' : typeof filter[1] === 'object' && !isList(filter[1]));
    if (!ok) {
      problems.push(
        `${what} has the filter ${show(filter)}; only ${kinds.map((k) => (k === 'target' ? '(target self)' : `(${k} "...")`)).join(' or ')} may appear there`,
      );
      continue;
    }
    const value = (filter[1] as { string: string }).string;
    if (filter[0] === 'subpath' || filter[0] === 'literal') {
      try {
        checkProfilePath(value, 'checkProfile()');
      } catch (error) {
        problems.push((error as Error).message);
      }
    }
    if (filter[0] === 'sysctl-name' && !SYSCTL_NAMES.some((s) => s.name === value))
      problems.push(`${what} allows the sysctl ${JSON.stringify(value)}, which is not in SYSCTL_NAMES`);
  }
  return problems;
}

/**
 * Reads SBPL text back and names everything that breaks the profile's promises: it must start
 * with `(version 1)` then `(deny default)`; an allow may only name {@link ALLOWED_OPERATIONS},
 * always with filters: file reads of absolute paths, sysctls of {@link SYSCTL_NAMES}, signals and
 * process information of the process itself. Returns the problems (empty when there are none).
 */
export function checkProfile(text: string): string[] {
  let forms: SbplForm[];
  try {
    forms = parseSbpl(text);
  } catch (error) {
    return [(error as Error).message];
  }
  const problems: string[] = [];
  if (forms.length < 2 || show(forms[0]!) !== '(version 1)' || show(forms[1]!) !== '(deny default)')
    problems.push('the profile must start with (version 1) (deny default)');
  for (const form of forms) {
    if (!isList(form) || form.length === 0 || typeof form[0] !== 'string') {
      problems.push(`unexpected top-level form ${show(form)}`);
      continue;
    }
    const [head, ...rest] = form as [string, ...SbplForm[]];
    if (head === 'version' || head === 'deny') continue;
    if (head !== 'allow') {
      problems.push(`unexpected top-level form (${head} ...): only version, deny and allow are written`);
      continue;
    }
    const operations = rest.filter((f): f is string => typeof f === 'string');
    const filters = rest.filter((f) => typeof f !== 'string');
    if (operations.length === 0) problems.push(`an allow rule names no operation: ${show(form)}`);
    const forbidden = operations.filter((o) => !ALLOWED_OPERATIONS.includes(o));
    if (forbidden.length > 0) {
      problems.push(`the profile allows ${forbidden.join(', ')}`);
      continue;
    }
    problems.push(...filterProblems(operations, filters));
  }
  return problems;
}
