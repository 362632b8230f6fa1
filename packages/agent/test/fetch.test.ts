// The guest's fetch in a session: every request journaled like a tool call, a replay (restore,
// recovery, approval) answered from the journal without a request, the policy's credentials
// never in the journal, refusals replayed as they were.
import test, { type ExecutionContext } from 'ava';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WEB_POLYFILLS } from '@strata/polyfills';
import { AgentSandbox, type Journal, type SessionEvent } from '../src/index.js';
import { checkNoLeaks } from './helpers/leaks.js';

checkNoLeaks(test);

const SECRET = 'sk-live-JOURNAL-51c0a7';

/** A server on 127.0.0.1 answering /v1/items/<n> with JSON, counting requests and the credentials it got. */
async function api(t: ExecutionContext): Promise<{ origin: string; requests: { url: string; authorization: string | undefined }[] }> {
  const requests: { url: string; authorization: string | undefined }[] = [];
  const server = http.createServer((req, res) => {
    requests.push({ url: req.url ?? '', authorization: req.headers.authorization });
    const item = /^\/v1\/items\/(\d+)$/.exec(req.url ?? '');
    if (item === null) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('no such item');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    // Item 0 is a debugging answer that echoes the request's credential in the body.
    res.end(
      JSON.stringify({ id: Number(item[1]), price: Number(item[1]) * 1.5, ...(item[1] === '0' ? { seenAuthorization: req.headers.authorization } : {}) }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

const sandbox = 'off' as const;

test('a request is journaled as a call of fetch, with the request as the guest made it and the response', async (t) => {
  const server = await api(t);
  const events: SessionEvent[] = [];
  await using session = await AgentSandbox.start({ sandbox, egress: { allow: [`${server.origin}/v1/*`] } });
  const result = await session.run(`const r = await fetch('${server.origin}/v1/items/4'); const item = await r.json(); [r.status, item.price]`, {
    onEvent: (e) => events.push(e),
  });
  t.is(result.status, 'ok', result.error);
  t.deepEqual(result.result, [200, 6]);
  t.is(result.calls.length, 1);
  const [call] = result.calls;
  t.is(call!.tool, 'fetch');
  t.is(call!.status, 'completed');
  t.like(call!.args[0], { url: `${server.origin}/v1/items/4`, method: 'GET' });
  t.like(call!.result, { status: 200, url: `${server.origin}/v1/items/4` });
  t.deepEqual(
    events.filter((e) => e.type !== 'console').map((e) => e.type),
    ['tool-call', 'tool-result'],
  );
  t.is(server.requests.length, 1);
});

test('restore answers every request from the journal: nothing is sent, the state is the same', async (t) => {
  const server = await api(t);
  const egress = { allow: [`${server.origin}/v1/*`] };
  let journal: Journal;
  {
    await using session = await AgentSandbox.start({ sandbox, egress });
    await session.run(
      `const prices = []; for (const n of [1, 2, 3]) prices.push((await (await fetch('${server.origin}/v1/items/' + n)).json()).price); prices`,
    );
    journal = JSON.parse(JSON.stringify(session.journal)) as Journal;
  }
  t.is(server.requests.length, 3);
  await using restored = await AgentSandbox.restore(journal, { sandbox, egress });
  t.is(server.requests.length, 3, 'the replay sent no request');
  const next = await restored.run('prices.reduce((a, b) => a + b, 0)');
  t.deepEqual(next.result, 9);
  // Live again after the replay: a new request goes out.
  await restored.run(`(await fetch('${server.origin}/v1/items/9')).status`);
  t.is(server.requests.length, 4);
});

test("the policy's credential reaches the server and never the journal", async (t) => {
  const server = await api(t);
  await using session = await AgentSandbox.start({
    sandbox,
    egress: { allow: [`${server.origin}/v1/*`], headers: { [server.origin]: { authorization: `Bearer ${SECRET}` } } },
  });
  const result = await session.run(`const r = await fetch('${server.origin}/v1/items/2'); [r.status, [...r.headers.keys()]]`);
  t.is(result.status, 'ok', result.error);
  t.is(server.requests[0]!.authorization, `Bearer ${SECRET}`);
  t.false(JSON.stringify(session.journal).includes(SECRET));
  t.false(JSON.stringify(result).includes(SECRET));
});

/** The journal as text with every `{ $bytes }` (a body) decoded, so a credential inside a body shows. */
function journalText(journal: Journal): string {
  return JSON.stringify(journal, (_key, value: unknown) =>
    value !== null && typeof value === 'object' && typeof (value as { $bytes?: unknown }).$bytes === 'string'
      ? Buffer.from((value as { $bytes: string }).$bytes, 'base64').toString('latin1')
      : value,
  );
}

test('a server that echoes the credential in its body: neither the guest nor the journal keeps it, and a restore replays the scrubbed bytes', async (t) => {
  const server = await api(t);
  const egress = { allow: [`${server.origin}/v1/*`], headers: { [server.origin]: { authorization: `Bearer ${SECRET}` } } };
  const read = `const r = await fetch('${server.origin}/v1/items/0'); const seen = (await r.json()).seenAuthorization; [seen, r.headers.get('x-strata-redacted')]`;
  let journal: Journal;
  {
    await using session = await AgentSandbox.start({ sandbox, egress });
    const result = await session.run(read);
    t.is(result.status, 'ok', result.error);
    t.is(server.requests[0]!.authorization, `Bearer ${SECRET}`);
    t.deepEqual(result.result, ['[redacted]', 'credential']);
    t.false(journalText(session.journal).includes(SECRET), 'the journaled body has no credential');
    t.true(journalText(session.journal).includes('[redacted]'), 'journalText decodes the bodies');
    journal = JSON.parse(JSON.stringify(session.journal)) as Journal;
  }
  await using restored = await AgentSandbox.restore(journal, { sandbox, egress });
  t.is(server.requests.length, 1, 'the replay sent no request');
  t.deepEqual((await restored.run('[seen]')).result, ['[redacted]']);
  // The policy's onResponse runs before the journal too: what it returns is what is kept.
  await using hooked = await AgentSandbox.start({
    sandbox,
    egress: {
      ...egress,
      redactCredentialsInBody: false,
      onResponse: (response) => ({ ...response, body: new TextEncoder().encode('{"seenAuthorization":"withheld"}') }),
    },
  });
  const withheld = await hooked.run(read);
  t.deepEqual(withheld.result, ['withheld', null]);
  t.false(journalText(hooked.journal).includes(SECRET));
});

test('a refused request is journaled as failed, and its replay fails in the guest with the same message', async (t) => {
  const server = await api(t);
  const egress = { allow: [`${server.origin}/v1/*`] };
  let journal: Journal;
  let message: unknown;
  {
    await using session = await AgentSandbox.start({ sandbox, egress });
    const result = await session.run(`let refusal; try { await fetch('${server.origin}/admin'); } catch (e) { refusal = e.name + ': ' + e.message; } refusal`);
    message = result.result;
    t.regex(String(message), /^TypeError: fetch refused by the host's egress policy: .*not in the egress allow-list/);
    t.is(result.calls[0]!.status, 'failed');
    t.is(result.calls[0]!.error!.name, 'EgressRefused');
    journal = session.journal;
  }
  t.is(server.requests.length, 0);
  await using restored = await AgentSandbox.restore(journal, { sandbox, egress });
  t.is((await restored.run('refusal')).result, message);
});

test('a session limit on the answer fails the fetch in the guest, saying which', async (t) => {
  const server = await api(t);
  await using session = await AgentSandbox.start({ sandbox, egress: { allow: [`${server.origin}/v1/*`] }, maxValueBytes: 160 });
  const result = await session.run(`try { await fetch('${server.origin}/v1/items/1'); 'fetched' } catch (e) { e.name + ': ' + e.message }`);
  t.regex(String(result.result), /^TypeError: fetch failed: the answer of fetch is \d+ bytes as JSON, over the session's maxValueBytes \(160\)/);
});

test('without egress the guest fetch refuses, and nothing is journaled', async (t) => {
  await using session = await AgentSandbox.start({ sandbox });
  const result = await session.run(`try { await fetch('http://127.0.0.1:9/'); 'fetched' } catch (e) { e.name + ': ' + e.message }`);
  t.regex(String(result.result), /^TypeError: fetch is not allowed: this sandbox has no egress policy/);
  t.is(result.calls.length, 0);
});

test("egress beside a tool named fetch is refused: both would answer the guest's fetch", async (t) => {
  await t.throwsAsync(AgentSandbox.start({ sandbox, egress: { allow: ['https://a.test/*'] }, tools: { fetch: async () => 1 } }), {
    message: /egress and a tool named fetch/,
  });
});

test("a pooled session's requests are journaled with its own egress, and a handler's failure is redacted as in the runtime", async (t) => {
  const server = await api(t);
  const { SandboxPool } = await import('@strata/runtime');
  const pool = await SandboxPool.start({ size: 1, sandbox, clock: { at: 0, seed: 1 }, bootstrap: [WEB_POLYFILLS] });
  t.teardown(() => pool.close());
  await using session = await AgentSandbox.start({ pool, egress: { allow: [`${server.origin}/v1/*`] } });
  const result = await session.run(`(await (await fetch('${server.origin}/v1/items/5')).json()).price`);
  t.is(result.status, 'ok', `${result.errorType}: ${result.error}`);
  t.is(result.result, 7.5);
  t.is(result.calls[0]!.tool, 'fetch');
  await using failing = await AgentSandbox.start({
    sandbox,
    egress: async () => {
      throw new Error(`upstream refused ${SECRET}`);
    },
  });
  const failed = await failing.run(`try { await fetch('https://api.test/x'); 'fetched' } catch (e) { e.name + ': ' + e.message }`);
  t.is(failed.result, "TypeError: fetch failed: the host's egress handler failed");
  t.false(JSON.stringify(failing.journal).includes(SECRET));
});
