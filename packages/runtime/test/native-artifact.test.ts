import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { artifactCandidates, findNativeArtifact, nativeArtifactPath, prebuildKey, requireNativeArtifact } from '../src/native/native-artifact.js';

/** A throwaway package root holding `files` (paths relative to it). */
function packageRoot(t: ExecutionContext, files: string[]): string {
  const root = mkdtempSync(join(tmpdir(), 'strata-native-artifact-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  for (const file of files) {
    mkdirSync(join(root, file, '..'), { recursive: true });
    writeFileSync(join(root, file), '');
  }
  return root;
}

test('the prebuild for this platform and arch wins over a source build', (t) => {
  const key = prebuildKey();
  const root = packageRoot(t, [`prebuilds/${key}/strata-exec`, 'build/Release/strata-exec']);
  t.is(findNativeArtifact(root, 'strata-exec'), join(root, 'prebuilds', key, 'strata-exec'));
  t.is(requireNativeArtifact(root, 'strata-exec', '@strata/runtime'), join(root, 'prebuilds', key, 'strata-exec'));
});

test('without a prebuild for this platform and arch, the source build in build/Release', (t) => {
  const other = process.arch === 'arm64' ? 'x64' : 'arm64';
  const root = packageRoot(t, [`prebuilds/${process.platform}-${other}/strata_watchdog.node`, 'build/Release/strata_watchdog.node']);
  t.is(findNativeArtifact(root, 'strata_watchdog.node'), join(root, 'build', 'Release', 'strata_watchdog.node'));
  t.is(nativeArtifactPath(root, 'strata_watchdog.node'), join(root, 'build', 'Release', 'strata_watchdog.node'));
});

test('a prebuild of another artifact does not stand in for the one asked', (t) => {
  const root = packageRoot(t, [`prebuilds/${prebuildKey()}/strata-exec`]);
  t.is(findNativeArtifact(root, 'strata-simulate-platform'), undefined);
});

test('neither: a clear error naming both paths and how to build from source', (t) => {
  const root = packageRoot(t, []);
  const { prebuild, source } = artifactCandidates(root, 'strata_seccomp.node');
  t.is(findNativeArtifact(root, 'strata_seccomp.node'), undefined);
  // The path callers check and name themselves: where a source build would put it.
  t.is(nativeArtifactPath(root, 'strata_seccomp.node'), source);
  const error = t.throws(() => requireNativeArtifact(root, 'strata_seccomp.node', '@strata/layer-seccomp'));
  t.true(error?.message.includes(prebuild));
  t.true(error?.message.includes(`${source} is missing`));
  t.regex(
    error?.message ?? '',
    /run `npm ci` \(or `npm rebuild @strata\/layer-seccomp`\) to build it from source; building needs python3, make and a C compiler/,
  );
});

test('the key is <platform>-<arch> (with -musl only under musl); an explicit key is honoured', (t) => {
  t.regex(prebuildKey(), new RegExp(`^${process.platform}-${process.arch}(-musl)?$`));
  t.is(prebuildKey('darwin', 'arm64'), 'darwin-arm64');
  const root = packageRoot(t, ['prebuilds/linux-riscv64/strata-exec']);
  t.is(findNativeArtifact(root, 'strata-exec', 'linux-riscv64'), join(root, 'prebuilds', 'linux-riscv64', 'strata-exec'));
});

test('this package resolves its own artifacts (prebuilds after `npm run prebuilds`, else build/Release)', (t) => {
  const root = join(import.meta.dirname, '..', '..');
  const found = findNativeArtifact(root, 'strata-exec');
  if (found === undefined) return t.pass('not built here');
  t.true(existsSync(found));
  t.regex(found, /\/(prebuilds\/[a-z0-9]+-[a-z0-9]+(-musl)?|build\/Release)\/strata-exec$/);
});
