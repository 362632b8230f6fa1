/**
 * `strata mcp`: an MCP server (stdio or Streamable HTTP, on the official SDK 1.x or 2.x) with one tool, `execute`, that runs the
 * model's code in a fresh pooled sandbox, with bridged tools in its namespaces, and answers with
 * the result, the console output and a receipt of every tool call. With `session`, one
 * `AgentSandbox` for the connection keeps state across calls. Whatever the code does (a throw, an
 * endless loop, a crash), the answer is an MCP tool error; the server goes on.
 *
 * @module mcp
 */
import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { WEB_POLYFILLS } from '@strata/polyfills';
import { egressHandler, InvalidOption, SandboxPool, type EgressPolicy, type IsolatedRuntime, type SandboxMode } from '@strata/runtime';
import { toTaggedJson } from '@strata/wire';
import { AgentSandbox, type AgentSandboxOptions, type CellResult } from './agent-sandbox.js';
import { McpApprovals, type InputRequiredAnswer } from './mcp-approvals.js';
import { SESSION_ID_PATTERN } from './journal.js';
import { SqliteJournalStore } from './stores/sqlite-store.js';
import { executeCell } from './cell-code.js';
import { normalizeCode } from './normalize-code.js';
import { describeThrown } from './describe.js';
import { TypeCheckFailed } from './errors.js';
import { formatDiagnostics, typecheck } from './typecheck.js';
import { mcpTools, type McpServerCommand, type McpTools } from './mcp-tools.js';
export { checkMcpHttpOptions, type McpHttpOptions } from './mcp-http.js';
export type { McpSdkVersion } from './mcp-server-sdk.js';
import { checkMcpHttpOptions, DEFAULT_MAX_BODY_BYTES, listenMcpHttp, type McpHttpOptions } from './mcp-http.js';
import { type ExecuteHandlers, loadServerSdk, type McpSdkVersion } from './mcp-server-sdk.js';
import type { ToolCall } from './journal.js';
import { ToolBridge, type BridgeTool } from './tool-bridge.js';

/** What `strata mcp` serves, as its config file (`--config strata.json`) says it. */
export interface McpServerConfig {
  /** The tools to bridge: modules that export them, and upstream MCP servers. */
  readonly tools?: readonly (
    | { readonly module: string; readonly export?: string; readonly namespace?: string }
    | { readonly mcp: McpServerCommand; readonly namespace: string }
  )[];
  /** One `AgentSandbox` for the connection (state across calls), instead of a fresh sandbox per call. */
  readonly session?: boolean;
  readonly sandbox?: SandboxMode;
  /** The soft timeout of each run, ms. Default 30 000. */
  readonly timeout?: number;
  /** The worker's memory ceiling, bytes. */
  readonly maxMemory?: number;
  /** Sandboxes kept ready (without `session`). Default 2. */
  readonly poolSize?: number;
  /**
   * Without `session`: isolates per sandbox worker. Above 1, each call runs in a fresh isolate of
   * a shared worker (a few MiB and a hand-over instead of a process; the calls of this server are
   * one tenant). Default 1: a worker per call.
   */
  readonly isolatesPerWorker?: number;
  /** Type-check the code against the tools' declarations before it runs (needs `typescript`); code that does not check is a tool error with the diagnostics. */
  readonly typecheck?: boolean;
  /** With `typecheck`: how long one check may take, ms (in the checker's worker thread). Default 5 000. */
  readonly typecheckTimeout?: number;
  /** What the code's `fetch` may reach: an egress policy (`@strata/runtime`'s `EgressPolicy`). Default none: `fetch` refuses. */
  readonly egress?: EgressPolicy;
  /**
   * With `session`: a SQLite file (made if missing; relative to the config file) that keeps the
   * session's journal, so that it outlives the server: started again with the same `sessionId`,
   * the server resumes it (its state replayed, no tool called again).
   */
  readonly store?: string;
  /** With `store`: the session to resume, or to start under this id. Default: a new random id, printed on stderr. */
  readonly sessionId?: string;
  /**
   * The MCP SDK to serve on: 1 (`@modelcontextprotocol/sdk`) or 2 (`@modelcontextprotocol/server`,
   * with `@modelcontextprotocol/node` for HTTP). Default: over stdio 1.x, over HTTP 2.x when it is
   * installed (it serves the 2026-07-28 revision and the 2025 ones), else the one installed.
   */
  readonly sdk?: McpSdkVersion;
}

/** The `execute` tool's name. */
export const EXECUTE_TOOL = 'execute';

/**
 * Reads a config file: JSON, checked; module paths are relative to the file.
 *
 * @throws `InvalidOption` (`@strata/runtime`) saying which field is wrong.
 */
export async function loadMcpConfig(path: string): Promise<McpServerConfig> {
  let config: unknown;
  try {
    config = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    throw new InvalidOption(`the config ${path} could not be read as JSON: ${(error as Error).message}`);
  }
  const checked = checkConfig(config);
  const base = dirname(resolve(path));
  return {
    ...checked,
    tools: (checked.tools ?? []).map((entry) =>
      'module' in entry && (entry.module.startsWith('.') || isAbsolute(entry.module))
        ? { ...entry, module: pathToFileURL(resolve(base, entry.module)).href }
        : entry,
    ),
    ...(checked.store === undefined ? {} : { store: resolve(base, checked.store) }),
  };
}

/** A config as given (from a file or a program), checked field by field. */
export function checkConfig(config: unknown): McpServerConfig {
  if (config === null || typeof config !== 'object' || Array.isArray(config)) throw new InvalidOption('the MCP server config must be an object');
  const c = config as Record<string, unknown>;
  const known = [
    'tools',
    'session',
    'sandbox',
    'timeout',
    'maxMemory',
    'poolSize',
    'isolatesPerWorker',
    'typecheck',
    'typecheckTimeout',
    'egress',
    'store',
    'sessionId',
    'sdk',
  ];
  const unknown = Object.keys(c).filter((key) => !known.includes(key));
  if (unknown.length > 0) throw new InvalidOption(`the config has unknown fields: ${unknown.join(', ')} (known: ${known.join(', ')})`);
  if (c['tools'] !== undefined && !Array.isArray(c['tools']))
    throw new InvalidOption('config.tools must be an array of { module, export?, namespace? } or { mcp: { command, args? }, namespace }');
  for (const [i, entry] of ((c['tools'] as unknown[] | undefined) ?? []).entries()) {
    const e = entry as Record<string, unknown> | null;
    if (e === null || typeof e !== 'object') throw new InvalidOption(`config.tools[${i}] must be an object`);
    if (typeof e['module'] === 'string') continue;
    const mcp = e['mcp'] as Record<string, unknown> | undefined;
    if (mcp !== null && typeof mcp === 'object' && typeof mcp['command'] === 'string' && typeof e['namespace'] === 'string') continue;
    throw new InvalidOption(`config.tools[${i}] must be { module, export?, namespace? } or { mcp: { command, args? }, namespace }`);
  }
  for (const key of ['session', 'typecheck'] as const) {
    if (c[key] !== undefined && typeof c[key] !== 'boolean') throw new InvalidOption(`config.${key} must be true or false`);
  }
  if (c['sandbox'] !== undefined && !['require', 'auto', 'off'].includes(c['sandbox'] as string))
    throw new InvalidOption("config.sandbox must be 'require', 'auto' or 'off'");
  for (const key of ['timeout', 'maxMemory', 'poolSize', 'isolatesPerWorker', 'typecheckTimeout'] as const) {
    if (c[key] !== undefined && (!Number.isSafeInteger(c[key]) || (c[key] as number) < 1)) throw new InvalidOption(`config.${key} must be a positive integer`);
  }
  if (c['egress'] !== undefined) {
    if (c['egress'] === null || typeof c['egress'] !== 'object' || Array.isArray(c['egress']))
      throw new InvalidOption('config.egress must be an egress policy such as { "allow": ["https://api.example.com/v1/*"] }');
    // Checked now, so a bad policy stops the server before it serves (InvalidOption names the field).
    egressHandler(c['egress'] as EgressPolicy);
  }
  if (c['store'] !== undefined) {
    if (typeof c['store'] !== 'string' || c['store'] === '') throw new InvalidOption('config.store must be the path of a SQLite file (made if missing)');
    if (c['session'] !== true) throw new InvalidOption('config.store keeps a session: set session too (--session)');
  }
  if (c['sdk'] !== undefined && c['sdk'] !== 1 && c['sdk'] !== 2)
    throw new InvalidOption('config.sdk must be 1 (@modelcontextprotocol/sdk) or 2 (@modelcontextprotocol/server)');
  if (c['sessionId'] !== undefined) {
    if (typeof c['sessionId'] !== 'string' || !SESSION_ID_PATTERN.test(c['sessionId']))
      throw new InvalidOption('config.sessionId must be 1 to 128 of A-Z a-z 0-9 . _ : -');
    if (c['store'] === undefined) throw new InvalidOption('config.sessionId names a session in a store: set store too (--store FILE)');
  }
  return c as McpServerConfig;
}

// How long a server that resumes its session waits for the lease of one that stopped without
// giving it up (killed): a little longer than the lease lasts.
const RESUME_WAIT_MS = 35_000;

/** The session of a server with a store: resumed when the store has it, started otherwise. */
async function storedSession(
  store: SqliteJournalStore,
  path: string,
  sessionId: string | undefined,
  options: AgentSandboxOptions,
  log: (line: string) => void,
): Promise<AgentSandbox> {
  if (sessionId !== undefined && (await store.load(sessionId)) !== undefined) {
    const session = await AgentSandbox.resume(sessionId, { ...options, store, lease: { waitMs: RESUME_WAIT_MS } });
    const interrupted = session.interrupted;
    if (interrupted !== undefined) {
      // Its client had its answer cut off with the server that ran it, and asks anew.
      await session.abandon();
      log(
        `strata mcp: cell ${interrupted.cell} of session ${sessionId} was interrupted when its server stopped; it is kept as crashed, its calls as they were`,
      );
    }
    log(`strata mcp: resumed session ${sessionId} from ${path} (${session.journal.cells.length} cells)`);
    return session;
  }
  const session = await AgentSandbox.start({ ...options, store, ...(sessionId === undefined ? {} : { sessionId }) });
  log(`strata mcp: session ${session.id} kept in ${path} (resume it with --session-id ${session.id})`);
  return session;
}

/** A running server: its bridges, and how to stop it (its sandboxes and upstream servers too). */
export interface RunningMcpServer {
  readonly bridges: readonly ToolBridge[];
  close(): Promise<void>;
}

/** A server running over Streamable HTTP: where it serves, too. */
export interface RunningMcpHttpServer extends RunningMcpServer {
  /** `http://HOST:PORT/mcp`. */
  readonly url: URL;
  /** The SDK it serves on. */
  readonly sdk: McpSdkVersion;
}

/** What a config serves, built once: the bridges, the sandboxes, and the execute tool's handlers. */
interface Execute {
  readonly bridges: readonly ToolBridge[];
  readonly handlers: ExecuteHandlers;
  /** Once; the session, then its store, then the pool and the upstream servers. */
  close(): Promise<void>;
}

async function prepareExecute(checked: McpServerConfig): Promise<Execute> {
  const upstreams: McpTools[] = [];
  const bridges: ToolBridge[] = [];
  let pool: SandboxPool | undefined;
  let session: AgentSandbox | undefined;
  let store: SqliteJournalStore | undefined;
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      await session?.close();
      await store?.close();
      await pool?.close();
      for (const upstream of upstreams) await upstream.close().catch(() => undefined);
    })();
    return closing;
  };
  const runtimeOptions = {
    sandbox: checked.sandbox ?? 'auto',
    timeout: checked.timeout ?? 30_000,
    ...(checked.maxMemory === undefined ? {} : { maxMemory: checked.maxMemory }),
    ...(checked.egress === undefined ? {} : { egress: checked.egress }),
  } as const;
  try {
    for (const entry of checked.tools ?? []) {
      if ('mcp' in entry) {
        const upstream = await mcpTools(entry.mcp);
        upstreams.push(upstream);
        bridges.push(new ToolBridge({ namespace: entry.namespace, tools: upstream.tools }));
      } else {
        bridges.push(await bridgeFromModule(entry.module, entry.export, entry.namespace));
      }
    }
    if (checked.session === true && checked.store !== undefined) {
      store = SqliteJournalStore.open(checked.store);
      session = await storedSession(store, checked.store, checked.sessionId, { ...runtimeOptions, tools: bridges }, (line) =>
        process.stderr.write(`${line}\n`),
      );
    } else if (checked.session === true) session = await AgentSandbox.start({ ...runtimeOptions, tools: bridges });
    else
      pool = await SandboxPool.start({
        ...runtimeOptions,
        size: checked.poolSize ?? 2,
        isolatesPerWorker: checked.isolatesPerWorker ?? 1,
        bootstrap: [WEB_POLYFILLS],
      });
  } catch (error) {
    await close();
    throw error;
  }

  const approvals = new McpApprovals();
  const needsSessions = bridges.some((bridge) => bridge.mayNeedApproval);
  const handlers: ExecuteHandlers = {
    listTools: () => ({
      tools: [
        {
          name: EXECUTE_TOOL,
          description: executeDescription(bridges, checked.session === true),
          inputSchema: {
            type: 'object',
            properties: {
              code: { type: 'string', description: 'JavaScript to run; its last expression is the result. Top-level await is fine.' },
              language: { type: 'string', enum: ['javascript', 'typescript'], description: "Default 'javascript'; 'typescript' has its types stripped." },
            },
            required: ['code'],
          },
        },
      ],
    }),
    callTool: async (params, channel) => {
      try {
        if (params.name !== EXECUTE_TOOL) return toolError(`there is no tool ${params.name}; the one tool is ${EXECUTE_TOOL}`);
        const args = (params.arguments ?? {}) as Record<string, unknown>;
        if (typeof args['code'] !== 'string') return toolError('execute needs code: a string of JavaScript');
        const language = args['language'] ?? 'javascript';
        if (language !== 'javascript' && language !== 'typescript') return toolError("language must be 'javascript' or 'typescript'");
        const code = await normalizeCode(args['code']);
        const timeout = checked.typecheckTimeout === undefined ? {} : { timeout: checked.typecheckTimeout };
        if (checked.typecheck === true && session === undefined) {
          const diagnostics = await typecheck(code, bridges.map((bridge) => bridge.declarations()).join('\n'), language, timeout);
          if (diagnostics.length > 0)
            return toolError(`TypeCheckFailed: the code does not check against the tools' declarations:\n${formatDiagnostics(diagnostics)}`);
        }
        const runOptions = {
          language,
          typecheck: checked.typecheck === true,
          ...(checked.typecheckTimeout === undefined ? {} : { typecheckTimeout: checked.typecheckTimeout }),
        } as const;
        if (session !== undefined) return settled(await approvals.execute(channel, { session }, (s) => s.run(code, runOptions)));
        if (needsSessions) {
          // A tool may need approval: the code runs in a session of its own, which can pause for it.
          const start = (journal?: unknown) =>
            journal === undefined
              ? AgentSandbox.start({ ...runtimeOptions, tools: bridges })
              : AgentSandbox.restore(journal, { ...runtimeOptions, tools: bridges });
          return settled(await approvals.execute(channel, { start }, (s) => s.run(code, { language })));
        }
        return await runFresh(pool!, bridges, code, language);
      } catch (error) {
        if (error instanceof TypeCheckFailed) return toolError(`TypeCheckFailed: ${error.message}`);
        return toolError(`the sandbox could not run the code: ${describeThrown(error).message}`);
      }
    },
  };
  return { bridges, handlers, close };
}

/**
 * Serves `config` over `transport` (stdio by default) until the client goes away or `close()`.
 * Over stdio it serves on SDK 1.x unless `config.sdk` is 2.
 *
 * @throws `InvalidOption` (`@strata/runtime`) for a bad config, a tools module that does not export
 *   tools, or no MCP SDK installed.
 */
export async function startMcpServer(config: McpServerConfig, transport?: Transport): Promise<RunningMcpServer> {
  const checked = checkConfig(config);
  const sdk = await loadServerSdk(checked.sdk ?? 1);
  const execute = await prepareExecute(checked);
  let server: { close(): Promise<void> };
  try {
    // The stdio transport checks messages with SDK 1.x's schemas: loaded only when it is the one used.
    const connection = transport ?? new (await import('./stdio-transport.js')).LineStdioTransport();
    const closedBefore = connection.onclose;
    connection.onclose = () => {
      closedBefore?.();
      void execute.close();
    };
    server = await sdk.connect(execute.handlers, connection);
  } catch (error) {
    await execute.close();
    throw error;
  }
  return {
    bridges: execute.bridges,
    close: async () => {
      await server.close();
      await execute.close();
    },
  };
}

/**
 * Serves `config` over Streamable HTTP at `http://HOST:PORT/mcp`, statelessly (no
 * `Mcp-Session-Id`): every request is answered by a fresh SDK server instance over the one set of
 * sandboxes, so with `session` every client with the token shares the one session and its state.
 *
 * @throws `InvalidOption` (`@strata/runtime`) for a bad config, a non-loopback host without a
 *   token, or no MCP SDK installed.
 */
export async function startMcpHttpServer(config: McpServerConfig, options: McpHttpOptions): Promise<RunningMcpHttpServer> {
  const checked = checkConfig(config);
  const http = checkMcpHttpOptions(options);
  const sdk = await loadServerSdk(checked.sdk);
  const execute = await prepareExecute(checked);
  const handler = sdk.http(execute.handlers, http.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES);
  let edge: Awaited<ReturnType<typeof listenMcpHttp>>;
  try {
    edge = await listenMcpHttp(
      http,
      (req, res, body) => handler.handle(req, res, body),
      (line) => process.stderr.write(`${line}\n`),
    );
  } catch (error) {
    await handler.close();
    await execute.close();
    throw new InvalidOption(`strata mcp could not listen on ${http.host}:${http.port}: ${(error as Error).message}`);
  }
  let closing: Promise<void> | undefined;
  return {
    bridges: execute.bridges,
    url: edge.url,
    sdk: sdk.version,
    close: () =>
      (closing ??= (async () => {
        await edge.close();
        await handler.close();
        await execute.close();
      })()),
  };
}

/** The execute tool's description: what it does, and the bridged tools' declarations. */
function executeDescription(bridges: readonly ToolBridge[], session: boolean): string {
  const lines = [
    `Runs JavaScript in a sandbox (a V8 isolate in a locked-down process: no network, no files, no require)${session ? '; state persists across calls' : ', fresh for each call'}.`,
    'The value of the last expression is the result; console output is returned too. Top-level await is fine.',
  ];
  if (bridges.length > 0) {
    lines.push('The code can call these tools (each returns a promise: await it):', '```ts', ...bridges.map((bridge) => bridge.declarations()), '```');
  }
  return lines.join('\n');
}

async function runFresh(pool: SandboxPool, bridges: readonly ToolBridge[], code: string, language: 'javascript' | 'typescript') {
  const calls: ToolCall[] = [];
  const rt: IsolatedRuntime = await pool.checkout();
  try {
    for (const bridge of bridges) await bridge.bind(rt, { onCall: (call) => calls.push(call) });
    const outcome = await executeCell(rt, code, language, 'execute');
    return answer({ ...outcome, calls });
  } finally {
    await rt.close();
  }
}

/** A session's cell as the MCP answer; or what to ask the client first; or why its answer was refused. */
function settled(outcome: CellResult | InputRequiredAnswer | { readonly refused: string }) {
  if ('inputRequired' in outcome) return outcome;
  if ('refused' in outcome) return toolError(outcome.refused);
  return answer({ ...outcome, calls: outcome.calls });
}

/** The MCP answer: the outcome as structured content and as text; an error unless the code ran. */
function answer(outcome: {
  status: string;
  result: unknown;
  stdout: string;
  stderr: string;
  error: string | undefined;
  errorType: string | undefined;
  truncated: boolean;
  calls: readonly ToolCall[];
}) {
  const structured = {
    status: outcome.status,
    ...(outcome.status === 'ok' ? { result: jsonOf(outcome.result) } : { error: `${outcome.errorType}: ${outcome.error}` }),
    stdout: outcome.stdout,
    stderr: outcome.stderr,
    ...(outcome.truncated ? { truncated: true } : {}),
    calls: outcome.calls.map(callJson),
  };
  return { content: [{ type: 'text' as const, text: JSON.stringify(structured, null, 2) }], structuredContent: structured, isError: outcome.status !== 'ok' };
}

/** A receipt: the call's `ToolCall` with its values as tagged JSON, one shape with or without `--session`. */
function callJson(call: ToolCall): unknown {
  return {
    seq: call.seq,
    tool: call.tool,
    args: jsonOf(call.args),
    status: call.status,
    ...('result' in call ? { result: jsonOf(call.result) } : {}),
    ...(call.error === undefined ? {} : { error: { name: call.error.name, message: call.error.message } }),
    ms: call.ms,
  };
}

function jsonOf(value: unknown): unknown {
  try {
    return toTaggedJson(value);
  } catch {
    return String(value);
  }
}

function toolError(message: string) {
  return { content: [{ type: 'text' as const, text: message }], isError: true };
}

/** A module's tools: its `export` (default: `tools`, then the default export), a ToolBridge or an object of bridge tools. */
async function bridgeFromModule(specifier: string, exportName: string | undefined, namespace: string | undefined): Promise<ToolBridge> {
  const module = (await import(specifier)) as Record<string, unknown>;
  const value = exportName !== undefined ? module[exportName] : (module['tools'] ?? module['default']);
  if (value instanceof ToolBridge) {
    if (namespace !== undefined && namespace !== value.namespace)
      throw new InvalidOption(`${specifier} exports a ToolBridge with the namespace ${value.namespace}, not ${namespace}`);
    return value;
  }
  if (value === null || typeof value !== 'object') {
    throw new InvalidOption(
      `${specifier} must export a ToolBridge or an object of tools (${exportName === undefined ? '`tools` or a default export' : `\`${exportName}\``})`,
    );
  }
  return new ToolBridge({ ...(namespace === undefined ? {} : { namespace }), tools: value as Record<string, BridgeTool> });
}

/** Options of {@link runMcpServer}. */
export interface RunMcpServerOptions {
  /** Serve over Streamable HTTP here, instead of stdio. */
  readonly http?: McpHttpOptions;
}

/** `strata mcp`: serves over stdio until the client goes, or over HTTP until SIGTERM or SIGINT. */
export async function runMcpServer(config: McpServerConfig, options: RunMcpServerOptions = {}): Promise<void> {
  if (options.http !== undefined) return runMcpHttpServer(config, options.http);
  const { LineStdioTransport } = await import('./stdio-transport.js');
  const transport = new LineStdioTransport();
  const closed = new Promise<void>((resolveClosed) => {
    transport.onclose = () => resolveClosed();
  });
  // A client that stops the server with a signal (as the SDK's does, after closing stdin) still
  // lets it close, also while it starts: a stored session's lease is given up, not left to expire.
  let running: RunningMcpServer | undefined;
  let stopped: NodeJS.Signals | undefined;
  let closing: Promise<void> | undefined;
  // Closing awaits handles (the worker's exit) that do not keep the process alive by themselves.
  const closeOnce = () => {
    if (running === undefined) return Promise.resolve();
    if (closing === undefined) {
      const alive = setInterval(() => {}, 60_000);
      closing = running.close().finally(() => clearInterval(alive));
    }
    return closing;
  };
  const onSignal = (signal: NodeJS.Signals) => {
    stopped = signal;
    void closeOnce().finally(() => {
      if (running !== undefined) process.kill(process.pid, signal);
    });
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  const unlisten = () => {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  };
  try {
    running = await startMcpServer(config, transport);
  } catch (error) {
    unlisten();
    if (stopped !== undefined) process.kill(process.pid, stopped);
    throw error;
  }
  if (stopped !== undefined) {
    // The signal came while it started: close now, then end by it.
    await closeOnce();
    unlisten();
    process.kill(process.pid, stopped);
    return;
  }
  process.stdin.on('end', () => void closeOnce());
  await closed;
  await closeOnce();
  unlisten();
}

/** Serves over HTTP until a signal; then closes (a stored session's lease given up) and ends by it. */
async function runMcpHttpServer(config: McpServerConfig, http: McpHttpOptions): Promise<void> {
  let stopped: NodeJS.Signals | undefined;
  let wake: (() => void) | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    stopped = signal;
    wake?.();
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  const unlisten = () => {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  };
  let running: RunningMcpHttpServer;
  try {
    running = await startMcpHttpServer(config, http);
  } catch (error) {
    unlisten();
    if (stopped !== undefined) process.kill(process.pid, stopped);
    throw error;
  }
  process.stderr.write(
    `strata mcp: serving MCP (SDK ${running.sdk}.x, Streamable HTTP) at ${running.url.href}${http.token === undefined ? ' (no token: loopback clients only)' : ', bearer token required'}\n`,
  );
  if (stopped === undefined) await new Promise<void>((resolve) => (wake = resolve));
  // Closing awaits handles (the worker's exit) that do not keep the process alive by themselves.
  const alive = setInterval(() => {}, 60_000);
  try {
    await running.close();
  } finally {
    clearInterval(alive);
  }
  unlisten();
  process.kill(process.pid, stopped!);
}
