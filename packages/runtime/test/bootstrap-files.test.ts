// Bootstrap scripts a worker reads from an installed file (src/isolated/bootstrap-files.ts,
// src/worker/bootstrap-files.ts): WEB_POLYFILLS goes as a path and a fingerprint, never as 568 KB
// through the pipe, and a file that is not the one the parent read is refused.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { WEB_POLYFILLS } from '@strata/polyfills';
import { IsolatedRuntime, StrataError } from '../src/index.js';
import { bootstrapFileFor } from '../src/isolated/bootstrap-files.js';
import { loadWatchdog } from '../src/native/native-paths.js';
import { collectTimeline, recordTimeline, stopRecordingTimeline } from '../src/testing/index.js';
import { readBootstrapFiles } from '../src/worker/bootstrap-files.js';

async function startMarks(bootstrap: string[]): Promise<{ labels: string[]; rt: IsolatedRuntime }> {
  recordTimeline();
  try {
    const rt = await IsolatedRuntime.start({ prewarm: false, sandbox: 'require', bootstrap });
    await rt.eval('0');
    return { labels: (await collectTimeline(rt)).map(([label]) => label), rt };
  } finally {
    stopRecordingTimeline();
  }
}

test.serial('a worker reads WEB_POLYFILLS from its file, compiles it with the build cache, and the polyfills work', async (t) => {
  const { labels, rt } = await startMarks([WEB_POLYFILLS]);
  try {
    t.true(labels.includes('worker bootstrap read from its file: 0'), labels.join(', '));
    t.true(labels.includes("worker build's code cache used: strata:bootstrap-0"), labels.join(', '));
    t.is(await rt.eval('new URL("https://example.com/a/../b").href'), 'https://example.com/b');
    t.is(await rt.eval('(async () => new Response("body").text())()'), 'body');
  } finally {
    await rt.close();
  }
});

test.serial('a large script that is not WEB_POLYFILLS is sent as text; a script after WEB_POLYFILLS keeps its place', async (t) => {
  const own = `globalThis.marker = 42;//${'x'.repeat(100_000)}`;
  const { labels, rt } = await startMarks([own, WEB_POLYFILLS, 'globalThis.after = typeof URL']);
  try {
    t.false(labels.includes('worker bootstrap read from its file: 0'));
    t.true(labels.includes('worker bootstrap read from its file: 1'), labels.join(', '));
    t.is(await rt.eval('globalThis.marker'), 42);
    t.is(await rt.eval('globalThis.after'), 'function');
  } finally {
    await rt.close();
  }
});

test("the parent names WEB_POLYFILLS' file with the fingerprint of its bytes, and nothing else", async (t) => {
  const path = createRequire(import.meta.url).resolve('@strata/polyfills/web-polyfills.txt');
  t.is(readFileSync(path, 'utf8'), WEB_POLYFILLS, 'the build wrote the exact text');
  t.deepEqual(await bootstrapFileFor(WEB_POLYFILLS), { path, fingerprint: loadWatchdog().fingerprint(readFileSync(path)) });
  t.is(await bootstrapFileFor('globalThis.x = 1'), undefined);
  t.is(await bootstrapFileFor(`${WEB_POLYFILLS} `), undefined);
  t.is(await bootstrapFileFor(`/*${'y'.repeat(WEB_POLYFILLS.length - 4)}*/`), undefined);
});

test('a file replaced under a running process is read again, and used only while it holds the text this process has', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'strata-web-polyfills-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'web-polyfills.txt');
  writeFileSync(file, WEB_POLYFILLS);
  const first = await bootstrapFileFor(WEB_POLYFILLS, file);
  t.is(first?.path, file);
  // an upgrade writes another text (same length): this process's WEB_POLYFILLS is no longer the file's
  const other = `${WEB_POLYFILLS.slice(0, -1)} `;
  t.is(other.length, WEB_POLYFILLS.length);
  rmSync(file);
  writeFileSync(file, other);
  t.is(await bootstrapFileFor(WEB_POLYFILLS, file), undefined);
  // and back: read again, the same fingerprint as the first time
  rmSync(file);
  writeFileSync(file, WEB_POLYFILLS);
  t.deepEqual(await bootstrapFileFor(WEB_POLYFILLS, file), first);
  rmSync(file);
  t.is(await bootstrapFileFor(WEB_POLYFILLS, file), undefined, 'a missing file: the text is sent');
});

test('the worker reads a named file only when its bytes are those the parent fingerprinted', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'strata-bootstrap-file-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'script.js');
  writeFileSync(file, 'globalThis.a = 1;');
  const watchdog = loadWatchdog();
  const fingerprint = watchdog.fingerprint(readFileSync(file));
  t.deepEqual(readBootstrapFiles(['x', ''], { 1: { path: file, fingerprint } }, watchdog), ['x', 'globalThis.a = 1;']);
  t.deepEqual(readBootstrapFiles(['x'], undefined, watchdog), ['x']);
  // the file changed since the parent read it (same length)
  writeFileSync(file, 'globalThis.a = 2;');
  t.throws(() => readBootstrapFiles([''], { 0: { path: file, fingerprint } }, watchdog), {
    instanceOf: StrataError,
    message: /is not the file the parent read/,
  });
  const bad: [unknown, string[], RegExp][] = [
    [{ 0: { path: file, fingerprint } }, ['not empty'], /not an empty place/],
    [{ 3: { path: file, fingerprint } }, [''], /not an empty place/],
    [{ x: { path: file, fingerprint } }, [''], /not an empty place/],
    [{ 0: { path: 'relative.js', fingerprint } }, [''], /absolute path/],
    [{ 0: { path: file } }, [''], /absolute path/],
    [{ 0: { path: join(dir, 'missing.js'), fingerprint } }, [''], /cannot read/],
    ['nonsense', [''], /must be an object/],
  ];
  for (const [files, bootstrap, message] of bad) t.throws(() => readBootstrapFiles(bootstrap, files, watchdog), { instanceOf: StrataError, message });
  t.throws(() => readBootstrapFiles([''], { 0: { path: file, fingerprint } }, undefined), { instanceOf: StrataError, message: /cannot fingerprint/ });
});
