/**
 * What a tool knows about the call it is answering: a stable id, the session, and a signal. A
 * session's tool call has the id `<session id>:<seq>` wherever and however often it runs: when a
 * cell interrupted by a crash is continued (on this machine or another), a call that had started
 * and never ended runs again under the same id, with `retry: true`. A tool with side effects
 * uses the id to do them at most once (an idempotency key for the API it calls, a unique key in
 * its own table).
 *
 * `currentToolCall()` gives it inside a tool's `execute` (through `AsyncLocalStorage`, so across
 * its awaits too); a `ToolBridge` tool also gets it as `execute`'s second argument.
 *
 * @module
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** The call a tool is answering. */
export interface ToolCallContext {
  /** `<session id>:<seq>`: the same every time this call runs (a retry after a crash included). */
  readonly id: string;
  readonly sessionId: string;
  /** The call's number in its session. */
  readonly seq: number;
  /** The cell that made it. */
  readonly cell: number;
  /** The tool's name as the session knows it. */
  readonly tool: string;
  /** Aborted when the cell ends without waiting for this call: its worker died, it outlived maxHostWait, the session closed. */
  readonly signal: AbortSignal;
  /** True when this call started before (the cell was interrupted before it ended) and runs again. */
  readonly retry: boolean;
}

const calls = new AsyncLocalStorage<ToolCallContext>();

/** The call the running tool is answering, or undefined outside a session's tool call. */
export function currentToolCall(): ToolCallContext | undefined {
  return calls.getStore();
}

/** Runs a tool's `execute` as the answer to `context`. */
export function runToolCall<T>(context: ToolCallContext, execute: () => T): T {
  return calls.run(context, execute);
}
