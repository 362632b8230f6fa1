// The VM matrix's look at what Landlock actually enforces (copied into the initramfs as
// /matrix/landlock-probe.mjs; run by /init). Landlock leaves no trace in /proc, so this tries
// things: the parent confines a child Node with the layer's own helper (strata-landlock, the read
// set the layer computes for a worker, plus this script's folder), and the child, a stand-in for
// a compromised worker, attempts what each Landlock right the layer claims would forbid:
//
//   fs-read-only-runtime  read /etc/passwd, list /         (outside the read set)
//   fs-no-write           create a file, mkdir, in a folder of /tmp the child may only read
//   fs-truncate           open(O_RDONLY | O_TRUNC) a readable file the parent made writable (ABI 3)
//   tcp-deny              connect to 127.0.0.1 (ABI 4; the parent listens there)
//   scope-signal          kill(parent, 0)              (ABI 6)
//   scope-abstract-unix   connect to the parent's abstract unix socket (ABI 6)
//   tsync-stack           the layer's seal: the addon's stackDenyAll (a deny-all domain on every
//                         thread at once, ABI 8), then read this script (in the read set) from
//                         the main thread, a worker thread and libuv's pool, each of which read
//                         it before the stack; below ABI 8 the stack is refused and the reads go
//                         through
//
// Only Landlock is applied (no seccomp, no namespaces), so each answer is Landlock's. Prints one
// JSON object: { abi, attempts: { name: { denied, code } }, denied: [rights], allowed: [rights] },
// or { abi, unavailable: why } when the kernel has no Landlock.
//
// Usage: node landlock-probe.mjs LAYER_LANDLOCK_PACKAGE_DIR   (the parent)

import { spawn } from 'node:child_process';
import { chmodSync, closeSync, constants, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer, connect } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const self = fileURLToPath(import.meta.url);

if (process.argv[2] === '--child') {
  const [, , , dir, port, abstract, addonPath] = process.argv;
  const attempts = {};
  const code = (f) => {
    try {
      f();
      return 'ok';
    } catch (error) {
      return error.code ?? String(error);
    }
  };
  const denied = (c) => c === 'EACCES' || c === 'EPERM';
  const note = (name, c) => (attempts[name] = { denied: denied(c), code: c });
  note(
    'read /etc/passwd',
    code(() => readFileSync('/etc/passwd')),
  );
  note(
    'list /',
    code(() => readdirSync('/')),
  );
  note(
    'create a file',
    code(() => writeFileSync(join(dir, 'new-file'), 'x')),
  );
  note(
    'mkdir',
    code(() => mkdirSync(join(dir, 'new-dir'))),
  );
  // Not fs.truncateSync: Node opens the file for writing, which write_file already refuses.
  // open(O_RDONLY | O_TRUNC) asks for no write access, so only the truncate right (ABI 3) stops
  // it; the file is in the read set.
  note(
    'truncate',
    code(() => closeSync(openSync(join(dir, 'writable'), constants.O_RDONLY | constants.O_TRUNC))),
  );
  note(
    'kill(parent, 0)',
    code(() => process.kill(process.ppid, 0)),
  );
  const tryConnect = (options) =>
    new Promise((resolveConnect) => {
      const socket = connect(options);
      socket.once('connect', () => {
        socket.destroy();
        resolveConnect('ok');
      });
      socket.once('error', (error) => resolveConnect(error.code ?? String(error)));
    });
  note('tcp connect 127.0.0.1', await tryConnect({ host: '127.0.0.1', port: Number(port) }));
  note('abstract unix connect', await tryConnect({ path: `\0${abstract}` }));
  // Last, as it takes every file away: the stack after load. A worker thread and libuv's pool
  // exist (and have read the file) before it, as the worker's threads do before its seal.
  const { Worker } = await import('node:worker_threads');
  const thread = new Worker(
    "const { parentPort } = require('node:worker_threads'); const { readFileSync } = require('node:fs');" +
      "parentPort.on('message', (file) => { try { readFileSync(file); parentPort.postMessage('ok'); } catch (e) { parentPort.postMessage(e.code ?? String(e)); } });",
    { eval: true },
  );
  const inThread = () => new Promise((r) => (thread.once('message', r), thread.postMessage(self)));
  const inPool = () =>
    readFile(self).then(
      () => 'ok',
      (error) => error.code ?? String(error),
    );
  const before = [code(() => readFileSync(self)), await inThread(), await inPool()];
  attempts.control = { readsBeforeTheStack: before };
  let stack;
  try {
    // process.dlopen, not require: require's resolution reads package.json files outside the read set.
    const addon = { exports: {} };
    process.dlopen(addon, addonPath);
    stack = `stacked (handled rights 0x${addon.exports.stackDenyAll().toString(16)})`;
  } catch (error) {
    stack = `refused: ${error.message}`;
  }
  attempts.control.stack = stack;
  note(
    'read after the stack: main thread',
    code(() => readFileSync(self)),
  );
  note('read after the stack: a worker thread', await inThread());
  note('read after the stack: libuv pool', await inPool());
  await thread.terminate();
  console.log(JSON.stringify(attempts));
  process.exit(0);
}

const layerDir = process.argv[2];
const mod = (m) => import(pathToFileURL(join(layerDir, 'dist', 'src', m)).href);
const { computeReadSet, helperArguments } = await mod('read-set.js');
const { LANDLOCK_HELPER, landlockAbi } = await mod('helper.js');
const { ADDON_PATH } = await mod('addon.js');

let abi;
try {
  abi = landlockAbi();
} catch (error) {
  abi = `unavailable (${error.message})`;
}
const dir = mkdtempSync('/tmp/landlock-probe-');
chmodSync(dir, 0o777);
writeFileSync(join(dir, 'writable'), 'some bytes');
chmodSync(join(dir, 'writable'), 0o666);

const tcp = createServer((s) => s.destroy());
await new Promise((r) => tcp.listen(0, '127.0.0.1', r));
const abstract = `strata-matrix-probe-${process.pid}`;
const unix = createServer((s) => s.destroy());
await new Promise((r) => unix.listen(`\0${abstract}`, r));

// The probe's folder is readable (not writable) for the child, so that it can open a file there.
const entries = computeReadSet({ execPath: process.execPath, packageRoot: layerDir, extra: [dirname(self), dir] });
const args = [...helperArguments(entries), '--', process.execPath, self, '--child', dir, String(tcp.address().port), abstract, ADDON_PATH];
const child = spawn(LANDLOCK_HELPER, args, { stdio: ['ignore', 'pipe', 'pipe'], env: {}, cwd: '/' });
let stdout = '';
let stderr = '';
child.stdout.on('data', (d) => (stdout += d));
child.stderr.on('data', (d) => (stderr += d));
const status = await new Promise((r) => child.on('close', (c, s) => r(c ?? s)));
tcp.close();
unix.close();
const sizeAfter = statSync(join(dir, 'writable')).size;
rmSync(dir, { recursive: true, force: true });

if (status === 121) {
  // strata-landlock's "abi" exit: the kernel has no Landlock to confine the child with.
  console.log(JSON.stringify({ abi, unavailable: stderr.trim().slice(0, 1000) }));
  process.exit(0);
}
if (status !== 0) {
  console.log(JSON.stringify({ abi, error: `the confined child exited ${status}: ${stderr.trim().slice(0, 1000)}` }));
  process.exit(1);
}
const attempts = JSON.parse(stdout.trim().split('\n').pop());
// Before the stack, the file must have been readable everywhere; else the reads after it prove nothing.
if (attempts.control.readsBeforeTheStack.some((c) => c !== 'ok')) {
  console.log(JSON.stringify({ abi, error: `the child could not read its own script before the stack: ${attempts.control.readsBeforeTheStack.join(', ')}` }));
  process.exit(1);
}
// The truncate attempt's effect, as the parent sees it (10 bytes before).
attempts.truncate.sizeAfter = sizeAfter;
if (attempts.truncate.code === 'ok' && sizeAfter !== 0) attempts.truncate.code = `ok, but the file kept ${sizeAfter} bytes`;
// Which right each attempt stands for; a right counts as enforced when all of its attempts were refused.
const RIGHTS = {
  'fs-read-only-runtime': ['read /etc/passwd', 'list /'],
  'fs-no-write': ['create a file', 'mkdir'],
  'fs-truncate': ['truncate'],
  'tcp-deny': ['tcp connect 127.0.0.1'],
  'scope-signal': ['kill(parent, 0)'],
  'scope-abstract-unix': ['abstract unix connect'],
  'tsync-stack': ['read after the stack: main thread', 'read after the stack: a worker thread', 'read after the stack: libuv pool'],
};
const deniedRights = [];
const allowedRights = [];
for (const [right, names] of Object.entries(RIGHTS)) {
  (names.every((n) => attempts[n]?.denied) ? deniedRights : allowedRights).push(right);
}
console.log(JSON.stringify({ abi, attempts, rights: RIGHTS, denied: deniedRights, allowed: allowedRights }));
