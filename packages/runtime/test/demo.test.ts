// `npm run demo` does what the README says it shows: a guest with a bound tool, the escapes that
// fail, a V8 abort contained (WorkerCrashed, the parent carries on) and the layer report.
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { platformTest } from '../src/testing/platform.js';

const linux = process.platform === 'linux' && (process.arch === 'x64' || process.arch === 'arm64');
const DEMO = fileURLToPath(new URL('../src/demo.js', import.meta.url));

platformTest(test, { feature: 'linux', available: linux, reason: "the demo starts with sandbox: 'require', Linux's OS sandbox" })(
  'the demo runs: the tool answers, the escapes fail, a V8 abort is contained, the sandbox is in force',
  (t) => {
    const ran = spawnSync(process.execPath, [DEMO], { encoding: 'utf8', timeout: 120_000 });
    t.is(ran.status, 0, ran.stderr);
    t.regex(ran.stdout, /two A1 cost 7 \| it is 2026-01-01T00:00:00\.000Z/);
    t.regex(ran.stdout, /escape via Function: EvalError/);
    t.regex(ran.stdout, /'ab'\.repeat\(2 \*\* 27\)\.split\(''\): error \(WorkerCrashed\): the worker died of SIG/);
    t.regex(ran.stdout, /that runtime is closed: true; this process carries on\./);
    t.regex(ran.stdout, /a fresh runtime answers 1 \+ 1 = 2/);
    t.regex(ran.stdout, /sandbox: landlock\+seccomp, extras: \["emptyroot"\]/);
  },
);
