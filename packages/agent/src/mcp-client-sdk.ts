/**
 * The client half of whichever MCP SDK is installed, for `mcpTools`: 1.x
 * (`@modelcontextprotocol/sdk`, the 2025 revisions) or 2.x (`@modelcontextprotocol/client`,
 * which negotiates: the stateless 2026-07-28 revision with a server that offers it, the 2025
 * handshake otherwise). Over stdio (a command it starts) or Streamable HTTP (a URL).
 *
 * The tool list is asked for raw (no SDK schema on it), so that what a server lies about is
 * refused by `mcpTools` naming the tool, not by a schema error that names an index.
 *
 * @module
 */
import { InvalidOption } from '@strata/runtime';
import type { McpSdkVersion } from './mcp-server-sdk.js';

/** Where an upstream server is: a command to start over stdio, or a Streamable HTTP endpoint. */
export type UpstreamTarget =
  | {
      readonly kind: 'stdio';
      readonly command: string;
      readonly args: readonly string[];
      readonly env?: Readonly<Record<string, string>>;
      readonly cwd?: string;
    }
  | { readonly kind: 'http'; readonly url: URL; readonly headers: Readonly<Record<string, string>> };

/** A connected upstream server, whatever the SDK. */
export interface UpstreamConnection {
  readonly sdk: McpSdkVersion;
  /** One page of `tools/list`, unchecked. */
  listToolsPage(cursor: string | undefined, timeout: number): Promise<unknown>;
  callTool(name: string, args: Record<string, unknown>, timeout: number): Promise<unknown>;
  close(): Promise<void>;
}

const INFO = { name: 'strata', version: '0.1.0' };

function notInstalled(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException)?.code;
  return code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND';
}

/** Runs `connect`; when it fails, the client is closed (a server it started is stopped) first. */
async function closedOnFailure(client: { close(): Promise<void> }, connect: () => Promise<void>): Promise<void> {
  try {
    await connect();
  } catch (error) {
    await client.close().catch(() => undefined);
    throw error;
  }
}

/** A server to start over stdio as both SDKs' transports take it (its stderr ignored). */
function stdioParameters(target: Extract<UpstreamTarget, { kind: 'stdio' }>) {
  return {
    command: target.command,
    args: [...target.args],
    ...(target.env === undefined ? {} : { env: { ...target.env } }),
    ...(target.cwd === undefined ? {} : { cwd: target.cwd }),
    stderr: 'ignore' as const,
  };
}

async function connect1(target: UpstreamTarget, timeout: number): Promise<UpstreamConnection> {
  const [{ Client }, { ResultSchema }] = await Promise.all([import('@modelcontextprotocol/sdk/client/index.js'), import('@modelcontextprotocol/sdk/types.js')]);
  const client = new Client(INFO);
  await closedOnFailure(client, async () => {
    if (target.kind === 'stdio') {
      const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
      await client.connect(new StdioClientTransport(stdioParameters(target)), { timeout });
    } else {
      const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
      await client.connect(new StreamableHTTPClientTransport(target.url, { requestInit: { headers: { ...target.headers } } }), { timeout });
    }
  });
  return {
    sdk: 1,
    listToolsPage: (cursor, t) => client.request({ method: 'tools/list', params: cursor === undefined ? {} : { cursor } }, ResultSchema, { timeout: t }),
    callTool: (name, args, t) => client.request({ method: 'tools/call', params: { name, arguments: args } }, ResultSchema, { timeout: t }),
    close: () => client.close(),
  };
}

// A Standard Schema that takes any result as it is: the checks are mcpTools' own.
const RAW_RESULT = { '~standard': { version: 1, vendor: 'strata', validate: (value: unknown) => ({ value }) } } as const;

async function connect2(target: UpstreamTarget, timeout: number): Promise<UpstreamConnection> {
  const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
  // 'auto': the 2026-07-28 revision when the server offers it, else the 2025 handshake.
  const client = new Client(INFO, { versionNegotiation: { mode: 'auto' } });
  await closedOnFailure(client, async () => {
    if (target.kind === 'stdio') {
      const { StdioClientTransport } = await import('@modelcontextprotocol/client/stdio');
      await client.connect(new StdioClientTransport(stdioParameters(target)), { timeout });
    } else {
      await client.connect(new StreamableHTTPClientTransport(target.url, { requestInit: { headers: { ...target.headers } } }), { timeout });
    }
  });
  // In the 2026-07-28 revision the SDK decodes every result with its own schema, whatever the
  // request asks: the raw tools/list answer is kept, so that a refused list can be checked by name.
  const transport = (client as unknown as { transport?: { onmessage?: (message: unknown, extra?: unknown) => void } }).transport;
  let rawTools: unknown;
  const deliver = transport?.onmessage;
  if (transport !== undefined && deliver !== undefined) {
    transport.onmessage = (message, extra) => {
      const result = (message as { result?: { tools?: unknown } } | null)?.result;
      if (result !== null && typeof result === 'object' && Array.isArray(result.tools)) rawTools = result;
      deliver.call(transport, message, extra);
    };
  }
  return {
    sdk: 2,
    listToolsPage: async (cursor, t) => {
      rawTools = undefined;
      try {
        return await client.request({ method: 'tools/list', params: cursor === undefined ? {} : { cursor } }, RAW_RESULT as never, { timeout: t });
      } catch (error) {
        if ((error as { code?: unknown }).code !== 'INVALID_RESULT' || rawTools === undefined) throw error;
        return { ...(rawTools as object), [SDK_REFUSED]: error };
      }
    },
    callTool: (name, args, t) => client.request({ method: 'tools/call', params: { name, arguments: args } }, RAW_RESULT as never, { timeout: t }),
    close: () => client.close(),
  };
}

/** On a tools/list page the SDK refused: its error (the page is the raw answer, for checks that name the tool). */
export const SDK_REFUSED = Symbol('sdkRefused');

/**
 * Connects to `target` on SDK `version`, or on the one installed (2.x first: it negotiates both
 * revisions).
 *
 * @throws `InvalidOption` (`@strata/runtime`) when no MCP SDK (or not that one) is installed.
 */
export async function connectUpstream(target: UpstreamTarget, version: McpSdkVersion | undefined, timeout: number): Promise<UpstreamConnection> {
  if (version !== 1) {
    try {
      await import('@modelcontextprotocol/client');
      return await connect2(target, timeout);
    } catch (error) {
      if (!notInstalled(error)) throw error;
      if (version === 2) throw new InvalidOption('MCP SDK 2.x is not installed: npm install @modelcontextprotocol/client');
    }
  }
  try {
    await import('@modelcontextprotocol/sdk/client/index.js');
  } catch (error) {
    if (!notInstalled(error)) throw error;
    throw new InvalidOption(
      'mcpTools needs an MCP SDK: npm install @modelcontextprotocol/sdk (1.x) or @modelcontextprotocol/client (2.x) (optional peer dependencies of @strata/agent)',
    );
  }
  return connect1(target, timeout);
}
