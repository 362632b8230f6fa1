// The compiler flags of the repository's native parts, for plain gcc/g++ builds outside node-gyp:
// `npm run prebuilds` (scripts/prebuild.mjs) and the VM matrix's arm64 build
// (scripts/matrix/cross-build.mjs) use these, so the two cannot drift apart. They are what
// node-gyp's common.gypi gives every target, then each kind's own flags (each binding.gyp; the
// targets are in packages/runtime/native/scripts/targets.mjs).
import { closeSync, existsSync, openSync, readSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/**
 * Node's headers (include/node with node_api.h and v8.h): in node_modules/node-linux-<arch> of
 * `root`, else beside this Node. Node-API and V8's headers are the same for every arch (the
 * node-linux-<cpu> packages differ only in config.gypi, and not in anything an addon is compiled
 * with), so the host's serve a cross-compile too.
 */
export function nodeHeaders(root, arch = process.arch) {
  return [join(root, 'node_modules', `node-linux-${arch}`), resolve(dirname(process.execPath), '..')]
    .map((dir) => join(dir, 'include', 'node'))
    .find((dir) => existsSync(join(dir, 'node_api.h')) && existsSync(join(dir, 'v8.h')));
}

const COMMON = ['-O2', '-fno-omit-frame-pointer', '-pthread', '-D_FILE_OFFSET_BITS=64', '-D_LARGEFILE_SOURCE'];
const C = ['-std=gnu11', '-Wall', '-Wextra', '-Wunused-parameter', '-Werror'];
const CXX = ['-std=gnu++20', '-fno-rtti', '-fno-exceptions', '-fno-strict-aliasing', '-Wall', '-Wextra', '-Wno-unused-parameter', '-Werror'];
const V8 = ['-DUSING_V8_SHARED=1', '-DUSING_UV_SHARED=1', '-DV8_DEPRECATION_WARNINGS=1', '-DV8_ENABLE_WEBASSEMBLY', '-D_GLIBCXX_USE_CXX11_ABI=1'];

/**
 * The compiler (`gcc` or `g++`, to be prefixed with a toolchain's triple) and flags of one target.
 * `sharedHeaders` is packages/runtime/native (strata-napi.h, shared by every addon). `staticPie`:
 * the toolchain links static-pie (packages/runtime/native/scripts/static-pie.mjs), so the launch
 * chain's helpers are linked so, as binding.gyp does then.
 */
export function compileFlags(target, headers, sharedHeaders, { staticPie = false } = {}) {
  const relro = [...(target.relro ? ['-Wl,-z,relro,-z,now'] : []), ...(staticPie && target.chain ? ['-static-pie'] : [])];
  const node = [
    '-fPIC',
    '-shared',
    `-I${headers}`,
    `-I${sharedHeaders}`,
    '-DBUILDING_NODE_EXTENSION',
    `-DNODE_GYP_MODULE_NAME=${target.name.replace(/\.node$/, '')}`,
  ];
  if (target.kind === 'executable') return { compiler: 'gcc', flags: [...COMMON, ...C, ...relro] };
  if (target.kind === 'addon') return { compiler: 'gcc', flags: [...COMMON, ...C, ...node, ...relro] };
  if (target.kind === 'cxx-addon') return { compiler: 'g++', flags: [...COMMON, ...CXX, ...node, ...V8, ...relro] };
  throw new Error(`${target.name}: unknown kind ${target.kind}`);
}

/** e_machine of an ELF file (62 x86-64, 183 AArch64), or undefined for another file. */
export function elfMachine(path) {
  const fd = openSync(path, 'r');
  const head = Buffer.alloc(20);
  readSync(fd, head, 0, 20, 0);
  closeSync(fd);
  return head.readUInt32BE(0) === 0x7f454c46 ? head.readUInt16LE(18) : undefined;
}
