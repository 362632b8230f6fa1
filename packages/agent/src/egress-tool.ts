/**
 * The guest's `fetch` in a session, as a journaled tool. A session's egress does not answer the
 * runtime directly: each request is a call of the tool `fetch` (its request as the guest made it,
 * its response or its failure in the journal), so a replay answers from the journal and sends
 * nothing, and a replayed request fails in the guest exactly as the live one did.
 *
 * A failure is translated once each way, in this file only: what the handler threw becomes the
 * journal's `{ name, message }` ({@link recordedFailure}), and a recorded failure becomes the error
 * the runtime shows the guest ({@link egressAnswer}). The journal's names are part of its format.
 *
 * @module
 */
import {
  EgressFailed,
  EgressRefused,
  egressHandler,
  InvalidOption,
  type EgressHandler,
  type EgressRequest,
  type EgressResponse,
  type IsolatedRuntimeOptions,
} from '@strata/runtime';
import { describeThrown } from './describe.js';
import type { RecordedError } from './journal.js';
import type { SessionTool, ToolAnswer } from './tools.js';
import { traceRequest } from './tracing.js';

/** The tool the journal records the guest's fetch as: one argument, the request. */
export const FETCH_TOOL = 'fetch';

// How a failure of the session's egress handler itself is journaled.
const HANDLER_ERROR = 'EgressHandlerError';

/**
 * Each journaled name of a failed fetch, and the error the runtime maps for the guest. Any other
 * name (`EgressFailed`, or the session's own refusal: a limit, a call outside a cell) is shown as
 * `EgressFailed` for a network failure.
 */
const RUNTIME_ERRORS: ReadonlyMap<string, (message: string) => Error> = new Map([
  ['EgressRefused', (message: string) => new EgressRefused(message, 'request')],
  ['AbortError', (message: string) => new EgressFailed(message, 'aborted')],
  // As the runtime shows a handler's own error: by its message only (redacted when recorded so).
  [HANDLER_ERROR, (message: string) => new Error(message)],
]);

/**
 * The session's egress (a policy, or the host's own handler) as the session tool `fetch`, or
 * undefined without one. The tool's failures are described by {@link recordedFailure}.
 *
 * @throws `InvalidOption` when `egress` is neither a policy nor a function.
 */
export function egressTool(egress: IsolatedRuntimeOptions['egress'], redactHostErrors: boolean): SessionTool | undefined {
  if (egress === undefined) return undefined;
  let handler: EgressHandler;
  if (typeof egress === 'function') handler = egress;
  else if (egress !== null && typeof egress === 'object' && !Array.isArray(egress)) handler = egressHandler(egress);
  else throw new InvalidOption("egress must be a policy such as { allow: ['https://api.example.com/v1/*'] }, or a function answering the guest's requests");
  // Never aborted: a journaled request runs to its end like every tool, and a crash keeps its outcome.
  const { signal } = new AbortController();
  return {
    name: FETCH_TOOL,
    description: "the guest's fetch, under the session's egress",
    execute: async (request: EgressRequest) => {
      const trace = traceRequest(request.method, request.url);
      try {
        const response = await handler(request, { signal });
        trace.set({ 'http.response.status_code': response.status });
        // As the HTTP conventions have a client span: a 4xx or 5xx is an error.
        trace.end(response.status >= 400 ? { errorType: String(response.status) } : undefined);
        return response;
      } catch (error) {
        trace.end({ errorType: recordedFailure(error, true).name });
        throw error;
      }
    },
    needsApproval: async () => false,
    describeFailure: (thrown) => recordedFailure(thrown, redactHostErrors),
  };
}

/** What the handler threw, as the journal keeps it. */
export function recordedFailure(thrown: unknown, redactHostErrors: boolean): RecordedError {
  if (thrown instanceof EgressRefused) return { name: 'EgressRefused', message: describeThrown(thrown).message };
  if (thrown instanceof EgressFailed) return { name: thrown.reason === 'aborted' ? 'AbortError' : 'EgressFailed', message: describeThrown(thrown).message };
  return { name: HANDLER_ERROR, message: redactHostErrors ? "the host's egress handler failed" : describeThrown(thrown).message };
}

/** A journaled fetch's answer as an egress handler gives it to the runtime: the response, or the error for its recorded failure. */
export function egressAnswer(answer: ToolAnswer): EgressResponse {
  if (answer.ok) return answer.value as EgressResponse;
  const toError = RUNTIME_ERRORS.get(answer.name);
  throw toError !== undefined ? toError(answer.message) : new EgressFailed(answer.message, 'network');
}
