import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import test from 'ava';

const SIMULATE = fileURLToPath(new URL('../../build/Release/strata-simulate-platform', import.meta.url));
const PROBE = fileURLToPath(new URL('./fixtures/simulated-platform-probe.js', import.meta.url));

/** Runs the probe script on a simulated platform and returns what it printed. */
function onSimulatedPlatform(flags: string[]): Promise<Record<string, any>> {
  return new Promise((resolve, reject) => {
    const child = spawn(SIMULATE, [...flags, '--', process.execPath, PROBE], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c));
    child.stderr.on('data', (c: Buffer) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      try {
        resolve(JSON.parse(stdout.trim().split('\n').pop() ?? '') as Record<string, any>);
      } catch {
        reject(new Error(`the probe exited ${code}: ${stderr.slice(-2000)}`));
      }
    });
  });
}

test('seccomp missing: auto starts without it and warns naming it; require refuses, saying what to do', async (t) => {
  const out = await onSimulatedPlatform(['--no-seccomp']);
  t.is(out['auto'].enforcement, 'none');
  t.is(out['auto'].selfTest, 'skipped');
  // (From outside the worker shows mode 2 here: the simulated platform is itself a seccomp filter.)
  t.is(out['auto'].works, 42, 'the guest still runs');
  t.regex(out['auto'].missing.join(' '), /test-fire/);
  t.true((out['warnings'] as string[]).some((w) => /seccomp is not in force/.test(w)), (out['warnings'] as string[]).join('\n'));
  t.false(out['require'].started);
  t.is(out['require'].name, 'SandboxUnavailable');
  t.regex(out['require'].message, /seccomp: .*test-fire/);
  t.regex(out['require'].message, /Run on a platform that provides these, or lower the requirement/);
});

test('user namespaces forbidden and Landlock missing, together with seccomp missing: the same, and nothing else breaks', async (t) => {
  const out = await onSimulatedPlatform(['--no-seccomp', '--no-landlock', '--no-userns']);
  t.is(out['auto'].enforcement, 'none');
  t.is(out['auto'].works, 42);
  t.false(out['require'].started);
  t.is(out['require'].name, 'SandboxUnavailable');
});

test('control: on the real platform the same script gets the filter, and require starts', async (t) => {
  const out = await onSimulatedPlatform([]);
  t.is(out['auto'].enforcement, 'full');
  t.is(out['auto'].seccompMode, 2);
  t.true(out['require'].started);
});
