/**
 * `@strata/agent/codemode`: an `Executor` for Cloudflare's `@cloudflare/codemode`
 * ({@link StrataExecutor}). Codemode asks others to implement its executor contract (its own run
 * the code in a Cloudflare Worker or a browser iframe); this one runs each execution in a fresh
 * Strata sandbox: an `IsolatedRuntime` (a V8 isolate in a worker process under the platform's OS
 * sandbox) or a runtime from your `SandboxPool`, closed when the execution ends.
 *
 * Codemode is a peer: its types only are imported, so this module loads without it.
 *
 * @module codemode
 */
import { randomBytes } from 'node:crypto';
import type { ConnectorBinding, ExecuteOptions, ExecuteResult, Executor, ResolvedProvider } from '@cloudflare/codemode';
import { WEB_POLYFILLS } from '@strata/polyfills';
import { InvalidOption, IsolatedRuntime, SandboxPool, type ConsoleEntry, type IsolatedRuntimeOptions, type StrataRuntime } from '@strata/runtime';
import { codemodeFunction, codemodeToolName, MAX_CODE_CHARS } from './codemode-normalize.js';
import { describeThrown } from './describe.js';

/** Options of {@link StrataExecutor}. */
export interface StrataExecutorOptions {
  /**
   * The options of the `IsolatedRuntime` started for each execution (its OS sandbox, limits,
   * `egress` for the guest's `fetch`, …). The web polyfills (`setTimeout`, `fetch`, `TextEncoder`,
   * …) are bootstrapped first, before any `bootstrap` of yours; the runtime's soft `timeout`
   * defaults to {@link StrataExecutorOptions.timeout}. Default: Strata's defaults (the OS sandbox
   * in force where the platform has it: `sandbox: 'require'` refuses to run without it).
   */
  runtime?: IsolatedRuntimeOptions;
  /** Where runtimes come from instead: each execution checks one out of the pool (set its limits there). Not with `runtime`. */
  pool?: SandboxPool;
  /**
   * How long one execution may take, wall clock, its tool calls included, in milliseconds; past
   * it the sandbox is closed and the result is the error `Execution timed out`. `Infinity` for
   * none. Default 30 000.
   */
  timeout?: number;
}

/** Options of {@link StrataExecutor.execute}: codemode's, and an abort signal. */
export interface StrataExecuteOptions extends ExecuteOptions {
  /** Aborts the execution: the sandbox is closed and the result is the error `Execution aborted`. */
  signal?: AbortSignal;
}

type ToolFn = (...args: unknown[]) => Promise<unknown>;

/** A global of the guest the code reaches tools by: a provider's functions or a connector's binding. */
interface Namespace {
  readonly name: string;
  /** A provider's functions by the name the guest calls them by; absent for a connector. */
  readonly fns?: ReadonlyMap<string, ToolFn>;
  readonly binding?: ConnectorBinding['binding'];
  readonly prelude?: string;
}

const DEFAULT_TIMEOUT = 30_000;
// setTimeout fires at once past this: longer timeouts are refused, Infinity is none.
const MAX_TIMER_MS = 2 ** 31 - 1;
const HIDDEN = '__strataCodemodeCall';
const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
// Names a namespace cannot take: the host function's, globals a namespace would break (the guest's
// console is its logs; codemode reserves the same harness globals), and words no binding may be.
const RESERVED_NAMES = new Set(
  (
    `${HIDDEN} console Promise setTimeout Error globalThis undefined NaN Infinity eval arguments ` +
    'await break case catch class const continue debugger default delete do else enum export extends false finally for function if ' +
    'implements import in instanceof interface let new null package private protected public return static super switch this throw ' +
    'true try typeof var void while with yield'
  ).split(' '),
);
// Codemode's connector answers: a control object instead of a value.
const CONTROL_KEY = '__codemode_control__';
const PAUSE_SENTINEL = '__CODEMODE_PAUSE__';
const LATE_CALL = 'The code execution finished before this tool call settled. Await every tool call before returning.';

/**
 * codemode's `Executor`, on Strata: each `execute` runs the code in a fresh sandbox, with the
 * providers' functions under their namespaces (`codemode.*`, `github.*`), the connectors'
 * methods under theirs, console output as `logs`, and every failure as `error`: it never throws.
 *
 * ```ts
 * import { createCodeTool } from '@cloudflare/codemode/ai';
 * import { StrataExecutor } from '@strata/agent/codemode';
 * const codemode = createCodeTool({ tools, executor: new StrataExecutor({ timeout: 10_000 }) });
 * ```
 *
 * @throws `InvalidOption` (`@strata/runtime`) from the constructor for bad options.
 */
export class StrataExecutor implements Executor {
  readonly #start: () => Promise<StrataRuntime>;
  readonly #timeout: number;

  constructor(options: StrataExecutorOptions = {}) {
    if (options === null || typeof options !== 'object') throw new InvalidOption('StrataExecutor options must be an object ({ runtime?, pool?, timeout? })');
    const { runtime, pool, timeout = DEFAULT_TIMEOUT } = options;
    if (typeof timeout !== 'number' || Number.isNaN(timeout) || timeout <= 0 || (timeout > MAX_TIMER_MS && timeout !== Infinity)) {
      throw new InvalidOption(`timeout must be a positive number of milliseconds up to ${MAX_TIMER_MS}, or Infinity (got ${String(timeout)})`);
    }
    this.#timeout = timeout;
    if (runtime !== undefined && pool !== undefined) {
      throw new InvalidOption('give runtime (the options of the runtime started per execution) or pool (runtimes checked out of it), not both');
    }
    if (pool !== undefined) {
      if (!(pool instanceof SandboxPool)) throw new InvalidOption('pool must be a SandboxPool (SandboxPool.start({ … }))');
      this.#start = () => pool.checkout();
      return;
    }
    if (runtime !== undefined && (runtime === null || typeof runtime !== 'object' || Array.isArray(runtime))) {
      throw new InvalidOption('runtime must be the options of IsolatedRuntime.start (an object)');
    }
    const given = runtime?.bootstrap;
    const bootstrap = [WEB_POLYFILLS, ...(given === undefined ? [] : typeof given === 'string' ? [given] : given).filter((s) => s !== WEB_POLYFILLS)];
    const soft = runtime?.timeout ?? timeout;
    this.#start = () => IsolatedRuntime.start({ ...runtime, bootstrap, timeout: soft });
  }

  /**
   * Runs `code` (codemode's forms: an async arrow function, a fenced block, a body whose last
   * expression is the result, …) in a fresh sandbox. Tool functions are called with the guest's
   * arguments as codemode passes them (through JSON, bytes kept as bytes), and their answers go
   * back the same way; a tool that throws rejects the guest's call with its message.
   *
   * Never throws: bad arguments, a syntax error, a throw, a timeout, an abort, a crash of the
   * sandbox are `{ result: undefined, error }`, with the `logs` so far once the code ran.
   */
  async execute(code: string, providersOrFns: ResolvedProvider[] | Record<string, ToolFn>, options?: StrataExecuteOptions): Promise<ExecuteResult> {
    try {
      return await this.#execute(code, providersOrFns, options);
    } catch (error) {
      // Nothing above is meant to throw; should it, the caller still gets a result.
      return { result: undefined, error: `the executor failed: ${describeThrown(error).message}` };
    }
  }

  async #execute(code: unknown, providersOrFns: unknown, options: StrataExecuteOptions | undefined): Promise<ExecuteResult> {
    if (typeof code !== 'string') return refused(`code must be a string (the JavaScript to run), got ${kindOf(code)}`);
    if (code.length > MAX_CODE_CHARS) {
      return refused(`code is ${code.length} characters, past the limit of ${MAX_CODE_CHARS}: send shorter code, or split the work into several executions`);
    }
    if (options !== undefined && (options === null || typeof options !== 'object')) return refused('options must be an object ({ connectors?, signal? })');
    const signal = options?.signal;
    if (signal !== undefined && !(signal instanceof AbortSignal)) return refused('options.signal must be an AbortSignal');
    const planned = planNamespaces(providersOrFns, options?.connectors);
    if (typeof planned === 'string') return refused(planned);
    const program = guestProgram(codemodeFunction(code), planned);
    if (signal?.aborted) return refused('Execution aborted before the code ran');

    let runtime: StrataRuntime;
    try {
      runtime = await this.#start();
    } catch (error) {
      return refused(`the sandbox could not start: ${describeThrown(error).message}`);
    }
    const logs = new LogCollector(runtime.options.maxOutputBytes);
    const unsubscribe = runtime.onConsole((entry) => logs.add(entry));
    const gate = { open: true };
    let stopped: 'timeout' | 'abort' | undefined;
    const stop = (why: 'timeout' | 'abort') => {
      stopped ??= why;
      void runtime.close().catch(() => undefined);
    };
    const onAbort = () => stop('abort');
    let timer: NodeJS.Timeout | undefined;
    try {
      const marker = `__strata_binary_${randomBytes(8).toString('hex')}`;
      runtime.bindFunction(HIDDEN, (namespace: unknown, name: unknown, args: unknown) => answer(planned, gate, marker, namespace, name, args));
      await runtime.eval(guestSetup(planned, marker), { filename: 'strata:codemode-setup' });
      signal?.addEventListener('abort', onAbort, { once: true });
      if (signal?.aborted) stop('abort');
      if (this.#timeout !== Infinity) timer = setTimeout(() => stop('timeout'), this.#timeout);
      const outcome = await runtime.execute(program, { filename: 'codemode.js' });
      if (stopped === 'timeout') return { result: undefined, error: `Execution timed out after ${this.#timeout} ms`, logs: logs.lines };
      if (stopped === 'abort') return { result: undefined, error: 'Execution aborted', logs: logs.lines };
      if (outcome.status === 'ok') return { result: outcome.result, logs: logs.lines };
      const error = outcome.errorType === 'RuntimeTimeout' ? `Execution timed out: ${outcome.error ?? ''}` : (outcome.error ?? 'the code failed');
      return { result: undefined, error, logs: logs.lines };
    } catch (error) {
      // The setup failed: the sandbox died under it, or was stopped.
      if (stopped !== undefined)
        return { result: undefined, error: stopped === 'timeout' ? `Execution timed out after ${this.#timeout} ms` : 'Execution aborted' };
      return refused(`the sandbox failed before the code ran: ${describeThrown(error).message}`);
    } finally {
      gate.open = false;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      logs.close();
      unsubscribe();
      await runtime.close().catch(() => undefined);
    }
  }
}

const refused = (error: string): ExecuteResult => ({ result: undefined, error });

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : typeof value;
}

/**
 * The namespaces of one execution, checked as codemode's executors check them (names valid and
 * distinct, tool names distinct once made identifiers), or why not: codemode's messages.
 */
function planNamespaces(providersOrFns: unknown, connectors: unknown): Namespace[] | string {
  let providers: unknown[];
  if (Array.isArray(providersOrFns)) providers = providersOrFns;
  else if (providersOrFns !== null && typeof providersOrFns === 'object') providers = [{ name: 'codemode', fns: providersOrFns }];
  else return `providers must be an array of { name, fns } (or an object of functions), got ${kindOf(providersOrFns)}`;
  if (connectors !== undefined && !Array.isArray(connectors)) return `options.connectors must be an array of { name, binding }, got ${kindOf(connectors)}`;

  const namespaces: Namespace[] = [];
  const seen = new Set<string>();
  const checkName = (name: unknown, what: 'Provider' | 'Connector'): string | undefined => {
    if (typeof name !== 'string') return `${what} name must be a string, got ${kindOf(name)}`;
    if (RESERVED_NAMES.has(name)) return `${what} name "${name}" is reserved: give the ${what.toLowerCase()} another name`;
    if (!IDENTIFIER.test(name)) return `${what} name "${name}" is not a valid JavaScript identifier`;
    if (seen.has(name)) return what === 'Provider' ? `Duplicate provider name "${name}"` : `Duplicate name "${name}" (connector clashes with provider)`;
    seen.add(name);
    return undefined;
  };
  for (const [i, provider] of providers.entries()) {
    if (provider === null || typeof provider !== 'object') return `providers[${i}] must be an object { name, fns, prelude? }, got ${kindOf(provider)}`;
    const { name, fns, prelude } = provider as Partial<ResolvedProvider>;
    const problem = checkName(name, 'Provider');
    if (problem !== undefined) return problem;
    if (fns === null || typeof fns !== 'object') return `Provider "${name}": fns must be an object of functions, got ${kindOf(fns)}`;
    if (prelude !== undefined && typeof prelude !== 'string') return `Provider "${name}": prelude must be a string (JavaScript run in the sandbox)`;
    const byName = new Map<string, ToolFn>();
    const original = new Map<string, string>();
    for (const [toolName, fn] of Object.entries(fns)) {
      if (typeof fn !== 'function') return `Provider "${name}": fns["${toolName}"] must be a function, got ${kindOf(fn)}`;
      const id = codemodeToolName(toolName);
      const other = original.get(id);
      if (other !== undefined) return `Tool names "${other}" and "${toolName}" both sanitize to "${id}" in provider "${name}"`;
      original.set(id, toolName);
      byName.set(id, fn as ToolFn);
    }
    namespaces.push({ name: name!, fns: byName, ...(prelude === undefined ? {} : { prelude }) });
  }
  for (const [i, connector] of (connectors ?? []).entries()) {
    if (connector === null || typeof connector !== 'object') return `options.connectors[${i}] must be an object { name, binding }`;
    const { name, binding } = connector as Partial<ConnectorBinding>;
    const problem = checkName(name, 'Connector');
    if (problem !== undefined) return problem;
    if (binding === null || typeof binding !== 'object' || typeof binding.callTool !== 'function') {
      return `Connector "${name}": binding must have a callTool(method, args) function`;
    }
    namespaces.push({ name: name!, binding });
  }
  return namespaces;
}

/**
 * The guest's side of the tools, run before the code: each namespace a global whose members call
 * the host through one hidden function (taken off the global first). Arguments go out as JSON
 * would give them (codemode's boundary), with typed arrays and ArrayBuffers kept as bytes;
 * answers come back the same way. Own properties (a prelude's) win over tools, as in codemode.
 */
function guestSetup(namespaces: readonly Namespace[], marker: string): string {
  const groups = namespaces.map((ns) => ({ name: ns.name, tools: ns.fns === undefined ? null : [...ns.fns.keys()] }));
  const m = JSON.stringify(marker);
  return `(() => {
  const call = globalThis[${JSON.stringify(HIDDEN)}];
  delete globalThis[${JSON.stringify(HIDDEN)}];
  const { stringify, parse } = JSON;
  const hasOwn = Object.hasOwn, define = Object.defineProperty, isView = ArrayBuffer.isView;
  const U8 = Uint8Array, AB = ArrayBuffer, P = Proxy, E = Error;
  const copy = (view) => { const out = new U8(view.byteLength); out.set(new U8(view.buffer, view.byteOffset, view.byteLength)); return out; };
  const tagged = (v) => v !== null && typeof v === 'object' && hasOwn(v, ${m});
  const out = (value) => {
    const bytes = [];
    const text = stringify(value, (key, v) => {
      if (v instanceof AB) { bytes.push(copy(new U8(v))); return { [${m}]: 'ArrayBuffer', i: bytes.length - 1 }; }
      if (isView(v)) { bytes.push(copy(v)); return { [${m}]: 'Uint8Array', i: bytes.length - 1 }; }
      return v;
    });
    return text === undefined ? undefined : parse(text, (key, v) => tagged(v) ? (v[${m}] === 'ArrayBuffer' ? { [${m}]: 'ArrayBuffer', data: bytes[v.i] } : bytes[v.i]) : v);
  };
  const into = (text, bytes) => text === undefined ? undefined : parse(text, (key, v) => tagged(v) ? (v[${m}] === 'ArrayBuffer' ? copy(bytes[v.i]).buffer : copy(bytes[v.i])) : v);
  const member = (ns, name) => async (...args) => {
    const answer = await call(ns, name, out(args));
    if (!answer.ok) throw new E(answer.message);
    return into(answer.text, answer.bytes);
  };
  for (const { name, tools } of ${JSON.stringify(groups)}) {
    const handler = {
      get(target, key) {
        if (hasOwn(target, key)) return target[key];
        if (typeof key !== 'string') return undefined;
        // Not a thenable (awaiting the namespace gives it), unless a tool is named then.
        if (key === 'then' && (tools === null || !tools.includes('then'))) return undefined;
        return member(name, key);
      },
    };
    define(globalThis, name, { value: new P({}, handler), writable: true, configurable: true, enumerable: false });
  }
})()`;
}

/** The code as the guest runs it: the providers' preludes, then the code's function, called. */
function guestProgram(fn: string, namespaces: readonly Namespace[]): string {
  const preludes = namespaces.flatMap((ns) => (ns.prelude === undefined ? [] : [ns.prelude]));
  return `(async () => {\n${preludes.join('\n')}\nreturn (\n${fn}\n)();\n})()`;
}

type Answer = { readonly ok: true; readonly text: string | undefined; readonly bytes: Uint8Array[] } | { readonly ok: false; readonly message: string };

/** The host's answer to one call from the guest; never rejects. */
async function answer(namespaces: readonly Namespace[], gate: { open: boolean }, marker: string, ns: unknown, name: unknown, args: unknown): Promise<Answer> {
  // Codemode's rule: a call that reaches the host after the execution ended does not run.
  if (!gate.open) return { ok: false, message: LATE_CALL };
  const namespace = namespaces.find((n) => n.name === ns);
  const tool = typeof name === 'string' ? name : String(name);
  if (namespace === undefined) return { ok: false, message: `Provider "${String(ns)}" not found` };
  const given = Array.isArray(args) ? (restoreBuffers(args, marker, 0) as unknown[]) : [];
  try {
    let value: unknown;
    if (namespace.fns !== undefined) {
      const fn = namespace.fns.get(tool);
      if (fn === undefined) return { ok: false, message: `Tool "${tool}" not found` };
      value = await fn(...given);
    } else {
      const binding = namespace.binding!;
      value = await Reflect.apply(binding.callTool, binding, [tool, given[0]]);
      if (value !== null && typeof value === 'object' && Object.hasOwn(value, CONTROL_KEY)) {
        const control = value as Record<string, unknown>;
        if (control[CONTROL_KEY] === 'pause') return { ok: false, message: PAUSE_SENTINEL };
        if (control[CONTROL_KEY] === 'error') return { ok: false, message: String(control['message']) };
      }
    }
    const bytes: Uint8Array[] = [];
    const text = JSON.stringify(value, (_key, v: unknown) => {
      if (v instanceof ArrayBuffer) return (bytes.push(new Uint8Array(v.slice(0))), { [marker]: 'ArrayBuffer', i: bytes.length - 1 });
      if (ArrayBuffer.isView(v))
        return (bytes.push(new Uint8Array(v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength))), { [marker]: 'Uint8Array', i: bytes.length - 1 });
      return v;
    }) as string | undefined;
    return { ok: true, text, bytes };
  } catch (error) {
    return { ok: false, message: describeThrown(error).message };
  }
}

/**
 * The guest's arguments with its ArrayBuffers back (they cross as bytes, tagged). The value was
 * copied across the boundary, so it is plain data nested at most 64 deep; it is changed in place.
 */
function restoreBuffers(value: unknown, marker: string, depth: number): unknown {
  if (value === null || typeof value !== 'object' || depth > 64 || value instanceof Uint8Array) return value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = restoreBuffers(value[i], marker, depth + 1);
    return value;
  }
  const object = value as Record<string, unknown>;
  if (Object.hasOwn(object, marker) && object[marker] === 'ArrayBuffer' && object['data'] instanceof Uint8Array) {
    const data = object['data'];
    return data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength);
  }
  for (const key of Object.keys(object)) object[key] = restoreBuffers(object[key], marker, depth + 1);
  return value;
}

/**
 * The guest's console as codemode's `logs`: one line per call, `[warn] ` and `[error] ` before
 * what went to stderr, at most `maxBytes` (the runtime's `maxOutputBytes`) in all, then a
 * `[truncated]` line.
 */
class LogCollector {
  readonly lines: string[] = [];
  #bytes = 0;
  #open = true;

  constructor(private readonly maxBytes: number) {}

  add(entry: ConsoleEntry): void {
    if (!this.#open) return;
    const line = entry.stream === 'stdout' ? entry.text : entry.level === 'warn' ? `[warn] ${entry.text}` : `[error] ${entry.text}`;
    this.#bytes += Buffer.byteLength(line) + 1;
    if (this.#bytes > this.maxBytes) {
      this.lines.push('[truncated]');
      this.#open = false;
      return;
    }
    this.lines.push(line);
  }

  close(): void {
    this.#open = false;
  }
}
