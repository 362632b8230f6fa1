// End to end through Strata itself: IsolatedRuntime probes the layer in this process and applies it
// in the worker (a child process); the profile is never applied to ava's process.
import { IsolatedRuntime, SandboxUnavailable } from '@strata/runtime';
import { checkGuestStillWorks } from '@strata/runtime/testing';
import { seatbelt } from '../src/index.js';
import { offMac, onMac } from './when.js';

const GAP = `Seatbelt is macOS only (this is ${process.platform})`;

// The runtime's own test helper (compiled beside its tests in this repository).
const { warningsDuring } = (await import(new URL('../../../runtime/dist/test/helpers/warnings.js', import.meta.url).href)) as {
  warningsDuring: <T>(run: () => Promise<T>) => Promise<{ value: T; warnings: { message: string }[] }>;
};

offMac("sandbox 'require' with the Seatbelt layer off macOS: refused with SandboxUnavailable naming seatbelt", async (t) => {
  const error = await t.throwsAsync(IsolatedRuntime.start({ sandbox: 'require', prewarm: false, layers: [seatbelt()] }), { instanceOf: SandboxUnavailable });
  t.is(error?.code, 'ERR_STRATA_SANDBOX_UNAVAILABLE');
  t.true(error?.message.includes(`seatbelt: ${GAP}`), error?.message);
  // a per-layer requirement does the same under 'auto'
  await t.throwsAsync(IsolatedRuntime.start({ sandbox: 'auto', prewarm: false, layers: [seatbelt({ requirement: 'require' })] }), {
    instanceOf: SandboxUnavailable,
    message: /seatbelt: Seatbelt is macOS only/,
  });
});

offMac("sandbox 'auto' off macOS: starts with a warning naming seatbelt; not in force, not self-tested; guest code works", async (t) => {
  // Alone: on Linux the default layers would otherwise be in force beside it.
  const { value: rt, warnings: seen } = await warningsDuring(() =>
    IsolatedRuntime.start({ sandbox: 'auto', prewarm: false, replaceDefaultLayers: true, layers: [seatbelt()] }),
  );
  const warnings = seen.map((w) => w.message);
  try {
    t.true(
      warnings.some((w) => w.includes(`seatbelt is not in force: ${GAP}`)),
      warnings.join('\n'),
    );
    t.is(rt.sandbox, 'none');
    const entry = rt.report.layers.find((l) => l.name === 'seatbelt');
    t.deepEqual(entry, {
      name: 'seatbelt',
      version: '0.1.0',
      requirement: 'auto',
      capability: { available: false, provides: [], missing: [GAP] },
      enforcement: 'none',
      selfTest: 'skipped',
      detail: {},
    });
    t.is(await rt.eval('6 * 7'), 42);
  } finally {
    await rt.close();
  }
});

onMac("sandbox 'require' with the Seatbelt layer: in force, self-tested; guest code still works", async (t) => {
  const rt = await IsolatedRuntime.start({ sandbox: 'require', layers: [seatbelt()] });
  try {
    t.is(rt.sandbox, 'seatbelt');
    const entry = rt.report.layers.find((l) => l.name === 'seatbelt')!;
    t.is(entry.enforcement, 'full');
    t.is(entry.selfTest, 'passed');
    t.regex(String(entry.detail.profileSha256), /^[0-9a-f]{64}$/);
    t.is(entry.detail.readPaths, 0);
    t.like(entry.detail.selfTest as Record<string, string>, { readOutside: 'EPERM', write: 'EPERM', spawn: 'EPERM', signalParent: 'EPERM', readOwn: 'none' });
    t.deepEqual(await checkGuestStillWorks(rt), []);
  } finally {
    await rt.close();
  }
});
