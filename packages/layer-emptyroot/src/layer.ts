/**
 * The empty-root layer module (`@strata/layer-emptyroot/layer`): its default export is the
 * factory the worker (and the parent) call with the layer's options.
 *
 * - probe (parent): Linux, the helper built, and a full dry run of the real plan in a throwaway
 *   child, as the worker's user: it tells apart no user namespaces, forbidden, chrooted, switched
 *   off (`user.max_user_namespaces=0`) and exhausted.
 * - launch (parent): the pre-exec link `strata-emptyroot --stage DIR OP... -- next...`, with the
 *   namespaces entered and the files bound as its part of the report.
 * - apply (worker): checks the host is gone (its /proc/1 does not exist) and, as a positive
 *   control, that the binds work (this package's own package.json is readable). Here, not in the
 *   self-test: a later layer's seal may deny every file open before the self-tests run.
 * - selfTest (worker): denials only: looks for host paths (lstat, which Landlock does not
 *   mediate) and tries to write to the root; throws naming what got through.
 *
 * @module
 */
import { lstatSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  LayerConfigError,
  computeWorkerFiles,
  errnoOf,
  type ApplyContext,
  type LaunchContext,
  type LaunchStep,
  type Layer,
  type LayerCapability,
  type ProbeContext,
  type SelfTestContext,
} from '@strata/runtime/layers';
import { EMPTYROOT_HELPER, dryRun } from './helper.js';
import { helperArguments, planRoot, type RootPlan } from './root-plan.js';

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** This package's root (two levels above dist/src). */
export const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url)).replace(/\/$/, '');

/** The namespaces the worker gets of its own. */
export const NAMESPACES = Object.freeze(['user', 'mnt', 'net', 'ipc']);

/** What the layer provides when it is available, in short stable words. */
export const PROVIDES = Object.freeze([
  'user-namespace',
  'mount-namespace',
  'network-namespace',
  'ipc-namespace',
  'empty-root',
  'read-only-binds',
  'no-capabilities',
]);

const OPTIONS = new Set(['bindPaths']);

/** The layer's `bindPaths` option: absolute paths, as a list of strings. Throws naming what is wrong. */
export function checkBindPaths(value: unknown): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.some((p) => typeof p !== 'string'))
    throw new LayerConfigError('emptyroot', 'emptyroot(): option "bindPaths" must be an array of strings');
  for (const path of value as string[]) {
    if (!isAbsolute(path)) throw new LayerConfigError('emptyroot', `emptyroot(): option "bindPaths" takes absolute paths only; got ${JSON.stringify(path)}`);
    if (path.includes('\0')) throw new LayerConfigError('emptyroot', 'emptyroot(): option "bindPaths" must not contain NUL');
  }
  return [...(value as string[])];
}

/**
 * The new root for these options: exactly the files the worker (on `workerNode`) needs, plus the layers' own directories and `bindPaths`.
 *
 * @internal
 */
export function rootPlanFor(options: Readonly<Record<string, unknown>>, layerPaths: readonly string[] = [], workerNode: string = process.execPath): RootPlan {
  const extra = [
    ...layerPaths.map((path) => ({ path, why: 'a layer loaded from this directory' })),
    ...checkBindPaths(options.bindPaths).map((path) => ({ path, why: 'the layer option bindPaths' })),
  ];
  return planRoot(computeWorkerFiles({ execPath: workerNode, packageRoot: PACKAGE_ROOT, extra }));
}

function probe(context: ProbeContext): LayerCapability {
  if (context.platform !== 'linux') return { available: false, provides: [], missing: [`the empty root is Linux only (this is ${context.platform})`] };
  let plan: RootPlan;
  try {
    plan = rootPlanFor(context.options);
  } catch (error) {
    return { available: false, provides: [], missing: [(error as Error).message] };
  }
  const result = dryRun(helperArguments(plan));
  const detail = { userNamespaces: result.verdict, ...(result.errno === undefined ? {} : { errno: result.errno }) };
  if (result.verdict !== 'available') return { available: false, provides: [], missing: [result.message], detail };
  return { available: true, provides: [...PROVIDES], missing: [], detail };
}

function launch(context: LaunchContext): LaunchStep | undefined {
  if (context.platform !== 'linux') return undefined;
  const plan = rootPlanFor(context.options, context.layerPaths, context.workerNode);
  const bound = plan.ops.filter((o) => o.op === 'bind-dir' || o.op === 'bind-file').map((o) => o.path);
  const symlinks = plan.ops.filter((o) => o.op === 'symlink').map((o) => o.path);
  return { program: EMPTYROOT_HELPER, args: helperArguments(plan), report: { namespaces: [...NAMESPACES], bound, symlinks } };
}

/** This package's own package.json: bound into the root, so readable in apply (the positive control). */
const OWN_FILE = new URL('../../package.json', import.meta.url);

/** Host paths that are never bound: in the empty root they do not exist at all. */
const HOST_PATHS = Object.freeze(['/etc/passwd', '/proc/1', '/proc/self/environ', '/proc/self/root', '/dev/null']);

function apply(context: ApplyContext): void {
  if (context.platform !== 'linux') throw new Error(`the empty root is Linux only (this is ${context.platform})`);
  // Landlock does not govern metadata: only a different root makes a host path not exist.
  const seen = errnoOf(() => lstatSync('/proc/1'));
  if (seen !== 'ENOENT')
    throw new Error(
      `the empty root is not in force in the worker: lstat("/proc/1") gave ${seen}, expected ENOENT (did the launch chain run strata-emptyroot?)`,
    );
  // A positive control: the runtime's own files are bound.
  const own = errnoOf(() => readFileSync(OWN_FILE));
  if (own !== 'none') throw new Error(`reading this layer's own package.json gave ${own}: the binds are broken`);
  context.report({ hostProcessesVisible: false, bindsReadable: true });
}

function selfTest(context: SelfTestContext): void {
  const through: string[] = [];
  const hidden: Record<string, string> = {};
  for (const path of HOST_PATHS) {
    hidden[path] = errnoOf(() => lstatSync(path));
    if (hidden[path] !== 'ENOENT') through.push(`lstat(${JSON.stringify(path)}) gave ${hidden[path]}, expected ENOENT`);
  }
  const probePath = `/strata-emptyroot-probe-${process.pid}`;
  const write = errnoOf(() => writeFileSync(probePath, 'x', { flag: 'wx' }));
  if (write === 'none') rmSync(probePath, { force: true });
  // EROFS: the root is read-only; EACCES: a Landlock domain refused first. Either is a denial.
  if (write !== 'EROFS' && write !== 'EACCES') through.push(`creating ${probePath} gave ${write}, expected EROFS`);
  if (through.length > 0) throw new Error(`the empty root let through: ${through.join('; ')}`);
  context.report({ selfTest: { hostPaths: hidden, writeRoot: write } });
}

/** The empty-root layer. Options: `bindPaths` (absolute paths also bound read-only into the root). */
export default function emptyrootLayer(options: Readonly<Record<string, unknown>> = {}): Layer {
  const unknown = Object.keys(options).filter((k) => !OPTIONS.has(k));
  if (unknown.length > 0) throw new Error(`@strata/layer-emptyroot: unknown option(s) ${unknown.join(', ')}; the layer takes bindPaths`);
  checkBindPaths(options.bindPaths);
  return { name: 'emptyroot', version: VERSION, probe, launch, apply, selfTest };
}
