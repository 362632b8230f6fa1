// On a Node.js older than 24, importing @strata/runtime fails with Strata's error (what it needs and
// what to do), never isolated-vm's "No native build was found".
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { MIN_NODE_MAJOR, UnsupportedNode } from '../src/index.js';
import { assertSupportedNode, nodeVersionProblem } from '../src/node-version.js';

test('nodeVersionProblem: 24 and later are fine; older, or unreadable, names the requirement and what to do', (t) => {
  t.is(MIN_NODE_MAJOR, 24);
  for (const ok of ['v24.0.0', 'v24.22.3', 'v25.1.0', 'v30.0.0']) t.is(nodeVersionProblem(ok), undefined, ok);
  for (const old of ['v20.20.2', 'v22.11.0', 'v23.9.9', 'v0.12.0', 'nonsense']) {
    const problem = nodeVersionProblem(old);
    t.regex(problem ?? '', new RegExp(`needs Node\\.js 24 or later; this is ${old.replace('.', '\\.')}`), old);
    t.regex(problem ?? '', /Run your program with Node 24/);
  }
  t.throws(() => assertSupportedNode('v22.11.0'), { instanceOf: UnsupportedNode, code: 'ERR_STRATA_NODE_VERSION' });
});

// An older Node on this machine, if any (Debian's, on PATH here), imports the package for real.
const OLDER_NODE = ['/usr/bin/node', '/usr/local/bin/node', '/bin/node'].find((path) => {
  if (!existsSync(path)) return false;
  const version = spawnSync(path, ['--version'], { encoding: 'utf8' }).stdout.trim();
  return Number(/^v(\d+)/.exec(version)?.[1]) < MIN_NODE_MAJOR;
});

const PACKAGE_ROOT = fileURLToPath(new URL('../..', import.meta.url));

(OLDER_NODE === undefined ? test.skip : test)(
  `importing @strata/runtime on an older Node fails with ERR_STRATA_NODE_VERSION${OLDER_NODE === undefined ? ' (skipped: no Node older than 24 on this machine)' : ''}`,
  (t) => {
    for (const entry of ['@strata/runtime', '@strata/runtime/testing']) {
      const run = spawnSync(OLDER_NODE!, ['--input-type=module', '-e', `import(${JSON.stringify(entry)}).then(() => console.log('loaded'), (e) => console.log(e.code + ': ' + e.message))`], {
        cwd: PACKAGE_ROOT,
        encoding: 'utf8',
      });
      t.regex(run.stdout, /^ERR_STRATA_NODE_VERSION: @strata\/runtime needs Node\.js 24 or later; this is v\d+/, entry);
      t.notRegex(run.stdout + run.stderr, /No native build was found/, entry);
    }
    const cli = spawnSync(OLDER_NODE!, [`${PACKAGE_ROOT}/dist/src/cli/strata.js`, 'doctor'], { encoding: 'utf8' });
    t.not(cli.status, 0);
    t.regex(cli.stderr, /^strata: @strata\/runtime needs Node\.js 24 or later/);
  },
);
