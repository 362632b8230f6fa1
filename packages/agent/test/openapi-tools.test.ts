// openApiTools with a real public document (the Swagger Petstore's OpenAPI 3.0 openapi.json, a
// fixture) and the real parser (@apidevtools/swagger-parser), its operations served by a local
// node:http server on 127.0.0.1; the calls go through Strata's egress policy, in a session and in
// a runtime.
import { readFileSync } from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { InvalidOption, Runtime } from '@strata/runtime';
import { AgentSandbox } from '../src/agent-sandbox.js';
import { closeOpenApiParser, openApiTools } from '../src/openapi-tools.js';
import { ToolBridge } from '../src/tool-bridge.js';
import { closeTypechecker } from '../src/typecheck.js';
import { checkNoLeaks } from './helpers/leaks.js';

// The checker's and the parser's worker threads are closed before the leak check.
test.after.always(() => closeTypechecker());
test.after.always(() => closeOpenApiParser());
checkNoLeaks(test);

const PETSTORE_TEXT = readFileSync(new URL('../../test/fixtures/petstore-openapi.json', import.meta.url), 'utf8');
const petstore = () => JSON.parse(PETSTORE_TEXT) as Record<string, any>;
const SECRET = 'psk_live_4f9a1c2e7b3d8e6f';

interface Seen {
  readonly method: string;
  readonly url: string;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
}

type Route = (request: { method: string; url: URL; headers: http.IncomingHttpHeaders; body: string }) => { status: number; json?: unknown; location?: string };

/** A local HTTP server answering by `route`, recording every request it gets. */
async function server(t: import('ava').ExecutionContext, route: Route): Promise<{ origin: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const listening = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
    const answer = route({ method: req.method ?? '', url: new URL(req.url ?? '/', 'http://127.0.0.1'), headers: req.headers, body });
    if (answer.location !== undefined) {
      res.writeHead(answer.status, { location: answer.location });
      res.end();
      return;
    }
    res.writeHead(answer.status, answer.json === undefined ? {} : { 'content-type': 'application/json' });
    res.end(answer.json === undefined ? '' : JSON.stringify(answer.json));
  });
  await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        listening.closeAllConnections();
        listening.close(() => resolve());
      }),
  );
  return { origin: `http://127.0.0.1:${(listening.address() as AddressInfo).port}`, seen };
}

interface Pet {
  id: number;
  name: string;
  photoUrls: string[];
  status?: string;
  tags?: { id?: number; name?: string }[];
}

/** A few of the Petstore's operations, as its server answers them; the inventory needs the API key. */
function petstoreRoute(): Route {
  const pets = new Map<number, Pet>([[7, { id: 7, name: 'Rex', photoUrls: [], status: 'sold', tags: [{ id: 2, name: 'old' }] }]]);
  return ({ method, url, headers, body }) => {
    const path = url.pathname.replace(/^\/api\/v3/, '');
    const petId = /^\/pet\/(\d+)$/.exec(path)?.[1];
    if (method === 'POST' && path === '/pet') {
      const pet = JSON.parse(body) as Pet;
      pets.set(pet.id, pet);
      return { status: 200, json: pet };
    }
    if (method === 'GET' && petId !== undefined) {
      const pet = pets.get(Number(petId));
      return pet === undefined ? { status: 404, json: { code: 404, message: 'Pet not found' } } : { status: 200, json: pet };
    }
    if (method === 'POST' && petId !== undefined) {
      const pet = pets.get(Number(petId))!;
      pet.name = url.searchParams.get('name') ?? pet.name;
      pet.status = url.searchParams.get('status') ?? pet.status;
      return { status: 200, json: pet };
    }
    if (method === 'GET' && path === '/pet/findByStatus')
      return { status: 200, json: [...pets.values()].filter((p) => p.status === url.searchParams.get('status')) };
    if (method === 'GET' && path === '/pet/findByTags') {
      const tags = url.searchParams.getAll('tags');
      return { status: 200, json: [...pets.values()].filter((p) => p.tags?.some((tag) => tags.includes(tag.name ?? ''))) };
    }
    if (method === 'GET' && path === '/store/inventory') {
      if (headers['api_key'] !== SECRET) return { status: 401, json: { message: 'api_key missing or wrong' } };
      const counts: Record<string, number> = {};
      for (const pet of pets.values()) counts[pet.status ?? 'none'] = (counts[pet.status ?? 'none'] ?? 0) + 1;
      return { status: 200, json: counts };
    }
    // A server that echoes the credential it received: the policy's body scrub keeps it from the guest.
    if (method === 'GET' && path.startsWith('/user/') && path !== '/user/logout')
      return { status: 200, json: { username: decodeURIComponent(path.slice(6)), password: String(headers['api_key']) } };
    if (method === 'GET' && path === '/user/logout') return { status: 302, location: '/admin/drop-tables' };
    return { status: 404, json: { message: `no route ${method} ${url.pathname}` } };
  };
}

async function petstoreTools(t: import('ava').ExecutionContext) {
  const { origin, seen } = await server(t, petstoreRoute());
  const bridged = await openApiTools(petstore(), { baseUrl: `${origin}/api/v3`, egress: { headers: { [origin]: { api_key: SECRET } } } });
  return { origin, seen, bridged, bridge: new ToolBridge({ namespace: 'petstore', tools: bridged.tools }) };
}

test('the Petstore in a session: path, query and JSON body sent as the document says; the API key added by the policy, never seen by the guest or the journal', async (t) => {
  const { origin, seen, bridge } = await petstoreTools(t);
  await using session = await AgentSandbox.start({ tools: bridge, sandbox: 'off' });
  const r = await session.run(`
    const added = await petstore.addPet({ body: { id: 12, name: 'Fido', photoUrls: ['https://example.com/fido.jpg'], status: 'pending', tags: [{ id: 1, name: 'good' }] } });
    const renamed = await petstore.updatePetWithForm({ petId: 12, name: 'Fido the Second', status: 'available' });
    const available = await petstore.findPetsByStatus({ status: 'available' });
    const tagged = await petstore.findPetsByTags({ tags: ['good', 'old'] });
    const inventory = await petstore.getInventory();
    const user = await petstore.getUserByName({ username: 'user 1' });
    ({ added: added.name, renamed: renamed.name, available: available.map((p) => p.id), tagged: tagged.map((p) => p.id), inventory, user });
  `);
  t.is(r.status, 'ok', r.error);
  t.deepEqual(r.result, {
    added: 'Fido',
    renamed: 'Fido the Second',
    available: [12],
    tagged: [7, 12],
    inventory: { sold: 1, available: 1 },
    user: { username: 'user 1', password: '[redacted]' },
  });
  t.deepEqual(
    seen.map(({ method, url }) => `${method} ${url}`),
    [
      'POST /api/v3/pet',
      'POST /api/v3/pet/12?name=Fido%20the%20Second&status=available',
      'GET /api/v3/pet/findByStatus?status=available',
      'GET /api/v3/pet/findByTags?tags=good&tags=old',
      'GET /api/v3/store/inventory',
      'GET /api/v3/user/user%201',
    ],
  );
  t.is(seen[0]!.headers['content-type'], 'application/json');
  t.deepEqual(JSON.parse(seen[0]!.body), {
    id: 12,
    name: 'Fido',
    photoUrls: ['https://example.com/fido.jpg'],
    status: 'pending',
    tags: [{ id: 1, name: 'good' }],
  });
  t.is(seen[0]!.headers['accept'], 'application/json');
  t.true(
    seen.every((request) => request.headers['api_key'] === SECRET),
    'the parent added the credential to every request',
  );
  t.deepEqual(
    r.calls.map((call) => call.tool),
    ['addPet', 'updatePetWithForm', 'findPetsByStatus', 'findPetsByTags', 'getInventory', 'getUserByName'].map((name) => `petstore.${name}`),
  );
  const journal = JSON.stringify(session.journal);
  t.false(journal.includes(SECRET), 'the credential is not in the journal');
  t.false(JSON.stringify(r).includes(SECRET), 'nor in the cell result');
  // The guest's own fetch has no egress in this session: the API is reachable only through the tools.
  const own = await session.run(`await fetch(${JSON.stringify(`${origin}/api/v3/store/inventory`)}).then(() => 'fetched', (e) => e.message)`);
  t.regex(String(own.result), /fetch is not allowed/);
  t.is(seen.length, 6);
});

test('refusals: a status outside 2xx, a redirect out of the derived allow-list, input that does not match names the field', async (t) => {
  const { seen, bridge } = await petstoreTools(t);
  await using session = await AgentSandbox.start({ tools: bridge, sandbox: 'off' });
  const r = await session.run(`
    const outcome = (p) => p.then((value) => ({ value }), (e) => ({ name: e.name, message: e.message }));
    [
      await outcome(petstore.getPetById({ petId: 404 })),
      await outcome(petstore.logoutUser()),
      await outcome(petstore.getPetById({ petId: 'seven' })),
      await outcome(petstore.getPetById({})),
      await outcome(petstore.deletePet({ petId: 7, api_key: 'guessed' })),
      await outcome(petstore.addPet({ body: { name: 'Nameless', photoUrls: 'none' } })),
    ];
  `);
  t.is(r.status, 'ok', r.error);
  const [missing, redirect, wrongType, absent, credential, badBody] = r.result as { name: string; message: string }[];
  t.deepEqual(missing, { name: 'UpstreamHttpError', message: 'GET /pet/{petId} answered 404 Not Found: {"code":404,"message":"Pet not found"}' });
  t.regex(redirect!.message, /redirect refused: http:\/\/127\.0\.0\.1:\d+\/admin\/drop-tables is not in the egress allow-list/);
  t.deepEqual(wrongType, { name: 'TypeError', message: 'petstore.getPetById: input.petId must be integer; the tool was not called' });
  t.is(absent!.message, 'petstore.getPetById: input.petId is required; the tool was not called');
  // The policy supplies api_key for this origin: it is no parameter of the tool.
  t.is(credential!.message, 'petstore.deletePet: input has an unknown field "api_key"; the tool was not called');
  t.is(badBody!.message, 'petstore.addPet: input.body.photoUrls must be array; the tool was not called');
  t.deepEqual(
    seen.map(({ method, url }) => `${method} ${url}`),
    ['GET /api/v3/pet/404', 'GET /api/v3/user/logout'],
    'the refused redirect and the invalid calls sent nothing',
  );
});

test('declarations show each operation as a typed function; the allow-list and methods are derived from the document', async (t) => {
  const { origin, bridged, bridge } = await petstoreTools(t);
  const declarations = bridge.declarations();
  t.true(declarations.startsWith('declare const petstore: {'));
  t.regex(
    declarations,
    /\/\*\* Find pet by ID\. Returns a single pet\. \(GET \/pet\/\{petId\}\) \*\/\n {2}getPetById\(input: \{\n\s+\/\*\* ID of pet to return \*\/\n\s+petId: number;\n {2}\}\): Promise<\{/,
  );
  t.regex(declarations, /getInventory\(\): Promise<Record<string, number>>;/);
  t.regex(declarations, /findPetsByTags\(input: \{\n\s+\/\*\* Tags to filter by \*\/\n\s+tags\?: string\[\];\n {2}\}\): Promise<Array<\{/);
  t.regex(declarations, /status\?: "available" \| "pending" \| "sold";/);
  t.regex(declarations, /loginUser\(input: \{[^}]*\}\): Promise<string>;/);
  const diagnostics = await bridge.typecheck('await petstore.getPetById({ petId: "7" });\nawait petstore.adoptPet({ petId: 7 });');
  t.deepEqual(
    diagnostics.map((d) => d.line),
    [1, 2],
    'a wrong type and a hallucinated operation are found before anything runs',
  );
  t.deepEqual(
    bridged.skipped.map(({ operation, reason }) => [operation.name, reason]),
    [['uploadFile', 'its request body is not JSON (application/octet-stream)']],
  );
  t.is(bridged.operations.length, 18);
  const base = `${origin}/api/v3`;
  t.deepEqual(bridged.allow, [
    `${base}/pet`,
    `${base}/pet/findByStatus`,
    `${base}/pet/findByTags`,
    `${base}/pet/*`,
    `${base}/store/inventory`,
    `${base}/store/order`,
    `${base}/store/order/*`,
    `${base}/user`,
    `${base}/user/createWithList`,
    `${base}/user/login`,
    `${base}/user/logout`,
    `${base}/user/*`,
  ]);
  t.deepEqual(bridged.methods, ['PUT', 'POST', 'GET', 'DELETE']);
  // Without the policy's header, the operation's own api_key parameter is an input.
  const plain = await openApiTools(petstore(), { baseUrl: base });
  t.deepEqual(Object.keys((plain.tools['deletePet']!.inputSchema as { properties: object }).properties), ['api_key', 'petId']);
  // Without baseUrl, the document's server; include picks operations.
  const own = await openApiTools(petstore(), { include: (operation) => operation.tags.includes('store') });
  t.deepEqual(
    own.operations.map((operation) => `${operation.method} ${operation.path} ${operation.name}`),
    [
      'GET /store/inventory getInventory',
      'POST /store/order placeOrder',
      'GET /store/order/{orderId} getOrderById',
      'DELETE /store/order/{orderId} deleteOrder',
    ],
  );
  t.deepEqual(own.allow, [
    'https://petstore3.swagger.io/api/v3/store/inventory',
    'https://petstore3.swagger.io/api/v3/store/order',
    'https://petstore3.swagger.io/api/v3/store/order/*',
  ]);
  t.deepEqual(own.methods, ['GET', 'POST', 'DELETE']);
});

/** A document whose one operation answers S0, and each schema Si uses S(i+1) twice: tiny as written, 2^levels nodes once its references are expanded. */
function fanOutDocument(levels: number): Record<string, any> {
  const schemas: Record<string, unknown> = { [`S${levels}`]: { type: 'string' } };
  for (let i = 0; i < levels; i++) {
    const next = { $ref: `#/components/schemas/S${i + 1}` };
    schemas[`S${i}`] = { type: 'object', properties: { a: next, b: { ...next } } };
  }
  const answer = { description: 'ok', content: { 'application/json': { schema: { $ref: '#/components/schemas/S0' } } } };
  return {
    openapi: '3.0.4',
    info: { title: 'fan-out', version: '1' },
    servers: [{ url: 'https://api.example.com' }],
    paths: { '/x': { get: { operationId: 'x', responses: { '200': answer } } } },
    components: { schemas },
  };
}

/** An OpenAPI 3.1 document: JSON Schema 2020-12 types, a path, query, header and cookie parameter and a JSON body in one operation. */
function notesDocument(): Record<string, any> {
  return {
    openapi: '3.1.0',
    info: { title: 'Notes', version: '1.0.0' },
    servers: [{ url: 'http://127.0.0.1:{port}/v1', variables: { port: { default: '9' } } }],
    paths: {
      '/things/{thingId}/notes': {
        parameters: [{ name: 'thingId', in: 'path', required: true, schema: { type: 'string' } }],
        post: {
          operationId: 'add-note',
          summary: 'Adds a note to a thing',
          parameters: [
            { name: 'draft', in: 'query', schema: { type: 'boolean' } },
            { name: 'X-Trace', in: 'header', schema: { type: 'string' } },
            { name: 'session', in: 'cookie', schema: { type: 'string' } },
          ],
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  properties: { text: { type: 'string' }, tag: { type: ['string', 'null'] } },
                  required: ['text'],
                  additionalProperties: false,
                },
              },
            },
          },
          responses: {
            '201': {
              description: 'Created',
              content: {
                'application/json': { schema: { type: 'object', properties: { id: { type: 'integer' }, text: { type: 'string' } }, required: ['id'] } },
              },
            },
          },
        },
      },
      '/things': {
        get: { responses: { '200': { description: 'All things', content: { 'application/json': { schema: { type: 'array', items: { type: 'string' } } } } } } },
      },
    },
  };
}

test('OpenAPI 3.1 in a runtime: 2020-12 schemas, every parameter location, names from operationId or method and path', async (t) => {
  const { origin, seen } = await server(t, ({ method, url, body }) =>
    method === 'GET' ? { status: 200, json: ['a'] } : { status: 201, json: { id: 1, text: (JSON.parse(body) as { text: string }).text, at: url.pathname } },
  );
  const bridged = await openApiTools(notesDocument(), { baseUrl: `${origin}/v1` });
  t.deepEqual(Object.keys(bridged.tools), ['add_note', 'get_things']);
  t.deepEqual(bridged.allow, [`${origin}/v1/things/*`, `${origin}/v1/things`]);
  const bridge = new ToolBridge({ namespace: 'notes', tools: bridged.tools });
  t.regex(bridge.declarations(), /tag\?: string \| null\b/);
  await using rt = await Runtime.start();
  await bridge.bind(rt);
  const result = await rt.eval(`(async () => {
    const outcome = (p) => p.then((value) => ({ value }), (e) => e.message);
    return [
      await outcome(notes.add_note({ thingId: 'box 9', draft: true, 'X-Trace': 't-1', session: 's=1', body: { text: 'hello', tag: null } })),
      await outcome(notes.get_things()),
      await outcome(notes.add_note({ thingId: '..', body: { text: 'up' } })),
      await outcome(notes.add_note({ thingId: 'a/b', body: { text: 'across' } })),
      await outcome(notes.add_note({ thingId: 'x', body: { text: 'hi', tag: 5 } })),
    ];
  })()`);
  const [added, listed, dots, slash, tag] = result as unknown[];
  t.deepEqual(
    added,
    { value: { id: 1, text: 'hello', at: '/v1/things/box%209/notes' } },
    'the answer as its schema says (an extra field passes: the schema allows it)',
  );
  t.deepEqual(listed, { value: ['a'] });
  t.is(dots, 'the path parameters of /things/{thingId}/notes cannot make a segment "." or "..": it would leave the path');
  t.regex(String(slash), /an encoded '\/' or '\\' in the path is refused/);
  t.is(tag, 'notes.add_note: input.body.tag must be string,null; the tool was not called');
  t.is(seen.length, 2);
  t.is(seen[0]!.url, '/v1/things/box%209/notes?draft=true');
  t.is(seen[0]!.headers['x-trace'], 't-1');
  t.is(seen[0]!.headers['cookie'], 'session=s%3D1');
  t.deepEqual(JSON.parse(seen[0]!.body), { text: 'hello', tag: null });
  // Without baseUrl, the server's URL with its variables' defaults.
  t.deepEqual((await openApiTools(notesDocument())).allow, ['http://127.0.0.1:9/v1/things/*', 'http://127.0.0.1:9/v1/things']);
});

test('OpenAPI 2.0, another version, and a document that is not OpenAPI are refused, naming the path of what is wrong', async (t) => {
  const refused: [unknown, RegExp][] = [
    [
      { swagger: '2.0', info: { title: 'x', version: '1' }, paths: {} },
      /the document is Swagger\/OpenAPI 2\.0: openApiTools reads OpenAPI 3\.0 and 3\.1; convert it first/,
    ],
    [{ openapi: '4.0.0', info: { title: 'x', version: '1' }, paths: {} }, /^openapi: expected an OpenAPI version 3\.0\.x or 3\.1\.x \(got "4\.0\.0"\)$/],
    ['{"openapi": "3.0.4", ', /^the OpenAPI document is not valid JSON/],
    [[], /^openApiTools takes an OpenAPI document/],
  ];
  const noResponses = petstore();
  delete noResponses['paths']['/pet']['post']['responses'];
  refused.push([noResponses, /^the OpenAPI document is not valid: paths\.\/pet\.post\.responses is required$/]);
  const wrongType = petstore();
  wrongType['paths']['/pet/{petId}']['get']['responses'] = 5;
  refused.push([wrongType, /^the OpenAPI document is not valid: paths\.\/pet\/\{petId\}\.get\.responses must be object$/]);
  const dangling = petstore();
  dangling['components']['schemas']['Pet']['properties']['category'] = { $ref: '#/components/schemas/Nowhere' };
  refused.push([dangling, /components\/schemas\/Nowhere|components\.schemas\.Nowhere/]);
  for (const [document, message] of refused) await t.throwsAsync(openApiTools(document), { instanceOf: InvalidOption, message });
});

test('a $ref outside the document is refused, never read: file:, http:, a relative file', async (t) => {
  const { origin, seen } = await server(t, () => ({ status: 200, json: { type: 'string' } }));
  for (const ref of ['file:///etc/passwd', `${origin}/schema.json`, './common.json#/Tag', '//evil.example/x.json']) {
    const document = petstore();
    document['components']['schemas']['Tag'] = { $ref: ref };
    await t.throwsAsync(openApiTools(document), {
      instanceOf: InvalidOption,
      message: `components.schemas.Tag.$ref: the reference ${JSON.stringify(ref)} is outside the document; openApiTools resolves references within the document only (bundle the document first)`,
    });
  }
  t.is(seen.length, 0, 'the http: reference was never fetched');
});

test('a circular $ref, a document too large, too many operations, schemas that fan out, deep nesting: refused', async (t) => {
  const circular = petstore();
  circular['components']['schemas']['Tag']['properties']['parent'] = { $ref: '#/components/schemas/Tag' };
  await t.throwsAsync(openApiTools(circular), { instanceOf: InvalidOption, message: /circular \$ref; openApiTools refuses recursive schemas/ });
  await t.throwsAsync(openApiTools(petstore(), { maxDocumentChars: 10_000 }), {
    instanceOf: InvalidOption,
    message: /^the OpenAPI document has \d+ characters of JSON, more than maxDocumentChars \(10000\)/,
  });
  await t.throwsAsync(openApiTools(petstore(), { maxOperations: 5 }), {
    instanceOf: InvalidOption,
    message: 'the OpenAPI document has more than 5 operations (maxOperations): bridge a smaller document, or raise it',
  });
  // 2^40 nodes once expanded, a few hundred bytes as written.
  const fanOut = fanOutDocument(40);
  await t.throwsAsync(openApiTools(fanOut), {
    instanceOf: InvalidOption,
    message: /^components\.schemas\.S\d+\.properties\.[ab](\.\$ref)?: the document's schemas expand past 1000000 nodes once their references are resolved/,
  });
  let deep: unknown = { type: 'string' };
  for (let i = 0; i < 2_000; i++) deep = { type: 'array', items: deep };
  const nested = { ...fanOut, components: { schemas: { S0: deep } } };
  const error = await t.throwsAsync(openApiTools(nested), { instanceOf: InvalidOption, message: /the document nests deeper than 256 levels/ });
  t.true(error.message.length < 400, 'a deep path is shortened in the message');
  // A chain of references, each schema shallow: deep only once resolved.
  const chain: Record<string, unknown> = { S2000: { type: 'string' } };
  for (let i = 0; i < 2_000; i++) chain[`S${i}`] = { type: 'array', items: { $ref: `#/components/schemas/S${i + 1}` } };
  await t.throwsAsync(openApiTools({ ...fanOut, components: { schemas: chain } }), {
    instanceOf: InvalidOption,
    message: /the document's references nest deeper than 1024 levels once resolved$/,
  });
});

test("the caller's document is not changed, as an object or as text; names are checked", async (t) => {
  const document = petstore();
  const before = structuredClone(document);
  const bridged = await openApiTools(document, { baseUrl: 'https://api.example.com/v3' });
  t.deepEqual(document, before, 'dereferencing happened in a copy');
  bridged.tools['addPet']!.inputSchema && ((bridged.tools['addPet']!.inputSchema as any).properties.body.properties.name.type = 'number');
  t.deepEqual(document, before, 'the tools share nothing with it');
  t.is(Object.keys((await openApiTools(PETSTORE_TEXT, { baseUrl: 'https://api.example.com/v3' })).tools).length, 18);

  const named = (ids: (string | undefined)[]) => ({
    openapi: '3.0.4',
    info: { title: 'names', version: '1' },
    servers: [{ url: 'https://api.example.com' }],
    paths: Object.fromEntries(
      ids.map((id, i) => [`/r${i}`, { get: { ...(id === undefined ? {} : { operationId: id }), responses: { '200': { description: 'ok' } } } }]),
    ),
  });
  await t.throwsAsync(openApiTools(named(['list-things', 'list_things'])), {
    instanceOf: InvalidOption,
    message: 'paths./r1.get and paths./r0.get are both named list_things: give one another operationId',
  });
  await t.throwsAsync(openApiTools(named(['__proto__'])), { instanceOf: InvalidOption, message: /__proto__ cannot be a tool's name/ });
  t.deepEqual(Object.keys((await openApiTools(named([undefined, 'delete']))).tools), ['get_r0', 'delete_']);
  const cyclic: Record<string, unknown> = { openapi: '3.0.4' };
  cyclic['self'] = cyclic;
  await t.throwsAsync(openApiTools(cyclic), { instanceOf: InvalidOption, message: /^the OpenAPI document is not JSON data/ });
});

test('the egress: a relative server needs baseUrl; the policy is checked; an allow-list given is used as given', async (t) => {
  const relative = petstore();
  relative['servers'] = [{ url: '/api/v3' }];
  await t.throwsAsync(openApiTools(relative), {
    instanceOf: InvalidOption,
    message: 'servers[0].url ("/api/v3") is not an absolute URL: give baseUrl, such as https://api.example.com/v1',
  });
  await t.throwsAsync(openApiTools(petstore(), { egress: { headers: { 'https://elsewhere.example': { authorization: 'Bearer x' } } } }), {
    instanceOf: InvalidOption,
    message: /egress policy: headers\["https:\/\/elsewhere\.example"\]: no pattern in allow reaches this origin/,
  });
  await t.throwsAsync(openApiTools(petstore(), { baseUrl: 'ftp://files.example.com' }), { instanceOf: InvalidOption, message: /only http: and https: APIs/ });
  await t.throwsAsync(openApiTools(petstore(), { egress: { timeoutMs: 0 } }), { instanceOf: InvalidOption, message: /timeoutMs must be an integer >= 1/ });

  const { origin, seen } = await server(t, petstoreRoute());
  const narrow = await openApiTools(petstore(), { baseUrl: `${origin}/api/v3`, egress: { allow: [`${origin}/api/v3/pet/findByStatus`] } });
  t.deepEqual(narrow.allow, [`${origin}/api/v3/pet/findByStatus`]);
  await t.throwsAsync(Promise.resolve(narrow.tools['getPetById']!.execute({ petId: 7 })), { message: /is not in the egress allow-list/ });
  t.deepEqual(await narrow.tools['findPetsByStatus']!.execute({ status: 'sold' }), [
    { id: 7, name: 'Rex', photoUrls: [], status: 'sold', tags: [{ id: 2, name: 'old' }] },
  ]);
  t.is(seen.length, 1);
});

test("the parser runs in a worker thread under parseTimeoutMs: a slow document is stopped, the host's event loop ticks meanwhile, and the next document parses", async (t) => {
  // Within the expansion bound, but slow to validate once dereferenced (about half a second here).
  const slow = fanOutDocument(14);
  let ticks = 0;
  const ticking = setInterval(() => ticks++, 5);
  try {
    await t.throwsAsync(openApiTools(slow, { parseTimeoutMs: 20 }), {
      instanceOf: InvalidOption,
      message: 'the OpenAPI parser took longer than 20 ms (parseTimeoutMs) and was stopped: bridge a smaller document, or raise it',
    });
  } finally {
    clearInterval(ticking);
  }
  t.true(ticks > 0, 'the event loop ran while the parser worked');
  t.is(Object.keys((await openApiTools(petstore(), { baseUrl: 'https://api.example.com/v3' })).tools).length, 18, 'a new parser thread took over');
  await t.throwsAsync(openApiTools(petstore(), { parseTimeoutMs: 0 }), { instanceOf: InvalidOption, message: /parseTimeoutMs must be a positive integer/ });
});
