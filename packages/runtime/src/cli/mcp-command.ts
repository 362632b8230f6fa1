/**
 * `strata mcp`: code mode over MCP. The server lives in `@strata/agent` (it builds on sessions and
 * the tool bridge, which build on this package), loaded here when it is installed; this package
 * does not depend on it.
 *
 * @module
 */
import { resolve } from 'node:path';
import type { McpArgs } from './args.js';
import { ExitStatus, type ExitStatusCode } from './exit-status.js';
import type { CliIo } from './terminal-text.js';

/** What `@strata/agent/mcp` offers the CLI. */
interface AgentMcp {
  loadMcpConfig(path: string): Promise<Record<string, unknown>>;
  checkConfig(config: unknown): Record<string, unknown>;
  runMcpServer(config: Record<string, unknown>): Promise<void>;
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
  } catch (error) {
    io.stderr.write(`strata: ${error instanceof Error ? error.message : String(error)}\n`);
    return ExitStatus.usage;
  }
  try {
    await agent.runMcpServer(config);
    return ExitStatus.ok;
  } catch (error) {
    io.stderr.write(`strata: the MCP server could not start: ${error instanceof Error ? error.message : String(error)}\n`);
    return ExitStatus.strataFailed;
  }
}
