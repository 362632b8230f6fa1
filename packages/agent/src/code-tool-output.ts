/**
 * What `codeTool` answers the model: the types and the few functions that build an answer from a
 * run, shared by the fresh-sandbox path (`code-tool.ts`) and the session path of approvals
 * (`code-tool-approvals.ts`).
 *
 * @module
 */
import { toTaggedJson, type JsonValue } from '@strata/wire';
import { describeThrown } from './describe.js';
import type { ToolCall } from './journal.js';

/** A bridged tool's call during the run, as the model reads it (values as tagged JSON): a `ToolCall` with its one input for `args`. */
export interface CodeToolCall {
  /** `namespace.name`. */
  readonly tool: string;
  readonly input: JsonValue;
  /** `'denied'`: it needed approval and was refused (see the code tool's approvals); the tool did not run. */
  readonly status: 'completed' | 'failed' | 'denied';
  readonly result?: JsonValue;
  readonly error?: { readonly name: string; readonly message: string };
  readonly ms: number;
}

/**
 * The code tool's answer. Values JSON cannot say (`undefined`, bigint, `Map`, `Date`, …) are
 * tagged, as `@strata/wire`'s `toTaggedJson` writes them (`{ "$undefined": true }`).
 */
export interface CodeToolOutput {
  readonly status: 'ok' | 'error';
  /** The value of the code's last expression (a promise awaited); only when `status` is `'ok'`. */
  readonly result?: JsonValue;
  /** The error's message, when `status` is `'error'`. */
  readonly error?: string;
  /** The error's kind: the guest's (`'TypeError'`) or Strata's (`'RuntimeTimeout'`, `'WorkerCrashed'`, …). */
  readonly errorType?: string;
  readonly stdout: string;
  readonly stderr: string;
  /** Present when stdout or stderr was cut at the runtime's `maxOutputBytes`. */
  readonly truncated?: true;
  /** Every bridged tool call the code made, in the order they ended. */
  readonly calls: readonly CodeToolCall[];
}

export function failure(errorType: string, error: string, calls: readonly ToolCall[]): CodeToolOutput {
  return { status: 'error', error, errorType, stdout: '', stderr: '', calls: calls.map(callOf) };
}

/** A call as the model reads it: a bridge's tool takes one input, so the call's `args[0]` is given as `input`. */
export function callOf(call: ToolCall): CodeToolCall {
  return {
    tool: call.tool,
    input: jsonOf(call.args[0]),
    // Reported once it ended: completed, failed, or (in a session) denied.
    status: call.status as CodeToolCall['status'],
    ...('result' in call ? { result: jsonOf(call.result) } : {}),
    ...(call.error === undefined ? {} : { error: { name: call.error.name, message: call.error.message } }),
    ms: call.ms,
  };
}

/** A value as JSON the SDK can send: tagged where JSON cannot say it; a host tool's odd answer (a class instance) as text. */
export function jsonOf(value: unknown): JsonValue {
  try {
    return toTaggedJson(value);
  } catch {
    return String(value);
  }
}

// What failed is described without running its code (no getter, toString or Proxy trap), as every other path does.
export const nameOf = (error: unknown) => describeThrown(error).name;
export const messageOf = (error: unknown) => describeThrown(error).message;
