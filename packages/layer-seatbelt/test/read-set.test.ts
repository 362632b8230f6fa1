// The read set, computed on this machine (it only resolves paths: it runs on any platform).
import test from 'ava';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { checkProfile, checkProfilePath, seatbeltProfile } from '../src/profile.js';
import { PACKAGE_ROOT, checkReadPaths, computeReadRules } from '../src/read-set.js';
import { LayerConfigError } from '@strata/runtime/layers';

const beneath = (path: string, parent: string) => path === parent || path.startsWith(`${parent}/`);

test('readPaths must be absolute strings the profile can hold', (t) => {
  t.deepEqual(checkReadPaths(undefined), []);
  t.deepEqual(checkReadPaths(['/data', '/srv/file.json']), ['/data', '/srv/file.json']);
  t.throws(() => checkReadPaths(['data']), {
    instanceOf: LayerConfigError,
    code: 'ERR_STRATA_LAYER_CONFIG',
    message: /seatbelt\(\): option "readPaths": read paths must be absolute/,
  });
  t.throws(() => checkReadPaths('/data'), { instanceOf: LayerConfigError, code: 'ERR_STRATA_LAYER_CONFIG', message: /must be an array of strings/ });
  t.throws(() => checkReadPaths([1]), { instanceOf: LayerConfigError, code: 'ERR_STRATA_LAYER_CONFIG', message: /must be an array of strings/ });
  t.throws(() => checkReadPaths(['/a\0b']), { instanceOf: LayerConfigError, code: 'ERR_STRATA_LAYER_CONFIG', message: /NUL/ });
  t.throws(() => checkReadPaths(['/a"b']), { instanceOf: LayerConfigError, code: 'ERR_STRATA_LAYER_CONFIG', message: /double quote/ });
  t.throws(() => checkReadPaths(['/']), { instanceOf: LayerConfigError, code: 'ERR_STRATA_LAYER_CONFIG', message: /root directory/ });
});

test('computeReadRules: the Node binary, the dependencies, the @strata packages and this layer; nothing broad', (t) => {
  const rules = computeReadRules({ execPath: process.execPath, packageRoot: PACKAGE_ROOT, extra: [] });
  t.deepEqual(rules[0], { path: realpathSync(process.execPath), kind: 'literal', why: "Node's binary (process.execPath)" });
  const subpaths = rules.filter((r) => r.kind === 'subpath').map((r) => r.path);
  const readable = (path: string) => subpaths.some((s) => beneath(realpathSync(path), s));
  t.true(readable(dirname(new URL(import.meta.resolve('@strata/runtime')).pathname)), '@strata/runtime');
  for (const pkg of ['isolated-vm', 'cbor-x', 'tsyringe', 'reflect-metadata', '@strata/wire', '@strata/polyfills'])
    t.true(readable(new URL(import.meta.resolve(pkg)).pathname), pkg);
  t.true(subpaths.includes(realpathSync(PACKAGE_ROOT)));
  for (const broad of ['/', '/etc', '/usr', '/usr/local', '/tmp', '/private', '/Users', '/home', '/dev', '/System', '/Library'])
    t.false(
      rules.some((r) => r.path === broad),
      broad,
    );
  for (const rule of rules) t.notThrows(() => checkProfilePath(rule.path), rule.path);
  // no dynamic libraries: every one the worker loads is mapped before the profile
  t.false(rules.some((r) => /\.(so(\.\d+)*|dylib)$/.test(r.path)));
  t.deepEqual(checkProfile(seatbeltProfile({ reads: rules })), []);
});

test('computeReadRules: readPaths by kind, as real paths; a missing one is refused', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'strata-seatbelt-reads-'));
  try {
    const file = join(dir, 'data.json');
    writeFileSync(file, '{}');
    const rules = computeReadRules({ execPath: process.execPath, packageRoot: PACKAGE_ROOT, extra: [dir, file] });
    t.deepEqual(
      rules.slice(-2).map((r) => [r.kind, r.path, r.why]),
      [
        ['subpath', realpathSync(dir), 'the layer option readPaths'],
        ['literal', realpathSync(file), 'the layer option readPaths'],
      ],
    );
    t.throws(() => computeReadRules({ execPath: process.execPath, packageRoot: PACKAGE_ROOT, extra: [join(dir, 'missing')] }), {
      message: /readPaths entry ".*missing" does not exist/,
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
