// Writes dist/src/filter-templates.json: the seccomp filter compiled by this build's compiler, per
// architecture and io_uring choice, with the worker's pid left out (src/filter-templates.ts says
// why). Run by the package's build after tsc, before the layer's bundle and code cache.
//
// The pid's slots are found by compiling with two pids and comparing: every other byte must be the
// same, and the template filled in with a third pid must equal that pid's compiled program.
import { writeFileSync } from 'node:fs';
import { compileFilter, serializeFilter, syscallNumber } from '../dist/src/compile-filter.js';
import { programFor, TEMPLATES_FILE, TEMPLATES_FORMAT, WORKER_CALLS } from '../dist/src/filter-templates.js';

function template(arch, allowIoUringEnter) {
  const [a, b] = [1, 2].map((pid) => compileFilter(arch, pid, { allowIoUringEnter }));
  if (a.instructions.length !== b.instructions.length) throw new Error(`${arch}: the program's length depends on the pid`);
  const pidSlots = [];
  const program = serializeFilter(a.instructions);
  a.instructions.forEach((ins, i) => {
    const other = b.instructions[i];
    if (ins.code !== other.code || ins.jt !== other.jt || ins.jf !== other.jf) throw new Error(`${arch}: instruction ${i} depends on the pid`);
    if (ins.k === other.k) return;
    if (ins.k !== 1 || other.k !== 2) throw new Error(`${arch}: instruction ${i} holds a function of the pid, not the pid`);
    pidSlots.push(i);
    program.writeUInt32LE(0, i * 8 + 4);
  });
  const result = {
    program: program.toString('base64'),
    pidSlots,
    instructions: a.instructions.length,
    deniedCalls: a.deniedCalls,
    argRules: a.argRules,
    highestReviewed: a.highestReviewed,
  };
  const pid = 123_457;
  if (!programFor(result, pid).equals(serializeFilter(compileFilter(arch, pid, { allowIoUringEnter }).instructions)))
    throw new Error(`${arch}: the template filled in with pid ${pid} is not that pid's program`);
  return result;
}

const arches = {};
for (const arch of ['x86_64', 'aarch64']) {
  const numbers = {};
  for (const name of WORKER_CALLS) {
    const nr = syscallNumber(name, arch);
    if (nr === undefined) throw new Error(`${name} has no number on ${arch}`);
    numbers[name] = nr;
  }
  arches[arch] = { ioUringDenied: template(arch, false), ioUringEnterAllowed: template(arch, true), numbers };
}
writeFileSync(TEMPLATES_FILE, `${JSON.stringify({ format: TEMPLATES_FORMAT, arches })}\n`);
const sizes = Object.entries(arches).map(([arch, t]) => `${arch} ${t.ioUringDenied.instructions} instructions`);
console.log(`@strata/layer-seccomp: the compiled filter templates (${sizes.join(', ')}) in dist/src/filter-templates.json`);
