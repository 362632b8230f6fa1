/**
 * The stdio transport of `strata mcp`: newline-delimited JSON-RPC, as the SDK's
 * `StdioServerTransport` speaks it, but what the client sends cannot end the server. The SDK's
 * closes itself, silently, on a line over its 10 MiB buffer and drops a line that is not JSON
 * without an answer; this one answers both with a JSON-RPC error (and says so on stderr) and goes
 * on serving. A line is kept as its chunks and joined once, so a long line costs linear time.
 *
 * @module
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { JSONRPCMessageSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { InvalidOption } from '@strata/runtime';

/** The longest line (one JSON-RPC message) read, in bytes: the SDK's own limit, 10 MiB. */
export const DEFAULT_MAX_LINE_BYTES = 10 * 1024 * 1024;

/** Options of {@link LineStdioTransport}. */
export interface LineStdioTransportOptions {
  /** The longest message, bytes. Default {@link DEFAULT_MAX_LINE_BYTES}. */
  readonly maxLineBytes?: number;
}

// JSON-RPC 2.0's codes for what the peer sent.
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;

/** Newline-delimited JSON-RPC over a readable and a writable stream (stdin and stdout by default). */
export class LineStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  readonly #input: NodeJS.ReadableStream;
  readonly #output: NodeJS.WritableStream;
  readonly #log: NodeJS.WritableStream;
  readonly #maxLineBytes: number;
  #chunks: Buffer[] = [];
  #bytes = 0;
  /** Past the limit: the rest of the line is dropped as it comes. */
  #discarding = false;
  #started = false;

  constructor(
    input: NodeJS.ReadableStream = process.stdin,
    output: NodeJS.WritableStream = process.stdout,
    log: NodeJS.WritableStream = process.stderr,
    options: LineStdioTransportOptions = {},
  ) {
    const max = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
    if (!Number.isSafeInteger(max) || max < 1) throw new InvalidOption(`maxLineBytes must be a positive integer (got ${String(options.maxLineBytes)})`);
    this.#input = input;
    this.#output = output;
    this.#log = log;
    this.#maxLineBytes = max;
  }

  async start(): Promise<void> {
    if (this.#started) throw new Error('LineStdioTransport already started');
    this.#started = true;
    this.#input.on('data', this.#onData);
    this.#input.on('error', this.#onError);
  }

  async close(): Promise<void> {
    this.#input.off('data', this.#onData);
    this.#input.off('error', this.#onError);
    if (this.#input.listenerCount('data') === 0) this.#input.pause();
    this.#chunks = [];
    this.#bytes = 0;
    this.onclose?.();
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve) => {
      if (this.#output.write(`${JSON.stringify(message)}\n`)) resolve();
      else this.#output.once('drain', () => resolve());
    });
  }

  readonly #onError = (error: Error) => this.onerror?.(error);

  readonly #onData = (chunk: Buffer | string) => {
    const data = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    let start = 0;
    for (let end = data.indexOf(10, start); end !== -1; end = data.indexOf(10, start)) {
      this.#take(data.subarray(start, end));
      if (!this.#discarding) this.#line(Buffer.concat(this.#chunks, this.#bytes));
      this.#discarding = false;
      this.#chunks = [];
      this.#bytes = 0;
      start = end + 1;
    }
    if (start < data.length) this.#take(data.subarray(start));
  };

  /** Keeps a piece of the current line, or starts dropping it when it grows past the limit. */
  #take(piece: Buffer): void {
    if (this.#discarding) return;
    if (this.#bytes + piece.length > this.#maxLineBytes) {
      this.#discarding = true;
      this.#chunks = [];
      this.#bytes = 0;
      this.#refuse(
        null,
        INVALID_REQUEST,
        `a message longer than ${this.#maxLineBytes} bytes (strata mcp's limit) was dropped unread; send smaller messages (the code of an execute call, say, under 10 MiB)`,
      );
      return;
    }
    this.#chunks.push(piece);
    this.#bytes += piece.length;
  }

  #line(bytes: Buffer): void {
    const text = bytes.toString('utf8');
    const line = text.endsWith('\r') ? text.slice(0, -1) : text;
    if (line.trim() === '') return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch (error) {
      this.#refuse(null, PARSE_ERROR, `a message is not JSON (${(error as Error).message}); each line must be one JSON-RPC message`);
      return;
    }
    const message = JSONRPCMessageSchema.safeParse(parsed);
    if (!message.success) {
      const id =
        parsed !== null && typeof parsed === 'object' && 'id' in parsed && (typeof parsed.id === 'string' || typeof parsed.id === 'number') ? parsed.id : null;
      this.#refuse(id, INVALID_REQUEST, 'a message is JSON but not a JSON-RPC 2.0 request, notification or response');
      return;
    }
    this.onmessage?.(message.data);
  }

  /** Answers what cannot be read with a JSON-RPC error, and says so on stderr (stdout is the protocol's). */
  #refuse(id: string | number | null, code: number, message: string): void {
    this.#log.write(`strata mcp: ${message}\n`);
    this.#output.write(`${JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } })}\n`);
  }
}
