// The session's egress as the journaled tool `fetch`: what a handler throws is recorded once as
// { name, message }, and each recorded failure becomes the runtime error the guest's fetch maps.
// Pure: no worker.
import test from 'ava';
import { EgressFailed, EgressRefused, InvalidOption } from '@strata/runtime';
import { egressAnswer, egressTool, FETCH_TOOL, recordedFailure } from '../src/egress-tool.js';

const FAILURES: readonly [string, unknown, boolean, { name: string; message: string }][] = [
  [
    'a refusal keeps its message',
    new EgressRefused('https://x/ is not allowed', 'request'),
    true,
    { name: 'EgressRefused', message: 'https://x/ is not allowed' },
  ],
  ['an abort is an AbortError', new EgressFailed('the request was aborted', 'aborted'), true, { name: 'AbortError', message: 'the request was aborted' }],
  ['a network failure is EgressFailed', new EgressFailed('ECONNRESET', 'network'), true, { name: 'EgressFailed', message: 'ECONNRESET' }],
  ["the handler's own error, redacted", new Error('secret token 123'), true, { name: 'EgressHandlerError', message: "the host's egress handler failed" }],
  ["the handler's own error, unredacted", new Error('secret token 123'), false, { name: 'EgressHandlerError', message: 'secret token 123' }],
  ['a thrown string, unredacted', 'plain', false, { name: 'EgressHandlerError', message: 'plain' }],
];

for (const [name, thrown, redact, recorded] of FAILURES) {
  test(`recordedFailure: ${name}`, (t) => {
    t.deepEqual(recordedFailure(thrown, redact), recorded);
  });
}

const ANSWERS: readonly [string, string, (error: unknown) => boolean][] = [
  ['EgressRefused', 'refused', (e) => e instanceof EgressRefused && e.rule === 'request'],
  ['AbortError', 'aborted', (e) => e instanceof EgressFailed && e.reason === 'aborted'],
  ['EgressFailed', 'reset', (e) => e instanceof EgressFailed && e.reason === 'network'],
  ['EgressHandlerError', 'handler', (e) => e instanceof Error && !(e instanceof EgressFailed) && !(e instanceof EgressRefused)],
  // The session's own refusals (a limit, a call outside a cell) fail the fetch as a network failure.
  ['RangeError', 'past maxCallsPerCell', (e) => e instanceof EgressFailed && e.reason === 'network'],
  // A name that is also an Object.prototype key is just another name.
  ['constructor', 'odd', (e) => e instanceof EgressFailed && e.reason === 'network'],
];

for (const [name, message, is] of ANSWERS) {
  test(`egressAnswer: a recorded ${name} is thrown as the runtime's error, with its message`, (t) => {
    const error = t.throws(() => egressAnswer({ ok: false, name, message }));
    t.true(is(error));
    t.is(error!.message, message);
  });
}

test('egressAnswer: a completed fetch answers with the recorded response', (t) => {
  const response = { status: 200, statusText: 'OK', headers: [], body: new Uint8Array([1]), url: 'https://x/' };
  t.is(egressAnswer({ ok: true, value: response }) as unknown, response);
});

test('egressTool: none without egress; the tool fetch for a handler, its failures described by recordedFailure; a bad egress is refused', async (t) => {
  t.is(egressTool(undefined, true), undefined);
  const tool = egressTool(() => Promise.reject(new EgressRefused('no', 'request')), true)!;
  t.is(tool.name, FETCH_TOOL);
  t.false(await tool.needsApproval([]));
  const thrown = await t.throwsAsync(async () => tool.execute({ url: 'https://x/' }));
  t.deepEqual(tool.describeFailure!(thrown), { name: 'EgressRefused', message: 'no' });
  t.throws(() => egressTool(['https://x/*'] as never, true), { instanceOf: InvalidOption });
});
