// A tiny classic-BPF interpreter for seccomp programs: just the instructions the compiler emits
// (and it refuses any other), so the tests can run the filter against seccomp_data inputs.
import { BPF, SECCOMP_DATA, SECCOMP_RET, type BpfInstruction } from '../src/compile-filter.js';

export interface SeccompInput {
  readonly nr: number;
  readonly arch: number;
  /** Up to six 64-bit arguments; missing ones are 0. */
  readonly args?: readonly (number | bigint)[];
}

/** The verdict, decoded. */
export type Verdict = { action: 'allow' } | { action: 'errno'; errno: number } | { action: 'kill_process' } | { action: 'other'; value: number };

function word(input: SeccompInput, offset: number): number {
  if (offset === SECCOMP_DATA.nr) return input.nr >>> 0;
  if (offset === SECCOMP_DATA.arch) return input.arch >>> 0;
  for (let i = 0; i < 6; i++) {
    const value = BigInt.asUintN(64, BigInt(input.args?.[i] ?? 0));
    if (offset === SECCOMP_DATA.argLow(i)) return Number(value & 0xffffffffn);
    if (offset === SECCOMP_DATA.argHigh(i)) return Number(value >> 32n);
  }
  throw new Error(`load from offset ${offset}, which the tests do not model`);
}

/** Runs the program; returns the raw return value. Throws on a jump out of range or a fall off the end. */
export function run(program: readonly BpfInstruction[], input: SeccompInput): number {
  let a = 0;
  let steps = 0;
  for (let pc = 0; pc < program.length; ) {
    if (++steps > 100_000) throw new Error('runaway program');
    const { code, jt, jf, k } = program[pc]!;
    if (jt > 255 || jf > 255) throw new Error(`jump offset over 255 at ${pc}`);
    switch (code) {
      case BPF.LD_W_ABS:
        a = word(input, k);
        pc++;
        break;
      case BPF.JMP_JA:
        pc += 1 + k;
        break;
      case BPF.JMP_JEQ_K:
        pc += 1 + (a === k >>> 0 ? jt : jf);
        break;
      case BPF.JMP_JGT_K:
        pc += 1 + (a > k >>> 0 ? jt : jf);
        break;
      case BPF.JMP_JGE_K:
        pc += 1 + (a >= k >>> 0 ? jt : jf);
        break;
      case BPF.JMP_JSET_K:
        pc += 1 + ((a & k) >>> 0 !== 0 ? jt : jf);
        break;
      case BPF.RET_K:
        return k >>> 0;
      default:
        throw new Error(`unknown instruction code 0x${code.toString(16)} at ${pc}`);
    }
  }
  throw new Error('fell off the end of the program');
}

export function verdict(program: readonly BpfInstruction[], input: SeccompInput): Verdict {
  const value = run(program, input);
  if (value === SECCOMP_RET.ALLOW) return { action: 'allow' };
  if (value === SECCOMP_RET.KILL_PROCESS) return { action: 'kill_process' };
  if ((value & 0xffff0000) >>> 0 === SECCOMP_RET.ERRNO) return { action: 'errno', errno: value & 0xffff };
  return { action: 'other', value };
}
