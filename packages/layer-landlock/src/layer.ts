/**
 * The Landlock layer module (`@strata/layer-landlock/layer`): its default export is the factory
 * the worker (and the parent) call with the layer's options.
 *
 * - probe (parent): Linux, the helper built, and the kernel's Landlock ABI ≥ 1 and errata
 *   (`strata-landlock --print-abi`). On ABI ≥ 8, unless `stackAfterLoad: false`, a throwaway child
 *   test-fires the deny-all stack (src/stack.ts): `tsync-stack` is then provided, or missing if the
 *   test-fire failed.
 * - launch (parent): the pre-exec link `strata-landlock --read DIR... --read-file FILE... --
 *   next...`: the Landlock domain is made before Node starts a thread (ABI < 8 has no thread
 *   sync), and every thread of the worker inherits it.
 * - apply (worker): checks the domain is in force (listing `/` is refused, here and on libuv's
 *   pool) and that the read set works (this package's own package.json is readable), counts the
 *   threads it covers.
 * - seal (worker, after every layer's apply): when the capability provides `tsync-stack`, stacks
 *   a domain denying every filesystem access on every thread (TSYNC) and checks it.
 * - selfTest (worker): tries what the domains exist to stop, and throws naming what got through.
 *
 * @module
 */
import { readdir, readdirSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import {
  errnoOf,
  tryConnect,
  type ApplyContext,
  type LaunchContext,
  type LaunchStep,
  type Layer,
  type LayerCapability,
  type ProbeContext,
  type SealContext,
  type SelfTestContext,
} from '@strata/runtime/layers';
import { addonUnavailableReason, loadAddon } from './addon.js';
import { errataFromKernel, type Errata } from './errata.js';
import { LANDLOCK_HELPER, landlockAbi, type AbiResult } from './helper.js';
import { PACKAGE_ROOT, checkReadPaths, computeReadSet, helperArguments } from './read-set.js';
import { LATEST_KNOWN_ABI, capabilityWords, handledRights } from './rights.js';
import { STACKED, checkStackAfterLoad, planStack, sealStackDecision, stackTestFire, type StackPlan } from './stack.js';

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

const OPTIONS = new Set(['readPaths', 'stackAfterLoad']);

/** This package's own package.json: readable under the pre-exec domain (apply checks it), not once the deny-all domain is stacked (seal checks it). */
const OWN_FILE = new URL('../../package.json', import.meta.url);

// The kernel's ABI does not change while this process runs: the probe asks the helper once.
let kernel: AbiResult | undefined;
const kernelAbi = (): AbiResult => (kernel ??= landlockAbi());

/** The parent's verdict on the ABI ≥ 8 stacking, for these options (runs the test-fire once per process when it applies). */
function stackPlanFor(abi: number, options: Readonly<Record<string, unknown>>): StackPlan {
  return planStack(abi, checkStackAfterLoad(options.stackAfterLoad), () => addonUnavailableReason() ?? stackTestFire());
}

/**
 * The capability on `abi` with this stacking verdict (pure: the probe's answer, table-tested).
 *
 * @internal
 */
export function capabilityFor(abi: number, errata: Errata, stack: StackPlan): LayerCapability {
  const words = capabilityWords(abi);
  return {
    available: true,
    provides: stack.provides ? [...words.provides, stack.provides] : words.provides,
    missing: stack.missing ? [...words.missing, stack.missing] : words.missing,
    detail: { abi, errata, stackAfterLoad: stack.detail },
    ...(abi > LATEST_KNOWN_ABI ? { notes: [newerAbiNote(abi)] } : {}),
  };
}

/** What a kernel newer than this package means: its added rights are neither asked for nor refused. */
function newerAbiNote(abi: number): string {
  return `the kernel's Landlock ABI ${abi} is newer than this package knows (${LATEST_KNOWN_ABI}): what ABI ${LATEST_KNOWN_ABI + 1}${abi > LATEST_KNOWN_ABI + 1 ? `-${abi}` : ''} added is not handled (allowed), the rest is in force; a newer @strata/layer-landlock may handle it`;
}

function probe(context: ProbeContext): LayerCapability {
  if (context.platform !== 'linux') return { available: false, provides: [], missing: [`Landlock is Linux only (this is ${context.platform})`] };
  const result = kernelAbi();
  if ('gap' in result) return { available: false, provides: [], missing: [result.gap] };
  return capabilityFor(result.abi, result.errata, stackPlanFor(result.abi, context.options));
}

function launch(context: LaunchContext): LaunchStep | undefined {
  if (context.platform !== 'linux') return undefined;
  const readSet = computeReadSet({
    execPath: context.workerNode,
    packageRoot: PACKAGE_ROOT,
    extra: [...context.layerPaths, ...checkReadPaths(context.options.readPaths)],
  });
  return { program: LANDLOCK_HELPER, args: helperArguments(readSet) };
}

/**
 * The worker's view of the ABI and errata: from the addon (plain system calls, which seccomp
 * allows); without it, from the helper, which is beneath the read set (unless seccomp already
 * forbids exec).
 */
function kernelHere(): { abi: number | string; errata: Errata } {
  if (addonUnavailableReason() === undefined) {
    const addon = loadAddon();
    return { abi: addon.abi(), errata: errataFromKernel(addon.errata()) };
  }
  const result = landlockAbi();
  return 'abi' in result ? result : { abi: `unknown here (${result.gap})`, errata: 'unknown here' };
}

/**
 * Lists `path` on libuv's thread pool (fs.readdir's callback form: the pool, as node:fs/promises
 * would, without loading node:fs/promises, which nothing else in the worker needs and which costs
 * a worker start about 6 ms to compile under --jitless). Answers 'none' or the error's code.
 */
function listOnPool(path: string): Promise<string> {
  return new Promise((resolve) => readdir(path, (error) => resolve(error === null ? 'none' : (error.code ?? error.message))));
}

/** How many requests {@link poolDenied} fires: more than libuv's 4 pool threads, so several of them answer. */
const POOL_REQUESTS = 8;

/** Lists / from libuv's thread pool: the threads Node started before any JavaScript must refuse it too. */
async function poolDenied(): Promise<string> {
  const codes = await Promise.all(Array.from({ length: POOL_REQUESTS }, () => listOnPool('/')));
  const through = codes.filter((code) => code !== 'EACCES');
  if (through.length > 0)
    throw new Error(`the Landlock domain is not in force on libuv's thread pool: listing / from it gave ${through.join(', ')}, expected EACCES`);
  return `listing / from libuv's pool refused (${POOL_REQUESTS} of ${POOL_REQUESTS} EACCES)`;
}

/** The worker's threads, from /proc/self/task (beneath the read set), or why they cannot be counted. */
function threadCount(): number | string {
  try {
    return readdirSync('/proc/self/task').length;
  } catch (error) {
    return `unreadable here (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`;
  }
}

/** Stacks the deny-all domain on every thread, then checks the main thread and libuv's pool lost this package's own files. */
async function stackDenyAll(): Promise<string> {
  loadAddon().stackDenyAll();
  const own = errnoOf(() => readFileSync(OWN_FILE));
  const pool = await listOnPool(PACKAGE_ROOT);
  if (own !== 'EACCES' || pool !== 'EACCES')
    throw new Error(
      `the stacked deny-all domain is not in force: reading this layer's package.json gave ${own}, listing its directory from libuv's pool gave ${pool}; expected EACCES`,
    );
  return "the deny-all-fs domain was stacked on every thread at once (TSYNC): a read refused on the main thread and on libuv's pool";
}

let abiInForce: number | string | undefined;
/** What apply found of the threads covered; seal adds how the stack covered them. */
let threadsCovered: Record<string, unknown> = {};
let stackedHere = false;

async function apply(context: ApplyContext): Promise<void> {
  if (context.platform !== 'linux') throw new Error(`Landlock is Linux only (this is ${context.platform})`);
  // Outside the read set: the root directory cannot be listed once the domain is in force.
  const listRoot = errnoOf(() => readdirSync('/'));
  if (listRoot !== 'EACCES')
    throw new Error(
      `the Landlock domain is not in force in the worker: listing / gave ${listRoot}, expected EACCES (did the launch chain run strata-landlock?)`,
    );
  const pool = await poolDenied();
  // A positive control, here because a seal (this layer's, on ABI ≥ 8) may take every file away
  // before the self-tests: the runtime's own files are readable under the pre-exec domain.
  const own = errnoOf(() => readFileSync(OWN_FILE));
  if (own !== 'none') throw new Error(`reading this layer's own package.json gave ${own}: the read set is broken`);
  const { abi, errata } = kernelHere();
  abiInForce = abi;
  const readPaths = checkReadPaths(context.options.readPaths).length;
  // Landlock state cannot be read from /proc: the count says how many threads the pre-exec
  // domain covers by inheritance (the helper was single-threaded and execve() keeps its domain).
  threadsCovered = { threads: threadCount(), how: 'inherited: the domain was made before Node started (pre-exec)', checked: pool };
  context.report({
    abi,
    errata,
    rights: typeof abi === 'number' ? handledRights(abi) : [],
    ...(typeof abi === 'number' && abi > LATEST_KNOWN_ABI ? { unknownRights: newerAbiNote(abi) } : {}),
    readPaths,
    ownFilesReadable: true,
    threadsCovered,
  });
}

/**
 * After every layer's apply (seccomp loads its addon there) and before any self-test: on ABI ≥ 8,
 * when the probe test-fired it (`tsync-stack` in the capability), the deny-all stack. A stack the
 * probe promised and the kernel refuses is fatal: it is never skipped silently.
 */
async function seal(context: SealContext): Promise<void> {
  const decision = sealStackDecision(context.capability);
  if (!decision.stack) {
    context.report({ stacked: decision.stacked });
    return;
  }
  const stack = await stackDenyAll();
  stackedHere = true;
  context.report({ stacked: STACKED, threadsCovered: { ...threadsCovered, stack } });
}

async function selfTest(context: SelfTestContext): Promise<void> {
  const through: string[] = [];
  const abi = typeof abiInForce === 'number' ? abiInForce : undefined;
  const read = errnoOf(() => readFileSync('/etc/passwd'));
  if (read !== 'EACCES' && read !== 'ENOENT') through.push(`reading /etc/passwd gave ${read}, expected EACCES`);
  const probePath = `/tmp/strata-landlock-probe-${process.pid}`;
  const write = errnoOf(() => writeFileSync(probePath, 'x', { flag: 'wx' }));
  if (write === 'none') rmSync(probePath, { force: true });
  // /tmp is writable by everyone, so only Landlock refuses there. Under an empty root there is no
  // /tmp (ENOENT) or the root is read-only (EROFS): the write is refused before Landlock is asked.
  if (write !== 'EACCES' && write !== 'ENOENT' && write !== 'EROFS') through.push(`creating ${probePath} gave ${write}, expected EACCES`);
  // Once stacked, even the runtime's own files are refused. Not stacked, they are readable (apply
  // checked that) unless something after this layer took them away: reported, not asserted.
  const own = errnoOf(() => readFileSync(OWN_FILE));
  if (stackedHere && own !== 'EACCES') through.push(`reading this layer's own package.json gave ${own} after the deny-all stack, expected EACCES`);
  let tcp: string | undefined;
  if (abi === undefined || abi >= 4) {
    tcp = await tryConnect();
    // EACCES: Landlock; EPERM: seccomp refused socket(AF_INET) first. Either is a denial.
    if (tcp !== 'EACCES' && tcp !== 'EPERM') through.push(`a TCP connect to 127.0.0.1 gave ${tcp}, expected EACCES`);
  }
  let signal: string | undefined;
  // ABI unknown here: a layer applied earlier (seccomp) forbade running the helper; that layer denies this too.
  if (abi === undefined || abi >= 6) {
    signal = errnoOf(() => process.kill(process.ppid, 0));
    if (signal !== 'EPERM') through.push(`signalling the parent (kill(${process.ppid}, 0)) gave ${signal}, expected EPERM`);
  }
  if (through.length > 0) throw new Error(`the Landlock domain let through: ${through.join('; ')}`);
  context.report({
    selfTest: { readOutside: read, write, readOwn: own, tcpConnect: tcp ?? 'not handled on this ABI', signalParent: signal ?? 'not scoped on this ABI' },
  });
}

/**
 * The Landlock layer. Options: `readPaths` (absolute paths the worker may also read),
 * `stackAfterLoad` (on ABI ≥ 8, stack the deny-all filesystem domain after load; default true).
 */
export default function landlockLayer(options: Readonly<Record<string, unknown>> = {}): Layer {
  const unknown = Object.keys(options).filter((k) => !OPTIONS.has(k));
  if (unknown.length > 0) throw new Error(`@strata/layer-landlock: unknown option(s) ${unknown.join(', ')}; the layer takes readPaths, stackAfterLoad`);
  checkReadPaths(options.readPaths);
  checkStackAfterLoad(options.stackAfterLoad);
  return { name: 'landlock', version: VERSION, probe, launch, apply, seal, selfTest };
}
