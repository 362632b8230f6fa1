// How the parent starts a worker (src/isolated/worker-child.ts): on Linux the spawn addon
// (posix_spawn, a pidfd for its end) instead of node:child_process, whose fork copies the parent's
// page tables. Both ways must give the worker the same process: fds 0-4 and nothing else but what
// an exec keeps of the parent's (strata-exec closes those), an empty
// environment, no signal ignored or blocked; and the parent the same view of it: every byte it
// wrote read before its end is reported, its exit code or signal, a kill that never outlives it.
import test from 'ava';
import { spawnSync, spawn as nodeSpawn } from 'node:child_process';
import { closeSync, readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defaultSpawnMethod, spawnWorkerChild, type SpawnMethod, type WorkerChild } from '../src/isolated/worker-child.js';
import { platformTest } from '../src/testing/index.js';
import { loadSpawnAddon } from '../src/native/native-paths.js';
import { RingWriter, WorkerProcess, type LaunchPlan } from '../src/isolated/worker-process.js';
import { WorkerCrashed, type StrataError } from '../src/index.js';

const linux = process.platform === 'linux';
const maybe = platformTest(test, {
  feature: 'linux',
  available: linux,
  reason: 'the worker starts with node:child_process off Linux: nothing else to compare',
});
const methods: SpawnMethod[] = ['posix_spawn', 'child_process'];

const SH = '/bin/sh';

function collect(stream: NodeJS.ReadableStream): () => string {
  const chunks: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk));
  return () => Buffer.concat(chunks).toString('utf8');
}

/** This process's fds above 4 that an exec keeps (no O_CLOEXEC): a child inherits them however it is started. */
function inheritableFds(): number[] {
  const O_CLOEXEC = 0o2000000;
  return readdirSync('/proc/self/fd')
    .map(Number)
    .filter((fd) => {
      if (fd < 5) return false;
      try {
        const flags = /flags:\s+([0-7]+)/.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'latin1'));
        return flags !== null && (Number.parseInt(flags[1]!, 8) & O_CLOEXEC) === 0;
      } catch {
        return false; // the listing's own fd, closed since
      }
    });
}

function closed(child: WorkerChild): Promise<[number | null, NodeJS.Signals | null]> {
  return new Promise((resolve) => child.onClose((code, signal) => resolve([code, signal])));
}

maybe('on Linux with pidfd_open, a worker is started with posix_spawn', (t) => {
  t.is(defaultSpawnMethod(), 'posix_spawn');
});

for (const method of methods) {
  maybe(`${method}: fds 0-4 carry both ways, and everything written is read before the end is reported`, async (t) => {
    // Echoes fd 0, then fds 3 and 4, on fd 1; 1 MiB more on fd 1 and a line on fd 2 just before it exits 7.
    const script = 'read a; read b <&3; read c <&4; echo "$a $b $c"; head -c 1048576 /dev/zero; echo oops >&2; exit 7';
    const child = await spawnWorkerChild(SH, ['-c', script], method);
    const out = collect(child.frames);
    const err = collect(child.stderr);
    const end = closed(child);
    child.commands.write('zero\n');
    child.replies.write('three\n');
    child.settlements.write('four\n');
    t.deepEqual(await end, [7, null]);
    t.is(out().slice(0, 16), 'zero three four\n');
    t.is(out().length, 16 + 1048576);
    t.is(err(), 'oops\n');
  });

  maybe(`${method}: the worker gets fds 0-4 and what an exec keeps, an empty environment, and no signal ignored or blocked`, async (t) => {
    const child = await spawnWorkerChild(SH, ['-c', 'env; grep -E "^Sig(Ign|Blk):" /proc/self/status; exec sleep 30'], method);
    const out = collect(child.frames);
    const end = closed(child);
    // Until sleep runs, /proc shows the shell's own fds: wait for its last line.
    while (!out().includes('SigBlk')) await new Promise((resolve) => setTimeout(resolve, 5));
    for (;;) {
      const comm = spawnSync('cat', [`/proc/${child.pid}/comm`], { encoding: 'utf8' }).stdout.trim();
      if (comm === 'sleep') break;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    t.deepEqual(
      readdirSync(`/proc/${child.pid}/fd`)
        .map(Number)
        .sort((a, b) => a - b),
      [0, 1, 2, 3, 4, ...inheritableFds()].sort((a, b) => a - b),
    );
    child.kill();
    t.deepEqual(await end, [null, 'SIGKILL']);
    // `env` printed nothing (sh may export PWD itself); Node ignores SIGPIPE, the worker must not.
    const lines = out().trim().split('\n');
    t.deepEqual(
      lines.filter((line) => !line.startsWith('Sig') && !line.startsWith('PWD=')),
      [],
    );
    const mask = (name: string) => BigInt(`0x${lines.find((line) => line.startsWith(`${name}:`))!.split('\t')[1]}`);
    t.is(mask('SigBlk'), 0n);
    // glibc's posix_spawn leaves its own two internal signals (32, 33) ignored; strata-exec, the
    // worker's first link, resets every signal (test/native-exec-helper.test.ts).
    t.is(mask('SigIgn') & ~(method === 'posix_spawn' ? 0x180000000n : 0n), 0n);
  });

  maybe(`${method}: a kill after the end signals nothing, and a missing program is refused`, async (t) => {
    const child = await spawnWorkerChild(SH, ['-c', 'exit 0'], method);
    child.frames.resume();
    child.stderr.resume();
    t.deepEqual(await closed(child), [0, null]);
    t.notThrows(() => child.kill());
    const error = await t.throwsAsync(spawnWorkerChild('/nonexistent/strata-exec', [], method));
    t.regex(error!.message, /ENOENT|No such file/);
  });
}

maybe('posix_spawn: waiting for an unreferenced child does not keep the parent alive; a referenced one does', async (t) => {
  const module = fileURLToPath(new URL('../src/isolated/worker-child.js', import.meta.url));
  const script = (ref: boolean) => `
    const { spawnWorkerChild } = await import(${JSON.stringify(module)});
    const child = await spawnWorkerChild('/bin/sleep', ['${ref ? '0.3' : '30'}'], 'posix_spawn');
    for (const stream of [child.commands, child.frames, child.stderr, child.replies, child.settlements]) stream.unref();
    ${ref ? 'child.ref();' : 'child.unref();'}
    child.onClose((code, signal) => console.log('closed', code, signal));
    console.log(child.pid);`;
  const run = (ref: boolean) =>
    new Promise<string>((resolve, reject) => {
      const parent = nodeSpawn(process.execPath, ['--input-type=module', '-e', script(ref)], { stdio: ['ignore', 'pipe', 'inherit'] });
      const out = collect(parent.stdout);
      parent.on('error', reject);
      parent.on('close', () => resolve(out()));
    });
  const unreferenced = (await run(false)).trim().split('\n');
  t.is(unreferenced.length, 1, 'the parent exited without waiting for its child');
  const orphan = Number(unreferenced[0]);
  t.notThrows(() => process.kill(orphan, 0), 'the child still runs');
  process.kill(orphan, 'SIGKILL');
  const referenced = (await run(true)).trim().split('\n');
  t.deepEqual(referenced.slice(1), ['closed 0 null']);
});

// The frame ring (native/frame-ring.h): the worker's frames through memory both map, its doorbell
// on fd 1. The writer here is the worker's own (the watchdog addon's writeFrames) in a child Node;
// the reader this process's, as a worker's parent reads.
const WATCHDOG = fileURLToPath(new URL('../../build/Release/strata_watchdog.node', import.meta.url));
const NODE = process.execPath;

/** A Node child that attaches the ring at fd 5 and runs `body` (with `ring`, the watchdog addon, in scope). */
function ringWriter(body: string, method: SpawnMethod): Promise<WorkerChild> {
  const script = `const ring = require(${JSON.stringify(WATCHDOG)}); ring.attachFrameRing(5, 1, 0, 3); ${body}`;
  return spawnWorkerChild(NODE, ['-e', script], method, true);
}

/** Everything the ring gives until the child's end: taken at each doorbell, and once more at the end. */
function ringBytes(child: WorkerChild): Promise<Buffer> {
  const chunks: Buffer[] = [];
  const take = () => {
    const bytes = child.frameRing!.take(0);
    if (bytes !== undefined) chunks.push(bytes);
  };
  child.frames.on('data', take);
  return new Promise((resolve) =>
    child.onClose(() => {
      take();
      resolve(Buffer.concat(chunks));
    }),
  );
}

for (const method of methods) {
  maybe(`${method}: with a frame ring, 3 MiB in frames of every size arrive whole and in order, through a ring of 64 KiB`, async (t) => {
    // sizes 1 .. 200 000 bytes, each frame's bytes a pattern of its index: a lost, doubled or reordered chunk shows
    const body = `
      let total = 0;
      for (let i = 0; total < 3 * 1024 * 1024; i++) {
        const size = 1 + ((i * 7919) % 200000);
        ring.writeFrames(Buffer.alloc(size, i % 251));
        total += size;
      }`;
    const child = await ringWriter(body, method);
    const bytes = await ringBytes(child);
    let offset = 0;
    for (let i = 0; offset < bytes.length; i++) {
      const size = 1 + ((i * 7919) % 200000);
      const frame = bytes.subarray(offset, offset + size);
      t.is(frame.length, size);
      if (!frame.every((b) => b === i % 251)) return t.fail(`frame ${i} at ${offset} is not whole`);
      offset += size;
    }
    t.true(bytes.length >= 3 * 1024 * 1024);
  });

  maybe(`${method}: a spinning reader takes what the writer publishes without a doorbell`, async (t) => {
    // The child publishes once it sees the reader's flag up (reader_spinning, at byte 68 of the
    // ring's header, read through a second fd of the memfd), so it publishes during a spin
    // whatever the machine's load; the parent spins up to 1 s a take.
    const body = `
      const fs = require('node:fs');
      const header = fs.openSync('/proc/self/fd/5', 'r');
      const ring = require(${JSON.stringify(WATCHDOG)});
      ring.attachFrameRing(5, 1, 0, 3);
      const flag = Buffer.alloc(4);
      const publishWhenSpun = () => {
        fs.readSync(header, flag, 0, 4, 68);
        if (flag.readUInt32LE() === 0) return setImmediate(publishWhenSpun);
        ring.writeFrames(Buffer.from('pong'));
      };
      publishWhenSpun();`;
    const child = await spawnWorkerChild(NODE, ['-e', body], method, true);
    const bells = collect(child.frames);
    const end = closed(child);
    let bytes: Buffer | undefined;
    for (let i = 0; i < 30 && bytes === undefined; i++) bytes = child.frameRing!.take(1_000_000);
    t.is(bytes?.toString(), 'pong');
    await end;
    t.is(bells(), '', 'no doorbell rang: the reader was spinning');
  });

  maybe(`${method}: the ring cannot be resized by the worker (sealed), and a forged tail is refused`, async (t) => {
    // ftruncate must fail (a shrink would make the parent's reads fault); then a tail far ahead of the head
    const body = `
      const fs = require('node:fs');
      for (const size of [0, 4096, 1 << 20]) {
        try { fs.ftruncateSync(5, size); process.stderr.write('resized to ' + size + '\\n'); } catch (e) { process.stderr.write(e.code + '\\n'); }
      }
      const tail = Buffer.alloc(4); tail.writeUInt32LE(0x7fffffff);
      fs.writeSync(5, tail, 0, 4, 0);
      fs.writeSync(1, 'x');`;
    const child = await spawnWorkerChild(NODE, ['-e', body], method, true);
    const err = collect(child.stderr);
    const rang = new Promise((resolve) => child.frames.once('data', resolve));
    const end = closed(child);
    await rang;
    const error = t.throws(() => child.frameRing!.take(0));
    t.is((error as NodeJS.ErrnoException).code, 'ERR_STRATA_FRAME_RING');
    t.regex(error!.message, /the frame ring's tail says 2147483647 bytes are unread, more than its 65536/);
    await end;
    t.is(err(), 'EPERM\nEPERM\nEPERM\n');
  });
}

for (const method of methods) {
  maybe(`${method}: 3 MiB of commands in frames of every size reach the worker whole and in order through their 64 KiB ring`, async (t) => {
    // The worker reads as Strata's does (readRing: spin, then sleep on fd 0) and checks each
    // frame's pattern; this process puts what fits and the rest when the worker says it took some.
    const sizes: number[] = [];
    for (let i = 0, total = 0; total < 3 * 1024 * 1024; i++) {
      sizes.push(1 + ((i * 7919) % 200000));
      total += sizes[i]!;
    }
    const body = `
      const sizes = ${JSON.stringify(sizes)};
      const buffer = Buffer.alloc(65536), waited = new Float64Array(1);
      let frame = 0, at = 0, total = 0, bad;
      for (let n; (n = ring.readRing(1, buffer, 50, true, waited)) > 0; ) {
        for (let k = 0; k < n; k++) {
          if (buffer[k] !== frame % 251 && bad === undefined) bad = 'frame ' + frame + ' byte ' + at;
          total++;
          if (++at === sizes[frame]) { frame++; at = 0; }
        }
      }
      process.stderr.write((bad ?? 'whole') + ' ' + frame + ' ' + total);`;
    const child = await ringWriter(body, method);
    const err = collect(child.stderr);
    const end = closed(child);
    const frames = sizes.map((size, i) => new Uint8Array(size).fill(i % 251));
    let next = 0;
    let offset = 0;
    const putMore = () => {
      while (next < frames.length) {
        const [written, ring] = child.frameRing!.put(1, frames[next]!, offset);
        if (ring) child.commands.write(Buffer.of(1));
        offset += written;
        if (offset < frames[next]!.length) return; // full: the worker says when it took some
        next++;
        offset = 0;
      }
      child.commands.end(); // all on the ring: the end, once the worker has taken it
    };
    child.frames.on('data', putMore);
    putMore();
    t.deepEqual(await end, [0, null]);
    t.is(err(), `whole ${sizes.length} ${sizes.reduce((a, b) => a + b)}`);
  });
}

maybe('attachFrameRing refuses what is not a sealed ring of its size', async (t) => {
  // an ordinary file is refused, in a child (the attach is once per process); and nothing is written before an attach
  const body = `
    const fs = require('node:fs');
    const ring = require(${JSON.stringify(WATCHDOG)});
    for (const fd of [fs.openSync('/proc/self/status', 'r')]) {
      try { ring.attachFrameRing(fd, 1, 0, 3); console.log('attached'); } catch (e) { console.log(e.code + ': ' + e.message); }
    }
    try { ring.writeFrames(Buffer.from('x')); } catch (e) { console.log(e.code + ': ' + e.message); }`;
  const child = await spawnWorkerChild(NODE, ['-e', body], 'posix_spawn');
  const out = collect(child.frames);
  await closed(child);
  t.regex(out(), /^ERR_STRATA_FRAME_RING: strata-watchdog: fd \d+ is not the sealed frame rings of 208896 bytes/m);
  t.regex(out(), /^ERR_STRATA_FRAME_RING: strata-watchdog: writeFrames before attachFrameRing$/m);
  t.notRegex(out(), /attached/);
});

maybe("a worker that forges its ring's tail is killed as a protocol violation, and nothing past its ring is read", async (t) => {
  const plan: LaunchPlan = {
    workerNode: NODE,
    nodeArgs: [],
    cpuSeconds: undefined,
    entry: fileURLToPath(new URL('./fixtures/ring-forger.js', import.meta.url)),
    launch: [],
    frameRing: true,
  };
  const worker = await WorkerProcess.start(plan, 30_000);
  const release = worker.hold();
  const error = await new Promise<StrataError>((resolve) => worker.onExit(resolve));
  release();
  t.true(error instanceof WorkerCrashed);
  t.is((error as WorkerCrashed).reason, 'protocol');
  t.regex(
    error.message,
    /^protocol violation: strata-spawn: the frame ring's tail says 1073741824 bytes are unread, more than its 65536; the worker was killed$/,
  );
});

maybe(
  'a worker that finds its commands without sleeping never makes the parent queue doorbells: at most one waits, and nothing counts as unread',
  async (t) => {
    // The child takes its commands as fast as they come and never reads fd 0, so every doorbell rung
    // stays in the pipe (a worker that spins leaves them there until it next sleeps). 3.2 MB of
    // commands in 8-byte frames is far more bells than the pipe holds.
    const frames = 400_000;
    const body = `
    const buffer = Buffer.alloc(65536);
    let total = 0;
    const take = () => {
      for (let n; (n = ring.takeRing(1, buffer)) > 0; ) total += n;
      if (total >= ${frames * 8}) { process.stderr.write(String(total)); process.exit(0); }
      setImmediate(take);
    };
    take();`;
    const child = await ringWriter(body, 'posix_spawn');
    const err = collect(child.stderr);
    const end = closed(child);
    child.commands.on('error', () => {}); // a doorbell written as the child exits
    const writer = new RingWriter(child.frameRing!, 1, child.commands);
    child.frames.on('data', () => writer.flush());
    let mostQueued = 0;
    const frame = new Uint8Array(8).fill(7);
    for (let i = 0; i < frames; i++) {
      writer.write(frame);
      mostQueued = Math.max(mostQueued, child.commands.writableLength);
      if (i % 2000 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    t.deepEqual(await end, [0, null]);
    t.is(err(), String(frames * 8));
    t.true(mostQueued <= 1, `at most one doorbell byte waited in this process (${mostQueued})`);
  },
);

maybe("the spawn addon's handles are tagged: a child's handle is refused where rings are taken, and the rings' where a child is", async (t) => {
  const addon = loadSpawnAddon();
  const [rings, fd] = addon.makeFrameRing();
  closeSync(fd);
  let exited: () => void = () => {};
  const ended = new Promise<void>((resolve) => (exited = resolve));
  const [childHandle, , ...fds] = addon.spawn(SH, [SH, '-c', 'exit 0'], 5, () => exited());
  for (const end of fds) closeSync(end);
  t.throws(() => addon.takeFrames(childHandle, 0), { instanceOf: TypeError, message: /takeFrames\(ring, spinMicros\) takes a ring makeFrameRing made/ });
  t.throws(() => addon.putFrames(childHandle, 1, new Uint8Array(1), 0), { instanceOf: TypeError, message: /putFrames/ });
  t.throws(() => addon.signal(rings, 9), { instanceOf: TypeError, message: /takes the child handle spawn returned/ });
  t.throws(() => addon.takeFrames({}, 0), { instanceOf: TypeError });
  t.is(addon.takeFrames(rings, 0), undefined);
  await ended;
});
