// Pure tests of the profile: what it allows, what it never allows, how paths are written, what is refused.
import test from 'ava';
import {
  ALLOWED_OPERATIONS,
  FORBIDDEN_OPERATIONS,
  SYSCTL_NAMES,
  checkProfile,
  normalizeReads,
  parseSbpl,
  profileRules,
  seatbeltProfile,
  type ReadRule,
  type SbplForm,
} from '../src/profile.js';

const READS: ReadRule[] = [
  { path: '/opt/node/bin/node', kind: 'literal' },
  { path: '/work/app/node_modules', kind: 'subpath' },
  { path: '/work/app/packages/runtime', kind: 'subpath' },
  { path: '/Users/me/data.json', kind: 'literal' },
];

type List = readonly SbplForm[];
const lists = (text: string): List[] => parseSbpl(text).filter((f): f is List => Array.isArray(f));
const allows = (text: string) => lists(text).filter((f) => f[0] === 'allow');
const operationsOf = (form: List) => form.slice(1).filter((x): x is string => typeof x === 'string');
const filtersOf = (form: List) => form.slice(1).filter((x): x is List => Array.isArray(x));
/** The file-read rule's filters as [kind, path] pairs. */
const readFilters = (text: string): [string, string][] =>
  allows(text)
    .filter((f) => operationsOf(f).includes('file-read-data'))
    .flatMap((f) => filtersOf(f).map((x): [string, string] => [x[0] as string, (x[1] as { string: string }).string]));

test('the profile starts with (version 1) then (deny default), and passes its own check', (t) => {
  const text = seatbeltProfile({ reads: READS });
  const forms = lists(text);
  t.deepEqual(forms[0], ['version', '1']);
  t.deepEqual(forms[1], ['deny', 'default']);
  t.true(text.startsWith('(version 1)\n'));
  t.deepEqual(checkProfile(text), []);
});

test('no allow rule names network, fork, exec, writes, Mach lookups or any operation outside the allowed list', (t) => {
  for (const reads of [READS, []]) {
    const text = seatbeltProfile({ reads });
    for (const form of allows(text)) {
      for (const operation of operationsOf(form)) {
        t.true(ALLOWED_OPERATIONS.includes(operation), operation);
        t.false(FORBIDDEN_OPERATIONS.includes(operation), operation);
        t.notRegex(operation, /^(network|process-fork|process-exec|file-write|mach-|ipc-|iokit-|system-socket|default$)/);
      }
      t.true(filtersOf(form).length > 0, `an allow without filters allows everything: ${JSON.stringify(form)}`);
    }
    t.notRegex(text, /\(allow [^\n]*(network|process-fork|process-exec|file-write|mach-lookup)/);
  }
});

test('every read path appears once, as the rule of its kind, inside the file-read rule', (t) => {
  const text = seatbeltProfile({ reads: READS });
  t.deepEqual(readFilters(text), [
    ['literal', '/Users/me/data.json'],
    ['literal', '/opt/node/bin/node'],
    ['subpath', '/work/app/node_modules'],
    ['subpath', '/work/app/packages/runtime'],
  ]);
  const rule = allows(text).find((f) => operationsOf(f).includes('file-read-data'))!;
  t.deepEqual(operationsOf(rule), ['file-read-data', 'file-read-metadata']);
  t.true(text.includes('  (subpath "/work/app/node_modules")\n'));
  t.true(text.includes('  (literal "/opt/node/bin/node")\n'));
});

test('with no read paths there is no file rule at all (an unfiltered allow would allow every read)', (t) => {
  const text = seatbeltProfile({ reads: [] });
  t.deepEqual(readFilters(text), []);
  t.notRegex(text, /file-read/);
  t.deepEqual(checkProfile(text), []);
});

test('sysctls: only the listed names, each with a reason; no uname, host name or process sysctls', (t) => {
  const text = seatbeltProfile({ reads: [] });
  const rule = allows(text).find((f) => operationsOf(f).includes('sysctl-read'))!;
  const names = filtersOf(rule).map((f) => {
    t.is(f[0], 'sysctl-name');
    return (f[1] as { string: string }).string;
  });
  t.deepEqual(
    names,
    SYSCTL_NAMES.map((s) => s.name),
  );
  t.deepEqual(names, ['hw.activecpu', 'hw.memsize', 'hw.ncpu', 'hw.pagesize', 'hw.pagesize_compat']);
  for (const s of SYSCTL_NAMES) t.true(s.why.length > 10, s.name);
  t.notRegex(text, /sysctl-name-prefix|kern\.|"security\./);
});

test('signals and process information: the worker itself only; the default-allowed ones are denied first', (t) => {
  const rules = profileRules({ reads: READS });
  t.deepEqual(rules[0], { action: 'deny', operations: ['default'], filters: [], why: rules[0]!.why });
  t.deepEqual(rules[1]!.operations, ['process-info*', 'iokit-get-properties', 'nvram*']);
  t.is(rules[1]!.action, 'deny');
  const signal = rules.find((r) => r.operations.includes('signal'))!;
  t.deepEqual(signal.filters, [{ kind: 'target', value: 'self' }]);
  const info = rules.find((r) => r.operations.includes('process-info-pidinfo'))!;
  t.deepEqual(info.filters, [{ kind: 'target', value: 'self' }]);
  // the self allows come after the process-info* deny: in SBPL the later rule wins
  t.true(rules.indexOf(info) > 1);
  for (const rule of rules) t.true(rule.why.length > 10, rule.operations.join(' '));
  const text = seatbeltProfile({ reads: READS });
  t.true(text.includes('(allow signal\n  (target self))\n'));
  t.is(text.match(/\(target /g)?.length, 2);
});

test('deterministic: the same reads in any order, with duplicates or entries beneath a subpath, give the same text', (t) => {
  const text = seatbeltProfile({ reads: READS });
  t.is(seatbeltProfile({ reads: READS }), text);
  t.is(seatbeltProfile({ reads: [...READS].reverse() }), text);
  const noisy: ReadRule[] = [
    ...READS,
    { path: '/work/app/node_modules/isolated-vm', kind: 'subpath' },
    { path: '/work/app/node_modules/a.node', kind: 'literal' },
    { path: '/work/app/node_modules', kind: 'literal' },
    { path: '/opt/node/bin/node', kind: 'literal' },
  ];
  t.is(seatbeltProfile({ reads: noisy }), text);
  t.deepEqual(
    normalizeReads([
      { path: '/a/b', kind: 'literal' },
      { path: '/a', kind: 'subpath' },
      { path: '/ab', kind: 'literal' },
    ]),
    [
      { path: '/a', kind: 'subpath' },
      { path: '/ab', kind: 'literal' },
    ],
  );
});

test('the whole profile for one input, pinned', (t) => {
  t.is(
    seatbeltProfile({
      reads: [
        { path: '/n/node', kind: 'literal' },
        { path: '/m', kind: 'subpath' },
      ],
    }),
    [
      '(version 1)',
      '; @strata/layer-seatbelt: deny by default; every allow says why.',
      '; Everything not allowed below is refused: files, network, fork and exec, Mach services, IOKit, IPC.',
      '(deny default)',
      "; Not covered by (deny default) on every macOS: other processes' arguments and environment, the hardware UUID, NVRAM.",
      '(deny process-info* iokit-get-properties nvram*)',
      "; Reads (data and metadata, no xattrs) of the runtime's own files only: Node, the installed dependencies, the @strata packages, the layer's readPaths.",
      '(allow file-read-data file-read-metadata',
      '  (subpath "/m")',
      '  (literal "/n/node"))',
      '; The sysctls Node, libuv and V8 read after start: hw.activecpu, hw.memsize, hw.ncpu, hw.pagesize, hw.pagesize_compat (page size, CPU count, memory size).',
      '(allow sysctl-read',
      '  (sysctl-name "hw.activecpu")',
      '  (sysctl-name "hw.memsize")',
      '  (sysctl-name "hw.ncpu")',
      '  (sysctl-name "hw.pagesize")',
      '  (sysctl-name "hw.pagesize_compat"))',
      '; Signals to the worker itself only (Node and the runtime may signal themselves); never the parent or anyone else.',
      '(allow signal',
      '  (target self))',
      '; Its own process information only: threads name themselves (pthread_setname_np is a proc_info setcontrol call) and libraries read their own pidinfo.',
      '(allow process-info-pidinfo process-info-setcontrol',
      '  (target self))',
      '',
    ].join('\n'),
  );
});

const refused: [string, unknown, RegExp][] = [
  ['a relative path', 'etc/passwd', /absolute/],
  ['an empty path', '', /absolute/],
  ['NUL', '/a\0b', /NUL/],
  ['a double quote (would end the SBPL string)', '/a") (allow default) ("', /double quote or a backslash/],
  ['a backslash (would escape the closing quote)', '/a\\', /double quote or a backslash/],
  ['a newline', '/a\n(allow default)', /control characters/],
  ['a tab', '/a\tb', /control characters/],
  ['DEL', '/a\u007fb', /control characters/],
  ['the root directory', '/', /root directory/],
  ['a trailing slash', '/a/', /normalised/],
  ['a double slash', '/a//b', /normalised/],
  ['a .. component', '/a/../etc', /normalised/],
  ['a . component', '/a/./b', /normalised/],
  ['a number', 42, /must be a string/],
];
for (const [what, path, message] of refused) {
  test(`a read path with ${what} is refused with a TypeError`, (t) => {
    for (const kind of ['subpath', 'literal'] as const) {
      t.throws(() => seatbeltProfile({ reads: [{ path: path as string, kind }] }), { instanceOf: TypeError, message });
    }
  });
}

test('malformed input is refused with a TypeError', (t) => {
  t.throws(() => seatbeltProfile({ reads: [{ path: '/a', kind: 'prefix' as never }] }), { instanceOf: TypeError, message: /'subpath' or 'literal'/ });
  t.throws(() => seatbeltProfile({ reads: '/a' as never }), { instanceOf: TypeError });
  t.throws(() => seatbeltProfile({ reads: [null as never] }), { instanceOf: TypeError });
  t.throws(() => seatbeltProfile(null as never), { instanceOf: TypeError });
});

test('parentheses, semicolons, spaces and non-ASCII stay inside one string literal: no injection', (t) => {
  const tricky = ['/a) (allow default) (', '/b; (allow network*)', '/Users/José/My Projects (old)/x', '/c#|x|#'];
  const text = seatbeltProfile({ reads: tricky.map((path) => ({ path, kind: 'subpath' as const })) });
  t.deepEqual(checkProfile(text), []);
  t.deepEqual(
    readFilters(text).map(([, p]) => p),
    [...tricky].sort(),
  );
  // as many top-level forms as with a plain path: nothing broke out of its string
  t.is(lists(text).length, lists(seatbeltProfile({ reads: [{ path: '/plain', kind: 'subpath' }] })).length);
  t.is(allows(text).length, 4);
});

const broken: [string, string, RegExp][] = [
  ['allow default', '(allow default)', /allows default/],
  ['an unfiltered file read', '(allow file-read-data)', /has no filter/],
  ['file-read*', '(allow file-read* (subpath "/x"))', /allows file-read\*/],
  ['network', '(allow network-outbound (remote ip "*:*"))', /allows network-outbound/],
  ['exec', '(allow process-exec (literal "/bin/sh"))', /allows process-exec/],
  ['fork', '(allow process-fork)', /allows process-fork/],
  ['writes', '(allow file-write* (subpath "/tmp"))', /allows file-write\*/],
  ['a Mach lookup', '(allow mach-lookup (global-name "com.apple.logd"))', /allows mach-lookup/],
  ['signals to others', '(allow signal (target others))', /only \(target self\)/],
  ['an unfiltered signal', '(allow signal)', /has no filter/],
  ['a sysctl prefix', '(allow sysctl-read (sysctl-name-prefix "kern."))', /only \(sysctl-name/],
  ['an unlisted sysctl', '(allow sysctl-read (sysctl-name "kern.procargs2"))', /not in SYSCTL_NAMES/],
  ['a relative read path', '(allow file-read-data (subpath "etc"))', /absolute/],
  ['a regex read rule', '(allow file-read-data (regex #"^/"))', /only \(subpath/],
  ['mixed kinds in one rule', '(allow file-read-data signal (target self))', /mixes operations/],
  ['another top-level form', '(define x 1)', /unexpected top-level form \(define/],
];
for (const [what, form, message] of broken) {
  test(`checkProfile catches ${what}`, (t) => {
    const problems = checkProfile(`(version 1)\n(deny default)\n${form}\n`);
    t.true(
      problems.some((p) => message.test(p)),
      problems.join('\n'),
    );
  });
}

test('checkProfile requires (version 1) (deny default) first and balanced text', (t) => {
  t.deepEqual(checkProfile('(version 1)\n(allow signal (target self))\n(deny default)\n'), ['the profile must start with (version 1) (deny default)']);
  t.deepEqual(checkProfile('(deny default)\n'), ['the profile must start with (version 1) (deny default)']);
  t.regex(checkProfile('(version 1)\n(deny default\n')[0]!, /unbalanced \(/);
  t.regex(checkProfile('(version 1))\n')[0]!, /unbalanced \)/);
  t.regex(checkProfile('(version 1)\n(deny default)\n(allow file-read-data (literal "/x))\n')[0]!, /unterminated string/);
});

test('parseSbpl reads comments, symbols, strings and escapes', (t) => {
  t.deepEqual(parseSbpl('; c\n(a "b c" (d))\n; e'), [['a', { string: 'b c' }, ['d']]]);
  t.deepEqual(parseSbpl('(x "a\\"b")'), [['x', { string: 'a"b' }]]);
});
