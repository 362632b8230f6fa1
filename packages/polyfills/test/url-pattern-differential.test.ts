import { isDeepStrictEqual } from 'node:util';
import test from 'ava';
import { createSandbox } from './helpers/isolate.js';
import { random } from './helpers/random.js';
import { urlPatternOutcome, type PatternCase } from './helpers/url-pattern.js';

// The guest's URLPattern against Node's own on random patterns and inputs made of the pieces
// where implementations differ: separators, whitespace, escapes, non-ASCII, group syntax. A
// pattern is an allow-list in guest code: it must match what the standard's implementations
// match, no more. Seeded, so a failure replays.

const PORT = ['0', '1', '8', '80', '443', '65535', '65536', ' ', '\t', '\n', '\r', 'x', '/', '?', '#', '\\', ':', '.', '-', '+', '%'];
const HOST = [
  'a',
  'x.com',
  '.',
  '-',
  '_',
  'Ä',
  'ß',
  '%',
  '%41',
  ' ',
  '\t',
  '\n',
  '#',
  '/',
  '?',
  '\\',
  ':',
  '@',
  '[',
  ']',
  '::1',
  '1.2.3.4',
  '0x7f',
  '|',
  '^',
  '<',
  "'",
  '~',
  '!',
  '$',
  '&',
  '=',
  ';',
  ',',
  '\u00ad',
  '\u200b',
  'xn--',
  '1',
];
const PART = [
  '/',
  'a',
  'b',
  ':x',
  ':y',
  '*',
  '?',
  '+',
  '(',
  ')',
  '{',
  '}',
  '\\',
  '.',
  '-',
  '%',
  '%2F',
  ' ',
  '\t',
  '#',
  'é',
  '\u{1F600}',
  '(.*)',
  '([a-z]+)',
  '(\\d+)',
  '[',
  ']',
  '&&',
  '--',
  '|',
  '^',
  '$',
  ':é',
  ':\u{1F600}',
  ':_',
  ':$',
  '\u200c',
];
const TEXT = ['/', 'a', 'b', '.', '..', '-', '%', '%2F', ' ', '\t', '#', '?', 'é', '\u{1F600}', '1', '23', 'x', '/a/b', '\\'];
const COMPONENTS = ['pathname', 'search', 'hash', 'protocol', 'username', 'password', 'hostname'];
const PROTOCOLS = ['http', 'https', 'foo', 'ws', undefined];

function cases(seed: number, count: number): PatternCase[] {
  const next = random(seed);
  const index = (n: number): number => Math.floor(next() * n);
  const pick = <T>(list: readonly T[]): T => list[index(list.length)]!;
  const text = (pieces: readonly string[], max: number): string => Array.from({ length: index(max + 1) }, () => pick(pieces)).join('');
  const made: PatternCase[] = [];
  for (let i = 0; i < count; i++) {
    const protocol = pick(PROTOCOLS);
    const withProtocol = protocol === undefined ? {} : { protocol };
    switch (i % 6) {
      case 0:
        made.push({ pattern: [{ port: text(PORT, 4), ...withProtocol }], inputs: [{ port: text(PORT, 4), ...withProtocol }] });
        break;
      case 1:
        made.push({ pattern: [{ hostname: 'x.com' }], inputs: [{ hostname: text(HOST, 4), ...withProtocol }] });
        break;
      case 2:
        made.push({ pattern: [{ hostname: text(HOST, 3).replace(/\\/g, '\\\\') }], inputs: [{ hostname: text(HOST, 3) }] });
        break;
      case 3: {
        const component = pick(COMPONENTS);
        made.push({ pattern: [{ [component]: text(PART, 4) }], inputs: [{ [component]: text(TEXT, 4) }] });
        break;
      }
      case 4:
        made.push({ pattern: [`https://ex.com${text(PART, 5)}`], inputs: [`https://ex.com${text(TEXT, 4)}`] });
        break;
      // A special protocol only: for another one Node reads the pathname as the path of the URL
      // `protocol:pathname` (so '//h/' is '/'), the standard as an opaque path (README).
      default:
        made.push({ pattern: [{ pathname: `/${text(PART, 3)}` }], inputs: [{ pathname: `/${text(TEXT, 4)}`, ...(protocol === 'foo' ? {} : withProtocol) }] });
    }
  }
  return made;
}

test("the guest's URLPattern agrees with Node's on random patterns and inputs", async (t) => {
  const all = cases(20261202, 6_000);
  const s = await createSandbox();
  let guest: unknown[];
  try {
    guest = JSON.parse(s.value<string>(`JSON.stringify(${JSON.stringify(all)}.map(${urlPatternOutcome.toString()}))`)) as unknown[];
  } finally {
    s.dispose();
  }
  const differences = all.flatMap((c, i) => {
    const node = JSON.parse(JSON.stringify(urlPatternOutcome(c))) as unknown;
    return isDeepStrictEqual(guest[i], node) ? [] : [`${JSON.stringify(c)}: guest ${JSON.stringify(guest[i])}, Node ${JSON.stringify(node)}`];
  });
  t.deepEqual(differences.slice(0, 10), [], `${differences.length} of ${all.length} differ`);
});
