/**
 * Traces of a session: OpenTelemetry spans through `@opentelemetry/api`, when the application
 * has it (an optional peer dependency: Strata brings no SDK, and without one every span is the
 * API's no-op).
 *
 * - a cell: `strata.cell`, with its session, number, mode and status; a replay (a worker rebuilt
 *   from the journal) is a cell span with `strata.replay: true`, and its calls, answered from
 *   the journal, have no spans of their own;
 * - a tool call that runs: `execute_tool {gen_ai.tool.name}`, as the GenAI semantic conventions
 *   have it (`gen_ai.operation.name`, `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.tool.type`,
 *   `error.type`), a child of its cell's span, with `strata.tool.retry` when it runs again after
 *   an interruption; its arguments and answer are never recorded;
 * - a request of the guest's fetch: a client span as the HTTP conventions have it, a child of its
 *   tool call's span, its URL without credentials, query or fragment, and no headers.
 *
 * Spans are parented explicitly (the cell's span is made in the caller's active context), so
 * they nest also when the application registered no context manager; inside a tool, the call's
 * span is the active one for the application's own instrumentation.
 *
 * The functions here take and give opaque values, so that no OpenTelemetry type reaches the
 * package's declarations.
 *
 * @module
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { createRequire } from 'node:module';
import type * as OpenTelemetry from '@opentelemetry/api';

type Api = typeof OpenTelemetry;
type Attributes = Record<string, string | number | boolean>;

// Absent, tracing is off: nothing to send spans to.
const api: Api | undefined = await import('@opentelemetry/api').then(
  (module) => module as Api,
  () => undefined,
);

const TRACER_NAME = '@strata/agent';
const TRACER_VERSION = (createRequire(import.meta.url)('../../package.json') as { version: string }).version;
// The span whose context is current inside a tool call, without a context manager too.
const current = new AsyncLocalStorage<OpenTelemetry.Context>();

/** A span being recorded, or nothing (tracing off). */
export interface Trace {
  /** Sets attributes known only later. */
  set(attributes: Attributes): void;
  /**
   * Ends it as a success, or as a failure of `errorType` (`error.type`, and the span's status).
   * No message: what a tool or a server said may carry what a trace must not.
   */
  end(failure?: { readonly errorType: string }): void;
  /** Runs `work` with this span as the active one (for the spans made inside it). */
  within<T>(work: () => T): T;
}

const OFF: Trace = { set() {}, end() {}, within: (work) => work() };

function tracer(otel: Api): OpenTelemetry.Tracer {
  return otel.trace.getTracer(TRACER_NAME, TRACER_VERSION);
}

function parentContext(otel: Api): OpenTelemetry.Context {
  return current.getStore() ?? otel.context.active();
}

function started(otel: Api, span: OpenTelemetry.Span, parent: OpenTelemetry.Context): Trace {
  // A no-op span (no SDK, or not sampled) costs nothing further.
  if (!span.isRecording()) {
    const inert = otel.trace.setSpan(parent, span);
    return { set() {}, end() {}, within: (work) => current.run(inert, () => otel.context.with(inert, work)) };
  }
  const active = otel.trace.setSpan(parent, span);
  let ended = false;
  return {
    set: (attributes) => span.setAttributes(attributes),
    end(failure) {
      if (ended) return;
      ended = true;
      if (failure !== undefined) {
        span.setAttribute('error.type', failure.errorType);
        span.setStatus({ code: otel.SpanStatusCode.ERROR });
      }
      span.end();
    },
    within: (work) => current.run(active, () => otel.context.with(active, work)),
  };
}

/** How a cell runs: as the caller asked, or again from the journal. */
export type CellTraceMode = 'live' | 'resume' | 'continue' | 'replay';

/** The span of a cell, a child of the caller's active span. */
export function traceCell(sessionId: string, cell: number, mode: CellTraceMode): Trace {
  if (api === undefined) return OFF;
  const parent = parentContext(api);
  const attributes: Attributes = { 'strata.session.id': sessionId, 'strata.cell': cell, 'strata.cell.mode': mode };
  if (mode === 'replay') attributes['strata.replay'] = true;
  const span = tracer(api).startSpan('strata.cell', { kind: api.SpanKind.INTERNAL, attributes }, parent);
  return started(api, span, parent);
}

/** The span of a tool call that runs, a child of its cell's (`cell`: that cell's trace, or undefined). */
export function traceToolCall(cell: Trace | undefined, call: { readonly tool: string; readonly id: string; readonly retry: boolean }): Trace {
  if (api === undefined) return OFF;
  const otel = api;
  const run = (): Trace => {
    const parent = parentContext(otel);
    const attributes: Attributes = {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': call.tool,
      'gen_ai.tool.call.id': call.id,
      'gen_ai.tool.type': 'function',
    };
    if (call.retry) attributes['strata.tool.retry'] = true;
    const span = tracer(otel).startSpan(`execute_tool ${call.tool}`, { kind: otel.SpanKind.INTERNAL, attributes }, parent);
    return started(otel, span, parent);
  };
  return cell === undefined ? run() : cell.within(run);
}

/** The URL as a span may show it: no user or password, no query, no fragment. */
export function traceableUrl(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname}`;
}

/** The client span of one request of the guest's fetch, a child of the active span (its tool call's). */
export function traceRequest(method: unknown, url: unknown): Trace {
  if (api === undefined) return OFF;
  let parsed: URL | undefined;
  try {
    parsed = new URL(String(url));
  } catch {
    parsed = undefined;
  }
  // As the HTTP conventions name a method they do not know.
  const upper = typeof method === 'string' && /^[A-Za-z]{1,20}$/.test(method) ? method.toUpperCase() : '_OTHER';
  const attributes: Attributes = { 'http.request.method': upper };
  if (parsed !== undefined) {
    attributes['url.full'] = traceableUrl(parsed);
    attributes['url.scheme'] = parsed.protocol.slice(0, -1);
    attributes['server.address'] = parsed.hostname;
    attributes['server.port'] = Number(parsed.port || (parsed.protocol === 'https:' ? 443 : 80));
  }
  const parent = parentContext(api);
  const span = tracer(api).startSpan(upper, { kind: api.SpanKind.CLIENT, attributes }, parent);
  return started(api, span, parent);
}
