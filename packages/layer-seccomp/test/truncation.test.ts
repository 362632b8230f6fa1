// Truncation, which Landlock before ABI 3 (Linux 6.2) does not govern: a real worker tries to
// truncate files it can read and its uid may write (test/fixtures/truncate-attack-layer.ts, in its
// selfTest, after the seccomp filter is on), and the files are checked from outside. The negative
// control runs the same attack without the seccomp layer, where every attempt truncates its file.
// The worker runs as uid 65534 (started as root it drops to it; the unprivileged pass of the suite
// runs as 65534), so the targets belong to 65534: only the filter stands between it and them.
import test from 'ava';
import { chmodSync, chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IsolatedRuntime, defaultLayers, type LayerDescriptor } from '@strata/runtime';
import { WEB_POLYFILLS } from '@strata/polyfills';
import { checkGuestStillWorks, platformTest } from '@strata/runtime/testing';
import { seccomp } from '../src/index.js';
import { ATTEMPTS, CONTENT, TRUNCATE_ATTACK, X86_ONLY_ATTEMPTS, controlOf, payload, targetOf } from './fixtures/truncate-attack-layer.js';

const linux = process.platform === 'linux' && (process.arch === 'x64' || process.arch === 'arm64');
const maybe = platformTest(test.serial, { feature: 'linux', available: linux, reason: 'Linux only (x64 or arm64)' });
const FIXTURE = new URL('./fixtures/truncate-attack-layer.js', import.meta.url).href;
const WORKER_UID = 65534;
const root = process.getuid?.() === 0;
const expectedAttempts = ATTEMPTS.filter((name) => process.arch === 'x64' || !X86_ONLY_ATTEMPTS.includes(name));

/** A fresh directory of targets (and the control file and the payload), owned by the worker's uid. */
function makeTargets(t: import('ava').ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'strata-seccomp-truncate-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  chmodSync(dir, 0o755);
  for (const file of [...ATTEMPTS.map((name) => targetOf(dir, name)), controlOf(dir)]) {
    writeFileSync(file, CONTENT, { mode: 0o644 });
    if (root) chownSync(file, WORKER_UID, WORKER_UID);
  }
  writeFileSync(join(dir, 'payload'), payload(dir), { mode: 0o644 });
  return dir;
}

const attack = (dir: string): LayerDescriptor => ({ module: FIXTURE, options: { dir }, requirement: 'require' });
const contentOf = (dir: string, name: string) => readFileSync(targetOf(dir, name), 'utf8');

interface Seen {
  uid: number;
  attempts: Record<string, string>;
  controls: Record<string, string>;
}
const seenIn = (rt: IsolatedRuntime): Seen => rt.report.layers.find((l) => l.name === TRUNCATE_ATTACK)!.detail as unknown as Seen;

maybe('the negative control: without the seccomp layer, each attempt truncates a file the worker can read and its uid may write', async (t) => {
  const dir = makeTargets(t);
  {
    await using rt = await IsolatedRuntime.start({ prewarm: false, sandbox: 'off', replaceDefaultLayers: true, layers: [attack(dir)] });
    const seen = seenIn(rt);
    t.is(seen.uid, WORKER_UID);
    t.deepEqual(Object.keys(seen.attempts), expectedAttempts);
    for (const name of expectedAttempts) {
      t.is(seen.attempts[name], 'none', `${name} went through`);
      t.is(contentOf(dir, name), '', `${name} truncated its file`);
    }
  }
  t.is(readFileSync(controlOf(dir), 'utf8'), CONTENT);
});

maybe(
  'with the seccomp layer: open/openat with O_TRUNC, truncate and creat answer EPERM, openat2 ENOSYS, and every file keeps its bytes; O_RDONLY still opens',
  async (t) => {
    const dir = makeTargets(t);
    {
      await using rt = await IsolatedRuntime.start({
        prewarm: false,
        sandbox: 'off',
        replaceDefaultLayers: true,
        bootstrap: WEB_POLYFILLS,
        layers: [{ ...seccomp(), requirement: 'require' }, attack(dir)],
      });
      t.deepEqual(
        rt.report.layers.map((l) => [l.name, l.enforcement, l.selfTest]),
        [
          ['seccomp', 'full', 'passed'],
          [TRUNCATE_ATTACK, 'full', 'passed'],
        ],
      );
      const seen = seenIn(rt);
      t.is(seen.uid, WORKER_UID);
      t.deepEqual(Object.keys(seen.attempts), expectedAttempts);
      for (const name of expectedAttempts) {
        t.is(seen.attempts[name], name === 'raw-openat2-trunc' ? 'ENOSYS' : 'EPERM', name);
        t.is(contentOf(dir, name), CONTENT, `${name}: the file is unchanged`);
      }
      t.deepEqual(seen.controls, {
        fsOpenRdonly: 'none',
        fsRead: 'none',
        rawOpenatRdonly: 'none',
        ...(process.arch === 'x64' ? { rawOpenRdonly: 'none' } : {}),
      });
      // the worker still starts, self-tests and runs guest code
      t.deepEqual(await checkGuestStillWorks(rt), []);
    }
  },
);

maybe(
  'with the default layers (emptyroot, landlock, seccomp) and the targets readable: every self-test passes, the attack is refused, no file changes',
  async (t) => {
    const dir = makeTargets(t);
    const layers = defaultLayers().map((d): LayerDescriptor => {
      if (d.module === '@strata/layer-landlock/layer') return { ...d, options: { ...d.options, readPaths: [dir] } };
      if (d.module === '@strata/layer-emptyroot/layer') return { ...d, options: { ...d.options, bindPaths: [dir] } };
      return d;
    });
    {
      await using rt = await IsolatedRuntime.start({
        prewarm: false,
        sandbox: 'auto',
        bootstrap: WEB_POLYFILLS,
        replaceDefaultLayers: true,
        layers: [...layers, attack(dir)],
      });
      t.log(rt.report.layers.map((l) => `${l.name}: ${l.enforcement}, selfTest ${l.selfTest}`).join('; '));
      const seccompEntry = rt.report.layers.find((l) => l.name === 'seccomp')!;
      t.is(seccompEntry.enforcement, 'full');
      // the other layers' self-tests create their probe files with "wx" (O_CREAT | O_EXCL | O_TRUNC),
      // which the filter leaves to them: they must still pass
      for (const l of rt.report.layers) if (l.enforcement !== 'none') t.is(l.selfTest, 'passed', l.name);
      const seen = seenIn(rt);
      t.deepEqual(Object.keys(seen.attempts), expectedAttempts);
      // seccomp answers before any LSM or mount is asked
      for (const name of expectedAttempts) {
        t.is(seen.attempts[name], name === 'raw-openat2-trunc' ? 'ENOSYS' : 'EPERM', name);
        t.is(contentOf(dir, name), CONTENT, `${name}: the file is unchanged`);
      }
      t.is(seen.controls.fsRead, 'none');
      t.is(seen.controls.rawOpenatRdonly, 'none');
      t.deepEqual(await checkGuestStillWorks(rt), []);
    }
  },
);
