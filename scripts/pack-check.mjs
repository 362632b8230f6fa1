// `npm run pack-check` (also the last step of `npm test`): Strata as an application meets it. It
// prebuilds the native code for this machine, packs every package, installs @strata/runtime from
// the tarballs into a fresh application whose PATH has no compiler, python or make (the other
// tarballs stand in for the registry), and runs a short program there: sandbox 'require' with no
// layer named must give landlock+seccomp with the empty root; nothing may have been compiled; a
// layer list without the OS layers must be refused. Prints the tarball and installed sizes.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const PACKAGES = [
  'wire',
  'polyfills',
  'runtime',
  'layer-clock',
  'layer-seccomp',
  'layer-landlock',
  'layer-emptyroot',
  'layer-seatbelt',
  'agent',
  'store-postgres',
];

function fail(message) {
  console.error(`pack-check: ${message}`);
  process.exit(1);
}

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { encoding: 'utf8', maxBuffer: 64 << 20, ...options });
  if (result.error) fail(`${command} ${args.join(' ')}: ${result.error.message}`);
  if (result.status !== 0) fail(`${command} ${args.join(' ')} exited ${result.status}:\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

function sizeOf(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(path).reduce((sum, name) => sum + sizeOf(join(path, name)), 0);
}

const kib = (bytes) => `${(bytes / 1024).toFixed(0)} KiB`;

if (process.platform !== 'linux') {
  console.log(`pack-check: skipped, it checks the Linux install (this is ${process.platform})`);
  process.exit(0);
}

// A world-readable place: started as root, the worker runs as uid 65534 and must reach the app.
const work = mkdtempSync(join(tmpdir(), 'strata-pack-check-'));
chmodSync(work, 0o755);
const prebuilt = PACKAGES.map((p) => join(root, 'packages', p, 'prebuilds'));
const cleanUp = () => {
  rmSync(work, { recursive: true, force: true });
  // The prebuilds were for the tarballs: left in the packages they would shadow later source builds.
  for (const dir of prebuilt) rmSync(dir, { recursive: true, force: true });
};
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => (cleanUp(), process.exit(130)));
try {
  // 1. Prebuilds for this machine's arch only: the cross-compiled arm64 set needs Debian's
  // cross compilers (`npm run prebuilds` builds both and checks them).
  console.log(`pack-check: prebuilding for linux-${process.arch}`);
  run(process.execPath, [join(root, 'scripts/prebuild.mjs'), '--arch', process.arch], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });

  // 2. Pack every package.
  const tarballs = join(work, 'tarballs');
  mkdirSync(tarballs);
  const packed = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', tarballs, ...PACKAGES.flatMap((p) => ['-w', `@strata/${p}`])], { cwd: root }));
  for (const p of packed) console.log(`pack-check: ${p.filename}: ${kib(p.size)} packed, ${kib(p.unpackedSize)} unpacked, ${p.entryCount} files`);

  // 3. A fresh application, installing from the tarballs, with no compiler on PATH: only node and npm.
  const app = join(work, 'app');
  const bin = join(work, 'bin');
  mkdirSync(app);
  mkdirSync(bin);
  symlinkSync(process.execPath, join(bin, 'node'));
  // npm runs install scripts with sh: a machine without a compiler still has a shell.
  symlinkSync('/bin/sh', join(bin, 'sh'));
  const npmCli = process.env.npm_execpath;
  if (!npmCli || !existsSync(npmCli)) fail('run this through npm (npm run pack-check): it needs npm_execpath');
  writeFileSync(join(bin, 'npm'), `#!/bin/sh\nexec "${process.execPath}" "${npmCli}" "$@"\n`, { mode: 0o755 });
  for (const tool of ['gcc', 'cc', 'g++', 'make', 'python3']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`], { env: { PATH: bin } }).status === 0) fail(`${tool} is still on the application's PATH`);
  }
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'pack-check-app', private: true, type: 'module' }, null, 2));
  // This machine's settings stay (the user's .npmrc, a proxy's CA certificates); npm's own
  // lifecycle variables and every tool but node and npm go.
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^(npm_|INIT_CWD$)/i.test(key)));
  Object.assign(env, { PATH: bin, npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' });
  const local = packed.map((p) => join(tarballs, p.filename));
  console.log('pack-check: npm install @strata/runtime (and the tarballs standing in for the registry), no compiler on PATH');
  const install = run(join(bin, 'npm'), ['install', '--no-save', '--foreground-scripts', ...local], { cwd: app, env });
  chmodSync(app, 0o755);

  // 4. Nothing was compiled: no package has a source build.
  for (const p of PACKAGES) {
    const dir = join(app, 'node_modules', '@strata', p);
    if (existsSync(join(dir, 'build'))) fail(`@strata/${p} was compiled at install (${join(dir, 'build')} exists):\n${install}`);
  }

  // 5. The ten-line program.
  const program = `
    import { IsolatedRuntime } from '@strata/runtime';
    const out = {};
    {
      await using rt = await IsolatedRuntime.start({ sandbox: 'require', timeout: 2_000 });
      rt.bindFunction('lookup', (sku) => ({ A1: 3.5 })[sku]);
      Object.assign(out, { value: await rt.eval("lookup('A1') * 2"), sandbox: rt.sandbox, extras: rt.sandboxExtras });
    }
    out.withoutOsLayers = await IsolatedRuntime.start({ sandbox: 'require', replaceDefaultLayers: true, layers: [] }).then((rt) => rt.close().then(() => 'started'), (e) => e.code);
    // The build's code caches and the polyfills' file work from the tarballs: which a worker used.
    {
      const { recordTimeline, collectTimeline, stopRecordingTimeline } = await import('@strata/runtime/testing');
      const { WEB_POLYFILLS } = await import('@strata/polyfills');
      recordTimeline();
      await using rt = await IsolatedRuntime.start({ sandbox: 'require', prewarm: false, bootstrap: [WEB_POLYFILLS] });
      await rt.eval('new URL("https://example.com/").href');
      const used = /^worker (code cache used|layer code cache used: .*|bootstrap read from its file: .*|build's code cache used: .*)$/;
      out.caches = [...new Set((await collectTimeline(rt)).map(([label]) => label).filter((label) => used.test(label)))].sort();
      stopRecordingTimeline();
    }
    const { AgentSandbox } = await import('@strata/agent');
    // The guest's fetch through an egress policy, against a server here; journaled as a call of fetch.
    const http = await import('node:http');
    const server = http.createServer((req, res) => res.end(JSON.stringify({ n: 21 })));
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    const origin = 'http://127.0.0.1:' + server.address().port;
    const session = await AgentSandbox.start({ sandbox: 'require', tools: { lookup: async (sku) => ({ A1: 3.5 })[sku] }, egress: { allow: [origin + '/api/*'] } });
    await session.run('const total = await lookup("A1")');
    out.session = (await session.run('total * 2')).result;
    const fetched = await session.run('(await (await fetch("' + origin + '/api/n")).json()).n * 2');
    out.fetched = [fetched.result, fetched.calls.map((c) => c.tool).join()];
    // TypeScript is stripped in a worker thread whose script is in the installed package; so is
    // the type checker's (here without its optional peer, typescript: InvalidOption).
    out.typescript = (await session.run('const half: number = 21; half * 2', { language: 'typescript' })).result;
    const { typecheck } = await import('@strata/agent');
    out.typecheck = await typecheck('1', '').then(() => 'checked', (e) => e.code);
    await session.close();
    server.close();
    // codemode's Executor from its subpath, without codemode installed (its types only are imported).
    const { StrataExecutor } = await import('@strata/agent/codemode');
    const executed = await new StrataExecutor({ runtime: { sandbox: 'require' } }).execute('async () => await codemode.twice({ n: 21 })', [
      { name: 'codemode', fns: { twice: async ({ n }) => n * 2 } },
    ]);
    out.codemode = executed.error ?? executed.result;
    // openApiTools without its optional peer, the OpenAPI parser: InvalidOption saying what to install.
    const { openApiTools } = await import('@strata/agent');
    out.openapi = await openApiTools({ openapi: '3.1.0', info: { title: 'x', version: '1' }, paths: {} }).then(() => 'bridged', (e) => e.code);
    // The PostgreSQL store imports with its driver (no server here): bad options, then no database, are Strata's own errors.
    const { PostgresJournalStore } = await import('@strata/store-postgres');
    out.postgres = [
      await PostgresJournalStore.connect({ schema: 'Not Valid' }).then(() => 'connected', (e) => e.code),
      await PostgresJournalStore.connect({ connectionString: 'postgresql://strata@/none?host=/nonexistent', connectTimeoutMs: 1000 }).then(() => 'connected', (e) => e.code),
    ];
    console.log(JSON.stringify(out));`;
  writeFileSync(join(app, 'check.mjs'), program);
  const outcome = JSON.parse(run(join(bin, 'node'), ['check.mjs'], { cwd: app, env }).trim().split('\n').pop());
  const expected = {
    value: 7,
    sandbox: 'landlock+seccomp',
    extras: ['emptyroot'],
    withoutOsLayers: 'ERR_STRATA_SANDBOX_UNAVAILABLE',
    caches: [
      'worker bootstrap read from its file: 0',
      "worker build's code cache used: strata:bootstrap-0",
      "worker build's code cache used: strata:prelude",
      'worker code cache used',
      'worker layer code cache used: @strata/layer-emptyroot/layer',
      'worker layer code cache used: @strata/layer-landlock/layer',
      'worker layer code cache used: @strata/layer-seccomp/layer',
    ],
    session: 7,
    fetched: [42, 'fetch'],
    typescript: 42,
    typecheck: 'ERR_STRATA_INVALID_OPTION',
    codemode: 42,
    openapi: 'ERR_STRATA_INVALID_OPTION',
    postgres: ['ERR_STRATA_INVALID_OPTION', 'ERR_STRATA_JOURNAL_STORE'],
  };
  if (JSON.stringify(outcome) !== JSON.stringify(expected)) fail(`the program printed ${JSON.stringify(outcome)}, expected ${JSON.stringify(expected)}`);
  console.log(
    `pack-check: sandbox 'require' with no layer named: ${outcome.sandbox} + ${outcome.extras.join(', ')}; without the OS layers: refused (${outcome.withoutOsLayers}); the build's code caches (the worker's, its prelude's, WEB_POLYFILLS' read from its file, each layer's) all used; an AgentSandbox session across two cells: ${outcome.session}; its guest's fetch through an egress policy: ${outcome.fetched[0]}, journaled as ${outcome.fetched[1]}; a TypeScript cell (stripped in its worker thread): ${outcome.typescript}; typecheck without typescript: ${outcome.typecheck}; StrataExecutor (@strata/agent/codemode): ${outcome.codemode}; openApiTools without its parser: ${outcome.openapi}; @strata/store-postgres imported, bad options and no database: ${outcome.postgres.join(', ')}`,
  );
  // 6. A parent on Node 22 (hosts/node22, when installed): refused until it has a Node 24 for
  // the worker, which the app does not install; then started on workerNode, fully sandboxed.
  const node22 = join(root, 'hosts', 'node22', 'node_modules', `node-linux-${process.arch}`, 'bin', 'node');
  if (existsSync(node22)) {
    writeFileSync(
      join(app, 'check22.mjs'),
      `
      import { IsolatedRuntime } from '@strata/runtime';
      const start = (options) => IsolatedRuntime.start({ sandbox: 'require', prewarm: false, ...options });
      const out = { version: process.version };
      out.withoutNode24 = await start({}).then((rt) => rt.close().then(() => 'started'), (e) => ({ code: e.code, message: e.message }));
      const rt = await start({ workerNode: process.argv[2] });
      out.withWorkerNode = { sandbox: rt.sandbox, value: await rt.eval('6 * 7') };
      await rt.close();
      console.log(JSON.stringify(out));`,
    );
    const on22 = JSON.parse(run(node22, ['check22.mjs', process.execPath], { cwd: app, env }).trim().split('\n').pop());
    const refusal = on22.withoutNode24;
    if (!/^v22\./.test(on22.version)) fail(`hosts/node22 ran ${on22.version}`);
    if (refusal.code !== 'ERR_STRATA_NODE_VERSION' || !refusal.message.includes(`npm install node-linux-${process.arch}@24`)) {
      fail(`a Node 22 parent without a Node 24 for its worker gave ${JSON.stringify(refusal)}, expected ERR_STRATA_NODE_VERSION naming the package to install`);
    }
    if (on22.withWorkerNode.sandbox !== 'landlock+seccomp' || on22.withWorkerNode.value !== 42)
      fail(`a Node 22 parent with workerNode gave ${JSON.stringify(on22.withWorkerNode)}`);
    console.log(
      `pack-check: Node ${on22.version} parent: without a Node 24 refused (${refusal.code}, naming node-linux-${process.arch}@24); with workerNode: ${on22.withWorkerNode.sandbox}`,
    );
  } else {
    console.log('pack-check: the Node 22 parent is not checked: hosts/node22 is not installed (npm ci --prefix hosts/node22)');
  }
  console.log(
    `pack-check: installed size ${kib(sizeOf(join(app, 'node_modules')))} (node_modules), of which @strata ${kib(sizeOf(join(app, 'node_modules', '@strata')))}`,
  );
  console.log('pack-check: ok');
} finally {
  cleanUp();
}
