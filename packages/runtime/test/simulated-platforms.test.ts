import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { nativeArtifactPath } from '../src/native/native-artifact.js';

// The prebuild when `npm run prebuilds` made one, else the source build.
const SIMULATE = nativeArtifactPath(fileURLToPath(new URL('../..', import.meta.url)), 'strata-simulate-platform');
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

type Layers = Record<string, { enforcement: string; selfTest: string; missing: string[] }>;
const DEFAULTS = ['emptyroot', 'landlock', 'seccomp'];

/** What each simulated gap looks like: the layer it takes away, and words its refusal must contain. */
const GAPS = {
  '--no-seccomp': { layer: 'seccomp', why: /seccomp: .*test-fire/ },
  '--no-landlock': { layer: 'landlock', why: /landlock: .*(ENOSYS|not available|Landlock)/i },
  '--no-userns': { layer: 'emptyroot', why: /emptyroot: unprivileged user namespaces are forbidden here .*EPERM.*allow them.*requirement: 'off'/ },
} as const;

/** The checks every simulation shares: `auto` starts without exactly the missing layers and warns naming them; `require` refuses naming them and what to do. */
async function checkGaps(t: import('ava').ExecutionContext, flags: (keyof typeof GAPS)[]): Promise<Record<string, any>> {
  const out = await onSimulatedPlatform(flags);
  const layers = out['auto'].layers as Layers;
  const missing: string[] = flags.map((f) => GAPS[f].layer);
  t.deepEqual(Object.keys(layers), DEFAULTS);
  for (const name of DEFAULTS) {
    const gone = missing.includes(name);
    t.is(layers[name]!.enforcement, gone ? 'none' : 'full', name);
    t.is(layers[name]!.selfTest, gone ? 'skipped' : 'passed', name);
  }
  t.is(out['auto'].works, 42, 'the guest still runs');
  const warnings = out['warnings'] as string[];
  for (const name of DEFAULTS) {
    const warned = warnings.some((w) => new RegExp(`\\b${name} is not in force`).test(w));
    t.is(warned, missing.includes(name), `a warning names ${name} exactly when it is missing: ${warnings.join(' | ')}`);
  }
  t.false(out['require'].started);
  t.is(out['require'].name, 'SandboxUnavailable');
  for (const flag of flags) t.regex(out['require'].message, GAPS[flag].why);
  for (const name of DEFAULTS) if (!missing.includes(name)) t.notRegex(out['require'].message, new RegExp(`\\b${name}: `), `${name} is not named as a gap`);
  t.regex(out['require'].message, /Run on a platform that provides these, or lower the requirement/);
  return out;
}

test('seccomp missing: auto starts without it and warns naming it; require refuses, saying what to do', async (t) => {
  const out = await checkGaps(t, ['--no-seccomp']);
  t.deepEqual(out['auto'].sandboxExtras, ['emptyroot']);
  t.is(out['auto'].sandbox, 'none', 'landlock alone is not landlock+seccomp');
});

test('Landlock missing: auto starts without it and warns naming it; require refuses, saying what to do', async (t) => {
  const out = await checkGaps(t, ['--no-landlock']);
  t.is(out['auto'].seccompMode, 2);
  t.deepEqual(out['auto'].sandboxExtras, ['emptyroot']);
});

test('user namespaces forbidden: auto starts without the empty root and warns naming it; require refuses, saying what to do', async (t) => {
  const out = await checkGaps(t, ['--no-userns']);
  t.is(out['auto'].sandbox, 'landlock+seccomp');
  t.deepEqual(out['auto'].sandboxExtras, []);
  t.deepEqual(out['auto'].ownNamespaces, [], 'the worker shares every namespace');
});

test('all three missing together: auto starts with none of them and warns naming each; require refuses naming all three', async (t) => {
  const out = await checkGaps(t, ['--no-seccomp', '--no-landlock', '--no-userns']);
  t.is(out['auto'].sandbox, 'none');
  t.deepEqual(out['auto'].sandboxExtras, []);
});

test('control: on the real platform the same script gets every layer, and require starts', async (t) => {
  const out = await onSimulatedPlatform([]);
  for (const name of DEFAULTS) t.is((out['auto'].layers as Layers)[name]!.enforcement, 'full', name);
  t.is(out['auto'].seccompMode, 2);
  t.deepEqual(out['require'], { started: true, sandbox: 'landlock+seccomp', sandboxExtras: ['emptyroot'] });
  t.deepEqual(out['warnings'], []);
});
