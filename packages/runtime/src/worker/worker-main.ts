/**
 * The worker process's entry: a minimal loader. It loads everything it will ever need, says
 * hello, waits for its configuration (a prewarmed spare waits here, holding no data), creates
 * the Runtime, then serves the parent's commands one at a time until the parent closes the
 * pipe. Between configuration and the Runtime: the memory watchdog starts (opening the /proc
 * files it keeps), then the layer pipeline applies, seals and self-tests (docs/design.md §3). A layer's
 * seal may deny every file open from then on, so everything the worker uses afterwards is
 * imported here, statically, at start: isolated-vm and its addon (through ../runtime.js), the
 * wire's codec, the watchdog's and the deadline's addons. Only layer modules are imported later, before any apply.
 */
// The composition root: tsyringe needs the metadata polyfill before anything it resolves.
import 'reflect-metadata';
import { PROTOCOL_VERSION, type Message, type MessageOf } from '@strata/wire';
import { loadGuestDeadline } from '../guest-deadline.js';
import { loadWatchdog } from '../native/native-paths.js';
import { Runtime } from '../runtime.js';
import { ParentChannel } from './parent-channel.js';
import { WorkerSession } from './worker-session.js';

const watchdog = loadWatchdog();
// The soft timeout's addon, both halves, while files can still be opened.
loadGuestDeadline();
// execve() reset the dumpable flag the exec helper could have set: no core dump, no ptrace
// attach by another process of the same user, /proc/<pid> owned by root.
watchdog.disableDumping();
const channel = new ParentChannel();
let session: WorkerSession | undefined;

async function configure(message: MessageOf<'configure'>): Promise<WorkerSession> {
  try {
    const created = await WorkerSession.create(channel, message.options, Runtime, watchdog);
    channel.send({ type: 'result', id: message.id, value: created.describe() });
    return created;
  } catch (error) {
    channel.send({ type: 'error', id: message.id, error: WorkerSession.errorPayload(error) });
    process.exit(71);
  }
}

/** One command at a time, until the parent closes the pipe. */
async function serve(): Promise<never> {
  for (;;) {
    const message: Message | undefined = channel.nextCommand();
    if (message === undefined) process.exit(0);
    if (session === undefined) {
      if (message.type !== 'configure') {
        channel.send({ type: 'error', error: { class: 'StrataError', message: `expected configure first, got ${message.type}` } });
        process.exit(70);
      }
      session = await configure(message);
      continue;
    }
    await session.serve(message);
  }
}

channel.listenForSettlements((message) => {
  if (message.type === 'callResult') session?.settleAsyncCall(message);
});
channel.send({ type: 'hello', version: PROTOCOL_VERSION });
void serve();
