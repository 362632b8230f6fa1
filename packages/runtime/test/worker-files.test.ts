import test from 'ava';
import { mkdtempSync, rmSync, writeFileSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { opensslConfig } from '../src/layers/worker-files.js';

const MiB = 1 << 20;

/** A fake "binary" of `size` bytes with OpenSSL's version string at `at` (or none), and the directory it names. */
function fakeBinary(size: number, at: number | undefined): { binary: string; conf: string; cleanup: () => void } {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'strata-openssl-')));
  const conf = join(dir, 'openssl.cnf');
  writeFileSync(conf, '# test\n');
  const bytes = Buffer.alloc(size, 0x41);
  if (at !== undefined) bytes.write(`OPENSSLDIR: "${dir}"\0`, at, 'latin1');
  const binary = join(dir, 'node');
  writeFileSync(binary, bytes);
  return { binary, conf, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

for (const [where, size, at] of [
  ['at the start', 3 * MiB, 0],
  ['across the first 1 MiB boundary', 3 * MiB, MiB - 7],
  ['with its path across a boundary', 3 * MiB, 2 * MiB - 20],
  ['near the end of the file', 3 * MiB, 3 * MiB - 200],
  ['in a file smaller than a chunk', 1000, 10],
] as const) {
  test(`opensslConfig finds OPENSSLDIR ${where}, reading the binary in chunks`, (t) => {
    const fake = fakeBinary(size, at);
    try {
      t.is(opensslConfig(fake.binary), fake.conf);
    } finally {
      fake.cleanup();
    }
  });
}

test('opensslConfig: no OPENSSLDIR in the binary, or no openssl.cnf there, is undefined', (t) => {
  const none = fakeBinary(2 * MiB, undefined);
  try {
    t.is(opensslConfig(none.binary), undefined);
  } finally {
    none.cleanup();
  }
  const gone = fakeBinary(MiB, 100);
  rmSync(gone.conf);
  try {
    t.is(opensslConfig(gone.binary), undefined);
  } finally {
    gone.cleanup();
  }
});
