// Approvals: a tool with needsApproval stops the cell before it runs; approve resumes it by
// replay and the tool runs once; deny makes the call throw in the guest; a pending approval
// survives the journal, into another AgentSandbox.
import test from 'ava';
import { AgentSandbox, SessionStateError } from '../src/index.js';
import { checkNoLeaks } from './helpers/leaks.js';

checkNoLeaks(test);

function mailer() {
  const sent: string[] = [];
  let lookups = 0;
  const tools = {
    lookup: async (sku: string) => {
      lookups++;
      return ({ A1: 3.5 } as Record<string, number>)[sku];
    },
    send: {
      description: 'Sends an e-mail',
      needsApproval: true,
      execute: async (to: string, text: string) => {
        sent.push(`${to}: ${text}`);
        return `sent to ${to}`;
      },
    },
  };
  return { tools, sent, lookups: () => lookups };
}

const CELL = 'const price = await lookup("A1"); console.log("price", price); const receipt = await send("ops", "price " + price); [receipt, price]';

test('approve: the cell stops before the tool runs, then resumes by replay and the tool runs once', async (t) => {
  const { tools, sent, lookups } = mailer();
  await using session = await AgentSandbox.start({ tools });
  const p = await session.run(CELL);
  t.is(p.status, 'awaiting-approval');
  t.deepEqual(p.pending, { seq: 2, tool: 'send', args: ['ops', 'price 3.5'] });
  t.deepEqual(session.pending, p.pending);
  t.deepEqual(p.calls.map((c) => [c.tool, c.status]), [['lookup', 'completed'], ['send', 'pending']]);
  t.is(p.stdout, 'price 3.5\n');
  t.deepEqual(sent, [], 'not sent before approval');
  t.is(session.journal.cells[0]!.status, 'awaiting-approval');
  await t.throwsAsync(session.run('1'), { instanceOf: SessionStateError, message: /call 2 \(send\) awaits approval: approve\(2\) or deny\(2, reason\) first/ });
  await t.throwsAsync(session.approve(7), { instanceOf: SessionStateError, message: /call 7 does not await approval; call 2 \(send\) does/ });
  const done = await session.approve(2);
  t.is(done.status, 'ok');
  t.deepEqual(done.result, ['sent to ops', 3.5]);
  t.deepEqual(done.calls.map((c) => [c.seq, c.tool, c.status]), [[1, 'lookup', 'completed'], [2, 'send', 'completed']]);
  t.deepEqual(sent, ['ops: price 3.5'], 'sent once');
  t.is(lookups(), 1, 'the earlier call came from the journal');
  t.is(session.pending, undefined);
  await t.throwsAsync(session.approve(2), { instanceOf: SessionStateError, message: /no call awaits approval/ });
  t.deepEqual((await session.run('[receipt, price]')).result, ['sent to ops', 3.5], 'the cell’s declarations persist');
});

test('deny: the call throws an Error in the guest, with the reason, and the cell goes on', async (t) => {
  const { tools, sent } = mailer();
  await using session = await AgentSandbox.start({ tools });
  const p = await session.run('let outcome; try { await send("all", "spam") } catch (e) { outcome = [e instanceof Error, e.message] } outcome');
  t.is(p.status, 'awaiting-approval');
  const denied = await session.deny(p.pending!.seq, 'not to everyone');
  t.is(denied.status, 'ok');
  t.deepEqual(denied.result, [true, 'the call to send was denied: not to everyone']);
  t.deepEqual(denied.calls.map((c) => c.status), ['denied']);
  t.deepEqual(sent, []);
  // an uncaught denial is the cell's error
  const again = await session.run('await send("all", "spam again")');
  const uncaught = await session.deny(again.pending!.seq);
  t.is(uncaught.status, 'error');
  t.is(uncaught.error, 'the call to send was denied');
  t.deepEqual(sent, []);
  t.is(session.journal.cells[1]!.calls[0]!.status, 'denied');
});

test('a pending approval survives the journal: approved later in another AgentSandbox, the tool runs there once', async (t) => {
  const first = mailer();
  let saved: string;
  {
    await using session = await AgentSandbox.start({ tools: first.tools });
    t.is((await session.run('globalThis.before = "kept"')).status, 'ok');
    t.is((await session.run(CELL)).status, 'awaiting-approval');
    saved = JSON.stringify(session.journal);
  }
  const second = mailer();
  await using restored = await AgentSandbox.restore(JSON.parse(saved), { tools: second.tools });
  t.deepEqual(restored.pending, { seq: 2, tool: 'send', args: ['ops', 'price 3.5'] });
  t.is(second.lookups(), 0, 'restoring called no tool');
  const done = await restored.approve(2);
  t.deepEqual(done.result, ['sent to ops', 3.5]);
  t.deepEqual(first.sent, []);
  t.deepEqual(second.sent, ['ops: price 3.5']);
  t.is(second.lookups(), 0, 'the lookup before it came from the journal');
  t.is((await restored.run('before')).result, 'kept');
});

test('needsApproval per call: calls it clears run at once; two approvals in one cell, each resumed', async (t) => {
  const sent: string[] = [];
  const tools = {
    send: { needsApproval: (to: string) => to !== 'me', execute: async (to: string) => (sent.push(to), to) },
  };
  await using session = await AgentSandbox.start({ tools });
  const cell = 'const got = [await send("me"), await send("boss"), await send("me"), await send("ops")]; got';
  const first = await session.run(cell);
  t.deepEqual(first.pending, { seq: 2, tool: 'send', args: ['boss'] });
  t.deepEqual(sent, ['me']);
  const second = await session.approve(2);
  t.is(second.status, 'awaiting-approval');
  t.deepEqual(second.pending, { seq: 4, tool: 'send', args: ['ops'] });
  t.deepEqual(sent, ['me', 'boss', 'me']);
  const done = await session.approve(4);
  t.deepEqual(done.result, ['me', 'boss', 'me', 'ops']);
  t.deepEqual(sent, ['me', 'boss', 'me', 'ops'], 'each call ran exactly once');
});
