/**
 * The HTTP edge of `strata mcp --http`: what a request must be before any MCP SDK sees it. The
 * path is `/mcp`; a bearer token, when the server has one, is checked in constant time before the
 * body is read (a request without it runs nothing); a server without one serves loopback only,
 * and refuses a `Host` or `Origin` that is not loopback (a web page's DNS rebinding); the body is
 * read up to a bound and parsed once. The SDK's transport then answers the JSON-RPC.
 *
 * @module
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import { InvalidOption } from '@strata/runtime';

/** The path served; any other is a 404. */
export const MCP_HTTP_PATH = '/mcp';

/** The largest request body read, bytes: 10 MiB, the stdio transport's limit on a line. */
export const DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024;

/** Where and how `strata mcp --http` serves. */
export interface McpHttpOptions {
  /** A host name or IP address to listen on (IPv6 without brackets). */
  readonly host: string;
  /** 0: any free port (see `url` of the running server). */
  readonly port: number;
  /**
   * The bearer token every request must carry (`Authorization: Bearer TOKEN`): 16 to 4 096
   * printable ASCII characters. Required unless `host` is loopback.
   */
  readonly token?: string;
  /** The largest request body, bytes. Default {@link DEFAULT_MAX_BODY_BYTES}. */
  readonly maxBodyBytes?: number;
}

// Printable ASCII without spaces: what a header value carries unchanged.
const TOKEN_PATTERN = /^[\x21-\x7e]{16,4096}$/;

/** Whether `host` names this machine only: 127.0.0.0/8, ::1, localhost. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const lower = bare.toLowerCase();
  if (lower === 'localhost' || lower.endsWith('.localhost')) return true;
  if (isIP(lower) === 4) return lower.startsWith('127.');
  if (isIP(lower) === 6) return lower === '::1' || lower === '0:0:0:0:0:0:0:1' || /^::ffff:127\./.test(lower);
  return false;
}

/**
 * Checks where and how to serve: a token is required off loopback.
 *
 * @throws `InvalidOption` (`@strata/runtime`) saying how to give what is missing.
 */
export function checkMcpHttpOptions(options: McpHttpOptions): McpHttpOptions {
  if (options === null || typeof options !== 'object') throw new InvalidOption('the HTTP options must be { host, port, token? }');
  const { host, port, token, maxBodyBytes } = options;
  if (typeof host !== 'string' || host === '') throw new InvalidOption('the HTTP host must be a host name or an IP address, such as 127.0.0.1');
  if (!Number.isSafeInteger(port) || port < 0 || port > 65535) throw new InvalidOption(`the HTTP port must be 0 to 65535 (got ${String(port)})`);
  if (maxBodyBytes !== undefined && (!Number.isSafeInteger(maxBodyBytes) || maxBodyBytes < 1))
    throw new InvalidOption(`maxBodyBytes must be a positive integer (got ${String(maxBodyBytes)})`);
  if (token !== undefined && (typeof token !== 'string' || !TOKEN_PATTERN.test(token)))
    throw new InvalidOption('the bearer token must be 16 to 4096 printable ASCII characters without spaces (make one with: openssl rand -hex 32)');
  if (token === undefined && !isLoopbackHost(host)) {
    throw new InvalidOption(
      `serving MCP on ${host}, not loopback, needs a bearer token: put one in a file and give --token-file FILE, or set STRATA_MCP_TOKEN (make one with: openssl rand -hex 32); or serve on 127.0.0.1`,
    );
  }
  return options;
}

/** Handles one request that passed the edge: its body parsed as JSON (POST), or undefined. */
export type McpHttpHandler = (req: IncomingMessage, res: ServerResponse, body: unknown) => Promise<void>;

/** A listening HTTP edge. */
export interface McpHttpEdge {
  /** Where it serves: `http://HOST:PORT/mcp`. */
  readonly url: URL;
  /** Stops listening and ends open connections. */
  close(): Promise<void>;
}

/** Listens at `options`, passing each request that may run to `handle`. */
export async function listenMcpHttp(options: McpHttpOptions, handle: McpHttpHandler, log: (line: string) => void = () => {}): Promise<McpHttpEdge> {
  const checked = checkMcpHttpOptions(options);
  const maxBodyBytes = checked.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  // Compared as digests: equal lengths for timingSafeEqual, whatever the client sends.
  const tokenDigest = checked.token === undefined ? undefined : sha256(checked.token);
  const server: Server = createServer({ requestTimeout: 60_000, headersTimeout: 30_000 }, (req, res) => {
    void serveOne(req, res).catch((error: unknown) => {
      log(`strata mcp: a request failed: ${(error as Error)?.message ?? String(error)}`);
      if (!res.headersSent) refuse(res, 500, 'the server failed to answer this request (see its stderr)');
      else res.end();
    });
  });
  const serveOne = async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== MCP_HTTP_PATH) return refuse(res, 404, `nothing is served at ${JSON.stringify(path)}: MCP is at ${MCP_HTTP_PATH}`);
    if (tokenDigest !== undefined) {
      if (!authorized(req.headers.authorization, tokenDigest)) {
        res.setHeader('WWW-Authenticate', 'Bearer realm="strata mcp"');
        return refuse(res, 401, 'this server needs its bearer token: send Authorization: Bearer TOKEN', true);
      }
    } else if (!loopbackHeaders(req)) {
      // No token: only loopback may serve, and a page elsewhere must not reach it through a rebound name.
      return refuse(res, 403, 'a Host or Origin that is not loopback was refused: this server has no token, so it serves loopback clients only');
    }
    if (req.method !== 'POST') {
      // Stateless: no server-sent stream to open (GET) and no session to end (DELETE).
      res.setHeader('Allow', 'POST');
      return refuse(res, 405, `${req.method} is not served: each MCP message is a POST (this server keeps no HTTP session)`, true);
    }
    const body = await readBody(req, maxBodyBytes);
    if (body === tooLarge)
      return refuse(
        res,
        413,
        `the request body is over ${maxBodyBytes} bytes (strata mcp's limit): send smaller messages (the code of an execute call, say)`,
        true,
      );
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch (error) {
      return refuse(res, 400, `the request body is not JSON (${(error as Error).message}); it must be one JSON-RPC message`, false, -32700);
    }
    await handle(req, res, parsed);
  };
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(checked.port, checked.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const port = address !== null && typeof address === 'object' ? address.port : checked.port;
  const url = new URL(`http://${isIP(checked.host) === 6 ? `[${checked.host}]` : checked.host}:${port}${MCP_HTTP_PATH}`);
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

function authorized(header: string | undefined, tokenDigest: Buffer): boolean {
  const match = header === undefined ? null : /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  // Hashed even when absent, so a missing header costs what a wrong one does.
  const given = sha256(match?.[1] ?? '');
  return timingSafeEqual(given, tokenDigest) && match !== null;
}

function loopbackHeaders(req: IncomingMessage): boolean {
  const host = req.headers.host;
  if (host === undefined || !isLoopbackHost(hostName(host))) return false;
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  try {
    return isLoopbackHost(new URL(origin).hostname);
  } catch {
    return false;
  }
}

/** The name part of a Host header: `127.0.0.1:80` → `127.0.0.1`, `[::1]:80` → `[::1]`. */
function hostName(host: string): string {
  if (host.startsWith('[')) return host.slice(0, host.indexOf(']') + 1);
  const colon = host.lastIndexOf(':');
  return colon === -1 ? host : host.slice(0, colon);
}

const tooLarge = Symbol('tooLarge');

/** The body, or `tooLarge` as soon as it passes `max` (by its Content-Length, or as it comes). */
async function readBody(req: IncomingMessage, max: number): Promise<Buffer | typeof tooLarge> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > max) return tooLarge;
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    if (bytes > max) return tooLarge;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, bytes);
}

/**
 * Answers with a JSON-RPC error body and `status`. With `close`, the connection ends after the
 * answer (Node then destroys the socket): a body not read is never read.
 */
function refuse(res: ServerResponse, status: number, message: string, close = false, code = -32000): void {
  if (close) res.setHeader('Connection', 'close');
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code, message } }));
}
