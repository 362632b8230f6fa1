import { existsSync, readFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import test from 'ava';
import { createSandbox } from './helpers/isolate.js';
import { urlPatternOutcome } from './helpers/url-pattern.js';

// The guest's URLPattern against the URL Pattern standard's own test data, web-platform-tests'
// urlpattern/resources/urlpatterntestdata.json (BSD-3-Clause, not in this repository): every
// case runs inside the isolate and is compared with the data's expectations, read as WPT's
// urlpatterntests.js reads them, and with Node's own URLPattern as an oracle for the parts
// the data leaves implicit. The file is looked up at $STRATA_WPT_URLPATTERN_DATA, then in the
// data folder of the shared/ checkout beside the repository.
const DATA_PATH = process.env['STRATA_WPT_URLPATTERN_DATA'] ?? new URL('../../../../../shared/data/urlpatterntestdata.json', import.meta.url).pathname;

interface Entry {
  pattern: unknown[];
  inputs?: unknown[];
  expected_obj?: 'error' | Record<string, string>;
  expected_match?: 'error' | null | Record<string, unknown>;
  exactly_empty_components?: string[];
}

interface ComponentResult {
  input: string;
  groups: Record<string, string | null>;
}

const COMPONENTS = ['protocol', 'username', 'password', 'hostname', 'port', 'pathname', 'search', 'hash'] as const;
const EARLIER: Record<string, string[]> = {
  protocol: [],
  hostname: ['protocol'],
  port: ['protocol', 'hostname'],
  username: [],
  password: [],
  pathname: ['protocol', 'hostname', 'port'],
  search: ['protocol', 'hostname', 'port', 'pathname'],
  hash: ['protocol', 'hostname', 'port', 'pathname', 'search'],
};

/** The ways `outcome` breaks the data's expectations for `entry` (the rules of WPT's urlpatterntests.js). */
function mismatches(entry: Entry, outcome: Record<string, unknown>): string[] {
  if (entry.expected_obj === 'error') return outcome['construct'] === 'TypeError' ? [] : [`constructor: ${String(outcome['construct'])}, expected TypeError`];
  if (outcome['construct'] !== 'ok') return [`constructor threw ${String(outcome['construct'])}`];
  const found: string[] = [];
  const first = entry.pattern[0];
  const init = typeof first === 'object' && first !== null ? (first as Record<string, string>) : undefined;
  const baseText = init?.['baseURL'] ?? (typeof entry.pattern[1] === 'string' ? entry.pattern[1] : undefined);
  const base = baseText === undefined ? undefined : new URL(baseText);
  const components = outcome['components'] as Record<string, string>;
  for (const c of COMPONENTS) {
    let expected = (entry.expected_obj as Record<string, string> | undefined)?.[c];
    if (expected === undefined) {
      if (entry.exactly_empty_components?.includes(c)) expected = '';
      else if (init?.[c]) expected = init[c];
      else if (init && EARLIER[c]!.some((e) => e in init)) expected = '*';
      else if (base && c !== 'username' && c !== 'password') {
        const value = base[c];
        expected = c === 'protocol' ? value.slice(0, -1) : c === 'search' || c === 'hash' ? value.slice(1) : value;
      } else expected = '*';
    }
    if (components[c] !== expected) found.push(`pattern.${c} is ${JSON.stringify(components[c])}, expected ${JSON.stringify(expected)}`);
  }
  if (entry.expected_match === 'error') {
    if (outcome['test'] !== 'TypeError' || outcome['exec'] !== 'TypeError')
      found.push(`test()/exec() gave ${JSON.stringify([outcome['test'], outcome['exec']])}, expected TypeError`);
    return found;
  }
  if (outcome['test'] !== !!entry.expected_match) found.push(`test() is ${JSON.stringify(outcome['test'])}`);
  if (!entry.expected_match) {
    if (outcome['exec'] !== null) found.push(`exec() is ${JSON.stringify(outcome['exec'])}, expected null`);
    return found;
  }
  const exec = outcome['exec'] as Record<string, unknown> | null;
  if (exec === null || typeof exec !== 'object') return [...found, `exec() is ${JSON.stringify(exec)}`];
  const inputs = (entry.expected_match['inputs'] as unknown[] | undefined) ?? entry.inputs;
  if (!isDeepStrictEqual(exec['inputs'], inputs)) found.push(`exec().inputs is ${JSON.stringify(exec['inputs'])}`);
  for (const c of COMPONENTS) {
    let expected = entry.expected_match[c] as ComponentResult | undefined;
    if (!expected) {
      expected = { input: '', groups: {} };
      if (!entry.exactly_empty_components?.includes(c)) expected.groups['0'] = '';
    }
    if (!isDeepStrictEqual(exec[c], expected)) found.push(`exec().${c} is ${JSON.stringify(exec[c])}, expected ${JSON.stringify(expected)}`);
  }
  return found;
}

const haveData = existsSync(DATA_PATH);
const data: Entry[] = haveData ? (JSON.parse(readFileSync(DATA_PATH, 'utf8')) as Entry[]) : [];
const describe = (i: number): string => `#${i} ${JSON.stringify(data[i]!.pattern)} on ${JSON.stringify(data[i]!.inputs)}`;

// One isolate runs every case; both tests read its outcomes.
let guestOutcomes: Promise<Array<Record<string, unknown>>> | undefined;
function guest(): Promise<Array<Record<string, unknown>>> {
  guestOutcomes ??= (async () => {
    const s = await createSandbox();
    try {
      const code = `JSON.stringify(${JSON.stringify(data)}.map(${urlPatternOutcome.toString()}))`;
      return JSON.parse(s.value<string>(code)) as Array<Record<string, unknown>>;
    } finally {
      s.dispose();
    }
  })();
  return guestOutcomes;
}

const wptTest = haveData ? test : test.skip;
const where = haveData ? '' : ` (skipped: no ${DATA_PATH}; set STRATA_WPT_URLPATTERN_DATA to the file)`;

wptTest(`every case of the URL Pattern standard's test data passes in the guest${where}`, async (t) => {
  const outcomes = await guest();
  t.true(data.length >= 369, `the data has ${data.length} cases`);
  const failures = outcomes.flatMap((outcome, i) => mismatches(data[i]!, outcome).map((m) => `${describe(i)}: ${m}`));
  t.deepEqual(failures, []);
});

wptTest(`the guest's URLPattern gives what Node's own gives on every case of the data${where}`, async (t) => {
  const outcomes = await guest();
  const differences = outcomes.flatMap((outcome, i) => {
    const node = JSON.parse(JSON.stringify(urlPatternOutcome(data[i]!))) as unknown;
    return isDeepStrictEqual(outcome, node) ? [] : [`${describe(i)}: guest ${JSON.stringify(outcome)}, Node ${JSON.stringify(node)}`];
  });
  t.deepEqual(differences, []);
});
