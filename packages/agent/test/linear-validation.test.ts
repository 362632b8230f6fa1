// Validation of guest input in the parent is linear-time or bounded: a schema's pattern and
// patternProperties run on the linear engine (RE2), formats on it or under a length cap, and a
// pattern the engine cannot run is refused when the bridge is built, naming the tool and the field.
// The proof that the host's backtracking engine never sees a guest string: RegExp.prototype.exec
// (which test, match, split and replace all go through) is watched while the parent validates.
import test from 'ava';
import { InvalidOption, Runtime } from '@strata/runtime';
import { ToolBridge } from '../src/index.js';
import { FORMAT_LENGTH_CAPS } from '../src/formats.js';
import { linearRegExp, UnsupportedPattern } from '../src/linear-regexp.js';
import { checkNoLeaks } from './helpers/leaks.js';

checkNoLeaks(test);

const EVIL = '^([a-z0-9]+)+$';
const EVIL_KEY = '^k([a-z0-9]+)+$';

/** Runs `work` with native RegExp execution refused where `watched(regexp, input)` says so. */
async function withNativeRegExpWatched<T>(
  watched: (regexp: RegExp, input: string) => boolean,
  work: () => Promise<T>,
): Promise<{ value?: T; error?: unknown; nativeRuns: number }> {
  const exec = RegExp.prototype.exec;
  let nativeRuns = 0;
  RegExp.prototype.exec = function (this: RegExp, input: string) {
    if (typeof input === 'string' && watched(this, input)) {
      nativeRuns++;
      throw new Error(`the host's backtracking engine ran /${this.source}/ on a ${input.length}-character guest string`);
    }
    return Reflect.apply(exec, this, [input]) as RegExpExecArray | null;
  };
  try {
    return { value: await work(), nativeRuns };
  } catch (error) {
    return { error, nativeRuns };
  } finally {
    RegExp.prototype.exec = exec;
  }
}

test('a guest string cannot stall validation: pattern, patternProperties and propertyNames run on the linear engine', async (t) => {
  const bridge = new ToolBridge({
    tools: {
      slug: {
        inputSchema: {
          type: 'object',
          properties: { slug: { type: 'string', pattern: EVIL }, tags: { type: 'object', propertyNames: { pattern: EVIL } } },
          patternProperties: { [EVIL_KEY]: { type: 'number' } },
        },
        execute: (input: unknown) => input,
      },
    },
  });
  const hostile = `${'a'.repeat(20_000)}!`;
  const watched = await withNativeRegExpWatched(
    (regexp) => regexp.source === EVIL || regexp.source === EVIL_KEY,
    async () => {
      const refused = await bridge.call('slug', { slug: hostile }).then(
        () => 'accepted',
        (error: Error) => error.message,
      );
      const key = await bridge.call('slug', { tags: { [hostile]: 1 } }).then(
        () => 'accepted',
        (error: Error) => error.message,
      );
      const matchedKey = await bridge.call('slug', { kabc: 'not a number', [`k${hostile}`]: 1 }).then(
        () => 'accepted',
        (error: Error) => error.message,
      );
      const dash = await bridge.call('slug', { slug: 'abc-not', kabc: 1 }).then(
        () => 'accepted',
        (error: Error) => error.message,
      );
      return { refused, key, matchedKey, dash, accepted: await bridge.call('slug', { slug: 'abc', kabc: 1 }) };
    },
  );
  t.is(watched.nativeRuns, 0, String(watched.error));
  t.is(watched.value?.refused, `tools.slug: input.slug must match pattern "${EVIL}"; the tool was not called`);
  t.regex(watched.value?.key ?? '', /input\.tags property name must be valid/);
  t.regex(watched.value?.matchedKey ?? '', /input\.kabc must be number/);
  t.regex(watched.value?.dash ?? '', /input\.slug must match pattern/);
  t.deepEqual(watched.value?.accepted, { slug: 'abc', kabc: 1 });
});

test('the same from the guest: every call is answered, none by the host’s backtracking engine', async (t) => {
  const bridge = new ToolBridge({
    tools: { slug: { inputSchema: { type: 'object', properties: { slug: { type: 'string', pattern: EVIL } } }, execute: () => 'ran' } },
  });
  await using rt = await Runtime.start();
  await bridge.bind(rt);
  const watched = await withNativeRegExpWatched(
    (regexp) => regexp.source === EVIL,
    () =>
      rt.eval(
        `(async () => { const out = []; for (let n = 24; n <= 40; n += 4) out.push(await tools.slug({ slug: 'a'.repeat(n) + '!' }).then(() => 'ran', (e) => e.name)); return out; })()`,
      ),
  );
  t.is(watched.nativeRuns, 0, String(watched.error));
  t.deepEqual(watched.value, ['TypeError', 'TypeError', 'TypeError', 'TypeError', 'TypeError']);
});

test('every format is linear or capped: no native regular expression sees a hostile 100 KB string', async (t) => {
  const names = [
    'date',
    'time',
    'date-time',
    'iso-time',
    'iso-date-time',
    'duration',
    'uri',
    'uri-reference',
    'uri-template',
    'url',
    'email',
    'hostname',
    'ipv4',
    'ipv6',
    'regex',
    'uuid',
    'json-pointer',
    'json-pointer-uri-fragment',
    'relative-json-pointer',
    'byte',
  ];
  const properties = Object.fromEntries(names.map((name) => [name, { type: 'string', format: name }]));
  const bridge = new ToolBridge({ tools: { f: { inputSchema: { type: 'object', properties }, execute: () => 'ran' } } });
  const n = 100_000;
  const hostile = [
    'a'.repeat(n),
    `http://a@${'::'.repeat(n / 2)}`,
    `a://${'a-'.repeat(n / 2)} `,
    `2020-01-01T${' '.repeat(n)}`,
    `/${'~0'.repeat(n / 2)}!`,
    `P${'1Y'.repeat(n / 2)}`,
    `${'a.'.repeat(n / 2)}-`,
    `${'0:'.repeat(n / 2)}x`,
  ];
  const longestCap = Math.max(...Object.values(FORMAT_LENGTH_CAPS));
  const watched = await withNativeRegExpWatched(
    (_regexp, input) => input.length > longestCap,
    async () => {
      const answers: string[] = [];
      for (const value of hostile) {
        for (const name of names)
          answers.push(
            await bridge.call('f', { [name]: value }).then(
              () => `${name} accepted`,
              (error: Error) => error.message,
            ),
          );
      }
      return answers;
    },
  );
  t.is(watched.nativeRuns, 0, String(watched.error));
  t.is(watched.value?.length, hostile.length * names.length);
  // A long run of letters can be a fine relative reference; a capped format refuses them all.
  const cappedAccepted = (watched.value ?? []).filter((answer) => Object.keys(FORMAT_LENGTH_CAPS).some((name) => answer === `${name} accepted`));
  t.deepEqual(cappedAccepted, []);
});

test('formats keep their meaning on the linear engine', async (t) => {
  const cases: [string, string[], string[]][] = [
    ['email', ['a@example.com', 'first.last+tag@sub.example.org'], ['nobody', 'a@', '@b.c']],
    ['uri', ['https://example.com/a?b=c#d', 'urn:isbn:0451450523'], ['nope', '/relative']],
    ['url', ['https://example.com/a', 'http://8.8.8.8/'], ['http://10.0.0.1/', 'ftp//x']],
    ['hostname', ['example.com', 'a.b.', 'x'], ['-a.com', `${'a'.repeat(64)}.com`, `${'a.'.repeat(127)}aa`]],
    ['duration', ['P1D', 'PT1H', 'P1Y2M3DT4H5M6S', 'P2W'], ['P', 'PT', 'P1DT', '1D']],
    ['date-time', ['2026-01-01T10:00:00Z', '2026-01-01t10:00:00+01:00'], ['tomorrow', '2026-02-30T10:00:00Z']],
    ['byte', ['QUJD', 'QUI=', ''], ['QUJ', 'QU!D', '!!!\nQUJD']],
    ['ipv6', ['::1', '2001:db8::8a2e:370:7334'], [':::', '1::2::3']],
    ['uuid', ['123e4567-e89b-12d3-a456-426614174000'], ['123e4567-e89b-12d3-a456']],
    ['json-pointer', ['', '/a/b~0~1'], ['a', '/~2']],
    ['regex', ['^a+$'], ['(']],
  ];
  for (const [format, valid, invalid] of cases) {
    const bridge = new ToolBridge({ tools: { f: { inputSchema: { type: 'string', format }, execute: (input: unknown) => input } } });
    for (const value of valid) t.is(await bridge.call('f', value), value, `${format}: ${JSON.stringify(value)} is valid`);
    for (const value of invalid)
      await t.throwsAsync(bridge.call('f', value), { message: new RegExp(`must match format "${format}"`) }, `${format}: ${JSON.stringify(value)} is not`);
  }
  const capped = new ToolBridge({ tools: { f: { inputSchema: { type: 'string', format: 'date-time' }, execute: () => 'ran' } } });
  await t.throwsAsync(capped.call('f', `2026-01-01T10:00:00${'0'.repeat(300)}Z`), { message: /must match format "date-time"/ }, 'over its length cap');
});

test('a pattern the linear engine cannot run is refused when the bridge is built, naming the tool and the schema path', (t) => {
  const refused: [Record<string, unknown>, RegExp][] = [
    [
      { type: 'object', properties: { code: { type: 'string', pattern: '^(?=.*\\d)\\w+$' } } },
      /^tools\["lookup"\]\.inputSchema\.properties\.code\.pattern: the pattern "\^\(\?=\.\*\\\\d\)\\\\w\+\$" cannot be matched in linear time: it uses a lookahead/,
    ],
    [
      { type: 'object', properties: { a: { type: 'array', items: { type: 'string', pattern: '(?<!x)y' } } } },
      /^tools\["lookup"\]\.inputSchema\.properties\.a\.items\.pattern: .* a negative lookbehind/,
    ],
    [{ type: 'object', patternProperties: { '^(a)\\1$': {} } }, /^tools\["lookup"\]\.inputSchema\.patternProperties\["\^\(a\)\\\\1\$"\]: .* a backreference/],
    [
      { $defs: { id: { type: 'string', pattern: '(?<q>a)\\k<q>' } }, $ref: '#/$defs/id' },
      /^tools\["lookup"\]\.inputSchema\.\$defs\.id\.pattern: .* a named backreference/,
    ],
    [{ anyOf: [{ type: 'string', pattern: 'a{2000}' }] }, /^tools\["lookup"\]\.inputSchema\.anyOf\[0\]\.pattern: .*RE2\) refuses it: .*repeat count/],
    [{ type: 'string', pattern: '[\\S]' }, /\\S inside a character class/],
    [{ type: 'string', pattern: '(' }, /not a valid ECMAScript regular expression/],
  ];
  for (const [inputSchema, message] of refused) {
    const error = t.throws(() => new ToolBridge({ tools: { lookup: { inputSchema, execute: () => 1 } } }), { instanceOf: InvalidOption, message });
    t.regex(error?.message ?? '', /rewrite the pattern, or check the field in the tool$/);
  }
  t.notThrows(
    () =>
      new ToolBridge({ tools: { data: { inputSchema: { type: 'string', enum: [{ pattern: '(?=x)' }], examples: [{ pattern: '\\1' }] }, execute: () => 1 } } }),
    'data keywords are not schemas',
  );
  t.throws(() => new ToolBridge({ tools: { out: { outputSchema: { type: 'string', pattern: '(?=x)' }, execute: () => 1 } } }), {
    message: /^tools\["out"\]\.outputSchema\.pattern: /,
  });
});

test('the linear engine reads ECMAScript patterns as ECMAScript does', (t) => {
  const cases: [string, string, string[]][] = [
    ['^\\s$', 'u', [' ', '\t', '\u00a0', '\u2028', '\ufeff', '\v', 'a', '']],
    ['^\\S+$', 'u', ['ab', 'a b', '\u3000']],
    ['^.$', 'u', ['a', '\n', '\r', '\u2028', '😀', 'ab']],
    ['^.$', 'su', ['\n', '😀']],
    ['^[\\s\\d]+$', 'u', ['1 2\u00a0', 'x']],
    ['^\\d\\w\\b', 'u', ['1a', '١a', '1é']],
    ['^\\u{1F600}\\u00e9$', 'u', ['😀é', '😀e']],
    ['^\\uD83D\\uDE00$', 'u', ['😀', '\uD83D']],
    ['^[\\uD83D\\uDE00-\\uD83D\\uDE4F]$', 'u', ['😀', '🙏', '🚀']],
    ['^\\p{L}+$', 'u', ['héllo', 'h3']],
    ['^[^]$', 'u', ['\n', '']],
    ['^[]$', 'u', ['', 'a']],
    ['^[[:a]x$', 'u', ['[x', ':x', 'ax', 'x']],
    ['^(?<year>\\d{4})-\\d{2}$', 'u', ['2026-01', '26-01']],
    ['a/b', 'u', ['xa/by', 'ab']],
    ['^abc$', 'u', ['ABC', 'abc', 'abc\n']],
    ['^abc$', 'iu', ['ABC']],
    ['^b$', 'mu', ['a\nb\nc']],
  ];
  for (const [source, flags, inputs] of cases) {
    const native = new RegExp(source, flags);
    const linear = linearRegExp(source, flags);
    for (const input of inputs) t.is(linear.test(input), native.test(input), `/${source}/${flags} on ${JSON.stringify(input)}`);
  }
  t.is(String(linearRegExp('^a+$', 'u')), '/^a+$/u');
  t.throws(() => linearRegExp('\\uD83D', 'u'), { instanceOf: UnsupportedPattern, message: /a lone surrogate/ });
  t.throws(() => linearRegExp('a', 'v'), { instanceOf: UnsupportedPattern, message: /flags "v" are not supported/ });
});
