// Traces, with the OpenTelemetry SDK's in-memory exporter (in the tests only: the package uses
// @opentelemetry/api alone): a span per cell, a GenAI `execute_tool` span per tool call that runs,
// children of the caller's span; inside a tool its span is the active one; replays marked and
// their calls not traced again; a retried call marked; the guest's fetch as a client span
// without credentials, query or headers.
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import test, { type ExecutionContext } from 'ava';
import { AgentSandbox, SqliteJournalStore } from '../src/index.js';
import { checkNoLeaks } from './helpers/leaks.js';

checkNoLeaks(test);

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
trace.setGlobalTracerProvider(provider);
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
test.after.always(() => provider.shutdown());

const app = trace.getTracer('the-application');
const sandbox = 'off' as const;

/** The spans ended inside `work`, run in the application's span `step` (and that span). */
async function traced(work: () => Promise<void>): Promise<{ step: ReadableSpan; spans: ReadableSpan[] }> {
  let traceId = '';
  await app.startActiveSpan('step', async (span) => {
    traceId = span.spanContext().traceId;
    try {
      await work();
    } finally {
      span.end();
    }
  });
  // Its trace's spans only: the file's tests run at once.
  const spans = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
  const step = spans.find((s) => s.name === 'step')!;
  return { step, spans: spans.filter((s) => s !== step) };
}

const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
const idOf = (span: ReadableSpan) => span.spanContext().spanId;

test('a cell is a span under the caller, each tool call that runs an execute_tool span under it, and a failed call an error', async (t) => {
  const activeInTool: (string | undefined)[] = [];
  const tools = {
    lookup: async (sku: string) => {
      activeInTool.push(trace.getActiveSpan()?.spanContext().spanId);
      return sku.length;
    },
    refuse: async () => {
      throw new RangeError('out of stock');
    },
  };
  await using session = await AgentSandbox.start({ tools, sandbox, sessionId: 'traced-1' });
  const { step, spans } = await traced(async () => {
    const result = await session.run('const n = await lookup("abc"); try { await refuse(); } catch {} n');
    t.is(result.result, 3);
  });
  const cell = spans.find((s) => s.name === 'strata.cell')!;
  t.is(parentOf(cell), idOf(step), "the cell's span is a child of the caller's");
  t.like(cell.attributes, {
    'strata.session.id': 'traced-1',
    'strata.cell': 1,
    'strata.cell.mode': 'live',
    'strata.cell.status': 'ok',
    'strata.cell.calls': 2,
  });
  t.is(cell.attributes['strata.replay'], undefined);
  t.is(cell.status.code, SpanStatusCode.UNSET);

  const lookup = spans.find((s) => s.name === 'execute_tool lookup')!;
  t.is(lookup.kind, SpanKind.INTERNAL);
  t.is(parentOf(lookup), idOf(cell));
  t.deepEqual(lookup.attributes, {
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': 'lookup',
    'gen_ai.tool.call.id': 'traced-1:1',
    'gen_ai.tool.type': 'function',
  });
  t.deepEqual(activeInTool, [idOf(lookup)], 'inside the tool, its span is the active one');

  const refuse = spans.find((s) => s.name === 'execute_tool refuse')!;
  t.is(refuse.status.code, SpanStatusCode.ERROR);
  t.is(refuse.status.message, undefined, 'no message: what a tool said stays out of traces');
  t.is(refuse.attributes['error.type'], 'RangeError');
  t.is(refuse.attributes['gen_ai.tool.call.id'], 'traced-1:2');
});

test('a cell that throws is an error span with its error type', async (t) => {
  await using session = await AgentSandbox.start({ sandbox });
  const { spans } = await traced(async () => {
    t.is((await session.run('throw new TypeError("no")')).status, 'error');
  });
  const cell = spans.find((s) => s.name === 'strata.cell')!;
  t.is(cell.status.code, SpanStatusCode.ERROR);
  t.is(cell.attributes['error.type'], 'TypeError');
  t.is(cell.attributes['strata.cell.status'], 'error');
});

test('a restore replays its cells as spans marked strata.replay, and runs no tool span', async (t) => {
  let calls = 0;
  const tools = { lookup: async () => ++calls };
  const session = await AgentSandbox.start({ tools, sandbox });
  await session.run('globalThis.a = await lookup()');
  await session.run('a + 1');
  const journal = session.journal;
  await session.close();
  const { spans } = await traced(async () => {
    const restored = await AgentSandbox.restore(journal, { tools, sandbox });
    await restored.close();
  });
  t.deepEqual(
    spans.map((s) => [s.name, s.attributes['strata.cell'], s.attributes['strata.replay'], s.attributes['strata.cell.mode']]),
    [
      ['strata.cell', 1, true, 'replay'],
      ['strata.cell', 2, true, 'replay'],
    ],
  );
  t.is(calls, 1);
});

test('a call that had started when its session was left is retried under its id, and its span says so', async (t) => {
  const store = SqliteJournalStore.open(':memory:');
  t.teardown(() => store.close());
  const held = {
    // Never answers: the session is left (closed) while it runs, the call `started` in the store.
    charge: () => new Promise<never>(() => {}),
  };
  const first = await AgentSandbox.start({ tools: held, sandbox, store, sessionId: 'left' });
  const running = first.run('await charge()');
  await new Promise((resolve) => setTimeout(resolve, 200));
  await first.close();
  await running.catch(() => undefined);

  await using resumed = await AgentSandbox.resume('left', { tools: { charge: async () => 'charged' }, sandbox, store });
  t.like(resumed.interrupted, { cell: 1 });
  const { spans } = await traced(async () => {
    t.is((await resumed.continue()).result, 'charged');
  });
  const cell = spans.find((s) => s.name === 'strata.cell')!;
  t.is(cell.attributes['strata.cell.mode'], 'continue');
  const charge = spans.find((s) => s.name === 'execute_tool charge')!;
  t.like(charge.attributes, { 'gen_ai.tool.call.id': 'left:1', 'strata.tool.retry': true });
});

/** A server on 127.0.0.1: 200 for /v1/ok, 404 otherwise. */
async function server(t: ExecutionContext): Promise<string> {
  const listening = http.createServer((req, res) => {
    res.writeHead(req.url?.startsWith('/v1/ok') ? 200 : 404, { 'content-type': 'text/plain' });
    res.end('answer');
  });
  await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => listening.close(() => resolve())));
  return `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;
}

test("the guest's fetch is a client span under its call's span: no credentials, query or headers in it; a 404 and a refusal are errors", async (t) => {
  const origin = await server(t);
  const SECRET = 'sk-live-TRACE-7a91';
  const egress = { allow: [`${origin}/v1/*`], headers: { [origin]: { authorization: `Bearer ${SECRET}` } } };
  await using session = await AgentSandbox.start({ sandbox, egress, sessionId: 'fetching' });
  const { spans } = await traced(async () => {
    const result = await session.run(`
      const ok = await fetch("${origin}/v1/ok?token=${SECRET}#part", { headers: { "x-guest": "${SECRET}" } });
      const missing = await fetch("${origin}/v1/missing");
      let refused; try { await fetch("${origin}/admin"); } catch (e) { refused = e.name; }
      [ok.status, missing.status, refused]`);
    t.deepEqual(result.result, [200, 404, 'TypeError']);
  });
  const requests = spans.filter((s) => s.kind === SpanKind.CLIENT);
  t.is(requests.length, 3);
  const [ok, missing, refused] = requests as [ReadableSpan, ReadableSpan, ReadableSpan];
  const port = Number(new URL(origin).port);
  t.deepEqual(ok.attributes, {
    'http.request.method': 'GET',
    'url.full': `${origin}/v1/ok`,
    'url.scheme': 'http',
    'server.address': '127.0.0.1',
    'server.port': port,
    'http.response.status_code': 200,
  });
  t.is(ok.name, 'GET');
  const fetchCall = spans.find((s) => s.name === 'execute_tool fetch' && s.attributes['gen_ai.tool.call.id'] === 'fetching:1')!;
  t.is(parentOf(ok), idOf(fetchCall), "the request's span is a child of its call's");
  t.like(missing.attributes, { 'http.response.status_code': 404, 'error.type': '404' });
  t.is(missing.status.code, SpanStatusCode.ERROR);
  t.like(refused.attributes, { 'error.type': 'EgressRefused' });
  t.false(JSON.stringify(spans.map((s) => [s.name, s.attributes, s.status, s.events])).includes(SECRET), 'the secret is in no span');
});
