/**
 * The seccomp filter as this package's build compiled it (scripts/make-filter-templates.mjs writes
 * dist/src/filter-templates.json): for each architecture, and with or without io_uring_enter and
 * io_uring_register, the program {@link compileFilter} makes, with the worker's pid left out and
 * the instructions that compare against it listed. The worker fills in its pid and installs the
 * result, byte for byte what compileFilter would give it (tested for many pids), without loading
 * the policy, the kernel's call tables or the compiler: under `--jitless` they cost every worker's
 * start about 4 ms to load and run. The test-fire child installs the same bytes.
 *
 * The file is made from the same build's compiler, so it cannot drift from the policy; a missing or
 * malformed file is an error that names the fix, never a filter made some other way.
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { IoUringCalls } from './io-uring.js';
import type { Arch } from './syscall-table.js';

/** One compiled program, its pid left out. */
export interface FilterTemplate {
  /** struct sock_filter[] (8 bytes an instruction, little-endian), base64; the pid's slots hold 0. */
  readonly program: string;
  /** The instructions whose `k` is the worker's pid. */
  readonly pidSlots: readonly number[];
  /** What the layer reports of it (compileFilter's figures). */
  readonly instructions: number;
  readonly deniedCalls: number;
  readonly argRules: number;
  readonly highestReviewed: number;
}

/** Per architecture: the filter with io_uring's ring calls denied, and with them allowed (libuv holds rings). */
export interface ArchTemplates {
  readonly ioUringDenied: FilterTemplate;
  readonly ioUringEnterAllowed: FilterTemplate;
  /** The numbers of {@link WORKER_CALLS} on this architecture (the self-test's attempts, the io_uring check). */
  readonly numbers: Readonly<Record<string, number>>;
}

/** The build's file. */
export interface FilterTemplates {
  readonly format: typeof TEMPLATES_FORMAT;
  readonly arches: Readonly<Record<Arch, ArchTemplates>>;
}

/** The file's format, checked when it is read. */
export const TEMPLATES_FORMAT = 'strata-seccomp-templates 1';

/** The system calls the worker's half needs the numbers of: the self-test fires them, the io_uring check asks two. */
export const WORKER_CALLS: readonly string[] = Object.freeze([
  'bpf',
  'clone',
  'clone3',
  'close',
  'execve',
  'getpid',
  'io_uring_setup',
  'kill',
  'mount',
  'openat',
  'openat2',
  'ptrace',
  'socket',
  'truncate',
  'unshare',
]);

/** Where the build writes the templates: beside this module in dist/src. */
export const TEMPLATES_FILE = fileURLToPath(new URL('./filter-templates.json', import.meta.url));

const REBUILD = 'rebuild @strata/layer-seccomp (`npm run build` in its package, or reinstall it)';

let cached: FilterTemplates | undefined;

/** Reads and checks the build's templates (once per process). Throws naming the file and the fix. */
export function readFilterTemplates(file: string = TEMPLATES_FILE): FilterTemplates {
  if (file === TEMPLATES_FILE && cached !== undefined) return cached;
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new Error(`the seccomp filter templates cannot be read (${file}: ${(error as Error).message}); ${REBUILD}`);
  }
  const templates = checkTemplates(parsed, file);
  if (file === TEMPLATES_FILE) cached = templates;
  return templates;
}

function checkTemplates(value: unknown, file: string): FilterTemplates {
  const fail = (why: string): never => {
    throw new Error(`the seccomp filter templates in ${file} are not this package's (${why}); ${REBUILD}`);
  };
  const record = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (!record(value) || value['format'] !== TEMPLATES_FORMAT) fail(`format is not ${JSON.stringify(TEMPLATES_FORMAT)}`);
  const arches = (value as Record<string, unknown>)['arches'];
  if (!record(arches)) fail('no arches');
  for (const arch of ['x86_64', 'aarch64'] as const) {
    const entry = (arches as Record<string, unknown>)[arch];
    if (!record(entry)) fail(`no ${arch}`);
    const { ioUringDenied, ioUringEnterAllowed, numbers } = entry as Record<string, unknown>;
    checkTemplate(ioUringDenied, `${arch} ioUringDenied`, fail);
    checkTemplate(ioUringEnterAllowed, `${arch} ioUringEnterAllowed`, fail);
    if (!record(numbers)) fail(`no numbers for ${arch}`);
    for (const name of WORKER_CALLS) {
      const nr = (numbers as Record<string, unknown>)[name];
      if (!Number.isInteger(nr) || (nr as number) < 0) fail(`no number for ${name} on ${arch}`);
    }
  }
  return value as unknown as FilterTemplates;
}

function checkTemplate(value: unknown, what: string, fail: (why: string) => never): void {
  if (typeof value !== 'object' || value === null) fail(`no ${what}`);
  const t = value as Record<string, unknown>;
  if (typeof t['program'] !== 'string') fail(`${what}: no program`);
  const bytes = Buffer.from(t['program'] as string, 'base64');
  const count = t['instructions'];
  if (!Number.isInteger(count) || bytes.length !== (count as number) * 8 || (count as number) < 1 || (count as number) > 4096)
    fail(`${what}: ${bytes.length} bytes for ${String(count)} instructions`);
  const slots = t['pidSlots'];
  if (!Array.isArray(slots) || !slots.every((s) => Number.isInteger(s) && s >= 0 && s < (count as number) && bytes.readUInt32LE(s * 8 + 4) === 0))
    fail(`${what}: pid slots outside the program or not left empty`);
  for (const field of ['deniedCalls', 'argRules', 'highestReviewed']) if (!Number.isInteger(t[field])) fail(`${what}: no ${field}`);
}

/** The template's program with `pid` in its slots: the bytes the addon installs. */
export function programFor(template: FilterTemplate, pid: number): Buffer {
  if (!Number.isInteger(pid) || pid < 1 || pid > 0x3fffffff) throw new RangeError(`programFor: pid must be a positive integer pid_t; got ${pid}`);
  const program = Buffer.from(template.program, 'base64');
  for (const slot of template.pidSlots) program.writeUInt32LE(pid, slot * 8 + 4);
  return program;
}

/** The template for `arch`, with io_uring_enter and io_uring_register allowed only when libuv may hold rings. */
export function templateFor(templates: FilterTemplates, arch: Arch, allowIoUringEnter: boolean): FilterTemplate {
  const entry = templates.arches[arch];
  return allowIoUringEnter ? entry.ioUringEnterAllowed : entry.ioUringDenied;
}

/** A call's number on `arch`, from the templates; throws for a call not in {@link WORKER_CALLS}. */
export function workerCallNumber(templates: FilterTemplates, arch: Arch, name: string): number {
  const nr = templates.arches[arch].numbers[name];
  if (nr === undefined) throw new Error(`seccomp: ${name} is not among the calls the worker's half knows (WORKER_CALLS)`);
  return nr;
}

/** The numbers ioUringMayBeInUse asks with, on `arch`. */
export function ioUringCallsOf(templates: FilterTemplates, arch: Arch): IoUringCalls {
  return { io_uring_setup: workerCallNumber(templates, arch, 'io_uring_setup'), close: workerCallNumber(templates, arch, 'close') };
}
