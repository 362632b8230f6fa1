// Events arrive while the cell runs, not at its end: console lines, tool calls starting and
// ending, through onEvent and on diagnostics_channel.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import test from 'ava';
import { AgentSandbox, SESSION_EVENTS_CHANNEL, type SessionEvent } from '../src/index.js';
import { checkNoLeaks } from './helpers/leaks.js';

checkNoLeaks(test);

test('onEvent sees each console line and tool call before the cell ends', async (t) => {
  const events: SessionEvent[] = [];
  let seenBeforeAnswer: string[] = [];
  const tools = {
    // The tool answers only once the events before it have arrived: the cell cannot have ended yet.
    checkpoint: async () => {
      seenBeforeAnswer = events.map((e) => (e.type === 'console' ? `console ${e.text.trim()}` : `${e.type} ${e.tool}`));
      return 'go on';
    },
    fails: async () => {
      throw new TypeError('no such thing');
    },
  };
  await using session = await AgentSandbox.start({ tools });
  const result = await session.run('console.log("first"); console.error("second"); await checkpoint(); try { await fails() } catch {} "end"', {
    onEvent: (e) => events.push(e),
  });
  t.is(result.result, 'end');
  t.deepEqual(seenBeforeAnswer, ['console first', 'console second', 'tool-call checkpoint']);
  t.deepEqual(
    events.map((e) => (e.type === 'console' ? [e.type, e.stream, e.text] : [e.type, e.tool, e.type === 'tool-result' ? e.status : e.args])),
    [
      ['console', 'stdout', 'first'],
      ['console', 'stderr', 'second'],
      ['tool-call', 'checkpoint', []],
      ['tool-result', 'checkpoint', 'completed'],
      ['tool-call', 'fails', []],
      ['tool-result', 'fails', 'failed'],
    ],
  );
  const failed = events.at(-1) as Extract<SessionEvent, { type: 'tool-result' }>;
  t.deepEqual(failed.error, { name: 'TypeError', message: 'no such thing' });
  t.true(events.every((e) => e.cell === 1));
});

test('a listener that throws changes nothing; events are published on diagnostics_channel with the session id', async (t) => {
  const published: { session: string; event: SessionEvent }[] = [];
  const listener = (message: unknown) => published.push(message as { session: string; event: SessionEvent });
  subscribe(SESSION_EVENTS_CHANNEL, listener);
  t.teardown(() => unsubscribe(SESSION_EVENTS_CHANNEL, listener));
  await using session = await AgentSandbox.start({ tools: { echo: async (x: unknown) => x } });
  const result = await session.run('console.log("x"); await echo(1)', {
    onEvent: () => {
      throw new Error('a careless listener');
    },
  });
  t.is(result.status, 'ok');
  t.is(result.result, 1);
  const mine = published.filter((m) => m.session === session.id).map((m) => m.event.type);
  t.deepEqual(mine, ['console', 'tool-call', 'tool-result']);
});

test('a restore replays silently: no events for the journal’s cells', async (t) => {
  const tools = { echo: async (x: unknown) => x };
  let journal;
  {
    await using session = await AgentSandbox.start({ tools });
    await session.run('console.log("once"); await echo(2)');
    journal = session.journal;
  }
  const published: { session: string }[] = [];
  const listener = (message: unknown) => published.push(message as { session: string });
  subscribe(SESSION_EVENTS_CHANNEL, listener);
  t.teardown(() => unsubscribe(SESSION_EVENTS_CHANNEL, listener));
  await using restored = await AgentSandbox.restore(journal, { tools });
  t.deepEqual(
    published.filter((m) => m.session === restored.id),
    [],
  );
  const events: SessionEvent[] = [];
  await restored.run('console.log("live")', { onEvent: (e) => events.push(e) });
  t.deepEqual(
    events.map((e) => e.type),
    ['console'],
  );
});
