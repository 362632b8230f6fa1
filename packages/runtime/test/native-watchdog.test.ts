import test from 'ava';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { loadWatchdog } from '../src/native/native-paths.js';

// start() arms a thread that can end the process, so every test that starts it runs a child node.

const MiB = 1024 * 1024;
const nativePaths = new URL('../src/native/native-paths.js', import.meta.url).href;

interface Exit {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `script` as an ES module in a child node, with `loadWatchdog` imported; `input`, when
 * given, is written to its stdin, which stays open (killed after 20 s if it never ends).
 */
function runWithWatchdog(script: string, input?: string): Promise<Exit> {
  const source = `import { loadWatchdog } from ${JSON.stringify(nativePaths)};\nconst watchdog = loadWatchdog();\n${script}`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', source], { stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    const guard = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('close', (status, signal) => {
      clearTimeout(guard);
      child.stdin?.destroy();
      resolve({ status, signal, stdout, stderr });
    });
    if (input !== undefined) child.stdin!.write(input);
  });
}

test('rss() is the resident set size in bytes', (t) => {
  const watchdog = loadWatchdog();
  const rss = watchdog.rss();
  const reference = process.memoryUsage.rss();
  t.true(Number.isSafeInteger(rss));
  t.true(rss > 8 * MiB, `rss() = ${rss}`);
  t.true(Math.abs(rss - reference) < reference / 4, `rss() = ${rss}, process.memoryUsage.rss() = ${reference}`);
});

test('threads() counts the entries of /proc/self/task', (t) => {
  const watchdog = loadWatchdog();
  const before = readdirSync('/proc/self/task').length;
  const threads = watchdog.threads();
  const after = readdirSync('/proc/self/task').length;
  t.true(Number.isInteger(threads));
  t.true(threads > 1, 'node always runs helper threads');
  t.true(threads >= Math.min(before, after) && threads <= Math.max(before, after), `${before} ≤ ${threads} ≤ ${after}`);
});

test('loadWatchdog() returns the same module every time', (t) => {
  t.is(loadWatchdog(), loadWatchdog());
});

test('over the limit the process exits with exitCode and one line on stderr', async (t) => {
  const exit = await runWithWatchdog(`
    watchdog.start(watchdog.rss() + ${50 * MiB}, 20, 57);
    const kept = Buffer.alloc(${200 * MiB});
    kept.fill(1);
    // The watchdog checks every 20 ms; surviving 30 s would mean it never fired, even on a loaded machine.
    setTimeout(() => console.log('survived with', kept.length, 'bytes'), 30_000);`);
  t.is(exit.status, 57);
  t.regex(exit.stderr, /^strata-watchdog: resident memory \d+ bytes is over maxMemory \d+ bytes\n$/);
  t.is(exit.stdout, '');
  const [, rss, limit] = /memory (\d+) bytes is over maxMemory (\d+)/.exec(exit.stderr) ?? [];
  t.true(Number(rss) > Number(limit));
});

test('under the limit the watchdog is one more thread and nothing else', async (t) => {
  const exit = await runWithWatchdog(`
    const before = watchdog.threads();
    watchdog.start(watchdog.rss() + ${512 * MiB}, 5, 57);
    const after = watchdog.threads();
    await new Promise((resolve) => setTimeout(resolve, 100));
    console.log(JSON.stringify({ before, after }));`);
  t.is(exit.status, 0, exit.stderr);
  const { before, after } = JSON.parse(exit.stdout) as { before: number; after: number };
  t.is(after, before + 1);
});

test('start() a second time throws ERR_STRATA_WATCHDOG_STARTED', async (t) => {
  const exit = await runWithWatchdog(`
    watchdog.start(2 ** 50, 1000, 57);
    try { watchdog.start(2 ** 50, 1000, 57); console.log('started twice'); }
    catch (error) { console.log(JSON.stringify({ name: error.name, code: error.code, message: error.message })); }`);
  t.is(exit.status, 0, exit.stderr);
  t.deepEqual(JSON.parse(exit.stdout), {
    name: 'Error',
    code: 'ERR_STRATA_WATCHDOG_STARTED',
    message: 'strata-watchdog: already started; there is one watchdog per process',
  });
});

const invalidStarts: [string, unknown[], string, RegExp][] = [
  ['no arguments', [], 'ERR_MISSING_ARGS', /start\(limitBytes, intervalMs, exitCode\)/],
  ['a string limit', ['1000', 20, 57], 'ERR_INVALID_ARG_TYPE', /limitBytes must be a number/],
  ['a zero limit', [0, 20, 57], 'ERR_OUT_OF_RANGE', /limitBytes must be an integer from 1 to 9007199254740991/],
  ['a fractional limit', [1.5, 20, 57], 'ERR_OUT_OF_RANGE', /limitBytes must be an integer/],
  ['a NaN interval', [2 ** 40, NaN, 57], 'ERR_OUT_OF_RANGE', /intervalMs must be an integer from 1 to 60000/],
  ['a zero interval', [2 ** 40, 0, 57], 'ERR_OUT_OF_RANGE', /intervalMs/],
  ['exit code 0', [2 ** 40, 20, 0], 'ERR_OUT_OF_RANGE', /exitCode must be an integer from 1 to 255/],
  ['exit code 256', [2 ** 40, 20, 256], 'ERR_OUT_OF_RANGE', /exitCode/],
];
for (const [label, args, code, message] of invalidStarts) {
  // Validation throws before anything starts, so these run in the test process itself.
  test(`start() refuses ${label} with ${code}`, (t) => {
    const start = loadWatchdog().start as (...args: unknown[]) => void;
    const error = t.throws(() => start(...args));
    t.is((error as NodeJS.ErrnoException | undefined)?.code, code);
    t.regex(error?.message ?? '', message);
  });
}

test('loadWatchdog() without a build says how to build it', async (t) => {
  // A copy of the compiled module in a package root that has no build/ directory.
  const root = mkdtempSync(join(tmpdir(), 'strata-native-paths-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, 'dist/src/native'), { recursive: true });
  copyFileSync(fileURLToPath(nativePaths), join(root, 'dist/src/native/native-paths.js'));
  copyFileSync(fileURLToPath(new URL('../src/native/native-artifact.js', import.meta.url)), join(root, 'dist/src/native/native-artifact.js'));
  const copy = (await import(pathToFileURL(join(root, 'dist/src/native/native-paths.js')).href)) as { loadWatchdog(): unknown };
  const error = t.throws(() => copy.loadWatchdog());
  t.regex(error?.message ?? '', /build\/Release\/strata_watchdog\.node is missing: run `npm ci` \(or `npm rebuild @strata\/runtime`\)/);
});

// Regression test (fixed; it was a bug in native/memory-watchdog.c set_cpu_soft_limit): the CPU
// used so far was taken as the whole seconds of user time plus the whole seconds of system time
// plus one, so a worker whose two fractions add up to more than a second got a cap up to almost
// two seconds short of `seconds` (with requestTimeout 500 ms, a cap of 1 s of CPU could fire at
// once). The child runs until both fractions are past half a second, then sets a 1 s cap and
// reports it: at least a second of CPU must be left, and less than three (seconds + 2: the
// margin that lets later calls skip their syscalls, tested below).
test('setCpuSoftLimit(seconds) leaves at least `seconds` of CPU, however the time used splits into user and system', async (t) => {
  const exit = await runWithWatchdog(`
    import { openSync, readSync, readFileSync } from 'node:fs';
    const fraction = (us) => (us % 1e6) / 1e6;
    const late = (us) => fraction(us) >= 0.55 && fraction(us) < 0.9;
    const zero = openSync('/dev/zero', 'r');
    const buffer = Buffer.alloc(1 << 20);
    for (;;) {
      const { user, system } = process.cpuUsage();
      if (late(user) && late(system)) break;
      if (user + system > 30e6) { console.log(JSON.stringify({ gaveUp: { user, system } })); process.exit(0); }
      if (!late(system)) readSync(zero, buffer, 0, buffer.length, null); // kernel time
      else for (let i = 0; i < 1e5; i++); // user time
    }
    const before = process.cpuUsage();
    watchdog.setCpuSoftLimit(1);
    const after = process.cpuUsage();
    const soft = Number(/^Max cpu time\\s+(\\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))[1]);
    console.log(JSON.stringify({ before, after, soft }));
  `);
  t.is(exit.status, 0, exit.stderr);
  const report = JSON.parse(exit.stdout) as { gaveUp?: unknown; before: NodeJS.CpuUsage; after: NodeJS.CpuUsage; soft: number };
  t.is(report.gaveUp, undefined, 'the child could not bring both fractions past half a second');
  const usedBefore = (report.before.user + report.before.system) / 1e6;
  const usedAfter = (report.after.user + report.after.system) / 1e6;
  t.true(Math.floor(report.before.user / 1e6) + Math.floor(report.before.system / 1e6) + 1 < usedBefore, 'the case the old rounding got wrong');
  t.true(report.soft - usedAfter >= 0.99, `soft limit ${report.soft} s with ${usedAfter} s used: less than a second left`);
  t.true(report.soft - usedBefore < 3, `soft limit ${report.soft} s with ${usedBefore} s used: more than seconds + 2`);
});

// setCpuSoftLimit sets the limit again only once the process may have used a second of CPU since
// (the wall time since, times the CPUs): a command in between finds at least `seconds` left all
// the same. The child burns 3.5 s of CPU in short slices, each followed by a call, as a worker's
// commands are: after every call at least a second must be left, never more than three, and the
// limit must have moved on with the CPU used (a margin kept from the first call would run out).
test('setCpuSoftLimit(seconds), called before each of many short commands, always leaves between `seconds` and `seconds` + 2 of CPU', async (t) => {
  const exit = await runWithWatchdog(`
    import { readFileSync } from 'node:fs';
    const used = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };
    const soft = () => Number(/^Max cpu time\\s+(\\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))[1]);
    let least = Infinity, most = -Infinity, calls = 0;
    const limits = new Set();
    while (used() < 3.5) {
      for (let i = 0; i < 2e5; i++);
      const before = used();
      watchdog.setCpuSoftLimit(1);
      const after = used();
      const limit = soft();
      limits.add(limit);
      least = Math.min(least, limit - after);
      most = Math.max(most, limit - before);
      calls++;
    }
    console.log(JSON.stringify({ least, most, calls, limits: limits.size }));
  `);
  t.is(exit.status, 0, exit.stderr);
  const { least, most, calls, limits } = JSON.parse(exit.stdout) as { least: number; most: number; calls: number; limits: number };
  t.true(calls > 100, `only ${calls} calls`);
  t.true(least >= 0.99, `a call left ${least} s of CPU: less than a second`);
  t.true(most < 3, `a call left ${most} s of CPU: more than seconds + 2`);
  t.true(limits >= 3, `the limit took ${limits} values while 3.5 s of CPU were used: it did not follow`);
});

/**
 * Runs `script` in a child node with `watchdog` loaded and its stdin a pipe. Each line the child
 * prints is handed to `onLine` with its index, which may answer by writing to its stdin (or ending it).
 */
function converse(script: string, onLine: (line: string, stdin: NodeJS.WritableStream, index: number) => void): Promise<Exit & { lines: string[] }> {
  const source = `import { loadWatchdog } from ${JSON.stringify(nativePaths)};\nconst watchdog = loadWatchdog();\n${script}`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', source], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let partial = '';
    const lines: string[] = [];
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      partial += chunk;
      let end: number;
      while ((end = partial.indexOf('\n')) >= 0) {
        const line = partial.slice(0, end);
        partial = partial.slice(end + 1);
        onLine(line, child.stdin, lines.push(line) - 1);
      }
    });
    child.on('error', reject);
    const guard = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('close', (status, signal) => {
      clearTimeout(guard);
      child.stdin.destroy();
      resolve({ status, signal, stdout, stderr, lines });
    });
  });
}

test('readInput() reads what came after its spin or in its sleep, says how long it waited, is 0 at the end, and checks its arguments', async (t) => {
  const exit = await converse(
    `
    const buffer = Buffer.alloc(64);
    const waited = new Float64Array(1);
    const errors = [];
    for (const args of [[0, 'x', 0, false, waited], [0, buffer, -1, false, waited], [0, buffer, 2_000_000, false, waited], [-1, buffer, 0, false, waited],
                        [0, buffer, 0, 'yes', waited], [0, buffer, 0, false, new Float64Array(0)], [0, buffer, 0, false, new Uint32Array(1)]]) {
      try { watchdog.readInput(...args); errors.push('accepted'); } catch (e) { errors.push(e.code); }
    }
    let bad;
    try { watchdog.readInput(999, buffer, 0, false, waited); } catch (e) { bad = [e.code, e.message]; }
    console.log(JSON.stringify({ errors, bad }));
    // found by the spin: the parent writes as soon as it reads the line above
    const spun = watchdog.readInput(0, buffer, 1_000_000, false, waited);
    console.log(JSON.stringify({ n: spun, text: buffer.toString('utf8', 0, spun), waited: waited[0] }));
    // a spin that finds nothing gives up after its 20 ms, and the read sleeps; the parent writes 200 ms after this line
    const slept = watchdog.readInput(0, buffer, 20_000, true, waited);
    console.log(JSON.stringify({ n: slept, text: buffer.toString('utf8', 0, slept), waited: waited[0] }));
    // the parent ends the pipe
    const end = watchdog.readInput(0, buffer, 100, false, waited);
    console.log(JSON.stringify({ n: end }));`,
    (_line, stdin, index) => {
      if (index === 0) stdin.write('spun');
      if (index === 1) setTimeout(() => stdin.write('slept!'), 200);
      if (index === 2) stdin.end();
    },
  );
  t.is(exit.status, 0, exit.stderr);
  const [checks, spun, slept, end] = exit.lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  t.deepEqual(checks!.errors, [
    'ERR_INVALID_ARG_TYPE',
    'ERR_OUT_OF_RANGE',
    'ERR_OUT_OF_RANGE',
    'ERR_OUT_OF_RANGE',
    'ERR_INVALID_ARG_TYPE',
    'ERR_INVALID_ARG_TYPE',
    'ERR_INVALID_ARG_TYPE',
  ]);
  t.is((checks!.bad as string[])[0], 'ERR_STRATA_CHANNEL');
  t.regex((checks!.bad as string[])[1]!, /read on fd 999: Bad file descriptor/);
  t.like(spun, { n: 4, text: 'spun' });
  t.like(slept, { n: 6, text: 'slept!' });
  t.true((slept!.waited as number) >= 150_000, `a read that slept 200 ms says it waited ${slept!.waited as number} µs`);
  t.true((spun!.waited as number) > 0 && (spun!.waited as number) < 1_000_000, `waited ${spun!.waited as number} µs`);
  t.deepEqual(end, { n: 0 });
});

test('readInput() with idle: the watchdog thread sleeps while the read does, and watches again at once after it', async (t) => {
  const exit = await converse(
    `
    import { readFileSync, readdirSync } from 'node:fs';
    const tasks = () => new Set(readdirSync('/proc/self/task'));
    const before = tasks();
    watchdog.start(watchdog.rss() + ${50 * MiB}, 1, 57);
    const [thread] = [...tasks()].filter((tid) => !before.has(tid));
    const cpu = () => Number(readFileSync('/proc/self/task/' + thread + '/schedstat', 'latin1').split(' ')[0]) / 1e6;
    const buffer = Buffer.alloc(8);
    const waited = new Float64Array(1);
    const spans = {};
    for (const idle of [true, false]) {
      console.log('reading, idle ' + idle);
      const at = cpu();
      watchdog.readInput(0, buffer, 0, idle, waited);
      spans[idle ? 'idle' : 'busy'] = { cpuMs: cpu() - at, waitedMs: waited[0] / 1000 };
    }
    console.log(JSON.stringify(spans));
    // after an idle read the watch is back: memory past the limit ends the process
    const idleAgain = watchdog.readInput(0, buffer, 0, true, waited);
    const kept = Buffer.alloc(${200 * MiB});
    kept.fill(idleAgain);
    // the timer keeps the buffer alive: unreferenced, a collection could free it before the next poll
    setTimeout(() => console.log('survived with', kept.length, 'bytes'), 30_000);`,
    (line, stdin) => {
      if (line.startsWith('reading')) setTimeout(() => stdin.write('x'), 400);
      if (line.startsWith('{')) setTimeout(() => stdin.write('y'), 100);
    },
  );
  t.is(exit.status, 57, exit.stderr);
  t.regex(exit.stderr, /strata-watchdog: resident memory/);
  const spans = JSON.parse(exit.lines.find((line) => line.startsWith('{'))!) as Record<'idle' | 'busy', { cpuMs: number; waitedMs: number }>;
  t.true(spans.idle.waitedMs >= 300 && spans.busy.waitedMs >= 300, JSON.stringify(spans));
  // idle, the thread is on a CPU only at the two switches (a poll it was in, the wake-up after)
  t.true(spans.idle.cpuMs < 1, `the watchdog thread used ${spans.idle.cpuMs} ms of CPU while the read slept idle 400 ms`);
  t.true(spans.busy.cpuMs > 10 * spans.idle.cpuMs, `it polled ${spans.busy.cpuMs} ms while a read that is not idle slept, against ${spans.idle.cpuMs} idle`);
});

test('writeAll() writes every byte, past what a pipe holds at once, and names the errno when a write fails', async (t) => {
  const exit = await runWithWatchdog(`
    import { openSync } from 'node:fs';
    const bytes = Buffer.alloc(${4 * MiB});
    for (let i = 0; i < bytes.length; i++) bytes[i] = 32 + (i % 95);
    watchdog.writeAll(1, bytes);
    const errors = [];
    try { watchdog.writeAll(openSync('/dev/null', 'r'), Buffer.from('x')); } catch (e) { errors.push(e.code, e.message); }
    try { watchdog.writeAll(2, 'text'); } catch (e) { errors.push(e.code); }
    process.stderr.write(JSON.stringify(errors));`);
  t.is(exit.status, 0, exit.stderr);
  t.is(exit.stdout.length, 4 * MiB);
  let wrong = -1;
  for (let i = 0; i < exit.stdout.length && wrong < 0; i++) if (exit.stdout.charCodeAt(i) !== 32 + (i % 95)) wrong = i;
  t.is(wrong, -1, `byte ${wrong} differs`);
  const [code, message, typeCode] = JSON.parse(exit.stderr) as string[];
  t.is(code, 'ERR_STRATA_CHANNEL');
  t.regex(message!, /write on fd \d+: Bad file descriptor/);
  t.is(typeCode, 'ERR_INVALID_ARG_TYPE');
});

test('streamInput() delivers every chunk of a pipe in order on the main thread, then undefined once, keeps the event loop alive meanwhile, and holds up no exit', async (t) => {
  // stdin is a pipe the test writes in three pieces, then closes: the child collects what it gets.
  const exit = await new Promise<Exit>((resolve, reject) => {
    const source = `import { loadWatchdog } from ${JSON.stringify(nativePaths)};
      const chunks = [];
      let ends = 0;
      loadWatchdog().streamInput(0, (chunk) => {
        if (chunk === undefined) { ends++; setTimeout(() => console.log(JSON.stringify({ text: chunks.join(''), ends })), 50); return; }
        if (!Buffer.isBuffer(chunk)) throw new Error('not a Buffer');
        chunks.push(chunk.toString('utf8'));
        process.stdout.write('got\\n');
      });`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', source], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const pieces = ['first ', 'second ', 'third'];
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      // the next piece once the child has the last one, so each is its own read
      const got = stdout.split('got\n').length - 1;
      if (got < pieces.length) child.stdin.write(pieces[got]);
      else if (!child.stdin.writableEnded) child.stdin.end();
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (status, signal) => resolve({ status, signal, stdout, stderr }));
    child.stdin.write(pieces[0]);
  });
  t.is(exit.status, 0, exit.stderr);
  t.deepEqual(JSON.parse(exit.stdout.split('\n').at(-2)!), { text: 'first second third', ends: 1 });

  // A pipe nobody writes to or closes: the process still ends at process.exit.
  const blocked = await new Promise<{ status: number | null }>((resolve) => {
    const source = `import { loadWatchdog } from ${JSON.stringify(nativePaths)};
      loadWatchdog().streamInput(0, () => {});
      setTimeout(() => process.exit(3), 100);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', source], { stdio: ['pipe', 'ignore', 'inherit'] });
    const guard = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('close', (status) => {
      clearTimeout(guard);
      child.stdin.destroy();
      resolve({ status });
    });
  });
  t.is(blocked.status, 3, 'process.exit ended the process although it still watched a pipe');
});

test('streamInput() refuses what is not a descriptor and a function, and a descriptor that is not open', (t) => {
  const watchdog = loadWatchdog();
  t.throws(() => watchdog.streamInput(-1, () => {}), { code: 'ERR_OUT_OF_RANGE' });
  t.throws(() => watchdog.streamInput(0, 'no' as never), { code: 'ERR_INVALID_ARG_TYPE' });
  t.throws(() => watchdog.streamInput(1_000_000, () => {}), { code: 'ERR_STRATA_READER', message: /fd 1000000: Bad file descriptor/ });
});

test('streamInput(): an exception its callback throws is uncaught, and ends the process', async (t) => {
  const exit = await runWithWatchdog(
    `watchdog.streamInput(0, (chunk) => { if (chunk !== undefined) throw new Error('bad chunk ' + chunk.toString()); });`,
    'xyz',
  );
  t.is(exit.status, 1, exit.stderr);
  t.regex(exit.stderr, /Error: bad chunk xyz/);
});

test('tcpConnect() tells connected, refused and bad arguments apart', async (t) => {
  const { createServer } = await import('node:net');
  const watchdog = loadWatchdog();
  const server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  t.is(watchdog.tcpConnect('127.0.0.1', port, 5_000), 0, 'a listening port: connected');
  await new Promise<void>((resolve) => server.close(() => resolve()));
  // the port just closed: nothing listens there now
  const refused = watchdog.tcpConnect('127.0.0.1', port, 5_000);
  t.is(refused, 111, 'ECONNREFUSED is errno 111 on Linux');
  t.throws(() => watchdog.tcpConnect('localhost', 9, 100), { code: 'ERR_INVALID_ARG_VALUE' });
  t.throws(() => watchdog.tcpConnect('999.0.0.1', 9, 100), { code: 'ERR_INVALID_ARG_VALUE' });
  t.throws(() => watchdog.tcpConnect('127.0.0.1', 0, 100), { code: 'ERR_OUT_OF_RANGE' });
  t.throws(() => watchdog.tcpConnect('127.0.0.1', 9, 0), { code: 'ERR_OUT_OF_RANGE' });
  t.throws(() => watchdog.tcpConnect(1 as never, 9, 100), { code: 'ERR_INVALID_ARG_TYPE' });
});

test("the layers' tryConnect() answers the same through the addon and through node:net", async (t) => {
  const { tryConnect } = await import('../src/layers/attempts.js');
  const { createServer } = await import('node:net');
  const server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  // an IPv4 address goes through the addon; a host name through node:net
  t.is(await tryConnect({ host: '127.0.0.1', port }), 'connected');
  t.is(await tryConnect({ host: 'localhost', port }), 'connected');
  await new Promise<void>((resolve) => server.close(() => resolve()));
  t.is(await tryConnect({ host: '127.0.0.1', port }), 'ECONNREFUSED');
  t.is(await tryConnect({ host: 'localhost', port }), 'ECONNREFUSED');
  // what the addon does not take (not an address, port 0) is node:net's to answer, never a throw
  t.is(typeof (await tryConnect({ host: '999.0.0.1', port: 9 }, 1_000)), 'string');
  t.is(typeof (await tryConnect({ host: '127.0.0.1', port: 0 }, 1_000)), 'string');
});

test('fingerprint() is FNV-1a 64 over the bytes, as 16 hex digits, and takes only a Uint8Array', (t) => {
  const watchdog = loadWatchdog();
  // the reference vectors of the FNV specification
  t.is(watchdog.fingerprint(new Uint8Array(0)), 'cbf29ce484222325');
  t.is(watchdog.fingerprint(Buffer.from('a')), 'af63dc4c8601ec8c');
  t.is(watchdog.fingerprint(Buffer.from('foobar')), '85944171f73967e8');
  // a view sees its own bytes only
  t.is(watchdog.fingerprint(Buffer.from('xfoobarx').subarray(1, 7)), '85944171f73967e8');
  for (const bad of ['foobar', new Uint16Array(2), new ArrayBuffer(2), undefined, 1]) {
    t.throws(() => watchdog.fingerprint(bad as never), { instanceOf: TypeError, code: 'ERR_INVALID_ARG_TYPE' });
  }
});
