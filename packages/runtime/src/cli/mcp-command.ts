/**
 * `strata mcp`: code mode over MCP. The server lives in `@strata/agent` (it builds on sessions and
 * the tool bridge, which build on this package), loaded here when it is installed; this package
 * does not depend on it.
 *
 * @module
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { McpArgs } from './args.js';
import { ExitStatus, type ExitStatusCode } from './exit-status.js';
import type { CliIo } from './terminal-text.js';

/** What `@strata/agent/mcp` offers the CLI. */
interface AgentMcp {
  loadMcpConfig(path: string): Promise<Record<string, unknown>>;
  checkConfig(config: unknown): Record<string, unknown>;
  runMcpServer(config: Record<string, unknown>, options?: { http?: HttpOptions }): Promise<void>;
  /** Refuses an HTTP address and token that must not serve (a token is required off loopback). */
  checkMcpHttpOptions?(options: HttpOptions): HttpOptions;
}

interface HttpOptions {
  readonly host: string;
  readonly port: number;
  readonly token?: string;
}

// A variable, not a literal: @strata/agent depends on this package, never the other way round.
const AGENT_MCP = '@strata/agent/mcp';

/** Serves until the client goes away; 0 then, 2 for a bad config, 4 when @strata/agent is missing or the server fails to start. */
export async function mcpCommand(args: McpArgs, io: CliIo): Promise<ExitStatusCode> {
  let agent: AgentMcp;
  try {
    agent = (await import(AGENT_MCP)) as AgentMcp;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'ERR_PACKAGE_PATH_NOT_EXPORTED') throw error;
    const sdkMissing = String((error as Error).message).includes('@modelcontextprotocol/sdk');
    io.stderr.write(
      sdkMissing
        ? 'strata: mcp needs the MCP SDK installed beside @strata/agent (npm install @modelcontextprotocol/sdk)\n'
        : 'strata: mcp needs @strata/agent installed beside @strata/runtime (npm install @strata/agent @modelcontextprotocol/sdk)\n',
    );
    return ExitStatus.strataFailed;
  }
  let config: Record<string, unknown>;
  let http: HttpOptions | undefined;
  try {
    const base = args.config === undefined ? {} : await agent.loadMcpConfig(args.config);
    config = agent.checkConfig({
      ...base,
      ...(args.session ? { session: true } : {}),
      ...(args.store === undefined ? {} : { store: resolve(args.store) }),
      ...(args.sessionId === undefined ? {} : { sessionId: args.sessionId }),
      ...(args.sandbox === undefined ? {} : { sandbox: args.sandbox }),
      ...(args.timeout === undefined ? {} : { timeout: args.timeout }),
    });
    if (args.http !== undefined) {
      const token = await readToken(args.tokenFile);
      if (agent.checkMcpHttpOptions === undefined) throw new Error('this @strata/agent serves MCP over stdio only: update it for --http');
      http = agent.checkMcpHttpOptions({ ...args.http, ...(token === undefined ? {} : { token }) });
    }
  } catch (error) {
    io.stderr.write(`strata: ${error instanceof Error ? error.message : String(error)}\n`);
    return ExitStatus.usage;
  }
  try {
    await agent.runMcpServer(config, http === undefined ? {} : { http });
    return ExitStatus.ok;
  } catch (error) {
    io.stderr.write(`strata: the MCP server could not start: ${error instanceof Error ? error.message : String(error)}\n`);
    return ExitStatus.strataFailed;
  }
}

/** The bearer token: from `--token-file`, else `STRATA_MCP_TOKEN`; never from argv, where other users can read it. */
async function readToken(file: string | undefined): Promise<string | undefined> {
  if (file !== undefined) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      throw new Error(`the token file ${file} could not be read: ${(error as Error).message}`);
    }
    // A file written by `echo` or an editor ends with a newline that is not part of the token.
    const token = text.replace(/\r?\n$/, '');
    if (token === '') throw new Error(`the token file ${file} is empty: write the token into it (openssl rand -hex 32 > ${file})`);
    return token;
  }
  const fromEnv = process.env['STRATA_MCP_TOKEN'];
  return fromEnv === undefined || fromEnv === '' ? undefined : fromEnv;
}
