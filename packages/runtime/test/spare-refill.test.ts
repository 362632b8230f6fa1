// A worker of many isolates makes spares ahead, so that an open is a hand-over. It makes them
// when it has been idle for a moment; a worker whose isolates never leave it idle makes one
// between two commands once it has been short of spares for a while. Observed through the
// worker's timeline marks ("open took a spare" / "open made an isolate"), not through timing.
// Serial: recording the timeline is one switch for the whole test process.
import test from 'ava';
import { SandboxHost, SandboxPool } from '../src/index.js';
import { collectTimeline, recordTimeline, stopRecordingTimeline } from '../src/testing/index.js';
import { checkNoLeaks } from './helpers/leaks.js';

checkNoLeaks(test);

const linux = process.platform === 'linux' && (process.arch === 'x64' || process.arch === 'arm64');

/** A host under `sandbox: 'require'` where the platform has it, with no prewarmed spare worker. */
function startHost(options: Parameters<typeof SandboxHost.start>[0]): Promise<SandboxHost> {
  return SandboxHost.start({ sandbox: linux ? 'require' : 'auto', prewarm: false, ...options });
}

/** Runs `body` with a host started while the timeline records; the host is closed and the recording stopped after it, whatever happens. */
async function withRecordingHost(options: Parameters<typeof SandboxHost.start>[0], body: (host: SandboxHost) => Promise<void>): Promise<void> {
  recordTimeline();
  try {
    const host = await startHost(options);
    try {
      await body(host);
    } finally {
      await host.close();
    }
  } finally {
    stopRecordingTimeline();
  }
}

/** The worker's timeline marks since the last collection, in order. */
async function workerLabels(rt: Parameters<typeof collectTimeline>[0]): Promise<string[]> {
  return (await collectTimeline(rt)).map(([label]) => label).filter((label) => label.startsWith('worker '));
}

const SERVED = new Set(['worker open took a spare', 'worker open made an isolate']);

/** How the worker served the opens since the last collection, in order (with `spares`, also each spare it made). */
async function opens(rt: Parameters<typeof collectTimeline>[0], spares = false): Promise<string[]> {
  return (await collectTimeline(rt)).map(([label]) => label).filter((label) => SERVED.has(label) || (spares && label === 'worker spare made'));
}

test.serial('a worker kept busy by one isolate still makes spares: a later open is a hand-over', async (t) => {
  await withRecordingHost({ tenant: 'busy', maxIsolates: 10 }, async (host) => {
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
    // Made between two commands, one per starvation period. The open after them is handed a
    // spare, or one the host opened ahead from a spare: either way no isolate is made for it.
    const served = await opens(busy, true);
    t.true(served.includes('worker spare made'), `no spare made in ${commands} commands back to back: ${served.join(', ')}`);
    t.false(served.includes('worker open made an isolate'), `after ${commands} commands back to back: ${served.join(', ')}`);
    for (const rt of [...taken, next, busy]) await rt.close();
  });
});

/** Opens `count` isolates back to back, runs `1+1` in each, and says how the worker served the opens and what each answered. */
async function openInBurst(
  host: SandboxHost,
  watcher: Parameters<typeof collectTimeline>[0],
  count: number,
): Promise<{ served: string[]; answers: unknown[] }> {
  await opens(watcher);
  const burst = [];
  for (let i = 0; i < count; i++) burst.push(await host.open());
  const answers = [];
  for (const rt of burst) answers.push(await rt.eval('1+1'));
  const served = await opens(watcher);
  for (const rt of burst) await rt.close();
  return { served, answers };
}

/** Lets the worker idle: it makes its spares one at a time after idling 20 ms. */
async function idle(ms: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms));
}

test.serial('spareIsolates: a worker that keeps five spares serves a burst of five opens as hand-overs; one that keeps none makes every isolate', async (t) => {
  recordTimeline();
  const five = await startHost({ tenant: 'burst', maxIsolates: 10, spareIsolates: 5 });
  const none = await startHost({ tenant: 'burst', maxIsolates: 10, spareIsolates: 0 });
  try {
    const watchFive = await five.open();
    const watchNone = await none.open();
    // used, so no longer one of the isolates made ahead (an isolate handed out counts as one until its first command)
    await watchFive.eval('0');
    await watchNone.eval('0');
    // the two made before the start returned, the others once the worker has idled
    await idle(1500);
    // Each a hand-over: in the worker, or of the isolate the host opened ahead from one of the five.
    const burst = await openInBurst(five, watchFive, 5);
    t.deepEqual(burst.answers, Array(5).fill(2));
    t.true(burst.served.length >= 4 && burst.served.every((label) => label === 'worker open took a spare'), burst.served.join(', '));
    t.deepEqual(await openInBurst(none, watchNone, 3), { served: Array(3).fill('worker open made an isolate'), answers: Array(3).fill(2) });
    await watchFive.close();
    await watchNone.close();
  } finally {
    await five.close();
    await none.close();
    stopRecordingTimeline();
  }
});

test('spareIsolates outside 0–64, or on a pool of one isolate per worker, is refused before anything starts', async (t) => {
  for (const spareIsolates of [-1, 65, 1.5, Number.NaN, '2' as never]) {
    await t.throwsAsync(SandboxHost.start({ tenant: 'x', spareIsolates }), {
      code: 'ERR_STRATA_INVALID_OPTION',
      message: /spareIsolates must be an integer from 0 to 64/,
    });
    await t.throwsAsync(SandboxPool.start({ isolatesPerWorker: 4, spareIsolates }), {
      code: 'ERR_STRATA_INVALID_OPTION',
      message: /spareIsolates must be an integer from 0 to 64/,
    });
  }
  await t.throwsAsync(SandboxPool.start({ spareIsolates: 4 }), { code: 'ERR_STRATA_INVALID_OPTION', message: /set isolatesPerWorker above 1 too/ });
});

test.serial('an open and the command behind it, read together, are answered in one write', async (t) => {
  // Two places: with one open, the host opens none ahead (it keeps the last place for an open
  // with options of its own), so the next open is written to the worker with its first command.
  await withRecordingHost({ tenant: 'held', maxIsolates: 2 }, async (host) => {
    const busy = await host.open();
    await busy.eval('1');
    // the worker makes its spare for the open below
    await idle(300);
    await collectTimeline(busy);
    // The worker is held busy: the open and its first command wait in the pipe, and are read together.
    const spin = busy.eval('{ const end = Date.now() + 300; while (Date.now() < end); }');
    await new Promise((resolve) => setTimeout(resolve, 50));
    const rt = await host.open();
    const answer = rt.eval('6 * 7');
    await spin;
    t.is(await answer, 42);
    const labels = await workerLabels(busy);
    const from = labels.indexOf('worker open took a spare');
    t.true(from > 0 && labels[from - 1] === 'worker decoded', labels.join(', '));
    const served = labels.slice(from, labels.indexOf('worker read', from) === -1 ? undefined : labels.indexOf('worker read', from));
    t.is(served.filter((label) => label === 'worker encode').length, 2, served.join(', '));
    t.is(served.filter((label) => label === 'worker written').length, 1, served.join(', '));
    await rt.close();
    await busy.close();
  });
});

test.serial('the host opens an isolate ahead: an open with no options writes nothing, and its first command is the first the worker hears of it', async (t) => {
  await withRecordingHost({ tenant: 'ahead', maxIsolates: 10 }, async (host) => {
    const watcher = await host.open();
    await watcher.eval('1');
    // The worker makes its spares, and the host opens one ahead once the worker next answers (it
    // may have refused one just after the start, with no spare then).
    await idle(300);
    await watcher.eval('2');
    await idle(100);
    await collectTimeline(watcher);
    const rt = await host.open();
    t.is(await rt.eval('6 * 7'), 42);
    const labels = await workerLabels(watcher);
    const served = labels.indexOf('worker serve');
    t.true(served >= 0, labels.join(', '));
    t.false(
      labels.slice(0, served).some((label) => SERVED.has(label)),
      `the worker opened an isolate before serving the first command: ${labels.join(', ')}`,
    );
    // The isolate opened ahead is no one's: it counts nowhere.
    t.is(host.isolates, 2);
    t.is(rt.report.sharedWith, 1);
    t.is(await watcher.eval('globalThis.x = 1; typeof globalThis.x'), 'number');
    t.is(await rt.eval('typeof globalThis.x'), 'undefined');
    await rt.close();
    await watcher.close();
  });
});

test('an isolate opened ahead never takes the last place: an open with options of its own still fits, and the host is full at maxIsolates', async (t) => {
  const host = await startHost({ tenant: 'last-place', maxIsolates: 3 });
  try {
    const opened = [];
    for (let i = 0; i < 2; i++) {
      const rt = await host.open();
      t.is(await rt.eval(`${i} + 1`), i + 1);
      opened.push(rt);
    }
    await idle(100);
    const own = await host.open({ timeout: 1_000 });
    t.is(await own.eval('3'), 3);
    opened.push(own);
    t.is(host.isolates, 3);
    t.false(host.hasRoom);
    await t.throwsAsync(host.open(), { code: 'ERR_STRATA_HOST_FULL' });
    await opened[0]!.close();
    await idle(100);
    // the freed place: an open fits again, with or without options
    const again = await host.open({ timeout: 2_000 });
    t.is(await again.eval('4'), 4);
    for (const rt of [...opened.slice(1), again]) await rt.close();
    t.is(host.isolates, 0);
  } finally {
    await host.close();
  }
});

test('an open that waits for the worker to confirm the isolate opened ahead counts as open meanwhile (a pool closes an empty host)', async (t) => {
  const host = await startHost({ tenant: 'waiting', maxIsolates: 10 });
  try {
    const first = await host.open();
    await first.eval('1');
    // The host opens the next one ahead in the turn after that answer: written, not yet confirmed.
    await new Promise((resolve) => setImmediate(resolve));
    const opening = host.open();
    t.is(host.isolates, 2);
    t.true(host.hasRoom);
    const second = await opening;
    t.is(host.isolates, 2);
    t.is(await second.eval('40 + 2'), 42);
    await first.close();
    await second.close();
    t.is(host.isolates, 0);
  } finally {
    await host.close();
  }
});

test('with one isolate made ahead, the host opens it ahead once the worker has a spare: refusals along the way cost no open anything', async (t) => {
  // spareIsolates 1: the worker's one spare goes to the start's warm-up, so the first open
  // ahead finds none and is refused; opens meanwhile go to the worker, and later ones are hand-outs.
  const host = await startHost({ tenant: 'one-ahead', maxIsolates: 6, spareIsolates: 1 });
  try {
    const opened = [];
    for (let i = 0; i < 4; i++) {
      const rt = await host.open();
      t.is(await rt.eval(`${i} * 2`), i * 2);
      opened.push(rt);
      await idle(60);
    }
    t.is(host.isolates, 4);
    for (const [i, rt] of opened.entries()) t.is(await rt.eval(`${i} * 3`), i * 3);
    for (const rt of opened) await rt.close();
    t.is(host.isolates, 0);
  } finally {
    await host.close();
  }
});

test('an open ahead that a neighbour long past the start deadline keeps the worker from serving does not get the worker killed', async (t) => {
  // The host's own deadline for an open is max(startTimeout, requestTimeout): 2.5 s here. The
  // neighbour's command may run 10 s: it holds the worker's thread for 4 s while the host's open
  // ahead (written after the first answer) waits in the pipe.
  const host = await startHost({ tenant: 'long-neighbour', maxIsolates: 6, startTimeout: 2_000, timeout: 500 });
  try {
    const first = await host.open();
    const long = await host.open({ timeout: 10_000 });
    const answered = first.eval('1');
    const spin = long.eval("{ const end = Date.now() + 4_000; while (Date.now() < end); 'done' }");
    t.is(await answered, 1);
    t.is(await spin, 'done');
    t.false(host.closed);
    // the open ahead was served once the thread was free: the next open is served, quickly or not
    const next = await host.open();
    t.is(await next.eval('2 + 2'), 4);
    for (const rt of [first, long, next]) await rt.close();
  } finally {
    await host.close();
  }
});
