/**
 * The worker process's entry: a minimal loader. It loads everything it will ever need, says
 * hello, waits for its configuration (a prewarmed spare waits here, holding no data), creates
 * the Runtime (or, for a worker of many isolates, waits for the parent to open them), then
 * serves the parent's commands until the parent closes the pipe. Between configuration and the Runtime: the memory watchdog starts (opening the /proc
 * files it keeps), then the layer pipeline applies, seals and self-tests (docs/design.md §3). A layer's
 * seal may deny every file open from then on, so everything the worker uses afterwards is
 * imported here, statically, at start: isolated-vm and its addon (through ../runtime.js), the
 * wire's codec (and its native half), the watchdog's and the deadline's addons. Only layer modules are imported later, before any apply.
 */
import { PROTOCOL_VERSION, type Message, type MessageOf } from '@strata/wire';
import { toErrorPayload } from '../error-codec.js';
import { ENGINE_ADDON_ARGUMENT, loadEngineFrom } from '../engine.js';
import { loadGuestDeadline } from '../guest-deadline.js';
import { loadWatchdog, loadWireCodec } from '../native/native-paths.js';
import { Runtime } from '../runtime.js';
import { markAt, mark, startTimeline, stopTimeline } from '../timeline.js';
import { workerEntry } from './entry-handle.js';
import { CHANNEL_FDS, FRAME_RING_ARGUMENT, ParentChannel } from './parent-channel.js';
import { shareRuntimeWithLayers } from './shared-with-layers.js';
import { WorkerHost } from './worker-host.js';

// The start-up's marks are always taken (a dozen); configure says whether the parent wants them.
// Node's own (performance.nodeTiming) are added then, in their place: `performance` costs a
// --jitless worker milliseconds to load, which only a timeline should pay.
startTimeline();
mark('modules loaded');
// whether the bundle was compiled with the build's code cache (worker-entry.cts): no mark without one
const codeCacheRejected = workerEntry()?.codeCacheRejected;
if (codeCacheRejected !== undefined) mark(codeCacheRejected ? 'code cache refused' : 'code cache used');

// Before any layer module is imported: they import the worker's own @strata/runtime entry points.
shareRuntimeWithLayers();
mark('hooks installed');
const watchdog = loadWatchdog();
// The engine from the addon the parent found for this Node (src/isolated/worker-node.ts), if it
// did: resolving isolated-vm through node-gyp-build costs a --jitless worker about 5 ms.
const engineAddonAt = process.argv.indexOf(ENGINE_ADDON_ARGUMENT, 2);
if (engineAddonAt > 0) loadEngineFrom(process.argv[engineAddonAt + 1]!);
// The soft timeout's addon, both halves, while files can still be opened.
loadGuestDeadline();
// execve() reset the dumpable flag the exec helper could have set: no core dump, no ptrace
// attach by another process of the same user, /proc/<pid> owned by root.
watchdog.disableDumping();
mark('addons loaded');
// The frame rings the parent passed, if it did (src/isolated/worker-child.ts): frames, commands and replies go through them.
const ringAt = process.argv.indexOf(FRAME_RING_ARGUMENT, 2);
if (ringAt > 0) watchdog.attachFrameRing(Number(process.argv[ringAt + 1]), CHANNEL_FDS.out, CHANNEL_FDS.commands, CHANNEL_FDS.replies);
const channel = new ParentChannel(watchdog, loadWireCodec(), ringAt > 0);
mark('channel made');
let host: WorkerHost | undefined;

async function configure(message: MessageOf<'configure'>): Promise<WorkerHost> {
  try {
    mark('configure');
    const created = await WorkerHost.create(channel, message.options, Runtime, watchdog);
    mark('configured');
    channel.send({ type: 'result', id: message.id, value: created.describe() });
    if (message.options['timeline'] !== true) stopTimeline();
    else {
      const node = performance.nodeTiming;
      markAt('node start', node.nodeStart);
      markAt('V8 start', node.v8Start);
      markAt('node bootstrapped', node.bootstrapComplete);
    }
    return created;
  } catch (error) {
    channel.send({ type: 'error', id: message.id, error: toErrorPayload(error) });
    process.exit(71);
  }
}

/**
 * Configuration first; then, with one isolate, one command at a time (read synchronously: an idle
 * worker has nothing else to do) until the isolate ends or the parent closes the pipe; with many,
 * commands as a stream, each in its isolate's turn.
 */
async function serve(): Promise<void> {
  const first: Message | undefined = channel.nextCommand();
  if (first === undefined) process.exit(0);
  if (first.type !== 'configure') {
    channel.send({ type: 'error', error: { class: 'StrataError', message: `expected configure first, got ${first.type}` } });
    process.exit(70);
  }
  const configured = await configure(first);
  host = configured;
  if (configured.multi) {
    channel.streamCommands((message) => {
      configured.dispatch(message)?.catch((error: unknown) => {
        // dispatch answers every request itself; reaching here is a bug in the worker: end loudly.
        process.stderr.write(`strata worker: ${String(error)}\n`);
        process.exit(72);
      });
    });
    return;
  }
  for (;;) {
    const message = channel.nextCommand();
    if (message === undefined) process.exit(0);
    // A host call the guest left running (not awaited) settles through the event loop, which a
    // worker that reads its commands synchronously does not turn: a turn now hands the guest what
    // has come since, before this command (the in-process Runtime hands it at once). Two
    // setImmediate hops: the second runs in the next turn, after its poll phase has read the pipe.
    if (configured.pendingCalls.size > 0) {
      for (let hop = 0; hop < 2; hop++) await new Promise((resolve) => setImmediate(resolve));
    }
    // An eval is answered on this stack (no promise to await); a disposed isolate (close, or its
    // heap limit) ends the worker of one isolate.
    const outcome = configured.serveOne(message);
    if ((outcome === undefined || outcome === 'ended' ? outcome : await outcome) === 'ended') process.exit(0);
  }
}

channel.listenForSettlements((message) => {
  if (message.type === 'callResult') host?.settleAsyncCall(message);
});
mark('hello');
channel.send({ type: 'hello', version: PROTOCOL_VERSION });
void serve();
