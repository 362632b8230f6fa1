/**
 * Compiles the policy ({@link DENY_GROUPS}, {@link ENOSYS_CALLS}, {@link ARG_RULES}) into a classic
 * BPF program for seccomp, for one architecture and one worker pid. Pure: the same inputs give the
 * same instructions; nothing is installed here.
 *
 * The program, in order:
 *  1. the architecture: anything but the native one is killed (SECCOMP_RET_KILL_PROCESS)
 *  2. numbers ≥ 0x40000000 (the x32 ABI's bit, and every negative number): EPERM
 *  3. numbers above the highest reviewed: ENOSYS
 *  4. the ENOSYS calls (clone3, openat2)
 *  5. the deny list: EPERM
 *  6. the argument rules (clone, socket, ioctl, signals and scheduling of the worker itself,
 *     open/openat: no O_TRUNC unless with O_CREAT | O_EXCL)
 *  7. everything else: allowed
 *
 * @module
 */
import {
  ARG_RULES,
  DENY_GROUPS,
  ENOSYS_CALLS,
  IO_URING_RING_CALLS,
  ERRNO,
  type ArgCondition,
  type ArgRule,
  type DeniedCall,
  type RuleValue,
} from './policy.js';
import { X32_SYSCALL_BIT } from './constants.js';
import { HIGHEST_REVIEWED, SYSCALLS, type Arch } from './syscall-table.js';

/** One classic BPF instruction (struct sock_filter). */
export interface BpfInstruction {
  readonly code: number;
  readonly jt: number;
  readonly jf: number;
  readonly k: number;
}

/** Instruction codes (linux/bpf_common.h) the compiler emits. */
export const BPF = Object.freeze({
  LD_W_ABS: 0x20, // BPF_LD | BPF_W | BPF_ABS
  JMP_JA: 0x05, // BPF_JMP | BPF_JA
  JMP_JEQ_K: 0x15, // BPF_JMP | BPF_JEQ | BPF_K
  JMP_JGT_K: 0x25, // BPF_JMP | BPF_JGT | BPF_K
  JMP_JGE_K: 0x35, // BPF_JMP | BPF_JGE | BPF_K
  JMP_JSET_K: 0x45, // BPF_JMP | BPF_JSET | BPF_K
  RET_K: 0x06, // BPF_RET | BPF_K
});

/** seccomp return values (linux/seccomp.h). */
export const SECCOMP_RET = Object.freeze({
  KILL_PROCESS: 0x80000000,
  KILL_THREAD: 0x00000000,
  TRAP: 0x00030000,
  ERRNO: 0x00050000,
  USER_NOTIF: 0x7fc00000,
  TRACE: 0x7ff00000,
  LOG: 0x7ffc0000,
  ALLOW: 0x7fff0000,
});

/** AUDIT_ARCH_* (linux/audit.h): what seccomp_data.arch holds for native calls. */
export const AUDIT_ARCH: Readonly<Record<Arch, number>> = Object.freeze({ x86_64: 0xc000003e, aarch64: 0xc00000b7 });

export { archOf, X32_SYSCALL_BIT } from './constants.js';

/** Offsets in struct seccomp_data: nr, arch, instruction_pointer, then args[6] (u64, little-endian on both architectures). */
export const SECCOMP_DATA = Object.freeze({ nr: 0, arch: 4, argLow: (i: number) => 16 + 8 * i, argHigh: (i: number) => 20 + 8 * i });

/** The compiled program and what went into it. */
export interface CompiledFilter {
  readonly arch: Arch;
  readonly pid: number;
  readonly instructions: readonly BpfInstruction[];
  /** How many system calls are answered EPERM or ENOSYS outright. */
  readonly deniedCalls: number;
  /** How many calls have argument rules. */
  readonly argRules: number;
  readonly highestReviewed: number;
  /** Whether io_uring_enter/io_uring_register are allowed (for rings libuv made before the filter). */
  readonly ioUringEnterAllowed: boolean;
}

/** Options of {@link compileFilter}. */
export interface CompileOptions {
  /**
   * Allow io_uring_enter and io_uring_register (never io_uring_setup): needed when libuv already
   * made its rings, as it does unless io_uring_setup was refused before Node started. Default false.
   */
  readonly allowIoUringEnter?: boolean;
}

const errnoOf = (name: keyof typeof ERRNO) => (SECCOMP_RET.ERRNO | ERRNO[name]) >>> 0;
const insn = (code: number, k: number, jt = 0, jf = 0): BpfInstruction => Object.freeze({ code, jt, jf, k: k >>> 0 });
const ret = (k: number) => insn(BPF.RET_K, k);
const load = (offset: number) => insn(BPF.LD_W_ABS, offset);

/** The number of `name` on `arch`, or undefined where the call does not exist there. Throws for a name the tables do not know. */
export function syscallNumber(name: string, arch: Arch): number | undefined {
  const entry = SYSCALLS[name];
  if (!entry) throw new Error(`seccomp policy: no system call named ${JSON.stringify(name)} in the kernel's tables`);
  return entry[arch] ?? undefined;
}

function checkPid(pid: number): void {
  if (!Number.isInteger(pid) || pid < 1 || pid > 0x3fffffff) throw new RangeError(`compileFilter: pid must be a positive integer pid_t; got ${pid}`);
}

/**
 * Jumps to one shared return from a list of "jeq nr" tests, in chunks, because a conditional
 * jump reaches at most 255 instructions ahead: `jeq n1 → R` … `jeq nk → R`, `ja +1`, `R: ret`.
 * A is the system call number throughout.
 */
function denyChunks(numbers: readonly number[], verdict: number): BpfInstruction[] {
  const out: BpfInstruction[] = [];
  const CHUNK = 200;
  for (let start = 0; start < numbers.length; start += CHUNK) {
    const chunk = numbers.slice(start, start + CHUNK);
    for (const [i, nr] of chunk.entries()) out.push(insn(BPF.JMP_JEQ_K, nr, chunk.length - i, 0));
    out.push(insn(BPF.JMP_JA, 1), ret(verdict));
  }
  return out;
}

const resolve = (value: RuleValue, pid: number) => (value === 'pid' ? pid : value) >>> 0;

/** Tests of one condition: jump to `pass` (instructions from the end of this block) when one of the values matches, else fall through to `fail`. */
function conditionBlock(condition: ArgCondition, pid: number): { body: BpfInstruction[]; matchTargets: number[] } {
  const body: BpfInstruction[] = [load(SECCOMP_DATA.argLow(condition.arg))];
  const matchTargets: number[] = [];
  for (const value of condition.values) {
    matchTargets.push(body.length);
    body.push(insn(BPF.JMP_JEQ_K, resolve(value, pid)));
  }
  return { body, matchTargets };
}

/**
 * The body of one argument rule; every path ends in a return. Entered with the rule's call
 * matched; the caller skips it otherwise.
 */
function ruleBody(rule: ArgRule, pid: number): BpfInstruction[] {
  const ALLOW = ret(SECCOMP_RET.ALLOW);
  const EPERM = ret(errnoOf('EPERM'));
  switch (rule.kind) {
    case 'clone-thread': {
      // ld flags; any forbidden bit → EPERM; each required bit missing → EPERM; else ALLOW
      const bits = requiredBits(rule.required);
      return [
        load(SECCOMP_DATA.argLow(0)),
        insn(BPF.JMP_JSET_K, rule.forbidden, bits.length + 1, 0),
        ...bits.map((bit, i) => insn(BPF.JMP_JSET_K, bit, 0, bits.length - i)),
        ALLOW,
        EPERM,
      ];
    }
    case 'deny-if-bits': {
      // ld arg; none of `bits` → ALLOW; then each bit of `unlessAll` missing → EPERM; else ALLOW.
      // (A bit test is BPF_JSET: jump when (A & k) != 0, on the 32-bit word loaded.)
      const unless = requiredBits(rule.unlessAll ?? 0);
      return [
        load(SECCOMP_DATA.argLow(rule.arg)),
        insn(BPF.JMP_JSET_K, rule.bits, 1, 0),
        ALLOW,
        ...unless.map((bit, i) => insn(BPF.JMP_JSET_K, bit, 0, unless.length - i)),
        ...(unless.length > 0 ? [ALLOW] : []),
        EPERM,
      ];
    }
    case 'deny-if': {
      const { body, matchTargets } = conditionBlock(rule.condition, pid);
      // matches → EPERM (after ALLOW), no match → ALLOW
      const end = body.length;
      return [...body.map((ins, i) => (matchTargets.includes(i) ? insn(ins.code, ins.k, end - i, 0) : ins)), ALLOW, EPERM];
    }
    case 'allow-if': {
      // Each condition: a match jumps to the next condition (or ALLOW); no match falls to EPERM.
      const blocks = rule.conditions.map((c) => conditionBlock(c, pid));
      const total = blocks.reduce((n, b) => n + b.body.length + 1, 0); // each block + its "ja EPERM"
      const out: BpfInstruction[] = [];
      for (const block of blocks) {
        const nextStart = out.length + block.body.length + 1; // after this block's body and its ja
        block.body.forEach((ins, i) => {
          const here = out.length;
          out.push(block.matchTargets.includes(i) ? insn(ins.code, ins.k, nextStart - here - 1, 0) : ins);
        });
        // no match: jump to EPERM, which sits right after ALLOW at the end
        out.push(insn(BPF.JMP_JA, total - out.length));
      }
      return [...out, ALLOW, EPERM];
    }
  }
}

function requiredBits(mask: number): number[] {
  const bits: number[] = [];
  for (let b = 0; b < 32; b++) if ((mask >>> b) & 1) bits.push((1 << b) >>> 0);
  return bits;
}

/** The numbers of `calls` on `arch`, skipping calls absent there (a call absent but not marked so is an error). */
function numbersOf(calls: readonly DeniedCall[], arch: Arch): number[] {
  const numbers: number[] = [];
  for (const call of calls) {
    const nr = syscallNumber(call.name, arch);
    const markedAbsent = call.absentOn?.includes(arch) ?? false;
    if (nr === undefined && !markedAbsent) throw new Error(`seccomp policy: ${call.name} does not exist on ${arch}; mark it absentOn: ['${arch}']`);
    if (nr !== undefined && markedAbsent) throw new Error(`seccomp policy: ${call.name} is marked absent on ${arch} but is number ${nr} there`);
    if (nr !== undefined) numbers.push(nr);
  }
  return numbers;
}

/**
 * Compiles the policy for `arch`, baking in the worker's `pid` (the signal and scheduling rules
 * allow only it).
 *
 * @throws Error when the policy names a call the kernel's tables do not know, or the program would be too long.
 */
export function compileFilter(arch: Arch, pid: number, options: CompileOptions = {}): CompiledFilter {
  if (arch !== 'x86_64' && arch !== 'aarch64') throw new RangeError(`compileFilter: unsupported architecture ${JSON.stringify(arch)}`);
  checkPid(pid);
  const highest = HIGHEST_REVIEWED[arch];
  const allowIoUringEnter = options.allowIoUringEnter === true;
  const deniedCalls = [...DENY_GROUPS.flatMap((g) => g.calls), ...(allowIoUringEnter ? [] : IO_URING_RING_CALLS)];
  const denied = [...new Set(numbersOf(deniedCalls, arch))];
  const enosys = [...new Set(numbersOf(ENOSYS_CALLS, arch))];
  const program: BpfInstruction[] = [
    load(SECCOMP_DATA.arch),
    insn(BPF.JMP_JEQ_K, AUDIT_ARCH[arch], 1, 0),
    ret(SECCOMP_RET.KILL_PROCESS),
    load(SECCOMP_DATA.nr),
    insn(BPF.JMP_JGE_K, X32_SYSCALL_BIT, 0, 1),
    ret(errnoOf('EPERM')),
    insn(BPF.JMP_JGT_K, highest, 0, 1),
    ret(errnoOf('ENOSYS')),
    ...denyChunks(enosys, errnoOf('ENOSYS')),
    ...denyChunks(denied, errnoOf('EPERM')),
  ];
  let argRules = 0;
  for (const rule of ARG_RULES) {
    const nr = syscallNumber(rule.name, arch);
    const markedAbsent = rule.absentOn?.includes(arch) ?? false;
    if (nr !== undefined && markedAbsent)
      throw new Error(`seccomp policy: the argument rule's ${rule.name} is marked absent on ${arch} but is number ${nr} there`);
    if (markedAbsent) continue;
    if (nr === undefined) throw new Error(`seccomp policy: the argument rule's ${rule.name} does not exist on ${arch}; mark it absentOn: ['${arch}']`);
    if (denied.includes(nr) || enosys.includes(nr)) throw new Error(`seccomp policy: ${rule.name} is both denied and given an argument rule`);
    const body = ruleBody(rule, pid);
    if (body.length > 255) throw new Error(`seccomp policy: the rule for ${rule.name} is too long`);
    program.push(insn(BPF.JMP_JEQ_K, nr, 0, body.length), ...body);
    argRules++;
  }
  program.push(ret(SECCOMP_RET.ALLOW));
  if (program.length > 4096) throw new Error(`seccomp policy: ${program.length} instructions is over BPF_MAXINSNS (4096)`);
  return Object.freeze({
    arch,
    pid,
    instructions: Object.freeze(program),
    deniedCalls: denied.length + enosys.length,
    argRules,
    highestReviewed: highest,
    ioUringEnterAllowed: allowIoUringEnter,
  });
}

/** struct sock_filter[] as bytes: u16 code, u8 jt, u8 jf, u32 k, little-endian (x86_64 and aarch64 Linux are both little-endian). */
export function serializeFilter(instructions: readonly BpfInstruction[]): Buffer {
  const buffer = Buffer.alloc(instructions.length * 8);
  instructions.forEach((ins, i) => {
    buffer.writeUInt16LE(ins.code, i * 8);
    buffer.writeUInt8(ins.jt, i * 8 + 2);
    buffer.writeUInt8(ins.jf, i * 8 + 3);
    buffer.writeUInt32LE(ins.k >>> 0, i * 8 + 4);
  });
  return buffer;
}
