/**
 * `openApiTools`: the operations of an OpenAPI 3.0 or 3.1 document as bridge tools. Each
 * operation's parameters and JSON request body become its input schema, its 2xx JSON response
 * its output schema; a call is an HTTP request the parent performs under a Strata egress policy
 * (its allow-list derived from the document), so the API's credential is added outside the guest
 * and never reaches it or the journal.
 *
 * The document is untrusted input: it is bounded in size, operations and schema expansion, its
 * `$ref`s are resolved inside the document only (a `file:` or `http:` reference is refused, never
 * read), circular references are refused, and the caller's object is never changed.
 *
 * @module
 */
import {
  egressHandler,
  InvalidOption,
  type EgressHandler,
  type EgressHandlerOptions,
  type EgressPolicy,
  type EgressRequest,
  type EgressResponse,
} from '@strata/runtime';
import { BoundedWorker } from '@strata/runtime/bounded-worker';
import { UpstreamHttpError } from './errors.js';
import { PARSE_REFUSED, pointerPath } from './openapi-parse.js';
import { toIdentifier, type BridgeTool, type JsonSchema } from './tool-bridge.js';

/** One operation of the document, as {@link OpenApiToolsOptions.include} and the result describe it. */
export interface OpenApiOperation {
  /** The tool's name: the `operationId` as an identifier, or `<method>_<path>` without one (see {@link openApiTools}). */
  readonly name: string;
  /** Upper case: `GET`, `POST`, … */
  readonly method: string;
  /** The path template as the document writes it: `/pet/{petId}`. */
  readonly path: string;
  readonly operationId: string | undefined;
  readonly summary: string | undefined;
  readonly tags: readonly string[];
}

/** The egress of the calls: an {@link EgressPolicy} whose `allow` and `methods` default to what the document needs. */
export type OpenApiEgress = Omit<EgressPolicy, 'allow' | 'methods'> & {
  /** Default: one pattern per operation, the base URL and the operation's path up to its first `{parameter}`. */
  readonly allow?: readonly string[];
  /** Default: the methods of the bridged operations. */
  readonly methods?: readonly string[];
};

/** Options of {@link openApiTools}. */
export interface OpenApiToolsOptions {
  /**
   * Where requests go: an absolute `http:` or `https:` URL, each operation's path appended to it
   * (`https://api.example.com/v3` + `/pet/{petId}`). Default: the document's first server (its
   * variables at their defaults), which must then be absolute. Given, it is used for every
   * operation, whatever servers a path or an operation names.
   */
  readonly baseUrl?: string;
  /**
   * The policy the calls are made under. Credentials go in `headers`, by origin
   * (`{ 'https://api.example.com': { authorization: 'Bearer …' } }`): the parent adds them, and a
   * header parameter of the same name is left out of the tools' inputs.
   */
  readonly egress?: OpenApiEgress;
  /** How the parent performs the requests (`lookup`, `ca`), as {@link egressHandler} takes them. */
  readonly egressOptions?: EgressHandlerOptions;
  /** Which operations become tools; default all of them. */
  readonly include?: (operation: OpenApiOperation) => boolean;
  /** Largest document, in characters of its JSON. Default 5 000 000. */
  readonly maxDocumentChars?: number;
  /** Most operations a document may have (counted before `include`). Default 500. */
  readonly maxOperations?: number;
  /** How long the parser may take to validate the document and resolve its references, in its worker thread, ms. Default 10 000. */
  readonly parseTimeoutMs?: number;
}

/** The tools of a document, and what was left out. */
export interface OpenApiTools {
  /** By name, a null-prototype record; give them to `new ToolBridge({ namespace, tools })`. */
  readonly tools: Readonly<Record<string, BridgeTool>>;
  /** The bridged operations, in the document's order. */
  readonly operations: readonly OpenApiOperation[];
  /** Operations that `include` chose but that cannot be tools, each with the reason. */
  readonly skipped: readonly { readonly operation: OpenApiOperation; readonly reason: string }[];
  /** The egress allow-list and methods the calls are made under (the policy's credentials are not here). */
  readonly allow: readonly string[];
  readonly methods: readonly string[];
}

const DEFAULT_MAX_CHARS = 5_000_000;
const DEFAULT_MAX_OPERATIONS = 500;
const DEFAULT_PARSE_TIMEOUT_MS = 10_000;
const PARSER_START_TIMEOUT_MS = 10_000;
const PARSER_HEAP_MB = 512;
// Schemas are copied out of the document, shared `$ref`s expanded: a document whose references fan
// out (A uses B twice, B uses C twice, …) would otherwise make the validators and declarations exponential.
const MAX_SCHEMA_NODES = 200_000;
const MAX_SCHEMA_DEPTH = 64;
const MAX_DOCUMENT_DEPTH = 256;
// The whole document once its references are resolved, as the parser's validation walks it.
const MAX_EXPANDED_NODES = 1_000_000;
const MAX_EXPANDED_DEPTH = 1_024;
// What of a failed response's body the error shows the model.
const MAX_ERROR_BODY = 1_000;
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
// Names JavaScript gives a meaning of its own: never a tool's name.
const OBJECT_NAMES = new Set(['__proto__', 'constructor', 'prototype']);
// OpenAPI: header parameters of these names SHALL be ignored (the request body and security define them).
const IGNORED_HEADERS = new Set(['accept', 'content-type', 'authorization']);
// Keywords whose values are data, copied as they are; and those whose values are schemas by name.
const DATA_KEYWORDS = new Set(['enum', 'const', 'default', 'example', 'examples']);
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);
const DROPPED_KEYWORDS = new Set(['$id', '$schema', '$anchor', '$dynamicAnchor']);
const DRAFT_2020 = 'https://json-schema.org/draft/2020-12/schema';

type Dialect = '3.0' | '3.1';
type Json = Record<string, unknown>;

/** A parameter as the request builder needs it. */
interface Parameter {
  readonly name: string;
  readonly in: 'path' | 'query' | 'header' | 'cookie';
  readonly style: string;
  readonly explode: boolean;
  /** Sent as JSON text (a parameter described by `content`). */
  readonly json: boolean;
}

/** What one operation's call does. */
interface Plan {
  readonly method: string;
  readonly path: string;
  readonly base: string;
  readonly parameters: readonly Parameter[];
  readonly body: { readonly mediaType: string } | undefined;
  readonly accept: string | undefined;
}

/**
 * Bridges the operations of an OpenAPI 3.0 or 3.1 document (JSON text, or the parsed object).
 *
 * A tool's name is its `operationId` made an identifier (`get-pet` → `get_pet`, as ToolBridge
 * names tools); an operation without one is named `<method>_<path>`, every run of characters
 * outside `A-Z a-z 0-9` in the path one `_` (`get /pet/{petId}/uploadImage` → `get_pet_petId_uploadImage`).
 * Two operations with one name are refused. Its input is an object of its parameters by name
 * (path, query, header and cookie) and its JSON request body as `body`; its answer is the 2xx
 * response's body, parsed as JSON when its content type says so (text otherwise, `null` when
 * empty); another status rejects with {@link UpstreamHttpError}.
 *
 * Needs `@apidevtools/swagger-parser` (an optional peer dependency), which validates the
 * document and resolves its internal `$ref`s. OpenAPI 2.0 is refused: convert it to 3.x first.
 *
 * @throws `InvalidOption` for a document that is too large, malformed (naming the path of what is
 *   wrong, such as `paths./pets.get.responses`), with an external or circular `$ref`, two
 *   operations of one name, or an option that is wrong.
 */
export async function openApiTools(document: unknown, options: OpenApiToolsOptions = {}): Promise<OpenApiTools> {
  if (options === null || typeof options !== 'object') throw new InvalidOption('openApiTools options must be an object');
  const maxChars = positiveInteger(options.maxDocumentChars, 'maxDocumentChars', DEFAULT_MAX_CHARS);
  const maxOperations = positiveInteger(options.maxOperations, 'maxOperations', DEFAULT_MAX_OPERATIONS);
  if (options.include !== undefined && typeof options.include !== 'function') throw new InvalidOption('include must be a function of the operation');
  const copy = ownCopy(document, maxChars);
  const dialect = dialectOf(copy);
  refuseExternalRefs(copy);
  refuseExpansion(copy);
  const api = await validated(copy, positiveInteger(options.parseTimeoutMs, 'parseTimeoutMs', DEFAULT_PARSE_TIMEOUT_MS));
  const operations = listOperations(api, maxOperations);
  const egress = options.egress ?? {};
  if (egress === null || typeof egress !== 'object' || Array.isArray(egress)) throw new InvalidOption('egress must be an egress policy object');
  const injected = injectedHeaderNames(egress);

  const tools = Object.create(null) as Record<string, BridgeTool>;
  const bridged: OpenApiOperation[] = [];
  const skipped: { operation: OpenApiOperation; reason: string }[] = [];
  const plans: { operation: OpenApiOperation; plan: Plan; tool: Omit<BridgeTool, 'execute'> }[] = [];
  const budget = { nodes: 0 };
  const byName = new Map<string, string>();
  for (const found of operations) {
    const { operation } = found;
    const where = `paths.${found.path}.${found.method.toLowerCase()}`;
    const earlier = byName.get(operation.name);
    if (earlier !== undefined) throw new InvalidOption(`${where} and ${earlier} are both named ${operation.name}: give one another operationId`);
    byName.set(operation.name, where);
    if (options.include !== undefined && options.include(operation) !== true) continue;
    if (OBJECT_NAMES.has(operation.name))
      throw new InvalidOption(`${where}: ${operation.name} cannot be a tool's name: give the operation another operationId`);
    const base = baseUrlOf(options.baseUrl, api, found, where);
    const built = buildTool(found, base, dialect, injected.get(new URL(base).origin) ?? new Set(), budget, where);
    if (typeof built === 'string') skipped.push({ operation, reason: built });
    else plans.push({ operation, ...built });
  }

  const allow = egress.allow ?? [...new Set(plans.map(({ plan }) => allowPattern(plan)))];
  const methods = egress.methods ?? [...new Set(plans.map(({ plan }) => plan.method))];
  let handler: EgressHandler | undefined;
  if (plans.length > 0) handler = egressHandler({ ...egress, allow, methods }, options.egressOptions);
  for (const { operation, plan, tool } of plans) {
    tools[operation.name] = { ...tool, execute: (input: unknown, context?: { signal?: AbortSignal }) => call(handler!, plan, input, context?.signal) };
    bridged.push(operation);
  }
  return { tools, operations: bridged, skipped, allow: Object.freeze([...allow]), methods: Object.freeze([...methods]) };
}

/** The document as this module's own JSON copy: the caller's object is never changed, and its size is known. */
function ownCopy(document: unknown, maxChars: number): Json {
  let text: string;
  if (typeof document === 'string') {
    text = document;
  } else {
    if (document === null || typeof document !== 'object' || Array.isArray(document))
      throw new InvalidOption('openApiTools takes an OpenAPI document: its JSON text, or the parsed object');
    try {
      text = JSON.stringify(document);
    } catch (error) {
      throw new InvalidOption(`the OpenAPI document is not JSON data (${(error as Error).message}): pass it as parsed from its JSON or YAML text`);
    }
  }
  if (text.length > maxChars)
    throw new InvalidOption(
      `the OpenAPI document has ${text.length} characters of JSON, more than maxDocumentChars (${maxChars}): bridge a smaller document, or raise it`,
    );
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new InvalidOption(`the OpenAPI document is not valid JSON: ${(error as Error).message} (YAML: parse it first, and pass the object)`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new InvalidOption('the OpenAPI document must be a JSON object');
  return parsed as Json;
}

function dialectOf(document: Json): Dialect {
  if (document['swagger'] !== undefined)
    throw new InvalidOption(
      `the document is Swagger/OpenAPI ${String(document['swagger'])}: openApiTools reads OpenAPI 3.0 and 3.1; convert it first (swagger2openapi, or the editor of your API's framework)`,
    );
  const version = document['openapi'];
  if (typeof version === 'string' && /^3\.0\.\d+$/.test(version)) return '3.0';
  if (typeof version === 'string' && /^3\.1\.\d+$/.test(version)) return '3.1';
  throw new InvalidOption(`openapi: expected an OpenAPI version 3.0.x or 3.1.x (got ${JSON.stringify(version)})`);
}

/**
 * Refuses, before the parser sees the document, any `$ref` outside it (`file:`, `http:`, a
 * relative file), naming where; and nesting deeper than the parser's recursion should go. An
 * iterative walk: a deep document cannot overflow the stack here.
 */
function refuseExternalRefs(document: Json): void {
  const stack: { node: unknown; path: string; depth: number }[] = [{ node: document, path: '', depth: 0 }];
  while (stack.length > 0) {
    const { node, path, depth } = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    if (depth > MAX_DOCUMENT_DEPTH) throw new InvalidOption(`${shortPath(path)}: the document nests deeper than ${MAX_DOCUMENT_DEPTH} levels`);
    for (const [key, value] of Object.entries(node)) {
      const at = path === '' ? key : `${path}.${key}`;
      if (key === '$ref' && typeof value === 'string' && !value.startsWith('#')) {
        throw new InvalidOption(
          `${at}: the reference ${JSON.stringify(value.slice(0, 200))} is outside the document; openApiTools resolves references within the document only (bundle the document first)`,
        );
      }
      stack.push({ node: value, path: at, depth: depth + 1 });
    }
  }
}

/**
 * Refuses, before the parser sees the document, one whose internal `$ref`s expand past
 * {@link MAX_EXPANDED_NODES} nodes or {@link MAX_EXPANDED_DEPTH} levels (A uses B twice, B uses C
 * twice, …: a few hundred bytes as written, exponential once dereferenced, and the parser's
 * validation walks the dereferenced document), and a circular one, naming where. Linear in the
 * document: each reference's target is measured once.
 */
function refuseExpansion(document: Json): void {
  const measured = new Map<string, number>();
  const measuring = new Set<string>();
  const size = (node: unknown, path: string, depth: number): number => {
    if (node === null || typeof node !== 'object') return 1;
    if (depth > MAX_EXPANDED_DEPTH)
      throw new InvalidOption(`${shortPath(path)}: the document's references nest deeper than ${MAX_EXPANDED_DEPTH} levels once resolved`);
    let total = 1;
    for (const [key, value] of Object.entries(node)) {
      const at = path === '' ? key : `${path}.${key}`;
      total += key === '$ref' && typeof value === 'string' ? sizeOfTarget(value, at, depth + 1) : size(value, at, depth + 1);
      if (total > MAX_EXPANDED_NODES) {
        throw new InvalidOption(
          `${at}: the document's schemas expand past ${MAX_EXPANDED_NODES} nodes once their references are resolved; bridge a smaller document`,
        );
      }
    }
    return total;
  };
  const sizeOfTarget = (ref: string, at: string, depth: number): number => {
    const known = measured.get(ref);
    if (known !== undefined) return known;
    if (measuring.has(ref)) {
      throw new InvalidOption(
        `${at}: the document has a circular $ref; openApiTools refuses recursive schemas (describe the recursive field as an object without the reference)`,
      );
    }
    const target = pointerTarget(document, ref);
    if (target === undefined) return 1; // dangling: the parser names it
    measuring.add(ref);
    const total = size(target, pointerPath(ref.slice(1)), depth);
    measuring.delete(ref);
    measured.set(ref, total);
    return total;
  };
  size(document, '', 0);
}

/** A path for a message: a deep one as its start and its end. */
function shortPath(path: string): string {
  return path.length <= 240 ? path : `${path.slice(0, 120)}…${path.slice(-100)}`;
}

/** What an internal reference (`#/components/schemas/Pet`) points at in the document, if anything. */
function pointerTarget(document: Json, ref: string): unknown {
  let node: unknown = document;
  for (const raw of ref.slice(1).split('/').slice(1)) {
    let part: string;
    try {
      part = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    } catch {
      return undefined;
    }
    if (node === null || typeof node !== 'object' || !Object.hasOwn(node, part)) return undefined;
    node = (node as Json)[part];
  }
  return node;
}

/**
 * The document validated against its OpenAPI version and its internal `$ref`s resolved: the parser
 * runs in a worker thread of its own (off the host's event loop, under `timeout` and a heap
 * limit), which is replaced after any failure; the answer is a structured clone (shared references
 * stay shared).
 */
async function validated(copy: Json, timeout: number): Promise<Json> {
  parser ??= new BoundedWorker({
    script: new URL('./openapi-parse-worker.js', import.meta.url),
    startTimeout: PARSER_START_TIMEOUT_MS,
    resourceLimits: { maxOldGenerationSizeMb: PARSER_HEAP_MB },
  });
  const outcome = await parser.run(copy, timeout);
  switch (outcome.status) {
    case 'ok':
      return outcome.value;
    case 'timeout':
      throw new InvalidOption(`the OpenAPI parser took longer than ${timeout} ms (parseTimeoutMs) and was stopped: bridge a smaller document, or raise it`);
    case 'crashed':
      throw new InvalidOption(`the OpenAPI parser failed on this document (its thread died: ${outcome.message}): bridge a smaller document`);
    case 'unavailable':
      throw new InvalidOption(`the OpenAPI parser's worker thread could not be started (${outcome.message})`);
    case 'error':
      // The worker's refusals are ours, written for the caller (the parser missing, the document invalid or circular).
      if (outcome.error.code === PARSE_REFUSED) throw new InvalidOption(outcome.error.message);
      throw new InvalidOption(`the OpenAPI parser failed on this document (${outcome.error.name}: ${outcome.error.message.split('\n', 1)[0]})`);
  }
}

/** Terminates the parser's thread (a later call starts a new one): for tests that count threads. */
export async function closeOpenApiParser(): Promise<void> {
  await parser?.close();
  parser = undefined;
}

let parser: BoundedWorker<Json, Json> | undefined;

interface FoundOperation {
  readonly operation: OpenApiOperation;
  readonly method: string;
  readonly path: string;
  readonly pathItem: Json;
  readonly definition: Json;
}

function listOperations(api: Json, maxOperations: number): FoundOperation[] {
  const found: FoundOperation[] = [];
  const paths = (api['paths'] ?? {}) as Json;
  for (const [path, item] of Object.entries(paths)) {
    if (item === null || typeof item !== 'object') continue;
    for (const method of METHODS) {
      const definition = (item as Json)[method];
      if (definition === null || typeof definition !== 'object') continue;
      if (found.length >= maxOperations)
        throw new InvalidOption(`the OpenAPI document has more than ${maxOperations} operations (maxOperations): bridge a smaller document, or raise it`);
      const op = definition as Json;
      const operationId = typeof op['operationId'] === 'string' ? op['operationId'] : undefined;
      found.push({
        method: method.toUpperCase(),
        path,
        pathItem: item as Json,
        definition: op,
        operation: Object.freeze({
          name: operationId === undefined ? fallbackName(method, path) : toIdentifier(operationId),
          method: method.toUpperCase(),
          path,
          operationId,
          summary: typeof op['summary'] === 'string' ? op['summary'] : undefined,
          tags: Object.freeze(Array.isArray(op['tags']) ? op['tags'].filter((tag): tag is string => typeof tag === 'string') : []),
        }),
      });
    }
  }
  return found;
}

/** `get /pet/{petId}/uploadImage` → `get_pet_petId_uploadImage`. */
function fallbackName(method: string, path: string): string {
  const words = path.replace(/[^A-Za-z0-9]+/g, '_').replace(/^_+|_+$/g, '');
  return toIdentifier(words === '' ? method : `${method}_${words}`);
}

/** The names of the headers the policy adds, by origin: the host fills them, so no tool takes them as input. */
function injectedHeaderNames(egress: OpenApiEgress): Map<string, Set<string>> {
  const byOrigin = new Map<string, Set<string>>();
  const headers = egress.headers;
  if (headers === null || typeof headers !== 'object') return byOrigin;
  for (const [origin, fields] of Object.entries(headers)) {
    let key: string;
    try {
      key = new URL(origin).origin;
    } catch {
      continue; // the egress policy refuses it, with its own message
    }
    if (fields !== null && typeof fields === 'object') byOrigin.set(key, new Set(Object.keys(fields).map((name) => name.toLowerCase())));
  }
  return byOrigin;
}

/** The base URL of an operation, checked, without a trailing `/`. */
function baseUrlOf(given: string | undefined, api: Json, found: FoundOperation, where: string): string {
  let source: string;
  let field: string;
  if (given !== undefined) {
    if (typeof given !== 'string') throw new InvalidOption('baseUrl must be a string such as https://api.example.com/v1');
    source = given;
    field = 'baseUrl';
  } else {
    const [servers, at] = Array.isArray(found.definition['servers'])
      ? [found.definition['servers'], `${where}.servers`]
      : Array.isArray(found.pathItem['servers'])
        ? [found.pathItem['servers'], `paths.${found.path}.servers`]
        : [api['servers'], 'servers'];
    const first = Array.isArray(servers) ? (servers[0] as Json | undefined) : undefined;
    if (first === undefined || typeof first['url'] !== 'string')
      throw new InvalidOption(`${at}: the document names no server for ${found.method} ${found.path}: give baseUrl`);
    source = withVariables(first['url'], first['variables']);
    field = `${at}[0].url`;
  }
  let url: URL;
  try {
    url = new URL(source);
  } catch {
    throw new InvalidOption(`${field} (${JSON.stringify(source)}) is not an absolute URL: give baseUrl, such as https://api.example.com/v1`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new InvalidOption(`${field}: only http: and https: APIs can be called (got ${url.protocol})`);
  if (url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '')
    throw new InvalidOption(`${field}: a base URL has no user, password, query or fragment (credentials go in egress.headers)`);
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

function withVariables(url: string, variables: unknown): string {
  return url.replace(/\{([^}]*)\}/g, (whole, name: string) => {
    const variable = variables !== null && typeof variables === 'object' ? (variables as Json)[name] : undefined;
    const fallback = variable !== null && typeof variable === 'object' ? (variable as Json)['default'] : undefined;
    return typeof fallback === 'string' ? fallback : whole;
  });
}

/** The allow pattern of an operation: exact for a fixed path, a prefix up to the first `{parameter}` otherwise. */
function allowPattern(plan: Plan): string {
  const brace = plan.path.indexOf('{');
  return brace === -1 ? `${plan.base}${plan.path}` : `${plan.base}${plan.path.slice(0, brace)}*`;
}

/** A tool's description, schemas and request plan; or why the operation cannot be one. */
function buildTool(
  found: FoundOperation,
  base: string,
  dialect: Dialect,
  injected: ReadonlySet<string>,
  budget: { nodes: number },
  where: string,
): { plan: Plan; tool: Omit<BridgeTool, 'execute'> } | string {
  if (found.method === 'TRACE') return 'TRACE is never sent by Strata’s egress';
  const properties: Json = {};
  const required: string[] = [];
  const parameters: Parameter[] = [];
  for (const given of mergedParameters(found)) {
    const name = given['name'] as string;
    const location = given['in'] as Parameter['in'];
    const at = `${where}.parameters[${JSON.stringify(name)}]`;
    if (location === 'header' && (IGNORED_HEADERS.has(name.toLowerCase()) || injected.has(name.toLowerCase()))) continue;
    if (Object.hasOwn(properties, name)) return `two parameters are named ${JSON.stringify(name)} (in ${location} and another)`;
    const style = typeof given['style'] === 'string' ? given['style'] : location === 'query' || location === 'cookie' ? 'form' : 'simple';
    const supported = location === 'query' ? ['form', 'spaceDelimited', 'pipeDelimited', 'deepObject'] : location === 'cookie' ? ['form'] : ['simple'];
    if (!supported.includes(style)) return `the parameter ${JSON.stringify(name)} has style ${style}, which openApiTools does not send`;
    let schema: unknown = given['schema'];
    let json = false;
    if (schema === undefined && given['content'] !== null && typeof given['content'] === 'object') {
      const [mediaType, media] = Object.entries(given['content'] as Json)[0] ?? [];
      if (mediaType === undefined || !isJsonMediaType(mediaType)) return `the parameter ${JSON.stringify(name)} is described by a media type that is not JSON`;
      schema = (media as Json | undefined)?.['schema'] ?? {};
      json = true;
    }
    const copied = toJsonSchema(schema ?? {}, dialect, budget, `${at}.schema`);
    properties[name] = withDescription(copied, given['description']);
    if (given['required'] === true || location === 'path') required.push(name);
    parameters.push({ name, in: location, style, explode: typeof given['explode'] === 'boolean' ? given['explode'] : style === 'form', json });
  }

  let body: Plan['body'];
  const requestBody = found.definition['requestBody'] as Json | undefined;
  if (requestBody !== undefined) {
    const content = (requestBody['content'] ?? {}) as Json;
    const mediaType = pickJson(Object.keys(content));
    if (mediaType === undefined) return `its request body is not JSON (${Object.keys(content).join(', ') || 'no media type'})`;
    if (Object.hasOwn(properties, 'body')) return 'it has a parameter named "body" and a request body';
    const schema = ((content[mediaType] as Json | undefined)?.['schema'] ?? {}) as unknown;
    properties['body'] = withDescription(
      toJsonSchema(schema, dialect, budget, `${where}.requestBody.content[${JSON.stringify(mediaType)}].schema`),
      requestBody['description'],
    );
    if (requestBody['required'] === true) required.push('body');
    body = { mediaType };
  }

  const output = outputSchema(found, dialect, budget, where);
  const inputSchema: Json | undefined =
    parameters.length === 0 && body === undefined
      ? undefined
      : {
          ...(dialect === '3.1' ? { $schema: DRAFT_2020 } : {}),
          type: 'object',
          properties,
          ...(required.length === 0 ? {} : { required }),
          additionalProperties: false,
        };
  return {
    plan: { method: found.method, path: found.path, base, parameters, body, accept: output.accept },
    tool: {
      description: describe(found),
      ...(inputSchema === undefined ? {} : { inputSchema }),
      ...(output.schema === undefined ? {} : { outputSchema: output.schema }),
    },
  };
}

/** The path item's parameters, with the operation's replacing those of the same name and location. */
function mergedParameters(found: FoundOperation): Json[] {
  const merged = new Map<string, Json>();
  for (const list of [found.pathItem['parameters'], found.definition['parameters']]) {
    if (!Array.isArray(list)) continue;
    for (const parameter of list as Json[]) merged.set(`${String(parameter['in'])} ${String(parameter['name'])}`, parameter);
  }
  return [...merged.values()];
}

/** The answer's schema: the 2xx responses' JSON schemas (the `default` response's when no 2xx is documented). */
function outputSchema(found: FoundOperation, dialect: Dialect, budget: { nodes: number }, where: string): { schema?: JsonSchema; accept?: string } {
  const responses = (found.definition['responses'] ?? {}) as Json;
  let codes = Object.keys(responses).filter((code) => /^2(\d\d|XX)$/i.test(code));
  if (codes.length === 0 && responses['default'] !== undefined) codes = ['default'];
  const schemas: unknown[] = [];
  let complete = codes.length > 0;
  let accept: string | undefined;
  for (const code of codes) {
    const content = ((responses[code] as Json | undefined)?.['content'] ?? {}) as Json;
    const mediaType = pickJson(Object.keys(content));
    const schema = mediaType === undefined ? undefined : (content[mediaType] as Json | undefined)?.['schema'];
    if (mediaType !== undefined) accept = 'application/json';
    // An answer documented without a schema is not checked: servers send bodies their documents do not mention.
    if (schema === undefined) complete = false;
    else schemas.push(toJsonSchema(schema, dialect, budget, `${where}.responses.${code}.content[${JSON.stringify(mediaType)}].schema`));
  }
  if (!complete || schemas.length === 0) return accept === undefined ? {} : { accept };
  const schema = schemas.length === 1 ? (schemas[0] as Json) : { anyOf: schemas };
  return { schema: dialect === '3.1' && typeof schema === 'object' ? { $schema: DRAFT_2020, ...schema } : schema, ...(accept === undefined ? {} : { accept }) };
}

function describe(found: FoundOperation): string {
  const { summary, description } = found.definition as { summary?: unknown; description?: unknown };
  const parts = [summary, description].filter((part): part is string => typeof part === 'string' && part.trim() !== '');
  const [first, second] = parts.map((part) => part.trim());
  const text = second === undefined || second === first ? (first ?? '') : `${first}${/[.!?:]$/.test(first!) ? '' : '.'} ${second}`;
  return `${text === '' ? '' : `${text} `}(${found.method} ${found.path})`;
}

function withDescription(schema: unknown, description: unknown): unknown {
  if (typeof description !== 'string' || description === '' || schema === null || typeof schema !== 'object') return schema;
  return { ...(schema as Json), description };
}

function isJsonMediaType(mediaType: string): boolean {
  const type = mediaType.split(';')[0]!.trim().toLowerCase();
  return type === 'application/json' || /^application\/[^/]+\+json$/.test(type);
}

function pickJson(mediaTypes: readonly string[]): string | undefined {
  return mediaTypes.find((type) => type.split(';')[0]!.trim().toLowerCase() === 'application/json') ?? mediaTypes.find(isJsonMediaType);
}

/**
 * A schema of the document as JSON Schema the bridge compiles: a copy (shared references expanded,
 * within {@link MAX_SCHEMA_NODES} for the whole document and {@link MAX_SCHEMA_DEPTH} deep), OpenAPI
 * 3.0's `nullable` and boolean `exclusiveMinimum`/`exclusiveMaximum` in JSON Schema's terms, and
 * no `$id`/`$schema` inside (the references they scope are resolved already).
 */
function toJsonSchema(schema: unknown, dialect: Dialect, budget: { nodes: number }, where: string, depth = 0): unknown {
  if (++budget.nodes > MAX_SCHEMA_NODES)
    throw new InvalidOption(
      `${where}: the document's schemas expand past ${MAX_SCHEMA_NODES} nodes once their references are resolved; bridge fewer operations (include)`,
    );
  if (depth > MAX_SCHEMA_DEPTH) throw new InvalidOption(`${where}: the schema nests deeper than ${MAX_SCHEMA_DEPTH} levels`);
  if (Array.isArray(schema)) return schema.map((item, i) => toJsonSchema(item, dialect, budget, `${where}[${i}]`, depth + 1));
  if (schema === null || typeof schema !== 'object') return schema;
  const copy: Json = {};
  for (const [key, value] of Object.entries(schema as Json)) {
    const at = `${where}.${key}`;
    if (key === '$ref' || key === '$dynamicRef') throw new InvalidOption(`${at}: an unresolved reference (${JSON.stringify(String(value).slice(0, 200))})`);
    if (DROPPED_KEYWORDS.has(key)) continue;
    if (DATA_KEYWORDS.has(key)) copy[key] = copyData(value, budget, at);
    else if (SCHEMA_MAPS.has(key) && value !== null && typeof value === 'object' && !Array.isArray(value)) {
      const members: Json = {};
      for (const [name, member] of Object.entries(value as Json))
        members[name] = toJsonSchema(member, dialect, budget, `${at}[${JSON.stringify(name)}]`, depth + 1);
      copy[key] = members;
    } else copy[key] = toJsonSchema(value, dialect, budget, at, depth + 1);
  }
  return dialect === '3.0' ? fromOpenApi30(copy) : copy;
}

/** OpenAPI 3.0's own keywords as JSON Schema says them (ajv refuses `nullable` without `type`, and boolean exclusive bounds). */
function fromOpenApi30(schema: Json): Json {
  for (const [flag, bound] of [
    ['exclusiveMinimum', 'minimum'],
    ['exclusiveMaximum', 'maximum'],
  ] as const) {
    if (typeof schema[flag] !== 'boolean') continue;
    if (schema[flag] === true && typeof schema[bound] === 'number') {
      schema[flag] = schema[bound];
      delete schema[bound];
    } else delete schema[flag];
  }
  if (schema['nullable'] !== true) {
    delete schema['nullable'];
    return schema;
  }
  delete schema['nullable'];
  if (typeof schema['type'] === 'string') {
    schema['type'] = [schema['type'], 'null'];
    if (Array.isArray(schema['enum']) && !schema['enum'].includes(null)) schema['enum'] = [...schema['enum'], null];
    return schema;
  }
  return { anyOf: [schema, { type: 'null' }] };
}

function copyData(value: unknown, budget: { nodes: number }, where: string): unknown {
  if (++budget.nodes > MAX_SCHEMA_NODES) throw new InvalidOption(`${where}: the document's schemas expand past ${MAX_SCHEMA_NODES} nodes`);
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((item) => copyData(item, budget, where));
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, copyData(item, budget, where)]));
}

function positiveInteger(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || (value as number) < 1) throw new InvalidOption(`${name} must be a positive integer (got ${String(value)})`);
  return value as number;
}

// ---- The call: the request from the validated input, performed under the policy, the answer read.

const never = new AbortController().signal;
const DOT_SEGMENT = /^(\.|%2e){1,2}$/i;

async function call(handler: EgressHandler, plan: Plan, input: unknown, signal: AbortSignal | undefined): Promise<unknown> {
  const values = (input ?? {}) as Json;
  const request = buildRequest(plan, values);
  const response = await handler(request, { signal: signal ?? never });
  return readAnswer(plan, response);
}

/** The request of one call. The input was validated against the tool's schema before this runs. */
function buildRequest(plan: Plan, values: Json): EgressRequest {
  let path = plan.path;
  const query: string[] = [];
  const headers: [string, string][] = [];
  const cookies: string[] = [];
  for (const parameter of plan.parameters) {
    if (!Object.hasOwn(values, parameter.name) || values[parameter.name] === undefined) continue;
    const value = parameter.json ? JSON.stringify(values[parameter.name]) : values[parameter.name];
    if (parameter.in === 'path') {
      const segment = simple(value, parameter.explode, encodeURIComponent);
      if (segment === '') throw new TypeError(`input.${parameter.name} cannot be empty: it is part of the path ${plan.path}`);
      path = path.split(`{${parameter.name}}`).join(segment);
    } else if (parameter.in === 'query') query.push(...queryPairs(parameter, value));
    else if (parameter.in === 'header') headers.push([parameter.name, simple(value, parameter.explode, (text) => text)]);
    else cookies.push(`${parameter.name}=${simple(value, false, encodeURIComponent)}`);
  }
  // A segment of `.` or `..` made of values would move the request to another path once the URL is normalised.
  if (path.split('/').some((segment) => DOT_SEGMENT.test(segment)) && !plan.path.split('/').some((segment) => DOT_SEGMENT.test(segment)))
    throw new TypeError(`the path parameters of ${plan.path} cannot make a segment "." or "..": it would leave the path`);
  if (cookies.length > 0) headers.push(['cookie', cookies.join('; ')]);
  if (plan.accept !== undefined) headers.push(['accept', plan.accept]);
  let body: Uint8Array | undefined;
  if (plan.body !== undefined && values['body'] !== undefined) {
    headers.push(['content-type', plan.body.mediaType]);
    body = new TextEncoder().encode(JSON.stringify(values['body']));
  }
  const url = `${plan.base}${path}${query.length === 0 ? '' : `?${query.join('&')}`}`;
  return { url, method: plan.method, headers, ...(body === undefined ? {} : { body }) };
}

function text(value: unknown): string {
  return value !== null && typeof value === 'object' ? JSON.stringify(value) : String(value);
}

/** Style `simple` (paths, headers): `a,b,c`; an object `k,v,k,v`, or `k=v,k=v` exploded. */
function simple(value: unknown, explode: boolean, encode: (text: string) => string): string {
  if (Array.isArray(value)) return value.map((item) => encode(text(item))).join(',');
  if (value !== null && typeof value === 'object')
    return Object.entries(value)
      .map(([key, item]) => (explode ? `${encode(key)}=${encode(text(item))}` : `${encode(key)},${encode(text(item))}`))
      .join(',');
  return encode(text(value));
}

/** A query parameter's `name=value` pairs, by its style. */
function queryPairs(parameter: Parameter, value: unknown): string[] {
  const name = encodeURIComponent(parameter.name);
  const enc = (item: unknown) => encodeURIComponent(text(item));
  if (Array.isArray(value)) {
    if (parameter.style === 'spaceDelimited') return [`${name}=${value.map(enc).join('%20')}`];
    if (parameter.style === 'pipeDelimited') return [`${name}=${value.map(enc).join('|')}`];
    return parameter.explode ? value.map((item) => `${name}=${enc(item)}`) : [`${name}=${value.map(enc).join(',')}`];
  }
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value);
    if (parameter.style === 'deepObject') return entries.map(([key, item]) => `${name}%5B${encodeURIComponent(key)}%5D=${enc(item)}`);
    if (parameter.explode) return entries.map(([key, item]) => `${encodeURIComponent(key)}=${enc(item)}`);
    return [`${name}=${entries.map(([key, item]) => `${encodeURIComponent(key)},${enc(item)}`).join(',')}`];
  }
  return [`${name}=${enc(value)}`];
}

/** A 2xx response's body (JSON when its content type says so, text otherwise, `null` when empty); any other status rejects. */
function readAnswer(plan: Plan, response: EgressResponse): unknown {
  const contentType = response.headers.find(([name]) => name === 'content-type')?.[1] ?? '';
  const body = new TextDecoder().decode(response.body);
  if (response.status < 200 || response.status > 299) {
    const excerpt = body.length > MAX_ERROR_BODY ? `${body.slice(0, MAX_ERROR_BODY)}…` : body;
    throw new UpstreamHttpError(
      `${plan.method} ${plan.path} answered ${response.status}${response.statusText === '' ? '' : ` ${response.statusText}`}${excerpt === '' ? '' : `: ${excerpt}`}`,
      response.status,
    );
  }
  if (response.body.byteLength === 0) return null;
  if (!isJsonMediaType(contentType)) return body;
  try {
    return JSON.parse(body);
  } catch {
    throw new UpstreamHttpError(
      `${plan.method} ${plan.path} answered ${response.status} with a body that is not the JSON its content type says`,
      response.status,
    );
  }
}
