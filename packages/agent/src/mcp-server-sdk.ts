/**
 * The server half of whichever MCP SDK is installed, behind one shape: 1.x
 * (`@modelcontextprotocol/sdk`, the 2025 revisions) or 2.x (`@modelcontextprotocol/server` with
 * `@modelcontextprotocol/node`, which serves the stateless 2026-07-28 revision and the 2025 ones
 * beside it). Both are optional peers, loaded when first needed.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { InvalidOption } from '@strata/runtime';
import { ELICIT_TIMEOUT_MS, NO_ELICITATION, type ApprovalChannel, type InputRequiredAnswer } from './mcp-approvals.js';

/** The MCP SDK generations Strata speaks: 1 (`@modelcontextprotocol/sdk`), 2 (the split packages). */
export type McpSdkVersion = 1 | 2;

/** What the server answers, whatever SDK carries it. */
export interface ExecuteHandlers {
  listTools(): { tools: unknown[] };
  /** A tool's answer, or (on the 2026-07-28 revision only) the input to ask the client for first. */
  callTool(
    params: { name: string; arguments?: Record<string, unknown> | undefined },
    approvals: ApprovalChannel,
  ): Promise<Record<string, unknown> | InputRequiredAnswer>;
}

type ElicitationCapability = { form?: unknown; url?: unknown } | undefined;

/** Whether a client's capabilities let it be asked with a form (`elicitation: {}` means form, in 2025-06). */
function canElicitForm(capabilities: unknown): boolean {
  const elicitation = (capabilities as { elicitation?: ElicitationCapability } | undefined)?.elicitation;
  if (elicitation === null || typeof elicitation !== 'object') return false;
  return elicitation.form !== undefined || elicitation.url === undefined;
}

const STATELESS_2025 = 'the MCP client cannot be asked for approval over stateless HTTP on a 2025 revision (a 2026-07-28 client can be: serve on SDK 2.x)';

/** An HTTP handler: one request (its body parsed) answered by a fresh stateless server. */
export interface SdkHttpHandler {
  handle(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void>;
  close(): Promise<void>;
}

/** One SDK's server half. */
export interface ServerSdk {
  readonly version: McpSdkVersion;
  /** Serves `handlers` over `transport` (one connection) until it closes. */
  connect(handlers: ExecuteHandlers, transport: Transport): Promise<{ close(): Promise<void> }>;
  /** Serves `handlers` over Streamable HTTP, statelessly: every request a fresh server instance. */
  http(handlers: ExecuteHandlers, maxBodyBytes: number): SdkHttpHandler;
}

const INFO = { name: 'strata', version: '0.1.0' };

function notInstalled(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException)?.code;
  return code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND';
}

async function sdk1(): Promise<ServerSdk> {
  const [{ Server }, { StreamableHTTPServerTransport }, { CallToolRequestSchema, ListToolsRequestSchema }] = await Promise.all([
    import('@modelcontextprotocol/sdk/server/index.js'),
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]);
  const newServer = (handlers: ExecuteHandlers, stateless = false) => {
    const server = new Server(INFO, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => handlers.listTools() as never);
    server.setRequestHandler(CallToolRequestSchema, async (request) => {
      const approvals: ApprovalChannel = !stateless
        ? canElicitForm(server.getClientCapabilities())
          ? { kind: 'ask', elicit: (form) => server.elicitInput(form as never, { timeout: ELICIT_TIMEOUT_MS }) as never }
          : { kind: 'none', why: NO_ELICITATION }
        : { kind: 'none', why: STATELESS_2025 };
      // On the 2025 revisions the answer is always complete: the channel never asks in rounds.
      return (await handlers.callTool(request.params, approvals)) as never;
    });
    return server;
  };
  return {
    version: 1,
    async connect(handlers, transport) {
      const server = newServer(handlers);
      await server.connect(transport);
      return server;
    },
    http(handlers) {
      return {
        async handle(req, res, body) {
          const server = newServer(handlers, true);
          // Stateless (no Mcp-Session-Id) and JSON answers: the server's state is the sandbox's, not the connection's.
          const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
          res.on('close', () => void server.close());
          await server.connect(transport as Transport);
          await transport.handleRequest(req, res, body);
        },
        close: async () => {},
      };
    },
  };
}

async function sdk2(): Promise<ServerSdk> {
  const [{ Server, createMcpHandler, inputRequired }, { toNodeHandler }] = await Promise.all([
    import('@modelcontextprotocol/server'),
    import('@modelcontextprotocol/node'),
  ]);
  const newServer = (handlers: ExecuteHandlers, stateless = false) => {
    const server = new Server(INFO, { capabilities: { tools: {} } });
    server.setRequestHandler('tools/list', async () => handlers.listTools() as never);
    server.setRequestHandler('tools/call', async (request, ctx) => {
      const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
      const modern = envelope?.['io.modelcontextprotocol/protocolVersion'] !== undefined;
      let approvals: ApprovalChannel;
      if (modern) {
        // 2026-07-28: the client is asked in rounds (input_required), if it said it can answer a form.
        const state = ctx.mcpReq.requestState<unknown>();
        approvals = canElicitForm(envelope?.['io.modelcontextprotocol/clientCapabilities'] ?? server.getClientCapabilities())
          ? { kind: 'rounds', responses: ctx.mcpReq.inputResponses, state: typeof state === 'string' ? state : undefined }
          : { kind: 'none', why: NO_ELICITATION };
      } else if (stateless) approvals = { kind: 'none', why: STATELESS_2025 };
      else if (canElicitForm(server.getClientCapabilities())) {
        approvals = { kind: 'ask', elicit: (form) => ctx.mcpReq.elicitInput(form as never, { timeout: ELICIT_TIMEOUT_MS }) as never };
      } else approvals = { kind: 'none', why: NO_ELICITATION };
      const answer = await handlers.callTool(request.params, approvals);
      if ('inputRequired' in answer) {
        const { inputRequests, requestState } = answer.inputRequired as InputRequiredAnswer['inputRequired'];
        const requests = Object.fromEntries(Object.entries(inputRequests).map(([key, form]) => [key, inputRequired.elicit(form as never)]));
        return inputRequired({ inputRequests: requests, requestState }) as never;
      }
      return answer as never;
    });
    return server;
  };
  return {
    version: 2,
    async connect(handlers, transport) {
      const server = newServer(handlers);
      await server.connect(transport as never);
      return server;
    },
    http(handlers, maxBodyBytes) {
      // The 2026-07-28 revision per request, and 2025-era clients served statelessly beside it; answers
      // are JSON ("auto": execute sends no notification before its result).
      const entry = createMcpHandler(() => newServer(handlers, true), { legacy: 'stateless', maxRequestBodySize: maxBodyBytes });
      const node = toNodeHandler(entry, { maxRequestBodySize: maxBodyBytes });
      return { handle: (req, res, body) => node(req, res, body), close: () => entry.close() };
    },
  };
}

/**
 * The server half of `version`, or of the SDK installed (2.x first: it serves both revisions).
 *
 * @throws `InvalidOption` (`@strata/runtime`) when that SDK is not installed, saying what to install.
 */
export async function loadServerSdk(version?: McpSdkVersion): Promise<ServerSdk> {
  if (version !== 1) {
    try {
      return await sdk2();
    } catch (error) {
      if (!notInstalled(error)) throw error;
      if (version === 2) throw new InvalidOption('MCP SDK 2.x is not installed: npm install @modelcontextprotocol/server @modelcontextprotocol/node');
    }
  }
  try {
    return await sdk1();
  } catch (error) {
    if (!notInstalled(error)) throw error;
    throw new InvalidOption(
      'strata mcp needs an MCP SDK: npm install @modelcontextprotocol/sdk (1.x), or @modelcontextprotocol/server @modelcontextprotocol/node (2.x)',
    );
  }
}
