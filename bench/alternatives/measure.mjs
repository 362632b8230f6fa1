// What a user would pick instead of Strata, measured the same way: quickjs-emscripten in process,
// Node under bubblewrap, Node under @anthropic-ai/sandbox-runtime, and deno with no permissions.
// measureAlternatives() never throws: an alternative that does not install or run here is a row
// with `skipped` set to the reason (and, where it helps, the command that installs what is missing).
// Every child is spawned with a watchdog (killed when a command goes unanswered for 30 s) and is
// killed, with everything it started, before measureAlternatives() returns.
import { spawn } from 'node:child_process';
import { accessSync, constants, lstatSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, realpathSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

/**
 * The CPU-bound kernel every alternative runs (and Strata runs, with and without --jitless): a
 * naive recursive Fibonacci, deterministic, no allocation, about 630,000 calls. An expression whose
 * completion value is {@link CPU_KERNEL_RESULT}.
 */
export const CPU_KERNEL = '(function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); })(27)';
export const CPU_KERNEL_RESULT = 196418;

export const ALTERNATIVES = ['quickjs-emscripten', 'bubblewrap + node', 'sandbox-runtime + node', 'deno, no permissions'];
export const FIGURES = ['cold', 'fresh10', 'warm', 'idleRss', 'cpuKernel'];

/** A command that gets no answer for this long kills its sandbox. */
const WATCHDOG_MS = 30_000;
/** How long a fresh sandbox sits after its first answer before its RSS is read. */
const IDLE_SETTLE_MS = 500;
const WARM_UP_EVALS = 50;
const MIB = 1024 * 1024;

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const REPL_NODE = join(here, 'repl-node.mjs');
const REPL_DENO = join(here, 'repl-deno.js');
const INSTALL_HINT = 'npm ci --prefix bench/alternatives';

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const sinceUs = (t0) => (performance.now() - t0) * 1000;
function withTimeout(promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing after ${WATCHDOG_MS / 1000} s`)), WATCHDOG_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
const errorText = (error) => (error instanceof Error ? error.message : String(error)).replace(/\s+/g, ' ').trim().slice(0, 400);

function which(name) {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {}
  }
  for (const dir of ['/usr/bin', '/bin', '/usr/local/bin']) {
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {}
  }
  return undefined;
}

// --- /proc: process trees and RSS ----------------------------------------------------------------

function processTable() {
  const children = new Map();
  let entries = [];
  try {
    entries = readdirSync('/proc');
  } catch {
    return children;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (!children.has(ppid)) children.set(ppid, []);
      children.get(ppid).push(Number(entry));
    } catch {}
  }
  return children;
}

/** rootPid and every process under it, parents first. */
function processTree(rootPid) {
  const children = processTable();
  const out = [rootPid];
  for (let i = 0; i < out.length; i++) out.push(...(children.get(out[i]) ?? []));
  return out;
}

function rssMiB(pid) {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

function argv0(pid) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0];
  } catch {
    return undefined;
  }
}

// --- a sandboxed process that answers one JSON line per command line ----------------------------

/** Every child spawned and not yet reaped, so that nothing outlives measureAlternatives(). */
const live = new Set();

function killTree(child) {
  const pids = child.pid ? processTree(child.pid) : [];
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {}
  }
}

class LineProcess {
  constructor(command, args, options, afterExit) {
    this.queue = [];
    this.buffer = '';
    this.stderr = '';
    this.afterExit = afterExit;
    this.exited = new Promise((resolve) => (this.resolveExited = resolve));
    this.done = false;
    const child = spawn(command, args, { ...options, stdio: ['pipe', 'pipe', 'pipe'] });
    this.child = child;
    live.add(child);
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdin.on('error', () => {});
    child.stdout.on('data', (data) => this.onData(data));
    child.stderr.on('data', (data) => (this.stderr = (this.stderr + data).slice(-4000)));
    child.on('error', (error) => this.finish(`${command} could not be started: ${error.message}`));
    child.on('exit', (code, signal) => this.finish(`exited (${signal ?? `code ${code}`})${this.stderr ? `: ${this.stderr}` : ''}`));
  }

  onData(data) {
    this.buffer += data;
    let newline;
    while ((newline = this.buffer.indexOf('\n')) >= 0) {
      const line = this.buffer.slice(0, newline);
      this.buffer = this.buffer.slice(newline + 1);
      const waiter = this.queue.shift();
      if (!waiter) continue;
      clearTimeout(waiter.timer);
      try {
        const answer = JSON.parse(line);
        if (answer.ok) waiter.resolve(answer.value);
        else waiter.reject(new Error(`guest error: ${answer.error}`));
      } catch {
        waiter.reject(new Error(`unreadable answer: ${line.slice(0, 200)}`));
      }
    }
  }

  finish(reason) {
    if (this.done) return;
    this.done = true;
    live.delete(this.child);
    for (const waiter of this.queue.splice(0)) {
      clearTimeout(waiter.timer);
      waiter.reject(new Error(reason));
    }
    try {
      this.afterExit?.();
    } catch {}
    this.resolveExited();
  }

  eval(code) {
    if (this.done) return Promise.reject(new Error('the sandbox has exited'));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        killTree(this.child);
        reject(new Error(`no answer in ${WATCHDOG_MS / 1000} s, killed`));
      }, WATCHDOG_MS);
      this.queue.push({ resolve, reject, timer });
      this.child.stdin.write(JSON.stringify(code) + '\n');
    });
  }

  /** The runtime process itself (not bwrap, a shell or a helper): the first process whose argv[0] is runtimePath. */
  runtimePid(runtimePath) {
    return processTree(this.child.pid).find((pid) => argv0(pid) === runtimePath);
  }

  async close() {
    if (!this.done) {
      killTree(this.child);
      await Promise.race([this.exited, sleep(5000)]);
      if (!this.done) this.finish('killed');
    }
  }
}

// --- the measurements, the same for every alternative --------------------------------------------

/**
 * launch() makes a fresh sandbox: { eval(code) -> Promise<value>, close() -> Promise, rss?() -> { valueMiB, note } }.
 * Returns the rows for the five figures; a figure that fails is a skipped row, the others go on.
 */
async function measureSandboxes(alternative, launch, { coldRuns, warmRuns, cpuRuns, notes = {}, log }) {
  const rows = [];
  const row = (figure, value, note) => rows.push({ alternative, figure, ...value, note: [notes[figure], note].filter(Boolean).join('; ') });
  const figure = async (name, fn) => {
    log(`  ${alternative}: ${name}`);
    try {
      await fn();
    } catch (error) {
      rows.push({ alternative, figure: name, skipped: `failed here: ${errorText(error)}`, note: notes[name] ?? '' });
    }
  };
  const check = (value, expected, what) => {
    if (value !== expected) throw new Error(`${what} answered ${JSON.stringify(value)}, expected ${expected}`);
  };

  // One warm-up sandbox, which also tells whether the alternative runs here at all.
  {
    let sandbox;
    try {
      sandbox = await launch();
      check(await sandbox.eval('1+1'), 2, '1+1');
    } catch (error) {
      await sandbox?.close();
      const reason = `does not run here: ${errorText(error)}`;
      return FIGURES.map((f) => ({ alternative, figure: f, skipped: reason, note: notes[f] ?? '' }));
    }
    await sandbox.close();
  }

  await figure('cold', async () => {
    const samples = [];
    for (let i = 0; i < coldRuns; i++) {
      const t0 = performance.now();
      const sandbox = await launch();
      try {
        check(await sandbox.eval('1+1'), 2, '1+1');
        samples.push(sinceUs(t0));
      } finally {
        await sandbox.close();
      }
    }
    row('cold', { valueUs: median(samples) }, `median of ${coldRuns}`);
  });

  await figure('fresh10', async () => {
    const samples = [];
    for (let i = 0; i < coldRuns; i++) {
      const t0 = performance.now();
      const sandbox = await launch();
      try {
        for (let j = 0; j < 10; j++) check(await sandbox.eval('1+1'), 2, '1+1');
        samples.push(sinceUs(t0));
      } finally {
        await sandbox.close();
      }
    }
    row('fresh10', { valueUs: median(samples) }, `median of ${coldRuns}`);
  });

  // One sandbox: its idle RSS after its first answer, then warm round trips and the CPU kernel.
  let sandbox;
  await figure('idleRss', async () => {
    sandbox = await launch();
    check(await sandbox.eval('1+1'), 2, '1+1');
    await sleep(IDLE_SETTLE_MS);
    const { valueMiB, note } = await sandbox.rss();
    if (valueMiB === undefined) throw new Error(note || 'could not be read');
    row('idleRss', { valueMiB }, note);
  });
  try {
    sandbox ??= await launch();
    await figure('warm', async () => {
      for (let i = 0; i < Math.min(WARM_UP_EVALS, warmRuns); i++) await sandbox.eval('1+1');
      const samples = [];
      for (let i = 0; i < warmRuns; i++) {
        const t0 = performance.now();
        check(await sandbox.eval('1+1'), 2, '1+1');
        samples.push(sinceUs(t0));
      }
      row('warm', { valueUs: median(samples) }, `median of ${warmRuns} round trips of 1+1, after ${Math.min(WARM_UP_EVALS, warmRuns)}`);
    });
    await figure('cpuKernel', async () => {
      for (let i = 0; i < 2; i++) check(await sandbox.eval(CPU_KERNEL), CPU_KERNEL_RESULT, 'the CPU kernel');
      const samples = [];
      for (let i = 0; i < cpuRuns; i++) {
        const t0 = performance.now();
        check(await sandbox.eval(CPU_KERNEL), CPU_KERNEL_RESULT, 'the CPU kernel');
        samples.push(sinceUs(t0));
      }
      row('cpuKernel', { valueUs: median(samples) }, `median of ${cpuRuns} after 2, timed by the host around the round trip`);
    });
  } catch (error) {
    for (const f of ['warm', 'cpuKernel']) rows.push({ alternative, figure: f, skipped: `failed here: ${errorText(error)}`, note: notes[f] ?? '' });
  } finally {
    await sandbox?.close();
  }
  return FIGURES.flatMap((f) => rows.filter((r) => r.figure === f));
}

function skippedRows(alternative, reason) {
  return FIGURES.map((figure) => ({ alternative, figure, skipped: reason, note: '' }));
}

/** RSS of the runtime process, and in the note what the whole sandbox's process tree adds up to. */
function processRss(lineProcess, runtimePath, what) {
  const pid = lineProcess.runtimePid(runtimePath);
  if (pid === undefined) return { valueMiB: undefined, note: `no process with argv[0] ${runtimePath} under pid ${lineProcess.child.pid}` };
  const valueMiB = rssMiB(pid);
  const tree = processTree(lineProcess.child.pid);
  const others = tree.filter((p) => p !== pid);
  let note = `VmRSS of the ${what} process (/proc/<pid>/status), ${IDLE_SETTLE_MS} ms after its first answer`;
  if (others.length) {
    const total = tree.map(rssMiB).reduce((a, b) => a + (b ?? 0), 0);
    const names = others.map((p) => (argv0(p) ?? '?').split('/').pop());
    note += `; with the ${others.length} other processes of the sandbox (${[...new Set(names)].join(', ')}) ${total.toFixed(1)} MiB summed (shared pages counted twice)`;
  }
  return { valueMiB, note };
}

// --- quickjs-emscripten ------------------------------------------------------------------------

async function quickjs(options) {
  const alternative = 'quickjs-emscripten';
  let lib;
  try {
    lib = await import('quickjs-emscripten');
  } catch (error) {
    return skippedRows(alternative, `not installed (${errorText(error)}): ${INSTALL_HINT}`);
  }
  const { getQuickJS, newQuickJSWASMModule, RELEASE_SYNC, shouldInterruptAfterDeadline } = lib;
  let QuickJS;
  try {
    QuickJS = await withTimeout(getQuickJS(), 'getQuickJS');
  } catch (error) {
    return skippedRows(alternative, `the WebAssembly module does not load here: ${errorText(error)}`);
  }
  const version = require('quickjs-emscripten/package.json').version;

  // A fresh sandbox: a new QuickJS runtime (its own heap and GC, memory limit 128 MiB as in the raw
  // isolated-vm baseline) and one context, in the one WebAssembly module getQuickJS() shares.
  const launchIn = (module) => async () => {
    const context = module.newContext();
    const runtime = context.runtime;
    runtime.setMemoryLimit(128 * MIB);
    return {
      async eval(code) {
        runtime.setInterruptHandler(shouldInterruptAfterDeadline(Date.now() + WATCHDOG_MS));
        const handle = context.unwrapResult(context.evalCode(code));
        try {
          return context.dump(handle);
        } finally {
          handle.dispose();
        }
      },
      async rss() {
        // RSS growth of this process says nothing about one runtime: QuickJS's own accounting
        // (JS_ComputeMemoryUsage) of the runtime and its context is the per-sandbox figure.
        const usage = runtime.computeMemoryUsage();
        const used = context.dump(usage).memory_used_size;
        usage.dispose();
        const wasmMiB = module.getWasmMemory().buffer.byteLength / MIB;
        return {
          valueMiB: used / MIB,
          note: `not RSS: QuickJS heap of one fresh runtime + context (JS_ComputeMemoryUsage memory_used_size, ${used} bytes), inside a WebAssembly memory of ${wasmMiB} MiB that all runtimes of the module share`,
        };
      },
      async close() {
        if (context.alive) context.dispose();
      },
    };
  };

  // The price of a WebAssembly module of its own per sandbox (a separate linear memory), for the note.
  let perModule = '';
  try {
    const samples = [];
    for (let i = 0; i < Math.max(3, Math.min(options.coldRuns, 15)); i++) {
      const t0 = performance.now();
      const sandbox = await launchIn(await newQuickJSWASMModule(RELEASE_SYNC))();
      if ((await sandbox.eval('1+1')) !== 2) throw new Error('1+1 was not 2');
      samples.push(sinceUs(t0));
      await sandbox.close();
    }
    perModule = `with a WebAssembly module of its own per sandbox (newQuickJSWASMModule) ${(median(samples) / 1000).toFixed(2)} ms`;
  } catch (error) {
    perModule = `a WebAssembly module per sandbox failed: ${errorText(error)}`;
  }

  return measureSandboxes(alternative, launchIn(QuickJS), {
    ...options,
    notes: {
      cold: `quickjs-emscripten ${version} (release-sync variant), in process: new runtime + context + eval, the module already loaded; ${perModule}`,
      fresh10: 'new runtime + context, 10 evalCode("1+1") calls',
      warm: 'evalCode + dump, in process (no IPC at all)',
      cpuKernel: 'QuickJS bytecode interpreter (no JIT), an interrupt handler installed as a real host would',
    },
  });
}

// --- bubblewrap + node -------------------------------------------------------------------------

/** /lib, /lib64, /bin as they are on the host: a symlink stays a symlink, a directory is bound read-only. */
function hostTopLevel(name) {
  try {
    const stat = lstatSync(`/${name}`);
    if (stat.isSymbolicLink()) return ['--symlink', readlinkSync(`/${name}`), `/${name}`];
    if (stat.isDirectory()) return ['--ro-bind', `/${name}`, `/${name}`];
  } catch {}
  return [];
}

export function bwrapArguments(nodePath = realpathSync(process.execPath)) {
  const nodeDir = dirname(nodePath);
  return [
    '--unshare-all',
    '--die-with-parent',
    '--new-session',
    '--clearenv',
    '--cap-drop',
    'ALL',
    '--ro-bind',
    '/usr',
    '/usr',
    ...hostTopLevel('lib'),
    ...hostTopLevel('lib64'),
    ...hostTopLevel('bin'),
    ...(nodeDir === '/usr/bin' || nodeDir.startsWith('/usr/') ? [] : ['--ro-bind', nodeDir, nodeDir]),
    '--ro-bind',
    REPL_NODE,
    '/sandbox/repl.mjs',
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--chdir',
    '/',
    nodePath,
    '/sandbox/repl.mjs',
  ];
}

async function bubblewrap(options) {
  const alternative = 'bubblewrap + node';
  if (process.platform !== 'linux') return skippedRows(alternative, `bubblewrap is Linux only (this is ${process.platform})`);
  const bwrap = which('bwrap');
  if (!bwrap) return skippedRows(alternative, 'bubblewrap is not installed: apt-get install bubblewrap');
  const nodePath = realpathSync(process.execPath);
  const args = bwrapArguments(nodePath);
  const launch = async () => {
    const lp = new LineProcess(bwrap, args, { env: {} });
    return { eval: (code) => lp.eval(code), close: () => lp.close(), rss: async () => processRss(lp, nodePath, 'node') };
  };
  const version = await commandVersion(bwrap, ['--version']);
  return measureSandboxes(alternative, launch, {
    ...options,
    notes: {
      cold: `${version}, Node ${process.version}: spawn bwrap to the first answer; one process per sandbox`,
      fresh10: 'spawn + 10 request/response lines over stdin/stdout',
      warm: 'one line each way over pipes, node:vm runInContext in the sandboxed node',
      cpuKernel: 'V8 with its JIT (TurboFan/Maglev), in a node:vm context',
    },
  });
}

function commandVersion(command, args) {
  return new Promise((resolve) => {
    let out = '';
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'ignore'] });
    const timer = setTimeout(() => child.kill('SIGKILL'), WATCHDOG_MS);
    child.stdout.on('data', (d) => (out += d));
    child.on('error', () => resolve(command));
    child.on('close', () => {
      clearTimeout(timer);
      resolve(out.trim().split('\n')[0] || command);
    });
  });
}

// --- @anthropic-ai/sandbox-runtime + node --------------------------------------------------------

export const SRT_SETTINGS = {
  network: { allowedDomains: [], deniedDomains: [] },
  filesystem: { denyRead: [], allowRead: [], allowWrite: [], denyWrite: [] },
};

const shellQuote = (s) => `'${String(s).replaceAll("'", `'\\''`)}'`;

async function sandboxRuntime(options) {
  const alternative = 'sandbox-runtime + node';
  let SandboxManager;
  try {
    ({ SandboxManager } = await import('@anthropic-ai/sandbox-runtime'));
  } catch (error) {
    return skippedRows(alternative, `not installed (${errorText(error)}): ${INSTALL_HINT}`);
  }
  const version = require('@anthropic-ai/sandbox-runtime/package.json').version;
  try {
    if (!SandboxManager.isSupportedPlatform()) return skippedRows(alternative, `sandbox-runtime does not support ${process.platform}`);
    const deps = SandboxManager.checkDependencies();
    if (deps.errors.length) {
      return skippedRows(alternative, `missing: ${deps.errors.join('; ')} (apt-get install bubblewrap socat ripgrep)`);
    }
  } catch (error) {
    return skippedRows(alternative, `dependency check failed: ${errorText(error)}`);
  }

  const cwd = mkdtempSync(join(tmpdir(), 'strata-bench-srt-'));
  const nodePath = realpathSync(process.execPath);
  const command = `${shellQuote(nodePath)} ${shellQuote(REPL_NODE)}`;
  let initializeMs;
  try {
    const t0 = performance.now();
    await withTimeout(SandboxManager.initialize(structuredClone(SRT_SETTINGS)), 'SandboxManager.initialize');
    initializeMs = performance.now() - t0;
  } catch (error) {
    rmSync(cwd, { recursive: true, force: true });
    await SandboxManager.reset().catch(() => {});
    return skippedRows(alternative, `SandboxManager.initialize failed: ${errorText(error)}`);
  }
  try {
    // A fresh sandbox: wrap the command (the bwrap argv, the mount plan, the network bridge), spawn
    // it, and after it has exited, cleanupAfterCommand() as the library asks.
    const launch = async () => {
      const { argv, env } = await withTimeout(SandboxManager.wrapWithSandboxArgv(command, undefined, undefined, undefined, cwd), 'wrapWithSandboxArgv');
      const lp = new LineProcess(argv[0], argv.slice(1), { env, cwd }, () => SandboxManager.cleanupAfterCommand());
      return { eval: (code) => lp.eval(code), close: () => lp.close(), rss: async () => processRss(lp, nodePath, 'node') };
    };
    return await measureSandboxes(alternative, launch, {
      ...options,
      notes: {
        cold: `@anthropic-ai/sandbox-runtime ${version} as a library, Node ${process.version}: wrapWithSandboxArgv + spawn to the first answer; SandboxManager.initialize (its proxies, once per host process) not counted: ${initializeMs.toFixed(0)} ms`,
        fresh10: 'wrap + spawn + 10 request/response lines over stdin/stdout',
        warm: 'one line each way over pipes, node:vm runInContext in the sandboxed node',
        cpuKernel: "V8 with its JIT, in a node:vm context, under srt's seccomp filter",
      },
    });
  } finally {
    await SandboxManager.reset().catch(() => {});
    rmSync(cwd, { recursive: true, force: true });
  }
}

// --- deno, no permissions ----------------------------------------------------------------------

const DENO_PACKAGES = {
  'linux-x64': '@deno/linux-x64-glibc',
  'linux-arm64': '@deno/linux-arm64-glibc',
  'darwin-x64': '@deno/darwin-x64',
  'darwin-arm64': '@deno/darwin-arm64',
};

function denoBinary() {
  const pkg = DENO_PACKAGES[`${process.platform}-${process.arch}`];
  if (!pkg) throw new Error(`the deno npm package has no binary for ${process.platform}-${process.arch}`);
  const path = join(dirname(require.resolve(`${pkg}/package.json`)), 'deno');
  accessSync(path, constants.X_OK);
  return path;
}

export const DENO_ARGS = ['run', '--no-prompt', '--no-config', '--no-lock', '--no-remote', '--no-npm'];

async function deno(options) {
  const alternative = 'deno, no permissions';
  let denoPath;
  try {
    denoPath = denoBinary();
  } catch (error) {
    return skippedRows(alternative, `no deno binary (${errorText(error)}): ${INSTALL_HINT}`);
  }
  // Deno's own caches (V8 code cache, module analysis) go to a DENO_DIR made for this run, HOME
  // points there too, and the update check (the only network deno would try) is switched off.
  const denoDir = mkdtempSync(join(tmpdir(), 'strata-bench-deno-'));
  const env = { DENO_DIR: denoDir, HOME: denoDir, DENO_NO_UPDATE_CHECK: '1', DENO_NO_PROMPT: '1', NO_COLOR: '1' };
  try {
    const version = await commandVersion(denoPath, ['--version']);
    const launch = async () => {
      const lp = new LineProcess(denoPath, [...DENO_ARGS, REPL_DENO], { env, cwd: denoDir });
      return { eval: (code) => lp.eval(code), close: () => lp.close(), rss: async () => processRss(lp, denoPath, 'deno') };
    };
    return await measureSandboxes(alternative, launch, {
      ...options,
      notes: {
        cold: `${version} from the npm package: spawn deno run (no --allow flag) to the first answer; one process per sandbox`,
        fresh10: 'spawn + 10 request/response lines over stdin/stdout',
        warm: 'one line each way over pipes, indirect eval at global scope',
        cpuKernel: 'V8 with its JIT',
      },
    });
  } finally {
    rmSync(denoDir, { recursive: true, force: true });
  }
}

// --- all of them ---------------------------------------------------------------------------------

const MEASURERS = {
  'quickjs-emscripten': quickjs,
  'bubblewrap + node': bubblewrap,
  'sandbox-runtime + node': sandboxRuntime,
  'deno, no permissions': deno,
};

/**
 * Measure every alternative (or those named in `only`), one after the other.
 * Rows: { alternative, figure, valueUs | valueMiB, note } or { alternative, figure, skipped, note }.
 * Never throws; every child it spawned is gone when it returns.
 */
export async function measureAlternatives({ coldRuns = 15, warmRuns = 200, cpuRuns = coldRuns, only = ALTERNATIVES, log = () => {} } = {}) {
  const killAll = () => {
    for (const child of live) killTree(child);
  };
  process.once('exit', killAll);
  const rows = [];
  try {
    for (const alternative of only) {
      log(`${alternative}...`);
      const measurer = MEASURERS[alternative];
      if (!measurer) {
        rows.push(...skippedRows(alternative, 'unknown alternative'));
        continue;
      }
      try {
        rows.push(...(await measurer({ coldRuns, warmRuns, cpuRuns, log })));
      } catch (error) {
        rows.push(...skippedRows(alternative, `failed: ${errorText(error)}`));
      }
      killAll();
    }
  } finally {
    killAll();
    process.removeListener('exit', killAll);
  }
  return rows;
}
