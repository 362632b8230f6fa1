/**
 * Regular expressions that run in time linear in their input, for what the parent matches against
 * guest data: a schema's `pattern` and `patternProperties` (written by a tool's author or an
 * upstream MCP server) and the string formats. ECMAScript patterns run on RE2 (`re2js`, pure
 * JavaScript); the constructs RE2 cannot run in linear time (lookaround, backreferences) are
 * refused when the pattern is compiled, never at match time.
 *
 * @module
 */
import { RE2JS } from 're2js';

/** A compiled pattern: what ajv needs of a regular expression. */
export interface LinearRegExp {
  /** Whether the pattern matches somewhere in `text` (as `RegExp.prototype.test`), in time linear in its length. */
  test(text: string): boolean;
  /** `/source/flags`, as a `RegExp` prints (ajv keys its cache by it). */
  toString(): string;
}

/** Why a pattern cannot run on the linear engine: `reason` says which construct, for a message. */
export class UnsupportedPattern extends Error {
  override readonly name = 'UnsupportedPattern';
  constructor(
    readonly source: string,
    readonly reason: string,
  ) {
    super(`the pattern ${JSON.stringify(source)} cannot be matched in linear time: ${reason}`);
  }
}

// ECMAScript's \s (WhiteSpace and LineTerminator); RE2's own \s is only [\t\n\f\r ].
const ES_SPACE = '\\t\\n\\v\\f\\r \\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{3000}\\x{feff}';
// ECMAScript's `.` without the s flag; RE2's excludes only \n.
const ES_DOT = '[^\\n\\r\\x{2028}\\x{2029}]';

/**
 * Compiles an ECMAScript pattern (with the flags `u`, `i`, `m`, `s`; `g` and `y` do not change
 * what `test` answers from the start) for the linear engine.
 *
 * @throws {@link UnsupportedPattern} for a pattern that is not valid ECMAScript, or that uses what
 *   RE2 cannot run: lookahead and lookbehind, backreferences, a repeat count over 1000, a Unicode
 *   property RE2 does not know (`\p{L}` and scripts such as `\p{Greek}` work).
 */
export function linearRegExp(source: string, flags = ''): LinearRegExp {
  if (typeof source !== 'string') throw new UnsupportedPattern(String(source), 'a pattern must be a string');
  if (!/^[gimsuy]*$/.test(flags)) throw new UnsupportedPattern(source, `the flags ${JSON.stringify(flags)} are not supported (only g, i, m, s, u, y)`);
  try {
    // The ECMAScript grammar first, so that RE2 is never asked to guess at a pattern JavaScript would refuse.
    new RegExp(source, flags.includes('u') ? 'u' : '');
  } catch (error) {
    throw new UnsupportedPattern(source, `it is not a valid ECMAScript regular expression (${(error as Error).message})`);
  }
  const re2Source = RE2JS.translateRegExp(toRe2Syntax(source, flags.includes('s')));
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(re2Source, (flags.includes('i') ? RE2JS.CASE_INSENSITIVE : 0) | (flags.includes('m') ? RE2JS.MULTILINE : 0));
  } catch (error) {
    throw new UnsupportedPattern(source, `the linear engine (RE2) refuses it: ${(error as Error).message}`);
  }
  const printed = `/${source}/${flags}`;
  return { test: (text: string) => compiled.test(text), toString: () => printed };
}

/**
 * Rewrites what means one thing in ECMAScript and another in RE2 (`.`, `\s`, `\S`, `[` inside a
 * class), and refuses what RE2 cannot run, naming it. One pass over the pattern.
 */
function toRe2Syntax(source: string, dotAll: boolean): string {
  let out = '';
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const ch = source[i]!;
    if (ch === '\\') {
      const next = source[i + 1] ?? '';
      if (next >= '1' && next <= '9') throw new UnsupportedPattern(source, `it uses a backreference (\\${next}); RE2 has none`);
      if (next === 'k') throw new UnsupportedPattern(source, 'it uses a named backreference (\\k<…>); RE2 has none');
      const surrogate = /^u([dD][89abAB][0-9a-fA-F]{2})(?:\\u([dD][c-fC-F][0-9a-fA-F]{2}))?/.exec(source.slice(i + 1, i + 12));
      if (surrogate !== null) {
        // A pair of \u escapes is one code point in ECMAScript; RE2 would see two surrogates.
        if (surrogate[2] === undefined) throw new UnsupportedPattern(source, `it escapes a lone surrogate (\\${surrogate[0]}); RE2 matches code points`);
        const codePoint = ((parseInt(surrogate[1]!, 16) - 0xd800) << 10) + (parseInt(surrogate[2], 16) - 0xdc00) + 0x10000;
        out += `\\x{${codePoint.toString(16)}}`;
        i += surrogate[0].length;
        continue;
      }
      i++;
      if (next === 's') out += inClass ? ES_SPACE : `[${ES_SPACE}]`;
      else if (next === 'S') {
        if (inClass) throw new UnsupportedPattern(source, 'it uses \\S inside a character class; write the class without it');
        out += `[^${ES_SPACE}]`;
      } else out += ch + next;
      continue;
    }
    if (inClass) {
      if (ch === ']') inClass = false;
      // In ECMAScript `[` inside a class is itself; RE2 would read `[:alpha:]` as a POSIX class.
      out += ch === '[' ? '\\[' : ch;
      continue;
    }
    if (ch === '[') {
      inClass = true;
      out += ch;
      // A `]` right after `[` or `[^` closes the class in ECMAScript (`[]`, `[^]`).
      if (source[i + 1] === '^') {
        out += '^';
        i++;
      }
      continue;
    }
    if (ch === '(' && source[i + 1] === '?') {
      const kind = source.startsWith('(?=', i)
        ? 'a lookahead (?=…)'
        : source.startsWith('(?!', i)
          ? 'a negative lookahead (?!…)'
          : source.startsWith('(?<=', i)
            ? 'a lookbehind (?<=…)'
            : source.startsWith('(?<!', i)
              ? 'a negative lookbehind (?<!…)'
              : undefined;
      if (kind !== undefined) throw new UnsupportedPattern(source, `it uses ${kind}; RE2 has no lookaround`);
    }
    out += ch === '.' ? (dotAll ? '(?s:.)' : ES_DOT) : ch;
  }
  return out;
}
