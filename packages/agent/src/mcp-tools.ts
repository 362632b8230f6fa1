/**
 * `mcpTools`: another MCP server's tools as bridge tools. `tools/list` gives each tool's name,
 * description and input schema; a call from the guest is a `tools/call` (its structured content
 * preferred, else its text); a tool error (`isError`) rejects in the guest. On the official SDK,
 * 1.x or 2.x, over stdio (a command) or Streamable HTTP (a URL).
 *
 * @module
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InvalidOption } from '@strata/runtime';
import { connectUpstream, SDK_REFUSED, type UpstreamConnection, type UpstreamTarget } from './mcp-client-sdk.js';
import type { McpSdkVersion } from './mcp-server-sdk.js';
import { UpstreamMcpError } from './errors.js';
import type { BridgeTool } from './tool-bridge.js';

/** An MCP server to start over stdio. */
export interface McpServerCommand {
  readonly command: string;
  readonly args?: readonly string[];
  /** Its environment (default: the SDK's safe default, not this process's whole environment). */
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
}

/** An MCP server to reach over Streamable HTTP. */
export interface McpServerUrl {
  /** Its endpoint, `http:` or `https:` (such as `https://example.com/mcp`). */
  readonly url: string | URL;
  /** Sent with every request: `{ authorization: 'Bearer …' }`, say. Never shown in an error. */
  readonly headers?: Readonly<Record<string, string>>;
}

/** The tools of a connected MCP server, and how to let it go. */
export interface McpTools {
  /** By the upstream tools' names, a null-prototype record; give them to `new ToolBridge({ namespace, tools })`. */
  readonly tools: Readonly<Record<string, BridgeTool>>;
  /** Closes the connection (and ends a server started over stdio). */
  close(): Promise<void>;
}

/** Options of {@link mcpTools}. */
export interface McpToolsOptions {
  /** Per call, milliseconds. Default 60 000. */
  readonly timeout?: number;
  /** Pages of `tools/list` followed (`nextCursor`) before giving up on a server that pages forever. Default 100. */
  readonly maxPages?: number;
  /** Tools taken from one server, over all its pages. Default 1 000. */
  readonly maxTools?: number;
  /**
   * The SDK to connect with (a command or a URL): 1 (`@modelcontextprotocol/sdk`, the 2025
   * revisions) or 2 (`@modelcontextprotocol/client`, which negotiates the 2026-07-28 revision and
   * falls back to 2025). Default: 2.x when installed, else 1.x.
   */
  readonly sdk?: McpSdkVersion;
}

// MCP's tool names: 1 to 128 of A-Z a-z 0-9 _ - . (the specification's SHOULD, held as a MUST here).
const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;
// Names JavaScript objects give a meaning of their own: never a key of a record, even a null-prototype one.
const OBJECT_NAMES = new Set(['__proto__', 'constructor', 'prototype']);

/** Refuses a name that cannot be a bridged tool, naming it. */
function checkToolName(name: unknown, taken: Readonly<Record<string, BridgeTool>>): string {
  const shown = typeof name === 'string' ? JSON.stringify(name.length > 128 ? `${name.slice(0, 128)}…` : name) : `a ${name === null ? 'null' : typeof name}`;
  if (typeof name !== 'string' || !TOOL_NAME.test(name)) {
    throw new UpstreamMcpError(
      `the upstream MCP server has a tool named ${shown}: a tool name must be 1 to 128 of A-Z a-z 0-9 _ - . (fix the server, or bridge it through a client that renames its tools)`,
    );
  }
  if (OBJECT_NAMES.has(name))
    throw new UpstreamMcpError(`the upstream MCP server has a tool named ${shown}, which cannot be a tool's name in JavaScript: fix the server`);
  if (Object.hasOwn(taken, name)) throw new UpstreamMcpError(`the upstream MCP server lists the tool ${shown} twice: fix the server`);
  return name;
}

function positiveInteger(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || (value as number) < 1) throw new InvalidOption(`${name} must be a positive integer (got ${String(value)})`);
  return value as number;
}

/** Refuses an input schema that is not a JSON Schema object of an object (MCP's rule), naming the tool. */
function checkInputSchema(name: string, schema: unknown): Record<string, unknown> {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema) || (schema as Record<string, unknown>)['type'] !== 'object') {
    throw new UpstreamMcpError(
      `the upstream MCP server's tool ${JSON.stringify(name)} has an inputSchema that is not a JSON Schema object with type "object" (MCP requires one): fix the server`,
    );
  }
  return schema as Record<string, unknown>;
}

/** Where `server` is, checked. */
function targetOf(server: McpServerCommand | McpServerUrl): UpstreamTarget {
  if (server !== null && typeof server === 'object' && 'url' in server) {
    let url: URL;
    try {
      url = new URL(server.url);
    } catch {
      throw new InvalidOption('mcpTools({ url }) needs an absolute http: or https: URL, such as https://example.com/mcp');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InvalidOption(`mcpTools({ url }) needs an http: or https: URL (got ${url.protocol})`);
    const headers = server.headers ?? {};
    if (headers === null || typeof headers !== 'object' || Object.values(headers).some((value) => typeof value !== 'string'))
      throw new InvalidOption('mcpTools({ url, headers }): headers must be an object of strings');
    return { kind: 'http', url, headers };
  }
  if (server === null || typeof server !== 'object' || typeof server.command !== 'string' || server.command === '') {
    throw new InvalidOption('mcpTools takes { command, args?, env?, cwd? } (a server to start over stdio), { url, headers? } (Streamable HTTP) or { client }');
  }
  return {
    kind: 'stdio',
    command: server.command,
    args: server.args ?? [],
    ...(server.env === undefined ? {} : { env: server.env }),
    ...(server.cwd === undefined ? {} : { cwd: server.cwd }),
  };
}

/** Where a URL's server is, for an error: no credentials, no query. */
function shownUrl(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname}`;
}

/** A client given by the caller, on its own SDK: its typed methods, its validation. */
function givenClient(client: Client): UpstreamConnection {
  return {
    sdk: 1,
    listToolsPage: (cursor, timeout) => client.listTools(cursor === undefined ? {} : { cursor }, { timeout }),
    callTool: (name, args, timeout) => client.callTool({ name, arguments: args }, undefined, { timeout }),
    close: () => Promise.resolve(),
  };
}

/**
 * Connects to an MCP server (started over stdio from a command, reached over Streamable HTTP at
 * `url`, or an already connected `Client`) and bridges its tools. Only connect to servers you
 * trust: their tools' schemas are compiled into validators (ajv) in this process, and their
 * answers reach the guest.
 *
 * @throws {@link UpstreamMcpError} when the server cannot be reached, lists a name that cannot be
 *   a tool or an input schema that is not an object schema, more than `maxTools` tools or more
 *   than `maxPages` pages (a server it started is stopped first).
 */
export async function mcpTools(server: McpServerCommand | McpServerUrl | { readonly client: Client }, options: McpToolsOptions = {}): Promise<McpTools> {
  const timeout = options.timeout ?? 60_000;
  if (!Number.isSafeInteger(timeout) || timeout < 1)
    throw new InvalidOption(`timeout must be a positive integer of milliseconds (got ${String(options.timeout)})`);
  const maxPages = positiveInteger(options.maxPages, 'maxPages', 100);
  const maxTools = positiveInteger(options.maxTools, 'maxTools', 1_000);
  if (options.sdk !== undefined && options.sdk !== 1 && options.sdk !== 2) throw new InvalidOption(`sdk must be 1 or 2 (got ${String(options.sdk)})`);
  let connection: UpstreamConnection;
  const owned = !(server !== null && typeof server === 'object' && 'client' in server);
  if (!owned) {
    connection = givenClient((server as { client: Client }).client);
  } else {
    const target = targetOf(server as McpServerCommand | McpServerUrl);
    try {
      connection = await connectUpstream(target, options.sdk, timeout);
    } catch (error) {
      if (error instanceof InvalidOption || target.kind === 'stdio') throw error;
      throw new UpstreamMcpError(`the MCP server at ${shownUrl(target.url)} could not be connected to: ${(error as Error).message}`);
    }
  }
  try {
    // Null prototype: an upstream name is a key here, never a way to an inherited field.
    const tools = Object.create(null) as Record<string, BridgeTool>;
    let count = 0;
    let cursor: string | undefined;
    for (let pages = 0; ; ) {
      if (++pages > maxPages)
        throw new UpstreamMcpError(`the upstream MCP server's tool list goes on past ${maxPages} pages (maxPages): fix the server, or raise maxPages`);
      const page = (await connection.listToolsPage(cursor, timeout)) as { tools?: unknown; nextCursor?: unknown } | null;
      if (page === null || typeof page !== 'object' || !Array.isArray(page.tools))
        throw new UpstreamMcpError('the upstream MCP server answered tools/list without a tools array: fix the server');
      if (count + page.tools.length > maxTools)
        throw new UpstreamMcpError(`the upstream MCP server has more than ${maxTools} tools (maxTools): bridge fewer, or raise maxTools`);
      count += page.tools.length;
      for (const listed of page.tools as unknown[]) {
        const tool = (listed !== null && typeof listed === 'object' ? listed : {}) as Record<string, unknown>;
        const name = checkToolName(tool['name'], tools);
        const inputSchema = checkInputSchema(name, tool['inputSchema']);
        const description = tool['description'];
        if (description !== undefined && typeof description !== 'string')
          throw new UpstreamMcpError(`the upstream MCP server's tool ${JSON.stringify(name)} has a description that is not a string: fix the server`);
        const outputSchema = tool['outputSchema'];
        if (outputSchema !== undefined && (outputSchema === null || typeof outputSchema !== 'object' || Array.isArray(outputSchema)))
          throw new UpstreamMcpError(
            `the upstream MCP server's tool ${JSON.stringify(name)} has an outputSchema that is not a JSON Schema object: fix the server`,
          );
        tools[name] = {
          ...(description === undefined ? {} : { description }),
          inputSchema,
          ...(outputSchema === undefined ? {} : { outputSchema: outputSchema as Record<string, unknown> }),
          execute: async (input: unknown) => {
            const result = (await connection.callTool(name, (input ?? {}) as Record<string, unknown>, timeout)) as {
              content?: unknown;
              isError?: unknown;
              structuredContent?: unknown;
            } | null;
            const content = result?.content;
            const text = Array.isArray(content)
              ? content
                  .filter((c): c is { type: 'text'; text: string } => c !== null && typeof c === 'object' && c.type === 'text' && typeof c.text === 'string')
                  .map((c) => c.text)
                  .join('\n')
              : '';
            if (result?.isError === true) throw new Error(text === '' ? `the MCP tool ${name} failed` : text);
            return result?.structuredContent ?? text;
          },
        };
      }
      const refused = (page as { [SDK_REFUSED]?: Error })[SDK_REFUSED];
      if (refused !== undefined)
        throw new UpstreamMcpError(`the upstream MCP server's tool list does not match the MCP schema (${refused.message.slice(0, 500)}): fix the server`);
      const next = page.nextCursor;
      if (next !== undefined && typeof next !== 'string')
        throw new UpstreamMcpError('the upstream MCP server answered tools/list with a nextCursor that is not a string: fix the server');
      cursor = next;
      if (cursor === undefined) break;
    }
    return { tools, close: () => (owned ? connection.close() : Promise.resolve()) };
  } catch (error) {
    if (owned) await connection.close().catch(() => undefined);
    throw error;
  }
}
