// On a Node.js older than 22, importing @strata/runtime fails with Strata's error (what it needs and
// what to do), never isolated-vm's "No native build was found"; on 22 and 23 the in-process Runtime
// refuses with the same code (node22-host.test.ts runs a Node 22 parent for real).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { MIN_NODE_MAJOR, UnsupportedNode } from '../src/index.js';
import { assertEngineNode, assertSupportedNode, ENGINE_NODE_MAJOR, engineNodeProblem, nodeVersionProblem } from '../src/node-version.js';

test('nodeVersionProblem: 22 and later import; older, or unreadable, names the requirement and what to do', (t) => {
  t.is(MIN_NODE_MAJOR, 22);
  for (const ok of ['v22.0.0', 'v22.23.5', 'v23.9.9', 'v24.22.3', 'v30.0.0']) t.is(nodeVersionProblem(ok), undefined, ok);
  for (const old of ['v20.20.2', 'v21.7.3', 'v0.12.0', 'nonsense']) {
    const problem = nodeVersionProblem(old);
    t.regex(problem ?? '', new RegExp(`needs Node\\.js 22 or later \\(24 for the in-process Runtime\\); this is ${old.replace('.', '\\.')}`), old);
    t.regex(problem ?? '', /Run your program with Node 24/);
  }
  t.throws(() => assertSupportedNode('v20.11.0'), { instanceOf: UnsupportedNode, code: 'ERR_STRATA_NODE_VERSION' });
});

test('engineNodeProblem: the engine needs 24; on 22 it points at IsolatedRuntime, workerNode and the Node package', (t) => {
  t.is(ENGINE_NODE_MAJOR, 24);
  for (const ok of ['v24.0.0', 'v24.22.3', 'v25.1.0']) t.is(engineNodeProblem(ok), undefined, ok);
  for (const old of ['v22.23.5', 'v23.9.9', 'v20.20.2', 'nonsense']) {
    const problem = engineNodeProblem(old) ?? '';
    t.regex(problem, /the in-process Runtime needs Node\.js 24 or later/, old);
    t.regex(
      problem,
      /use IsolatedRuntime or SandboxPool, whose worker runs on a Node 24 \(the workerNode option, or node-\w+-\w+@24 installed beside @strata\/runtime\)/,
      old,
    );
  }
  t.throws(() => assertEngineNode('v22.23.5'), { instanceOf: UnsupportedNode, code: 'ERR_STRATA_NODE_VERSION' });
});

// An older Node on this machine, if any (Debian's, on PATH here), imports the package for real.
const OLDER_NODE = ['/usr/bin/node', '/usr/local/bin/node', '/bin/node'].find((path) => {
  if (!existsSync(path)) return false;
  const version = spawnSync(path, ['--version'], { encoding: 'utf8' }).stdout.trim();
  return Number(/^v(\d+)/.exec(version)?.[1]) < MIN_NODE_MAJOR;
});

const PACKAGE_ROOT = fileURLToPath(new URL('../..', import.meta.url));

(OLDER_NODE === undefined ? test.skip : test)(
  `importing @strata/runtime on an older Node fails with ERR_STRATA_NODE_VERSION${OLDER_NODE === undefined ? ' (skipped: no Node older than 22 on this machine)' : ''}`,
  (t) => {
    for (const entry of ['@strata/runtime', '@strata/runtime/testing', '@strata/runtime/layers']) {
      const run = spawnSync(
        OLDER_NODE!,
        ['--input-type=module', '-e', `import(${JSON.stringify(entry)}).then(() => console.log('loaded'), (e) => console.log(e.code + ': ' + e.message))`],
        {
          cwd: PACKAGE_ROOT,
          encoding: 'utf8',
        },
      );
      t.regex(run.stdout, /^ERR_STRATA_NODE_VERSION: @strata\/runtime needs Node\.js 22 or later \(24 for the in-process Runtime\); this is v\d+/, entry);
      t.notRegex(run.stdout + run.stderr, /No native build was found/, entry);
    }
    const cli = spawnSync(OLDER_NODE!, [`${PACKAGE_ROOT}/dist/src/cli/strata.js`, 'doctor'], { encoding: 'utf8' });
    t.not(cli.status, 0);
    t.regex(cli.stderr, /^strata: @strata\/runtime needs Node\.js 22 or later/);
  },
);
