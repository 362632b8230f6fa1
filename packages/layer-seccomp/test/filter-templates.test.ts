// The build's compiled filter (dist/src/filter-templates.json) against the compiler itself: the
// bytes the worker installs must be the ones compileFilter gives for its pid, on both
// architectures, with and without io_uring's ring calls; and a file that is not the build's is
// refused with an error that names the fix, never used.
import test from 'ava';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compileFilter, serializeFilter, syscallNumber } from '../src/compile-filter.js';
import {
  programFor,
  readFilterTemplates,
  templateFor,
  TEMPLATES_FILE,
  TEMPLATES_FORMAT,
  WORKER_CALLS,
  workerCallNumber,
  type FilterTemplates,
} from '../src/filter-templates.js';

const ARCHES = ['x86_64', 'aarch64'] as const;
// the smallest, a few typical, the largest pid_t the compiler takes, and some with every byte set
const PIDS = [1, 2, 255, 256, 65_535, 65_536, 123_457, 4_194_304, 0x3fffffff, 0x01020304, 0x3f7f7f7f];

test('the template filled in with a pid is the compiler program for that pid, byte for byte', (t) => {
  const templates = readFilterTemplates();
  for (const arch of ARCHES) {
    for (const allowIoUringEnter of [false, true]) {
      const template = templateFor(templates, arch, allowIoUringEnter);
      t.true(template.pidSlots.length > 0, `${arch}: the pid is in the program (the signal and scheduling rules)`);
      for (const pid of PIDS) {
        const compiled = compileFilter(arch, pid, { allowIoUringEnter });
        t.deepEqual(programFor(template, pid), serializeFilter(compiled.instructions), `${arch} io_uring ${allowIoUringEnter} pid ${pid}`);
        t.is(template.instructions, compiled.instructions.length);
        t.is(template.deniedCalls, compiled.deniedCalls);
        t.is(template.argRules, compiled.argRules);
        t.is(template.highestReviewed, compiled.highestReviewed);
      }
    }
  }
});

test('the two io_uring choices differ only in the ring calls: allowing them shortens the deny list', (t) => {
  const templates = readFilterTemplates();
  for (const arch of ARCHES) {
    const denied = templateFor(templates, arch, false);
    const allowed = templateFor(templates, arch, true);
    t.not(denied.program, allowed.program);
    t.true(allowed.deniedCalls < denied.deniedCalls, arch);
  }
});

test('the numbers the worker half uses are the kernel tables', (t) => {
  const templates = readFilterTemplates();
  for (const arch of ARCHES) {
    for (const name of WORKER_CALLS) t.is(workerCallNumber(templates, arch, name) as number | undefined, syscallNumber(name, arch), `${name} on ${arch}`);
    t.throws(() => workerCallNumber(templates, arch, 'reboot'), { message: /reboot is not among the calls/ });
  }
});

test('programFor refuses what is not a pid', (t) => {
  const template = templateFor(readFilterTemplates(), 'x86_64', false);
  for (const pid of [0, -1, 1.5, 0x40000000, Number.NaN]) t.throws(() => programFor(template, pid), { instanceOf: RangeError }, String(pid));
});

test('a missing, damaged or foreign templates file is refused, naming the file and the fix', (t) => {
  const folder = mkdtempSync(join(tmpdir(), 'strata-seccomp-templates-'));
  t.teardown(() => rmSync(folder, { recursive: true, force: true }));
  const good = JSON.parse(readFileSync(TEMPLATES_FILE, 'utf8')) as FilterTemplates;
  const write = (name: string, value: unknown) => {
    const file = join(folder, name);
    writeFileSync(file, typeof value === 'string' ? value : JSON.stringify(value));
    return file;
  };
  const clone = () => JSON.parse(JSON.stringify(good)) as { arches: Record<string, Record<string, Record<string, unknown>>> };
  const shortened = clone();
  shortened.arches['x86_64']!['ioUringDenied']!['instructions'] = 3;
  const slotFilled = clone();
  const template = slotFilled.arches['aarch64']!['ioUringEnterAllowed']!;
  const bytes = Buffer.from(template['program'] as string, 'base64');
  bytes.writeUInt32LE(4242, (template['pidSlots'] as number[])[0]! * 8 + 4);
  template['program'] = bytes.toString('base64');
  const noNumber = clone();
  delete (noNumber.arches['x86_64']!['numbers'] as Record<string, unknown>)['kill'];
  const cases: [string, string, RegExp][] = [
    ['missing', join(folder, 'none.json'), /cannot be read .*none\.json/],
    ['not JSON', write('text.json', 'seccomp'), /cannot be read/],
    ['another format', write('format.json', { ...good, format: 'strata-seccomp-templates 0' }), new RegExp(`format is not "${TEMPLATES_FORMAT}"`)],
    ['no aarch64', write('arch.json', { format: TEMPLATES_FORMAT, arches: { x86_64: good.arches.x86_64 } }), /no aarch64/],
    ['a length that does not match', write('short.json', shortened), /bytes for 3 instructions/],
    ['a pid slot not left empty', write('slot.json', slotFilled), /pid slots/],
    ['a number missing', write('number.json', noNumber), /no number for kill on x86_64/],
  ];
  for (const [what, file, message] of cases) {
    const error = t.throws(() => readFilterTemplates(file), undefined, what);
    t.regex(error!.message, message, what);
    t.regex(error!.message, /rebuild @strata\/layer-seccomp/, what);
  }
});
