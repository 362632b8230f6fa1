// The launch chain's helpers (strata-exec and the default layers' links) are exec'd at every
// worker start: where the compiler links static-pie (native/scripts/static-pie.mjs), the build
// links them so, with no program interpreter to load and relocate libc (about 0.8 ms an exec on
// this project's VM), and position-independent (ET_DYN), so that ASLR still moves them.
import test from 'ava';
import { closeSync, openSync, readSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
// @ts-expect-error: plain JavaScript of the native build, without types
import { staticPieLinks } from '../../native/scripts/static-pie.mjs';
// @ts-expect-error: plain JavaScript of the native build, without types
import { NATIVE_TARGETS } from '../../native/scripts/targets.mjs';
import { nativeArtifactPath } from '../src/native/native-artifact.js';
import { platformTest } from '../src/testing/index.js';

const linux = process.platform === 'linux';
const canLink = linux && (staticPieLinks as () => boolean)();
const maybe = platformTest(test, {
  feature: 'static-pie',
  available: canLink,
  reason: linux ? 'the C compiler cannot link static-pie here (no libc.a): the helpers are linked dynamically' : 'Linux only',
});

const ET_DYN = 3;
const PT_INTERP = 3;

/** e_type, and whether a PT_INTERP program header is present, of a 64-bit little-endian ELF file. */
function elfShape(path: string): { type: number; interpreter: boolean } {
  const fd = openSync(path, 'r');
  try {
    const head = Buffer.alloc(64);
    readSync(fd, head, 0, 64, 0);
    if (head.readUInt32BE(0) !== 0x7f454c46 || head[4] !== 2 || head[5] !== 1) throw new Error(`${path} is not a 64-bit little-endian ELF file`);
    const phoff = Number(head.readBigUInt64LE(32));
    const phentsize = head.readUInt16LE(54);
    const phnum = head.readUInt16LE(56);
    const table = Buffer.alloc(phentsize * phnum);
    readSync(fd, table, 0, table.length, phoff);
    let interpreter = false;
    for (let i = 0; i < phnum; i++) if (table.readUInt32LE(i * phentsize) === PT_INTERP) interpreter = true;
    return { type: head.readUInt16LE(16), interpreter };
  } finally {
    closeSync(fd);
  }
}

const requireHere = createRequire(import.meta.url);
const RUNTIME_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const helpers = Object.entries(NATIVE_TARGETS as Record<string, { name: string; chain?: boolean }[]>).flatMap(([pkg, targets]) =>
  targets.filter((t) => t.chain === true).map((t) => ({ pkg, name: t.name })),
);

test('the launch chain has its four helpers', (t) => {
  t.deepEqual(helpers.map((h) => h.name).sort(), ['strata-emptyroot', 'strata-exec', 'strata-landlock', 'strata-no-io-uring']);
});

for (const { pkg, name } of helpers) {
  maybe(`${name} (${pkg}) is static-pie: position-independent, no program interpreter`, (t) => {
    const root = pkg === '@strata/runtime' ? RUNTIME_ROOT : dirname(requireHere.resolve(`${pkg}/package.json`));
    const shape = elfShape(nativeArtifactPath(root, name));
    t.false(shape.interpreter, 'no PT_INTERP: nothing to load before main');
    t.is(shape.type, ET_DYN, 'ET_DYN: ASLR places it');
  });
}
