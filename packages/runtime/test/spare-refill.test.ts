// A worker of many isolates makes spares ahead, so that an open is a hand-over. It makes them
// when it has been idle for a moment; a worker whose isolates never leave it idle makes one
// between two commands once it has been short of spares for a while. Observed through the
// worker's timeline marks ("open took a spare" / "open made an isolate"), not through timing.
import test from 'ava';
import { SandboxHost } from '../src/index.js';
import { collectTimeline, recordTimeline, stopRecordingTimeline } from '../src/testing/index.js';
import { checkNoLeaks } from './helpers/leaks.js';

checkNoLeaks(test);

const linux = process.platform === 'linux' && (process.arch === 'x64' || process.arch === 'arm64');

/** How the worker served the opens since the last collection, in order. */
async function opens(rt: Parameters<typeof collectTimeline>[0]): Promise<string[]> {
  return (await collectTimeline(rt)).map(([label]) => label).filter((label) => label === 'worker open took a spare' || label === 'worker open made an isolate');
}

test('a worker kept busy by one isolate still makes spares: a later open is a hand-over', async (t) => {
  recordTimeline();
  const host = await SandboxHost.start({ tenant: 'busy', maxIsolates: 10, sandbox: linux ? 'require' : 'auto', prewarm: false });
  try {
    const busy = await host.open();
    await busy.eval('0');
    // Take every spare the start made, with no idle moment in between.
    const taken = [await host.open(), await host.open(), await host.open()];
    for (const rt of taken) await rt.eval('1');
    const first = await opens(busy);
    t.true(first.includes('worker open made an isolate'), `the opens outran the spares: ${first.join(', ')}`);
    // Commands back to back, never idle for the worker's idle period, for longer than its starvation period.
    const until = Date.now() + 1500;
    let commands = 0;
    while (Date.now() < until) {
      await busy.eval('1+1');
      commands++;
    }
    const next = await host.open();
    t.is(await next.eval('2+2'), 4);
    t.deepEqual(await opens(busy), ['worker open took a spare'], `after ${commands} commands back to back`);
    for (const rt of [...taken, next, busy]) await rt.close();
  } finally {
    await host.close();
    stopRecordingTimeline();
  }
});
