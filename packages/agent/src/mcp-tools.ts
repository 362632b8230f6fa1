/**
 * `mcpTools`: another MCP server's tools as bridge tools. `listTools` gives each tool's name,
 * description and input schema; a call from the guest is a `callTool` (its structured content
 * preferred, else its text); a tool error (`isError`) rejects in the guest. On the official SDK.
 *
 * @module
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InvalidOption } from '@strata/runtime';
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

/**
 * Connects to an MCP server (started over stdio from `server`, or an already connected `Client`)
 * and bridges its tools. Only connect to servers you trust: their tools' schemas are compiled
 * into validators (ajv) in this process, and their answers reach the guest.
 *
 * @throws {@link UpstreamMcpError} when the server lists a name that cannot be a tool, more than
 *   `maxTools` tools or more than `maxPages` pages (a server it started is stopped first).
 */
export async function mcpTools(server: McpServerCommand | { readonly client: Client }, options: McpToolsOptions = {}): Promise<McpTools> {
  const timeout = options.timeout ?? 60_000;
  if (!Number.isSafeInteger(timeout) || timeout < 1)
    throw new InvalidOption(`timeout must be a positive integer of milliseconds (got ${String(options.timeout)})`);
  const maxPages = positiveInteger(options.maxPages, 'maxPages', 100);
  const maxTools = positiveInteger(options.maxTools, 'maxTools', 1_000);
  let client: Client;
  let owned = false;
  if ('client' in server) {
    client = server.client;
  } else {
    if (server === null || typeof server !== 'object' || typeof server.command !== 'string' || server.command === '') {
      throw new InvalidOption('mcpTools takes { command, args?, env?, cwd? } (a server to start over stdio) or { client }');
    }
    const sdk = await loadSdk();
    client = new sdk.Client({ name: 'strata', version: '0.1.0' });
    await client.connect(
      new sdk.StdioClientTransport({
        command: server.command,
        args: [...(server.args ?? [])],
        ...(server.env === undefined ? {} : { env: { ...server.env } }),
        ...(server.cwd === undefined ? {} : { cwd: server.cwd }),
        stderr: 'ignore',
      }),
    );
    owned = true;
  }
  try {
    // Null prototype: an upstream name is a key here, never a way to an inherited field.
    const tools = Object.create(null) as Record<string, BridgeTool>;
    let count = 0;
    let cursor: string | undefined;
    for (let pages = 0; ; ) {
      if (++pages > maxPages)
        throw new UpstreamMcpError(`the upstream MCP server's tool list goes on past ${maxPages} pages (maxPages): fix the server, or raise maxPages`);
      const page = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout });
      if (count + page.tools.length > maxTools)
        throw new UpstreamMcpError(`the upstream MCP server has more than ${maxTools} tools (maxTools): bridge fewer, or raise maxTools`);
      count += page.tools.length;
      for (const tool of page.tools) {
        const name = checkToolName(tool.name, tools);
        tools[name] = {
          ...(tool.description === undefined ? {} : { description: tool.description }),
          inputSchema: tool.inputSchema as Record<string, unknown>,
          ...(tool.outputSchema === undefined ? {} : { outputSchema: tool.outputSchema as Record<string, unknown> }),
          execute: async (input: unknown) => {
            const result = await client.callTool({ name, arguments: (input ?? {}) as Record<string, unknown> }, undefined, { timeout });
            const text = Array.isArray(result.content)
              ? result.content
                  .filter((c): c is { type: 'text'; text: string } => c !== null && typeof c === 'object' && c.type === 'text' && typeof c.text === 'string')
                  .map((c) => c.text)
                  .join('\n')
              : '';
            if (result.isError === true) throw new Error(text === '' ? `the MCP tool ${name} failed` : text);
            return result.structuredContent ?? text;
          },
        };
      }
      cursor = page.nextCursor;
      if (cursor === undefined) break;
    }
    return { tools, close: () => (owned ? client.close() : Promise.resolve()) };
  } catch (error) {
    if (owned) await client.close().catch(() => undefined);
    throw error;
  }
}

/** The SDK's client half, or a clear error when it is not installed. */
async function loadSdk(): Promise<{
  Client: typeof Client;
  StdioClientTransport: typeof import('@modelcontextprotocol/sdk/client/stdio.js').StdioClientTransport;
}> {
  try {
    const [client, stdio] = await Promise.all([import('@modelcontextprotocol/sdk/client/index.js'), import('@modelcontextprotocol/sdk/client/stdio.js')]);
    return { Client: client.Client, StdioClientTransport: stdio.StdioClientTransport };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND') throw error;
    throw new InvalidOption('mcpTools needs the MCP SDK: npm install @modelcontextprotocol/sdk (an optional peer dependency of @strata/agent)');
  }
}
