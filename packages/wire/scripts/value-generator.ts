/**
 * Random wire values and protocol messages for fuzzing: every kind of the closed set,
 * with a bias toward edge cases (-0, NaN, 2^53, 64-bit bigint borders, `__proto__`
 * keys, invalid Dates, astral characters).
 *
 * @module
 */

import {
  COMMAND_NAMES,
  CONSOLE_LEVELS,
  EXCEPTION_CLASSES,
  MESSAGE_SPECS,
  MESSAGE_TYPES,
  errorPayload,
  type FieldSpec,
  type Message,
  type WireObject,
  type WireValue,
} from '../src/index.js';
import type { Prng } from './prng.js';

const SPECIAL_NUMBERS = [
  0,
  -0,
  1,
  -1,
  23,
  24,
  255,
  256,
  65535,
  65536,
  2 ** 32 - 1,
  2 ** 32,
  -(2 ** 32),
  -(2 ** 32) - 1,
  2 ** 53,
  -(2 ** 53),
  Number.MAX_SAFE_INTEGER,
  Number.MAX_VALUE,
  Number.MIN_VALUE,
  Number.EPSILON,
  NaN,
  Infinity,
  -Infinity,
  0.1,
  -1.5,
];
const SPECIAL_BIGINTS = [0n, 1n, -1n, 2n ** 63n, 2n ** 64n - 1n, 2n ** 64n, -(2n ** 64n), -(2n ** 64n) + 1n, -(2n ** 64n) - 1n, 2n ** 200n];
const SPECIAL_STRINGS = ['', '__proto__', 'constructor', 'prototype', 'toString', '\u0000', '\uFEFF', 'é', '😀', 'a\u{10FFFF}b'];
const SPECIAL_DATES = [0, -1, 1, 8.64e15, -8.64e15, 1_700_000_000_123, 2 ** 32 * 1000 - 1000, NaN];

/** Generates values of the closed set. */
export class ValueGenerator {
  /**
   * @param rng - random source.
   * @param maxDepth - deepest container nesting to produce.
   * @param maxWidth - most children per container.
   */
  constructor(
    private readonly rng: Prng,
    private readonly maxDepth = 4,
    private readonly maxWidth = 6,
  ) {}

  /** Any value, containers included while depth allows. */
  value(depth = 0): WireValue {
    const { rng } = this;
    const containers = depth < this.maxDepth && rng.chance(0.35);
    if (containers) {
      switch (rng.int(4)) {
        case 0:
          return this.array(depth);
        case 1:
          return this.object(depth);
        case 2:
          return new Set(Array.from({ length: rng.int(this.maxWidth) }, () => this.value(depth + 1)));
        default: {
          const map = new Map<WireValue, WireValue>();
          const n = rng.int(this.maxWidth);
          for (let i = 0; i < n; i++) map.set(this.value(depth + 1), this.value(depth + 1));
          return map;
        }
      }
    }
    switch (rng.int(10)) {
      case 0:
        return rng.pick([null, undefined, true, false]);
      case 1:
        return rng.pick(SPECIAL_NUMBERS);
      case 2:
        return rng.int(2) === 0 ? rng.int(100000) - 50000 : (rng.float() - 0.5) * 10 ** rng.int(30);
      case 3:
        return rng.pick(SPECIAL_BIGINTS) + BigInt(rng.int(3) - 1);
      case 4:
        return rng.chance(0.5) ? rng.pick(SPECIAL_STRINGS) : this.string();
      case 5:
        return this.string();
      case 6:
        return rng.bytes(rng.int(40));
      case 7:
        return new Date(rng.chance(0.5) ? rng.pick(SPECIAL_DATES) : Math.round((rng.float() - 0.5) * 2 * 8.64e15));
      case 8:
        return this.array(depth);
      default:
        return this.object(depth);
    }
  }

  /** A random string: ASCII, Latin-1, BMP or astral, sometimes long. */
  string(): string {
    const { rng } = this;
    const length = rng.chance(0.05) ? rng.int(300) : rng.int(20);
    let out = '';
    const plane = rng.int(4);
    for (let i = 0; i < length; i++) {
      if (plane === 0) out += String.fromCharCode(32 + rng.int(95));
      else if (plane === 1) out += String.fromCharCode(rng.int(256));
      else if (plane === 2) {
        const code = rng.int(0xfffe);
        // skip surrogates: only well-formed strings are wire values
        out += String.fromCharCode(code >= 0xd800 && code <= 0xdfff ? 0x41 : code);
      } else out += String.fromCodePoint(0x10000 + rng.int(0x100000 - 0x10000));
    }
    return out;
  }

  /** An array of random values. */
  array(depth: number): WireValue[] {
    return Array.from({ length: this.rng.int(this.maxWidth) }, () => this.value(depth + 1));
  }

  /** A plain object with random (sometimes special) keys. */
  object(depth: number): WireObject {
    const out: WireObject = {};
    const n = this.rng.int(this.maxWidth);
    for (let i = 0; i < n; i++) {
      const key = this.rng.chance(0.2) ? this.rng.pick(SPECIAL_STRINGS) : this.string();
      Object.defineProperty(out, key, { value: this.value(depth + 1), writable: true, enumerable: true, configurable: true });
    }
    return out;
  }

  /** A valid protocol message of a random type. */
  message(): Message {
    const { rng } = this;
    const type = rng.pick(MESSAGE_TYPES);
    const out: Record<string, unknown> = { type };
    for (const [field, spec] of Object.entries(MESSAGE_SPECS[type] as Record<string, FieldSpec>)) {
      const optional = spec.endsWith('?');
      if (optional && rng.chance(0.4)) continue;
      out[field] = this.field((optional ? spec.slice(0, -1) : spec) as FieldSpec);
    }
    return out as Message;
  }

  private field(kind: FieldSpec): unknown {
    const { rng } = this;
    switch (kind) {
      case 'uint':
        return rng.chance(0.5) ? rng.int(100) : rng.int(2 ** 31) * 2 ** rng.int(22);
      case 'string':
        return this.string();
      case 'boolean':
        return rng.chance(0.5);
      case 'value':
        return this.value(1);
      case 'object':
        return this.object(1);
      case 'array':
        return this.array(1);
      case 'error':
        return this.error();
      case 'outcome':
        return rng.chance(0.5) ? { ok: true, value: this.value(2) } : { ok: false, error: this.error() };
      case 'consoleLevel':
        return rng.pick(CONSOLE_LEVELS);
      case 'commandName':
        return rng.pick(COMMAND_NAMES);
      default:
        throw new Error(`no generator for field kind ${kind}`);
    }
  }

  private error(): unknown {
    const { rng } = this;
    return errorPayload(rng.pick(EXCEPTION_CLASSES), this.string(), {
      stack: rng.chance(0.5) ? this.string() : undefined,
      name: rng.chance(0.5) ? rng.pick(['TypeError', 'RangeError', 'Error', this.string()]) : undefined,
    });
  }
}
