import { AsyncLocalStorage } from 'node:async_hooks';
import { InvalidOption } from './errors.js';
import { IsolatedRuntime } from './isolated/isolated-runtime.js';
import { resolveIsolatedOptions, type IsolatedRuntimeOptions } from './isolated/isolated-options.js';
import type { ModuleLoader, ModuleResolver } from './module-registry.js';
import { resolveRuntimeOptions, type RuntimeOptions } from './options.js';
import { Runtime } from './runtime.js';
import {
  assertHostFunction,
  type EvalModuleOptions,
  type EvalOptions,
  type ExecutionResult,
  type HostFunction,
  type StrataRuntime,
} from './runtime-contract.js';

/** Options of {@link configureDefaultRuntime}: `isolated: true` and the options of `IsolatedRuntime.start`, or the options of `Runtime.start`. */
export type DefaultRuntimeOptions = ({ isolated: true } & IsolatedRuntimeOptions) | ({ isolated?: false } & RuntimeOptions);

interface Configuration {
  readonly isolated: boolean;
  readonly options: RuntimeOptions | IsolatedRuntimeOptions;
  readonly generation: number;
}

/** What one async context has set up, replayed on every runtime created for it. */
interface Slot {
  runtime: Promise<StrataRuntime> | undefined;
  generation: number;
  readonly setup: ((rt: StrataRuntime) => void)[];
}

let configuration: Configuration = { isolated: false, options: {}, generation: 0 };
const slots = new AsyncLocalStorage<Slot>();

/**
 * Chooses what the module-level helpers (`eval`, `execute`, `bindFunction`, …) run on. Call it
 * once at start-up: `configureDefaultRuntime({ isolated: true })` makes the easy path the safe
 * one. Options are validated now. Only runtimes created after the call are affected.
 */
export function configureDefaultRuntime(options: DefaultRuntimeOptions = {}): void {
  if (options === null || typeof options !== 'object') throw new InvalidOption('configureDefaultRuntime: options must be an object');
  const { isolated = false, ...rest } = options;
  if (typeof isolated !== 'boolean') throw new InvalidOption('configureDefaultRuntime: isolated must be true or false');
  if (isolated) resolveIsolatedOptions(rest as IsolatedRuntimeOptions);
  else resolveRuntimeOptions(rest as RuntimeOptions);
  configuration = { isolated, options: rest, generation: configuration.generation + 1 };
}

/**
 * This async context's slot. Created with `enterWith` on first use, synchronously in the
 * caller's context, so the caller's later awaits see the same runtime and other contexts do not.
 */
function slot(): Slot {
  let current = slots.getStore();
  if (current === undefined) {
    current = { runtime: undefined, generation: -1, setup: [] };
    slots.enterWith(current);
  }
  return current;
}

/** The context's runtime: reused while open and configured the same; after a crash, quietly a fresh one. */
async function runtimeOf(current: Slot): Promise<StrataRuntime> {
  const existing = current.runtime === undefined ? undefined : await current.runtime.catch(() => undefined);
  if (existing !== undefined && !existing.closed && current.generation === configuration.generation) return existing;
  if (existing !== undefined && !existing.closed) await existing.close();
  const { isolated, options, generation } = configuration;
  const created: Promise<StrataRuntime> = isolated ? IsolatedRuntime.start(options as IsolatedRuntimeOptions) : Runtime.start(options as RuntimeOptions);
  current.runtime = created;
  current.generation = generation;
  const rt = await created;
  for (const step of current.setup) step(rt);
  return rt;
}

function remember(step: (rt: StrataRuntime) => void): void {
  const current = slot();
  current.setup.push(step);
  void current.runtime?.then(
    (rt) => {
      // A runtime still being created replays every step itself once it exists.
      if (!rt.closed && current.setup.includes(step)) {
        try {
          step(rt);
        } catch {
          // The same step runs again, and reports, when the next runtime is created.
        }
      }
    },
    () => undefined,
  );
}

/** `eval` on this async context's default runtime. */
function evalDefault(code: string, options?: EvalOptions): Promise<unknown> {
  const current = slot();
  return runtimeOf(current).then((rt) => rt.eval(code, options));
}
export { evalDefault as eval };

/** `execute` on this async context's default runtime; never throws for the run's own failure. */
export function execute(code: string, options?: EvalOptions): Promise<ExecutionResult> {
  const current = slot();
  return runtimeOf(current).then((rt) => rt.execute(code, options));
}

/** `evalModule` on this async context's default runtime. */
export function evalModule(source: string, options?: EvalModuleOptions): Promise<Record<string, unknown>> {
  const current = slot();
  return runtimeOf(current).then((rt) => rt.evalModule(source, options));
}

/** `bindFunction` for this async context; kept for the fresh runtime after a crash too. */
export function bindFunction(name: string, fn: HostFunction): void {
  assertHostFunction(name, fn);
  remember((rt) => rt.bindFunction(name, fn));
}

/** `bindObject` for this async context; kept for the fresh runtime after a crash too. */
export function bindObject(name: string, object: Record<string, unknown>): void {
  remember((rt) => rt.bindObject(name, object));
}

/** `addModule` for this async context. */
export function addModule(specifier: string, source: string): void {
  remember((rt) => rt.addModule(specifier, source));
}

/** `setModuleResolver` for this async context. */
export function setModuleResolver(resolver: ModuleResolver | undefined): void {
  remember((rt) => rt.setModuleResolver(resolver));
}

/** `setModuleLoader` for this async context. */
export function setModuleLoader(loader: ModuleLoader | undefined): void {
  remember((rt) => rt.setModuleLoader(loader));
}

/** Closes this async context's default runtime and forgets its bindings. */
export async function closeDefaultRuntime(): Promise<void> {
  const current = slots.getStore();
  if (current === undefined) return;
  current.setup.length = 0;
  const rt = await current.runtime?.catch(() => undefined);
  current.runtime = undefined;
  await rt?.close();
}
