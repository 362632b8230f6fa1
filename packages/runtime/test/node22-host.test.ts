// A parent on Node 22 (still in long-term support) runs IsolatedRuntime and SandboxPool with their
// workers on a Node 24, and the full OS sandbox; the in-process Runtime, whose engine has native
// code for Node 24 only, refuses with ERR_STRATA_NODE_VERSION. The Node 22 is the npm build of
// Node in hosts/node22 (installed by `npm test`, outside the workspaces so that it does not
// replace the repository's Node 24); each case is a real Node 22 process importing the package.
import { spawnSync } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { platformTest } from '../src/testing/platform.js';

const PACKAGE_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const HOST = fileURLToPath(new URL(`../../../../hosts/node22/node_modules/node-${process.platform}-${process.arch}/bin/node`, import.meta.url));
const NODE22 = existsSync(HOST) ? HOST : undefined;
const linux = process.platform === 'linux' && (process.arch === 'x64' || process.arch === 'arm64');
const skipped =
  NODE22 === undefined
    ? `no Node 22 in hosts/node22 (\`npm ci --prefix hosts/node22\`; npm test installs it, on linux-x64 and linux-arm64)`
    : !linux
      ? `the sandbox cases need Linux`
      : undefined;
const maybe = platformTest(test.serial, { feature: NODE22 === undefined ? 'node22-host' : 'linux', available: skipped === undefined, reason: skipped ?? '' });

/** Runs `body` (an ES module's text) in Node 22 from this package, and returns the JSON it printed last. */
function onNode22(body: string, args: readonly string[] = []): { out: any; stderr: string; status: number | null } {
  const ran = spawnSync(NODE22!, ['--input-type=module', '-e', body, ...args], { cwd: PACKAGE_ROOT, encoding: 'utf8', timeout: 120_000 });
  const last = ran.stdout.trim().split('\n').at(-1) ?? '';
  let out: unknown;
  try {
    out = JSON.parse(last);
  } catch {
    out = { unparsed: ran.stdout };
  }
  return { out, stderr: ran.stderr, status: ran.status };
}

maybe('Node 22 imports every entry; the in-process Runtime and the default runtime refuse with ERR_STRATA_NODE_VERSION, naming what works', (t) => {
  const { out, stderr } = onNode22(`
    const main = await import('@strata/runtime');
    await import('@strata/runtime/layers');
    await import('@strata/runtime/testing');
    const failed = async (run) => { try { await run(); return 'started'; } catch (e) { return { code: e.code, name: e.name, message: e.message }; } };
    console.log(JSON.stringify({
      version: process.version,
      runtime: await failed(() => main.Runtime.start()),
      defaultEval: await failed(() => main.eval('1 + 1')),
    }));
  `);
  t.regex(out.version, /^v22\./, stderr);
  for (const refusal of [out.runtime, out.defaultEval]) {
    t.is(refusal.code, 'ERR_STRATA_NODE_VERSION', JSON.stringify(out));
    t.is(refusal.name, 'UnsupportedNode');
    t.regex(refusal.message, /the in-process Runtime needs Node\.js 24 or later; this is v22\./);
    t.regex(refusal.message, /use IsolatedRuntime or SandboxPool/);
  }
  t.notRegex(stderr, /No native build was found/);
});

maybe("Node 22 parent: IsolatedRuntime with sandbox 'require' runs its worker on the Node 24 package, with landlock+seccomp and the empty root", (t) => {
  const { out, stderr } = onNode22(`
    import { IsolatedRuntime } from '@strata/runtime';
    import { readFileSync } from 'node:fs';
    const rt = await IsolatedRuntime.start({ sandbox: 'require', prewarm: false });
    try {
      rt.bindFunction('hostVersion', () => process.version);
      console.log(JSON.stringify({
        sandbox: rt.sandbox, extras: rt.sandboxExtras, workerNode: rt.report.base.workerNode,
        argv: readFileSync('/proc/' + rt.pid + '/cmdline', 'utf8').split('\\0'),
        layers: rt.report.layers.map((l) => [l.name, l.enforcement]),
        result: await rt.eval('[6 * 7, typeof process, hostVersion()]'),
        read: await rt.eval('typeof require'),
      }));
    } finally { await rt.close(); }
  `);
  t.is(out.sandbox, 'landlock+seccomp', stderr || JSON.stringify(out));
  t.deepEqual(out.extras, ['emptyroot']);
  t.deepEqual(out.layers, [
    ['emptyroot', 'full'],
    ['landlock', 'full'],
    ['seccomp', 'full'],
  ]);
  t.deepEqual(out.result.slice(0, 2), [42, 'undefined']);
  t.regex(out.result[2], /^v22\./, 'the host function ran in the Node 22 parent');
  t.is(out.read, 'undefined');
  const expected = realpathSync(fileURLToPath(new URL(`../../../../node_modules/node-${process.platform}-${process.arch}/bin/node`, import.meta.url)));
  t.is(realpathSync(out.workerNode), expected, 'the worker runs the Node 24 package installed beside @strata/runtime');
  const version = spawnSync(out.workerNode, ['--version'], { encoding: 'utf8' }).stdout.trim();
  t.regex(version, /^v(2[4-9]|[3-9]\d)\./);
  // another Node than the parent's: the parent names no engine addon, and the worker resolves isolated-vm itself
  t.true(
    out.argv.some((arg: string) => arg.endsWith('worker-entry.cjs')),
    JSON.stringify(out.argv),
  );
  t.false(out.argv.includes('--engine-addon'));
});

maybe('Node 22 parent: a SandboxPool hands out sandboxed runtimes, and the CLI doctor reports the sandbox in force', (t) => {
  const { out, stderr } = onNode22(`
    import { SandboxPool } from '@strata/runtime';
    const pool = await SandboxPool.start({ sandbox: 'require', size: 1 });
    try {
      const a = await pool.checkout();
      const first = await a.eval('globalThis.x = 1; x');
      const sandbox = a.sandbox;
      await a.close();
      const b = await pool.checkout();
      const second = await b.eval('typeof globalThis.x');
      await b.close();
      console.log(JSON.stringify({ first, second, sandbox }));
    } finally { await pool.close(); }
  `);
  t.deepEqual(out, { first: 1, second: 'undefined', sandbox: 'landlock+seccomp' }, stderr);
  const doctor = spawnSync(NODE22!, [`${PACKAGE_ROOT}/dist/src/cli/strata.js`, 'doctor', '--json'], { encoding: 'utf8', timeout: 120_000 });
  const report = JSON.parse(doctor.stdout) as { sandbox: string; node: { version: string } };
  t.is(report.sandbox, 'landlock+seccomp', doctor.stderr);
  t.regex(report.node.version, /^v22\./);
});

maybe('Node 22 parent: workerNode must be an absolute path to a Node 24 or later, or the start is refused before any worker exists', (t) => {
  const { out } = onNode22(
    `
    import { IsolatedRuntime } from '@strata/runtime';
    const tries = { older: process.execPath, relative: 'bin/node', notNode: '/bin/true', missing: '/nonexistent/node', number: 24 };
    const out = {};
    for (const [name, workerNode] of Object.entries(tries)) {
      try { await (await IsolatedRuntime.start({ workerNode, prewarm: false })).close(); out[name] = 'started'; }
      catch (e) { out[name] = { code: e.code, message: e.message }; }
    }
    console.log(JSON.stringify(out));
  `,
  );
  t.is(out.older.code, 'ERR_STRATA_NODE_VERSION');
  t.regex(out.older.message, /workerNode .* is Node\.js v22\.\d+\.\d+; the worker runs the engine, which needs Node\.js 24 or later/);
  for (const name of ['relative', 'number']) {
    t.is(out[name].code, 'ERR_STRATA_INVALID_OPTION', name);
    t.regex(out[name].message, /workerNode must be the absolute path of a Node\.js 24 executable/, name);
  }
  for (const name of ['notNode', 'missing']) {
    t.is(out[name].code, 'ERR_STRATA_INVALID_OPTION', name);
    t.regex(out[name].message, /does not run as Node\.js/, name);
  }
});
