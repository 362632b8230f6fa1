import test from 'ava';
import { WEB_POLYFILLS } from '@strata/polyfills';
import { IsolatedRuntime, InvalidOption, JsError, ModuleNotFound, SandboxUnavailable, StrataError, ValueNotTransferable } from '../src/index.js';
import { checkNoLeaks } from './helpers/leaks.js';

checkNoLeaks(test);

test("the seed's example: lookup('A1') * 2 is 7, in a worker process", async (t) => {
  await using rt = await IsolatedRuntime.start({ timeout: 2_000 });
  rt.bindFunction('lookup', (sku: string) => ({ A1: 3.5 })[sku]);
  t.is(await rt.eval("lookup('A1') * 2"), 7);
  t.not(rt.pid, process.pid);
  t.true(rt.pid > 0);
  // The default layers on this Linux: emptyroot, landlock and seccomp (all installed in the monorepo).
  t.is(rt.sandbox, 'landlock+seccomp');
  t.deepEqual(rt.sandboxExtras, ['emptyroot']);
  t.is(rt.report.verified?.seccomp, 2);
  t.deepEqual([...(rt.report.verified?.ownNamespaces ?? [])].sort(), ['ipc', 'mnt', 'net', 'user']);
});

test('the report is frozen, JSON-serialisable and names the base hardening', async (t) => {
  await using rt = await IsolatedRuntime.start({ strictEval: true });
  const report = rt.report;
  t.true(Object.isFrozen(report));
  t.deepEqual(JSON.parse(JSON.stringify(report)), report);
  t.true(report.base.jitless);
  t.true(report.base.strictEval);
  t.true(report.base.flags.includes('--jitless'));
});

test('the worker runs as nobody with an empty environment when started as root', async (t) => {
  const { readFileSync } = await import('node:fs');
  if (process.getuid?.() !== 0) {
    // Not root: nothing to drop; the worker keeps this user's identity, with no new privileges.
    await using rt = await IsolatedRuntime.start({ allowGlobals: [] });
    const status = readFileSync(`/proc/${rt.pid}/status`, 'latin1');
    t.regex(status, new RegExp(`Uid:\\s+${process.getuid?.()}\\s`));
    t.regex(status, /NoNewPrivs:\s+1/);
    return;
  }
  await using rt = await IsolatedRuntime.start({ allowGlobals: [] });
  const status = readFileSync(`/proc/${rt.pid}/status`, 'latin1');
  t.regex(status, /Uid:\s+65534\s+65534\s+65534\s+65534/);
  t.regex(status, /Gid:\s+65534\s+65534\s+65534\s+65534/);
  t.regex(status, /Groups:\s*\n/);
  t.regex(status, /NoNewPrivs:\s+1/);
  t.regex(status, /CapEff:\s+0+\n/);
});

test('values of every kind cross both ways', async (t) => {
  await using rt = await IsolatedRuntime.start();
  rt.bindFunction('echo', (...args: unknown[]) => args);
  const value = [1, 's', 2n, null, undefined, true, [1, [2]], { a: { b: 1 } }, new Map([[1, 'x']]), new Set([1]), new Date(5), new Uint8Array([1, 2])];
  t.deepEqual(
    await rt.eval('echo(1, "s", 2n, null, undefined, true, [1, [2]], { a: { b: 1 } }, new Map([[1, "x"]]), new Set([1]), new Date(5), new Uint8Array([1, 2]))'),
    value,
  );
  await t.throwsAsync(rt.eval('class A {}; new A()'), { instanceOf: ValueNotTransferable });
});

test('guest exceptions are JsErrors and the runtime stays usable', async (t) => {
  await using rt = await IsolatedRuntime.start();
  const error = await t.throwsAsync(rt.eval('null.x'), { instanceOf: JsError });
  t.is(error?.guestName, 'TypeError');
  t.is(await rt.eval('1 + 1'), 2);
});

test('async host functions run concurrently; sync ones block the guest', async (t) => {
  await using rt = await IsolatedRuntime.start();
  let running = 0;
  let peak = 0;
  let openGate: () => void = () => {};
  const gate = new Promise<void>((resolve) => (openGate = resolve));
  rt.bindFunction('slow', async (x: number) => {
    running++;
    peak = Math.max(peak, running);
    // Held until all three are in flight at once (or 5 s pass, and the peak assertion fails).
    if (running === 3) openGate();
    await Promise.race([gate, new Promise((resolve) => setTimeout(resolve, 5_000))]);
    running--;
    return x * 2;
  });
  rt.bindFunction('now', () => 'sync');
  t.deepEqual(await rt.eval('Promise.all([slow(1), slow(2), slow(3)]).then((r) => [...r, now()])'), [2, 4, 6, 'sync']);
  t.is(peak, 3);
});

test('host errors are redacted by default', async (t) => {
  await using rt = await IsolatedRuntime.start();
  rt.bindFunction('boom', () => {
    throw new TypeError('secret');
  });
  rt.bindFunction('boomAsync', async () => {
    throw new RangeError('secret');
  });
  t.deepEqual(await rt.eval('try { boom() } catch (e) { [e.name, e.message] }'), ['TypeError', 'host function failed']);
  t.deepEqual(await rt.eval('boomAsync().catch((e) => [e.name, e.message])'), ['RangeError', 'host function failed']);
});

test('bindObject, revoke and rebinding work across the process boundary', async (t) => {
  await using rt = await IsolatedRuntime.start();
  rt.bindObject('tools', { n: 2, add: (a: number, b: number) => a + b });
  t.is(await rt.eval('globalThis.kept = tools.add; tools.add(tools.n, 3)'), 5);
  rt.revoke('tools');
  t.is(await rt.eval('typeof tools'), 'undefined');
  t.regex((await rt.eval('try { kept(1, 2) } catch (e) { e.message }')) as string, /revoked/);
});

test('modules are answered by the parent; unregistered ones are refused', async (t) => {
  await using rt = await IsolatedRuntime.start();
  rt.addModule('math', 'export const twice = (x) => 2 * x;');
  rt.setModuleLoader((specifier) => (specifier === 'virtual:n' ? 'export default 21;' : undefined));
  t.deepEqual(await rt.evalModule('import { twice } from "math"; import n from "virtual:n"; export const v = twice(n);'), { v: 42 });
  await t.throwsAsync(rt.evalModule('import fs from "node:fs"; export default 1;'), { instanceOf: ModuleNotFound });
});

test('console output and execute work as in Runtime', async (t) => {
  await using rt = await IsolatedRuntime.start({ maxOutputBytes: 50 });
  const lines: string[] = [];
  rt.onConsole((entry) => lines.push(`${entry.stream}:${entry.text}`));
  const result = await rt.execute('console.log("hi"); console.error("bad"); for (let i = 0; i < 100; i++) console.log("flood " + i); 42');
  t.is(result.status, 'ok');
  t.is(result.result, 42);
  t.true(result.truncated);
  t.regex(result.stdout, /^hi\n/);
  t.is(result.stderr, 'bad\n');
  t.deepEqual(lines.slice(0, 2), ['stdout:hi', 'stderr:bad']);
  const failed = await rt.execute('throw new RangeError("r")');
  t.is(failed.errorType, 'RangeError');
});

test('WEB_POLYFILLS timers run on virtual time in the worker', async (t) => {
  await using rt = await IsolatedRuntime.start({ bootstrap: WEB_POLYFILLS });
  t.is(await rt.eval('new Promise((resolve) => setTimeout(() => resolve("later"), 60_000))'), 'later');
});

test('strictEval reaches the worker', async (t) => {
  await using rt = await IsolatedRuntime.start({ strictEval: true });
  t.is(await rt.eval('try { new Function("return 1")() } catch (e) { e.name }'), 'EvalError');
});

test('a host function cannot call back into its own runtime', async (t) => {
  await using rt = await IsolatedRuntime.start({ redactHostErrors: false });
  rt.bindFunction('reenter', async () => rt.eval('1'));
  t.regex((await rt.eval('reenter().catch((e) => e.message)')) as string, /cannot call back into its own runtime/);
});

test("sandbox: 'require' with the defaults starts on this Linux, every default layer fully in force and self-tested", async (t) => {
  await using rt = await IsolatedRuntime.start({ sandbox: 'require' });
  t.deepEqual(
    rt.report.layers.map((l) => [l.name, l.enforcement, l.selfTest]),
    [
      ['emptyroot', 'full', 'passed'],
      ['landlock', 'full', 'passed'],
      ['seccomp', 'full', 'passed'],
    ],
  );
  t.is(rt.sandbox, 'landlock+seccomp');
  t.deepEqual(rt.sandboxExtras, ['emptyroot']);
  t.true(rt.report.verified?.noCapabilities);
  t.true(rt.report.verified?.noNewPrivs);
  t.is(await rt.eval('6 * 7'), 42);
});

test("sandbox: 'require' refuses a layer the platform cannot provide, saying why and what to do", async (t) => {
  const seatbelt = { module: '@strata/layer-seatbelt/layer' };
  const error = await t.throwsAsync(IsolatedRuntime.start({ sandbox: 'require', layers: [seatbelt] }), { instanceOf: SandboxUnavailable });
  t.is(error?.code, 'ERR_STRATA_SANDBOX_UNAVAILABLE');
  t.regex(error?.message ?? '', /seatbelt/);
  t.regex(error?.message ?? '', /sandbox: 'auto'/);
});

test('bad options are refused before any worker starts', async (t) => {
  await t.throwsAsync(IsolatedRuntime.start({ maxMemory: -1 }), { instanceOf: InvalidOption });
  await t.throwsAsync(IsolatedRuntime.start({ sandbox: 'maybe' as never }), { instanceOf: InvalidOption });
  await t.throwsAsync(IsolatedRuntime.start({ requestTimeout: 0 }), { instanceOf: InvalidOption });
  await t.throwsAsync(IsolatedRuntime.start({ timeout: 'soon' as never }), { instanceOf: InvalidOption });
});

test('a closed runtime is never reused', async (t) => {
  const rt = await IsolatedRuntime.start();
  await rt.close();
  await rt.close();
  t.true(rt.closed);
  await t.throwsAsync(rt.eval('1'), { instanceOf: StrataError, code: 'ERR_STRATA_CLOSED' } as never);
});

test('prewarm: false starts a fresh worker; the default hands over a spare', async (t) => {
  await using a = await IsolatedRuntime.start({ prewarm: false });
  await using b = await IsolatedRuntime.start();
  await using c = await IsolatedRuntime.start();
  t.not(a.pid, b.pid);
  t.not(b.pid, c.pid);
  t.is(await c.eval('1'), 1);
});

test('workers, the prewarmed spare included, die with their parent', async (t) => {
  const { spawn } = await import('node:child_process');
  const { existsSync } = await import('node:fs');
  const index = new URL('../src/index.js', import.meta.url).href;
  const script = `
    const { IsolatedRuntime } = await import(${JSON.stringify(index)});
    const rt = await IsolatedRuntime.start();
    // Another plan, so this one does not take the spare the first start left behind.
    const other = await IsolatedRuntime.start({ prewarm: false, jitless: false });
    await new Promise((resolve) => setTimeout(resolve, 500));
    console.log(JSON.stringify([rt.pid, other.pid]));
    setInterval(() => {}, 1000);
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'ignore'] });
  const line = await new Promise<string>((resolve) => child.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString())));
  const pids = JSON.parse(line) as number[];
  // The parent's other children: the spare. Found by parent pid, from /proc.
  const { readdirSync, readFileSync } = await import('node:fs');
  const children = readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === child.pid;
      } catch {
        return false;
      }
    })
    .map(Number);
  t.true(children.length >= 3, `expected two runtimes and a spare, found ${children.join(', ')}`);
  for (const pid of pids) t.true(children.includes(pid));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
  let alive = children;
  for (let i = 0; i < 200 && alive.length > 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    alive = alive.filter((pid) => existsSync(`/proc/${pid}/status`) && !/State:\s+Z/.test(readFileSync(`/proc/${pid}/status`, 'latin1')));
  }
  t.deepEqual(alive, [], 'every worker died with its parent');
});

test('started as root, a worker entry others cannot read is refused before anything starts, saying what to do', async (t) => {
  const { unreachableByNobody } = await import('../src/isolated/reachable-by-nobody.js');
  const { mkdtempSync, writeFileSync, chmodSync, rmSync } = await import('node:fs');
  const { join } = await import('node:path');
  const { tmpdir } = await import('node:os');
  const dir = mkdtempSync(join(tmpdir(), 'strata-private-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const entry = join(dir, 'entry.js');
  writeFileSync(entry, '');
  chmodSync(dir, 0o700);
  t.regex(unreachableByNobody(entry, 0o004) ?? '', /is not searchable by others/);
  chmodSync(dir, 0o755);
  chmodSync(entry, 0o600);
  t.regex(unreachableByNobody(entry, 0o004) ?? '', /is not readable by others/);
  chmodSync(entry, 0o644);
  t.is(unreachableByNobody(entry, 0o004), undefined);
});

test('a worker that stops before it says hello (SIGSTOP in its launch chain) is killed at startTimeout; the start fails, nothing hangs', async (t) => {
  // A launch link that stops itself: the worker never reaches Node.
  const stopper = {
    module: new URL('./fixtures/layers/configurable-layer.js', import.meta.url).href,
    options: { name: 'stopper', launch: { program: '/bin/sh', args: ['-c', 'kill -STOP $$'] } },
  };
  const started = Date.now();
  // Alone: behind the default layers' links (the empty root, Landlock) /bin/sh could not run at all.
  const error = await t.throwsAsync(
    IsolatedRuntime.start({ sandbox: 'auto', replaceDefaultLayers: true, layers: [stopper], startTimeout: 1_000, prewarm: false }),
    { instanceOf: StrataError },
  );
  t.is(error?.code, 'ERR_STRATA_WORKER_CRASHED');
  t.regex(error?.message ?? '', /did not start within 1000 ms/);
  t.true(Date.now() - started < 20_000);
  await t.throwsAsync(IsolatedRuntime.start({ startTimeout: 0 }), { instanceOf: InvalidOption });
  await t.throwsAsync(IsolatedRuntime.start({ startTimeout: null as never }), { instanceOf: InvalidOption });
});
