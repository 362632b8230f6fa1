// An upstream MCP server over Streamable HTTP on 127.0.0.1 (a free port), on the real SDK, 1.x or
// 2.x, stateless: what `mcpTools({ url })` bridges. It requires a bearer token when given one, and
// records the MCP-Protocol-Version header of every request (which revision the client spoke).
import { createServer, type IncomingMessage, type Server as HttpServer } from 'node:http';

/** A tool as the upstream lists it: anything, so that a test can make it lie. */
export type ListedTool = Record<string, unknown>;

export const HONEST_TOOLS: ListedTool[] = [
  {
    name: 'add',
    description: 'Adds two numbers',
    inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
    outputSchema: { type: 'object', properties: { sum: { type: 'number' } }, required: ['sum'] },
  },
  { name: 'echo-text', description: 'Echoes its text', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } },
];

async function answer(name: string, args: Record<string, unknown>) {
  if (name === 'add') {
    const sum = (args['a'] as number) + (args['b'] as number);
    return { content: [{ type: 'text', text: String(sum) }], structuredContent: { sum } };
  }
  if (name === 'echo-text') return { content: [{ type: 'text', text: `echo: ${String(args['text'])}` }] };
  return { content: [{ type: 'text', text: `no tool ${name}` }], isError: true };
}

export interface UpstreamHttp {
  readonly url: URL;
  /** The MCP-Protocol-Version header of each request, in order (undefined when absent). */
  readonly versions: (string | undefined)[];
  close(): Promise<void>;
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
  return chunks.length === 0 ? undefined : JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

export async function upstreamHttp(sdk: 1 | 2, options: { token?: string; tools?: ListedTool[] } = {}): Promise<UpstreamHttp> {
  const tools = options.tools ?? HONEST_TOOLS;
  const versions: (string | undefined)[] = [];
  let handle: (req: IncomingMessage, res: import('node:http').ServerResponse, body: unknown) => Promise<void>;
  let closeHandler = async () => {};
  if (sdk === 1) {
    const { Server } = await import('@modelcontextprotocol/sdk/server/index.js');
    const { StreamableHTTPServerTransport } = await import('@modelcontextprotocol/sdk/server/streamableHttp.js');
    const { CallToolRequestSchema, ListToolsRequestSchema } = await import('@modelcontextprotocol/sdk/types.js');
    handle = async (req, res, body) => {
      const server = new Server({ name: 'upstream-http-1', version: '1.0.0' }, { capabilities: { tools: {} } });
      server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }) as never);
      server.setRequestHandler(CallToolRequestSchema, async (request) => (await answer(request.params.name, request.params.arguments ?? {})) as never);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on('close', () => void server.close());
      await server.connect(transport as never);
      await transport.handleRequest(req, res, body);
    };
  } else {
    const { Server, createMcpHandler } = await import('@modelcontextprotocol/server');
    const { toNodeHandler } = await import('@modelcontextprotocol/node');
    const entry = createMcpHandler(() => {
      const server = new Server({ name: 'upstream-http-2', version: '1.0.0' }, { capabilities: { tools: {} } });
      server.setRequestHandler('tools/list', async () => ({ tools }) as never);
      server.setRequestHandler('tools/call', async (request) => (await answer(request.params.name, request.params.arguments ?? {})) as never);
      return server;
    });
    const node = toNodeHandler(entry);
    handle = (req, res, body) => node(req, res, body);
    closeHandler = () => entry.close();
  }
  const http: HttpServer = createServer((req, res) => {
    versions.push(req.headers['mcp-protocol-version'] as string | undefined);
    if (options.token !== undefined && req.headers.authorization !== `Bearer ${options.token}`) {
      res.writeHead(401, { 'Content-Type': 'application/json' }).end('{"error":"unauthorized"}');
      return;
    }
    if (req.method !== 'POST') {
      res.writeHead(405, { Allow: 'POST' }).end();
      return;
    }
    void readJson(req)
      .then((body) => handle(req, res, body))
      .catch(() => res.headersSent || res.writeHead(500).end());
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const address = http.address() as import('node:net').AddressInfo;
  return {
    url: new URL(`http://127.0.0.1:${address.port}/mcp`),
    versions,
    close: async () => {
      await closeHandler();
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      });
    },
  };
}
