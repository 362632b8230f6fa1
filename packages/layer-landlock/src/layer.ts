/**
 * The Landlock layer module (`@strata/layer-landlock/layer`): its default export is the factory
 * the worker (and the parent) call with the layer's options.
 *
 * - probe (parent): Linux, the helper built, and the kernel's Landlock ABI ≥ 1 (`strata-landlock --print-abi`).
 * - launch (parent): the pre-exec link `strata-landlock --read DIR... --read-file FILE... -- next...`:
 *   the Landlock domain is made before Node starts a thread (ABI < 8 has no thread sync), and
 *   every thread of the worker inherits it.
 * - apply (worker): checks the domain is in force (listing `/` is refused) and reports it.
 * - selfTest (worker): tries what the domain exists to stop, and throws naming what got through.
 *
 * @module
 */
import { readdirSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import type { ApplyContext, LaunchContext, LaunchStep, Layer, LayerCapability, ProbeContext, SelfTestContext } from '@strata/runtime';
import { LANDLOCK_HELPER, landlockAbi } from './helper.js';
import { PACKAGE_ROOT, checkReadPaths, computeReadSet, helperArguments } from './read-set.js';
import { capabilityWords, handledRights } from './rights.js';

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

const OPTIONS = new Set(['readPaths']);

function probe(context: ProbeContext): LayerCapability {
  if (context.platform !== 'linux') return { available: false, provides: [], missing: [`Landlock is Linux only (this is ${context.platform})`] };
  const result = landlockAbi();
  if ('gap' in result) return { available: false, provides: [], missing: [result.gap] };
  return { available: true, ...capabilityWords(result.abi), detail: { abi: result.abi } };
}

function launch(context: LaunchContext): LaunchStep | undefined {
  if (context.platform !== 'linux') return undefined;
  const readSet = computeReadSet({ execPath: process.execPath, packageRoot: PACKAGE_ROOT, extra: [...context.layerPaths, ...checkReadPaths(context.options.readPaths)] });
  return { program: LANDLOCK_HELPER, args: helperArguments(readSet) };
}

/** The errno code of what `run` throws, or 'none' when it does not throw. */
function errnoOf(run: () => void): string {
  try {
    run();
    return 'none';
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? String(error);
  }
}

/** The worker's view of the ABI: the helper is beneath the read set, so it can still be run (unless seccomp already forbids exec). */
function abiHere(): number | string {
  const result = landlockAbi();
  return 'abi' in result ? result.abi : `unknown here (${result.gap})`;
}

let abiInForce: number | string | undefined;

function apply(context: ApplyContext): void {
  if (context.platform !== 'linux') throw new Error(`Landlock is Linux only (this is ${context.platform})`);
  // Outside the read set: the root directory cannot be listed once the domain is in force.
  const listRoot = errnoOf(() => readdirSync('/'));
  if (listRoot !== 'EACCES') throw new Error(`the Landlock domain is not in force in the worker: listing / gave ${listRoot}, expected EACCES (did the launch chain run strata-landlock?)`);
  abiInForce = abiHere();
  const readPaths = checkReadPaths(context.options.readPaths).length;
  context.report({ abi: abiInForce, rights: typeof abiInForce === 'number' ? handledRights(abiInForce) : [], readPaths });
}

/** A TCP connect to 127.0.0.1: resolves with the error code (or 'connected'). */
function tryConnect(): Promise<string> {
  return new Promise((resolve) => {
    let socket: ReturnType<typeof connect>;
    try {
      socket = connect({ host: '127.0.0.1', port: 9 });
    } catch (error) {
      resolve((error as NodeJS.ErrnoException).code ?? String(error));
      return;
    }
    const timer = setTimeout(() => {
      socket.destroy();
      resolve('timeout');
    }, 5_000);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve(error.code ?? error.message);
    });
  });
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
  // A positive control: the runtime's own files stay readable.
  const own = errnoOf(() => readFileSync(new URL('../../package.json', import.meta.url)));
  if (own !== 'none') through.push(`reading this layer's own package.json gave ${own}: the read set is broken`);
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
  context.report({ selfTest: { readOutside: read, write, tcpConnect: tcp ?? 'not handled on this ABI', signalParent: signal ?? 'not scoped on this ABI' } });
}

/** The Landlock layer. Options: `readPaths` (absolute paths the worker may also read). */
export default function landlockLayer(options: Readonly<Record<string, unknown>> = {}): Layer {
  const unknown = Object.keys(options).filter((k) => !OPTIONS.has(k));
  if (unknown.length > 0) throw new Error(`@strata/layer-landlock: unknown option(s) ${unknown.join(', ')}; the layer takes readPaths`);
  checkReadPaths(options.readPaths);
  return { name: 'landlock', version: VERSION, probe, launch, apply, selfTest };
}
