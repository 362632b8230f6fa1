// Declarations for code mode: JSON Schema → TypeScript text, exact for the simple cases; a
// realistic set of tools that compiles under `tsc --strict`, with code using it type-checked
// (right calls pass, wrong ones fail); and guards that end on any input, hostile ones included.
// Pure: no worker.
import test from 'ava';
import ts from 'typescript';
import { renderDeclarations, schemaToType, type DeclaredTool } from '../src/declarations.js';
import { TWENTY_TOOLS } from './fixtures/twenty-tools.js';

// --- tsc over in-memory files -----------------------------------------------------------------

const COMPILER_OPTIONS: ts.CompilerOptions = {
  strict: true,
  noEmit: true,
  target: ts.ScriptTarget.ES2022,
  lib: ['lib.es2022.d.ts'],
  types: [],
  // Our declarations are a .d.ts too: only the default library goes unchecked.
  skipDefaultLibCheck: true,
};
// The library's files, parsed once for every program.
const libraryFiles = new Map<string, ts.SourceFile>();

/** The diagnostics of `tsc --noEmit --strict` over `files` (names like `/virtual/usage.ts`). */
function typeCheck(files: Readonly<Record<string, string>>): string[] {
  const host = ts.createCompilerHost(COMPILER_OPTIONS);
  const { fileExists, readFile, getSourceFile } = host;
  host.fileExists = (name) => Object.hasOwn(files, name) || fileExists(name);
  host.readFile = (name) => (Object.hasOwn(files, name) ? files[name] : readFile(name));
  host.getSourceFile = (name, languageVersion, ...rest) => {
    if (Object.hasOwn(files, name)) return ts.createSourceFile(name, files[name]!, languageVersion, true);
    let file = libraryFiles.get(name);
    if (file === undefined) {
      file = getSourceFile(name, languageVersion, ...rest);
      if (file !== undefined) libraryFiles.set(name, file);
    }
    return file;
  };
  const program = ts.createProgram(Object.keys(files), COMPILER_OPTIONS, host);
  return ts.getPreEmitDiagnostics(program).map((diagnostic) => {
    const where = diagnostic.file !== undefined && diagnostic.start !== undefined ? diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start) : undefined;
    const at = where === undefined ? '' : `${diagnostic.file!.fileName}(${where.line + 1},${where.character + 1}): `;
    return `${at}TS${diagnostic.code}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`;
  });
}

/** The diagnostics of declarations on their own, and of `usage` written against them. */
const checkDeclarations = (declarations: string, usage?: string) =>
  typeCheck({ '/virtual/declarations.d.ts': declarations, ...(usage === undefined ? {} : { '/virtual/usage.ts': usage }) });

// --- schemas to types, exactly ----------------------------------------------------------------

const manyValues = Array.from({ length: 101 }, (_, i) => `value${i}`);
const TYPES: [string, unknown, string][] = [
  ['string', { type: 'string' }, 'string'],
  ['integer is number', { type: 'integer' }, 'number'],
  ['boolean', { type: 'boolean' }, 'boolean'],
  ['null', { type: 'null' }, 'null'],
  ['a type array is a union', { type: ['string', 'null'] }, 'string | null'],
  ['integer and number are one number', { type: ['integer', 'number'] }, 'number'],
  ['enum', { enum: ['celsius', 'fahrenheit'] }, '"celsius" | "fahrenheit"'],
  ['enum of mixed literals', { enum: [1, 'a', null, true] }, '1 | "a" | null | true'],
  ['enum beside type', { type: 'string', enum: ['a', 'b'] }, '"a" | "b"'],
  ['an empty enum', { enum: [] }, 'never'],
  ['enum past 100 members is its type', { type: 'string', enum: manyValues }, 'string'],
  ['enum past 100 members, no type: the literals’ type', { enum: manyValues }, 'string'],
  ['const', { const: 'circle' }, '"circle"'],
  ['const null', { const: null }, 'null'],
  ['const object', { const: { a: [1, 'b'] } }, '{"a":[1,"b"]}'],
  ['const with a quote', { const: 'say "hi"' }, '"say \\"hi\\""'],
  ['array of strings', { type: 'array', items: { type: 'string' } }, 'string[]'],
  ['array of a union', { type: 'array', items: { type: ['string', 'number'] } }, '(string | number)[]'],
  ['array of an enum', { type: 'array', items: { enum: ['a', 'b'] } }, '("a" | "b")[]'],
  ['array of arrays', { type: 'array', items: { type: 'array', items: { type: 'number' } } }, 'number[][]'],
  ['array without items', { type: 'array' }, 'unknown[]'],
  ['items imply an array', { items: { type: 'boolean' } }, 'boolean[]'],
  ['prefixItems tuple', { type: 'array', prefixItems: [{ type: 'number' }, { type: 'number' }] }, '[number, number]'],
  ['prefixItems with a rest', { prefixItems: [{ type: 'string' }], items: { type: 'number' } }, '[string, ...number[]]'],
  ['draft-07 tuple', { type: 'array', items: [{ type: 'number' }, { type: 'string' }] }, '[number, string]'],
  ['draft-07 tuple with additionalItems', { items: [{ type: 'number' }], additionalItems: { type: 'string' } }, '[number, ...string[]]'],
  ['object', { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } }, required: ['city'] }, '{ city: string; days?: number }'],
  ['properties imply an object', { properties: { a: { type: 'string' } } }, '{ a?: string }'],
  [
    'names that are not identifiers are quoted',
    { properties: { 'x-y': { type: 'string' }, '0': { type: 'boolean' }, $ok: {} } },
    '{ "0"?: boolean; "x-y"?: string; $ok?: unknown }',
  ],
  ['a required key without a schema', { type: 'object', required: ['id'] }, '{ id: unknown }'],
  ['bare object', { type: 'object' }, 'Record<string, unknown>'],
  ['empty closed object', { type: 'object', properties: {}, additionalProperties: false }, 'Record<string, never>'],
  ['additionalProperties true', { type: 'object', additionalProperties: true }, 'Record<string, unknown>'],
  ['additionalProperties schema', { type: 'object', additionalProperties: { type: 'number' } }, 'Record<string, number>'],
  ['additionalProperties false beside properties', { properties: { a: { type: 'string' } }, additionalProperties: false }, '{ a?: string }'],
  [
    'index signature fits the properties',
    { properties: { name: { type: 'string' } }, required: ['name'], additionalProperties: { type: 'string' } },
    '{ name: string; [key: string]: string }',
  ],
  [
    'index signature widened to the properties',
    { properties: { n: { type: 'number' } }, required: ['n'], additionalProperties: { type: 'string' } },
    '{ n: number; [key: string]: string | number }',
  ],
  [
    'index signature and an optional property',
    { properties: { n: { type: 'number' } }, additionalProperties: { type: 'string' } },
    '{ n?: number; [key: string]: string | number | undefined }',
  ],
  [
    'index signature beside an object property',
    { properties: { o: { type: 'object' } }, additionalProperties: true },
    '{ o?: Record<string, unknown>; [key: string]: unknown }',
  ],
  ['anyOf', { anyOf: [{ type: 'string' }, { type: 'number' }] }, 'string | number'],
  [
    'oneOf of objects',
    {
      oneOf: [
        { properties: { kind: { const: 'a' } }, required: ['kind'] },
        { properties: { kind: { const: 'b' } }, required: ['kind'] },
      ],
    },
    '{ kind: "a" } | { kind: "b" }',
  ],
  ['anyOf with an unknown member is unknown', { anyOf: [{ type: 'string' }, {}] }, 'unknown'],
  ['allOf', { allOf: [{ properties: { a: { type: 'string' } } }, { properties: { b: { type: 'number' } } }] }, '{ a?: string } & { b?: number }'],
  [
    'allOf with a union inside',
    { allOf: [{ properties: { a: { type: 'string' } } }, { anyOf: [{ type: 'string' }, { type: 'number' }] }] },
    '{ a?: string } & (string | number)',
  ],
  [
    'a bare object beside oneOf adds nothing',
    { type: 'object', oneOf: [{ properties: { a: { type: 'string' } } }, { properties: { b: { type: 'string' } } }] },
    '{ a?: string } | { b?: string }',
  ],
  [
    'anyOf of required lists keeps the properties',
    { type: 'object', properties: { a: { type: 'string' } }, anyOf: [{ required: ['a'] }, { required: ['b'] }] },
    '{ a?: string }',
  ],
  ['nullable', { type: 'string', nullable: true }, 'string | null'],
  ['nullable enum', { enum: ['a', 'b'], nullable: true }, '"a" | "b" | null'],
  ['nullable in an array', { type: 'array', items: { type: 'number', nullable: true } }, '(number | null)[]'],
  ['$ref to definitions', { definitions: { Id: { type: 'string' } }, $ref: '#/definitions/Id' }, 'string'],
  [
    '$ref to $defs',
    { type: 'array', items: { $ref: '#/$defs/Point' }, $defs: { Point: { prefixItems: [{ type: 'number' }, { type: 'number' }] } } },
    '[number, number][]',
  ],
  ['$ref with an escaped pointer', { $defs: { 'a/b': { type: 'number' } }, $ref: '#/$defs/a~1b' }, 'number'],
  [
    '$ref to itself is a cycle',
    { type: 'object', properties: { value: { type: 'number' }, next: { $ref: '#' } }, required: ['value'] },
    '{ value: number; next?: unknown }',
  ],
  ['$ref that does not resolve', { $ref: '#/$defs/Missing' }, 'unknown'],
  ['external $ref', { $ref: 'https://example.com/schema.json' }, 'unknown'],
  ['true', true, 'unknown'],
  ['false', false, 'never'],
  ['empty schema', {}, 'unknown'],
  ['an unknown type', { type: 'frobnicate' }, 'unknown'],
  ['not is not supported', { not: { type: 'string' } }, 'unknown'],
];

for (const [title, schema, expected] of TYPES) {
  test(`schemaToType: ${title}`, (t) => {
    t.is(schemaToType(schema), expected);
  });
}

test('every type of the table compiles', (t) => {
  const declarations = TYPES.map(([, schema], i) => `type T${i} = ${schemaToType(schema)};`).join('\n');
  t.deepEqual(checkDeclarations(declarations), []);
});

test('descriptions are JSDoc on their own line, and the object spans lines', (t) => {
  const schema = {
    type: 'object',
    properties: {
      city: { type: 'string', description: 'The city,\n  e.g. "Oslo".' },
      at: { $ref: '#/$defs/Time' },
      units: { enum: ['metric', 'imperial'] },
    },
    required: ['city'],
    $defs: { Time: { type: 'string', description: 'An ISO 8601 time.' } },
  };
  t.is(
    schemaToType(schema),
    ['{', '  /** The city, e.g. "Oslo". */', '  city: string;', '  /** An ISO 8601 time. */', '  at?: string;', '  units?: "metric" | "imperial";', '}'].join(
      '\n',
    ),
  );
});

test('a description cannot end its comment early, and a long one is cut to ~300 characters', (t) => {
  t.is(schemaToType({ properties: { a: { type: 'string', description: 'ends */ here' } } }), '{\n  /** ends *\\/ here */\n  a?: string;\n}');
  const long = schemaToType({ properties: { a: { description: 'word '.repeat(1000) } } });
  const comment = long.split('\n')[1]!;
  t.true(comment.length < 320, comment);
  t.true(comment.endsWith('… */'));
});

test('a long object without descriptions goes one property per line; nested objects are indented', (t) => {
  const schema = {
    type: 'object',
    properties: {
      title: { type: 'string' },
      location: { type: 'string' },
      organizer: { type: 'object', properties: { name: { type: 'string' }, email: { type: 'string' } }, required: ['email'] },
    },
    required: ['title'],
  };
  t.is(schemaToType(schema), ['{', '  title: string;', '  location?: string;', '  organizer?: { name?: string; email: string };', '}'].join('\n'));
  const events = { type: 'array', items: { properties: { summary: { type: 'string', description: 'What it is.' } } } };
  t.is(schemaToType(events), ['Array<{', '  /** What it is. */', '  summary?: string;', '}>'].join('\n'));
});

test('renderDeclarations: methods with and without input, descriptions, Promise of the output or unknown', (t) => {
  const text = renderDeclarations('tools', [
    { name: 'now', description: 'The time.' },
    { name: 'weather', inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }, outputSchema: { type: 'number' } },
    { name: 'echo', inputSchema: {} },
  ]);
  t.is(
    text,
    [
      'declare const tools: {',
      '  /** The time. */',
      '  now(): Promise<unknown>;',
      '  weather(input: { city: string }): Promise<number>;',
      '  echo(input: unknown): Promise<unknown>;',
      '};',
    ].join('\n'),
  );
  t.is(renderDeclarations('api', []), 'declare const api: {};');
  t.deepEqual(checkDeclarations(text), []);
});

// --- a realistic set of tools -----------------------------------------------------------------

const TOOLS = TWENTY_TOOLS;

const declarations = renderDeclarations('tools', TOOLS);

test(`declarations for ${TOOLS.length} tools: ${declarations.length} characters, and they compile under tsc --strict`, (t) => {
  t.log(`declarations for ${TOOLS.length} tools: ${declarations.length} characters`);
  t.log(`\n${declarations}`);
  t.is(TOOLS.length, 20);
  t.deepEqual(checkDeclarations(declarations), []);
  t.true(declarations.startsWith('declare const tools: {\n'));
  t.true(declarations.endsWith('\n};'));
  t.false(/[ \t]$/m.test(declarations), 'no trailing spaces');
  t.false(declarations.includes('Array<string>'));
  t.true(declarations.includes('  getTime(): Promise<{ iso: string; timeZone: string }>;'));
  t.true(declarations.includes('/** Summarizes a text. Note: *\\/ in a description must not end the comment. */'));
});

test('code written against the declarations type-checks', (t) => {
  const usage = `
    async function agent(): Promise<string> {
      const weather = await tools.getWeather({ city: 'Oslo', units: 'metric', days: 3 });
      const highs: number[] = weather.forecast.map((day) => day.high);
      const { results } = await tools.searchWeb({ query: 'strata sandbox', filters: { dateRange: 'week' } });
      const event = await tools.createEvent({
        title: 'Review',
        when: { start: '2026-01-01T10:00:00Z', end: '2026-01-01T11:00:00Z' },
        attendees: [{ email: 'a@example.com' }],
        recurrence: { every: 'week', weekdays: ['mo', 'th'] },
        reminderMinutes: null,
      });
      const events = await tools.listEvents({ range: { start: 'a', end: 'b' } });
      const declined = events.filter((e) => e.attendees?.some((a) => a.response === 'declined'));
      const rows = await tools.runSql({ query: 'select 1', params: [1, 'a', null] });
      const response = await tools.httpRequest({ method: 'POST', url: 'https://example.com', headers: { accept: 'text/plain' }, body: { a: 1 } });
      const [lat, lon] = (await tools.geocode({ address: 'Karl Johans gate 1' })).coordinates;
      const change: number | null = (await tools.getStockQuote({ symbol: 'ACME' })).change;
      await tools.createChart({ kind: 'line', series: [{ name: 'a', points: [[0, 1], [1, 2]] }] });
      await tools.updateProfile({ userId: 'u1', changes: { email: 'b@example.com', 'time-zone': 'Europe/Oslo' }, metadata: { team: 'x' } });
      const time = await tools.getTime();
      const summary: string = await tools.summarize({ text: 'long', style: 'bullets' });
      return [highs.length, results[0]?.url, event.id, declined.length, rows.rowCount, response.status, lat + lon, change, time.iso, summary].join();
    }
  `;
  t.deepEqual(checkDeclarations(declarations, usage), []);
});

const WRONG_CALLS: [string, string, RegExp][] = [
  ['a missing required field', `tools.getWeather({ units: 'metric' });`, /TS2345: .*Property 'city' is missing/s],
  [
    'a wrong enum value',
    `tools.getWeather({ city: 'Oslo', units: 'kelvin' });`,
    /TS2322: Type '"kelvin"' is not assignable to type '"metric" \| "imperial" \| undefined'/,
  ],
  ['a nonexistent method', `tools.getWeathr({ city: 'Oslo' });`, /TS2551: Property 'getWeathr' does not exist/],
  ['an input to a tool that takes none', `tools.getTime({});`, /TS2554: Expected 0 arguments, but got 1/],
  ['no input to a tool that takes one', `tools.readFile();`, /TS2554: Expected 1 arguments, but got 0/],
  ['a field the closed input does not have', `tools.getWeather({ city: 'Oslo', country: 'NO' });`, /TS2353: .*'country' does not exist/s],
  [
    'a wrong type inside a $ref',
    `tools.createEvent({ title: 'x', when: { start: 1, end: 'b' } });`,
    /TS2322: Type 'number' is not assignable to type 'string'/,
  ],
  [
    'a misused output',
    `tools.getWeather({ city: 'Oslo' }).then((w) => w.temperature.toUpperCase());`,
    /TS2339: Property 'toUpperCase' does not exist on type 'number'/,
  ],
  [
    'an output used without awaiting it',
    `const t: number = tools.getWeather({ city: 'Oslo' }).temperature;`,
    /TS2339: Property 'temperature' does not exist on type 'Promise/,
  ],
];

for (const [title, usage, expected] of WRONG_CALLS) {
  test(`a wrong call fails to type-check: ${title}`, (t) => {
    const diagnostics = checkDeclarations(declarations, usage);
    t.true(diagnostics.length > 0, 'expected diagnostics');
    t.regex(diagnostics.join('\n'), expected);
  });
}

// --- guards -----------------------------------------------------------------------------------

/** `levels` objects, each the `child` of the one before. */
function nestedObjects(levels: number): unknown {
  let schema: unknown = { type: 'string' };
  for (let i = 0; i < levels; i++) schema = { type: 'object', properties: { child: schema }, required: ['child'] };
  return schema;
}

test('nesting past maxDepth is unknown', (t) => {
  t.is(schemaToType(nestedObjects(3), { maxDepth: 2 }), '{ child: { child: { child: unknown } } }');
  t.is(schemaToType(nestedObjects(3), { maxDepth: 3 }), '{ child: { child: { child: string } } }');
  t.is(schemaToType(nestedObjects(3), { maxDepth: 0 }), '{ child: unknown }');
  t.is(schemaToType(nestedObjects(20)).split('child').length - 1, 9, 'the default is 8 levels');
  t.is(schemaToType(nestedObjects(20), { maxDepth: Number.NaN }), schemaToType(nestedObjects(20)), 'NaN is the default');
  t.is(schemaToType(nestedObjects(200), { maxDepth: Infinity }).split('child').length - 1, 101, 'at most 100 levels');
  t.true(
    renderDeclarations('tools', [{ name: 'deep', inputSchema: nestedObjects(3), outputSchema: nestedObjects(3) }], { maxDepth: 1 }).includes(
      'deep(input: { child: { child: unknown } }): Promise<{ child: { child: unknown } }>;',
    ),
  );
});

test('$ref cycles end in unknown: direct, mutual, through arrays, and a schema object that contains itself', (t) => {
  t.is(schemaToType({ $ref: '#' }), 'unknown');
  t.is(schemaToType({ $defs: { A: { $ref: '#/$defs/B' }, B: { $ref: '#/$defs/A' } }, $ref: '#/$defs/A' }), 'unknown');
  const tree = {
    $defs: {
      Node: { type: 'object', properties: { value: { type: 'number' }, children: { type: 'array', items: { $ref: '#/$defs/Node' } } }, required: ['value'] },
    },
    $ref: '#/$defs/Node',
  };
  t.is(schemaToType(tree), '{ value: number; children?: unknown[] }');
  const self: Record<string, unknown> = { type: 'object', required: ['self'] };
  self['properties'] = { self };
  t.is(schemaToType(self), '{ self: unknown }');
  const person = { type: 'object', properties: { name: { type: 'string' }, friends: { type: 'array', items: { $ref: '#' } } } };
  t.deepEqual(
    checkDeclarations(
      renderDeclarations('tools', [
        { name: 'tree', inputSchema: tree, outputSchema: person },
        { name: 'me', outputSchema: self },
      ]),
    ),
    [],
  );
});

test('a schema shared by many references is rendered within the size budget, and fast', (t) => {
  // Ten definitions of 30 properties each referring to the next: 30^10 paths if expanded.
  const $defs: Record<string, unknown> = {};
  for (let level = 0; level < 10; level++) {
    $defs[`L${level}`] = {
      type: 'object',
      properties: Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`p${i}`, level === 9 ? { type: 'string' } : { $ref: `#/$defs/L${level + 1}` }])),
    };
  }
  const started = performance.now();
  const text = schemaToType({ $defs, $ref: '#/$defs/L0' }, { maxDepth: 100 });
  t.true(performance.now() - started < 2000);
  t.true(text.length < 40_000, `${text.length} characters`);
  t.true(text.includes('[key: string]: unknown'), 'what did not fit leaves the object open');
  t.deepEqual(checkDeclarations(`type T = ${text};`), []);
});

/** Schemas that are not what they should be, each of which must give a type (and never throw). */
function hostileSchemas(): [string, unknown][] {
  let deepObjects: unknown = {};
  let deepArrays: unknown = {};
  let deepAnyOf: unknown = {};
  let deepAllOf: unknown = {};
  let deepRefs: Record<string, unknown> = {};
  for (let i = 0; i < 10_000; i++) {
    deepObjects = { type: 'object', properties: { a: deepObjects } };
    deepArrays = { type: 'array', items: deepArrays };
    deepAnyOf = { anyOf: [deepAnyOf, { type: 'string' }] };
    deepAllOf = { allOf: [deepAllOf] };
    deepRefs[`D${i}`] = { $ref: `#/$defs/D${i + 1}` };
  }
  deepRefs = { $defs: deepRefs, $ref: '#/$defs/D0' };
  const throwing = {
    type: 'object',
    get properties(): never {
      throw new Error('a getter that throws');
    },
  };
  const revoked = Proxy.revocable({}, {});
  revoked.revoke();
  const circularConst: Record<string, unknown> = {};
  circularConst['self'] = circularConst;
  return [
    ['null', null],
    ['undefined', undefined],
    ['a number', 42],
    ['a string', 'string'],
    ['an array', [{ type: 'string' }]],
    ['a function', () => 1],
    ['properties a string', { type: 'object', properties: 'abc' }],
    ['properties an array', { type: 'object', properties: [{ type: 'string' }] }],
    ['properties null', { properties: null }],
    ['required a string', { type: 'object', properties: { a: {} }, required: 'a' }],
    ['required of non-strings', { type: 'object', required: [1, null, {}] }],
    ['items a number', { type: 'array', items: 5 }],
    ['prefixItems a string', { prefixItems: 'x' }],
    ['enum a string', { enum: 'abc' }],
    ['type a number', { type: 5 }],
    ['type an empty array', { type: [] }],
    ['type an array of junk', { type: [1, null, 'string'] }],
    ['$ref a number', { $ref: 5 }],
    ['$ref into Object.prototype', { $ref: '#/__proto__' }],
    ['$ref with a malformed escape', { $ref: '#/%E0%A4%A' }],
    ['$ref to a non-schema', { a: 5, $ref: '#/a' }],
    ['anyOf an object', { anyOf: { type: 'string' } }],
    ['allOf of junk', { allOf: [null, 5, 'x'] }],
    ['additionalProperties a string', { type: 'object', additionalProperties: 'yes' }],
    ['description a number', { properties: { a: { description: 5 } } }],
    ['a BigInt const', { const: 10n }],
    ['a circular const', { const: circularConst }],
    ['an infinite const', { const: Infinity, type: 'number' }],
    ['a huge enum', { enum: Array.from({ length: 100_000 }, (_, i) => i) }],
    ['a huge string const', { const: 'x'.repeat(1_000_000) }],
    ['a huge tuple', { prefixItems: Array.from({ length: 10_000 }, () => ({ type: 'number' })) }],
    ['a huge allOf', { allOf: Array.from({ length: 200_000 }, () => ({ type: 'object', properties: { a: { type: 'string' } } })) }],
    ['a huge anyOf', { anyOf: Array.from({ length: 100_000 }, (_, i) => ({ const: i })) }],
    ['a huge type array', { type: Array.from({ length: 100_000 }, () => 'object'), properties: { a: { type: 'string' } } }],
    [
      'many properties',
      { type: 'object', properties: Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`p${i}`, { type: 'string', description: 'A property.' }])) },
    ],
    ['a huge property name', { type: 'object', properties: { ['k'.repeat(100_000)]: { type: 'string' } }, required: ['k'.repeat(100_000)] }],
    ['a huge description', { properties: { a: { description: '*/'.repeat(500_000) } } }],
    ['line separators', { properties: { 'a\u2028b': { const: 'x\u2029y', description: 'one\u2028two' } } }],
    [
      'strange names',
      JSON.parse('{ "properties": { "__proto__": { "type": "string" }, "constructor": { "type": "number" }, "": {}, "\\"": {}, "\\\\": {}, "\\n": {} } }'),
    ],
    ['10 000 nested objects', deepObjects],
    ['10 000 nested arrays', deepArrays],
    ['10 000 nested anyOf', deepAnyOf],
    ['10 000 nested allOf', deepAllOf],
    ['10 000 chained $refs', deepRefs],
    ['a getter that throws', throwing],
    ['a revoked Proxy', revoked.proxy],
    ['a Proxy whose properties is revoked', { type: 'object', properties: revoked.proxy }],
  ];
}

test('hostile schemas never throw, stay small, and what they give compiles', (t) => {
  const schemas = hostileSchemas();
  const texts = schemas.map(([title, schema]) => {
    let text = '';
    t.notThrows(() => (text = schemaToType(schema)), title);
    t.true(text.length < 40_000, `${title}: ${text.length} characters`);
    return text;
  });
  const textOf = (title: string) => texts[schemas.findIndex(([name]) => name === title)];
  t.is(textOf('null'), 'unknown');
  t.is(textOf('a huge enum'), 'number');
  t.is(textOf('a huge string const'), 'string');
  t.is(textOf('10 000 nested arrays'), 'unknown[][][][][][][][][]');
  t.is(textOf('a getter that throws'), 'unknown');
  t.is(textOf('a huge property name'), 'Record<string, unknown>');
  t.is(textOf('a huge allOf'), '{ a?: string }');
  t.is(textOf('line separators'), '{\n  /** one two */\n  "a\\u2028b"?: "x\\u2029y";\n}');
  const tools = schemas.map(
    ([, schema], i): DeclaredTool => ({ name: `hostile${i}`, description: `hostile */ ${i}`, inputSchema: schema, outputSchema: schema }),
  );
  const text = renderDeclarations('tools', tools);
  t.false(/[ \t]$/m.test(text), 'no trailing spaces');
  t.false(/[\u2028\u2029]/.test(text), 'no line separators a prompt would break at');
  t.deepEqual(checkDeclarations(text), []);
});

test('names that are not identifiers are quoted, as methods and as properties, and compile', (t) => {
  const text = renderDeclarations('tools', [{ name: 'get-time' }, { name: 'delete', inputSchema: { properties: { 'a b': { type: 'string' } } } }]);
  t.is(text, ['declare const tools: {', '  "get-time"(): Promise<unknown>;', '  delete(input: { "a b"?: string }): Promise<unknown>;', '};'].join('\n'));
  t.deepEqual(checkDeclarations(text, `tools['get-time'](); tools.delete({ 'a b': 'x' });`), []);
});
