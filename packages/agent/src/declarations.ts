/**
 * TypeScript declarations of tools, from their JSON Schemas, for a model's prompt ("code mode":
 * the model writes code against `declare const tools: { … }`). Pure and total: any input, a
 * hostile schema included, gives text that compiles under `tsc --strict`, and what cannot be shown
 * (an unsupported keyword, a `$ref` cycle, nesting past `maxDepth`, a schema too large for a
 * prompt) becomes `unknown`, never an error.
 *
 * @module
 */
import { isAsciiIdentifier } from '@strata/wire';

/** A tool as its declaration shows it. */
export interface DeclaredTool {
  /** The method's name: an identifier (anything else is quoted, and the model must write `tools["…"]()`). */
  readonly name: string;
  /** What the tool does: the method's JSDoc. */
  readonly description?: string;
  /** The JSON Schema (draft-07 or 2020-12) of the one input. Without one, the method takes no argument. */
  readonly inputSchema?: unknown;
  /** The JSON Schema of the answer. Without one, the method returns `Promise<unknown>`. */
  readonly outputSchema?: unknown;
}

/** How declarations are rendered. */
export interface DeclarationOptions {
  /**
   * How many schemas deep a type goes before the rest is `unknown`: each property, array item,
   * `anyOf` / `oneOf` / `allOf` member and `$ref` is one level. Default 8, at most 100.
   */
  readonly maxDepth?: number;
}

const DEFAULT_MAX_DEPTH = 8;
// Deeper than this, recursion could exhaust the stack; no prompt needs it.
const DEPTH_LIMIT = 100;
// Limits that keep one hostile schema from filling the prompt. Past them: the base type, or `unknown`.
const MAX_SCHEMA_CHARS = 16_000;
const MAX_ENUM_MEMBERS = 100;
const MAX_ENUM_CHARS = 2_000;
const MAX_TUPLE_ITEMS = 100;
const MAX_KEY_CHARS = 200;
const MAX_DESCRIPTION_CHARS = 300;
// What each schema visited, and each property, costs the budget besides its keys, literals and descriptions.
const NODE_CHARS = 4;
const PROPERTY_CHARS = 4;
// An object without descriptions goes on one line when it is this short.
const INLINE_OBJECT_CHARS = 60;

/**
 * `declare const <namespace>: { … };` with one method per tool, in order, each with its
 * description as JSDoc: `name(): Promise<Out>` for a tool without an input schema,
 * `name(input: In): Promise<Out>` for one with.
 *
 * @param namespace - The global the tools are under: an identifier (ToolBridge checks it).
 */
export function renderDeclarations(namespace: string, tools: readonly DeclaredTool[], options?: DeclarationOptions): string {
  const maxDepth = maxDepthOf(options);
  const methods = tools.map((tool) => {
    const parameter = tool.inputSchema === undefined ? '' : `input: ${render(tool.inputSchema, maxDepth)}`;
    const output = tool.outputSchema === undefined ? 'unknown' : render(tool.outputSchema, maxDepth);
    return withDoc(docComment(tool.description), `${propertyKey(tool.name)}(${parameter}): Promise<${output}>;`);
  });
  return methods.length === 0 ? `declare const ${namespace}: {};` : `declare const ${namespace}: {\n${methods.map(indent).join('\n')}\n};`;
}

/**
 * One schema as a TypeScript type expression (`$ref`s resolve against `schema` itself). Object
 * types with a description on a property span several lines, indented by two spaces.
 */
export function schemaToType(schema: unknown, options?: DeclarationOptions): string {
  return render(schema, maxDepthOf(options));
}

function maxDepthOf(options: DeclarationOptions | undefined): number {
  const maxDepth = options?.maxDepth;
  return typeof maxDepth === 'number' && maxDepth >= 0 ? Math.min(Math.floor(maxDepth), DEPTH_LIMIT) : DEFAULT_MAX_DEPTH;
}

function render(schema: unknown, maxDepth: number): string {
  try {
    return typeOf(schema, 0, { root: schema, maxDepth, path: new Set(), budget: MAX_SCHEMA_CHARS }).text;
  } catch {
    // Only a schema that is not JSON data gets here: a getter or a Proxy trap that throws.
    return 'unknown';
  }
}

interface Context {
  /** What `$ref`s resolve against. */
  readonly root: unknown;
  readonly maxDepth: number;
  /** The schemas being rendered, outermost first: meeting one again is a cycle. */
  readonly path: Set<object>;
  /** Characters of output left for this schema. */
  budget: number;
}

/** A type expression, with what it is made of, to know where it needs parentheses. */
interface TypeText {
  readonly text: string;
  readonly kind: 'atom' | 'union' | 'intersection';
  /** The members of a union or intersection. */
  readonly parts: readonly TypeText[];
}

const atom = (text: string): TypeText => ({ text, kind: 'atom', parts: [] });
const UNKNOWN = atom('unknown');
const NEVER = atom('never');
const NULL = atom('null');
const UNDEFINED = atom('undefined');
const ANY_OBJECT = atom('Record<string, unknown>');
const EMPTY_OBJECT = atom('Record<string, never>');

function typeOf(schema: unknown, depth: number, context: Context): TypeText {
  if (schema === true) return UNKNOWN;
  if (schema === false) return NEVER;
  if (!isRecord(schema) || depth > context.maxDepth || context.budget <= 0 || context.path.has(schema)) return UNKNOWN;
  context.budget -= NODE_CHARS;
  context.path.add(schema);
  try {
    // Keywords side by side all apply (as in 2020-12, where `$ref` has siblings too): intersect them.
    const parts: TypeText[] = [];
    if (typeof schema['$ref'] === 'string') parts.push(typeOf(resolveRef(schema['$ref'], context.root), depth + 1, context));
    // A loop, not a spread: a spread of a huge allOf would overflow the stack.
    if (Array.isArray(schema['allOf'])) for (const member of schema['allOf']) parts.push(typeOf(member, depth + 1, context));
    for (const keyword of ['anyOf', 'oneOf']) {
      const members = schema[keyword];
      if (Array.isArray(members) && members.length > 0) parts.push(union(members.map((member) => typeOf(member, depth + 1, context))));
    }
    const own = ownType(schema, depth + 1, context);
    // A bare `type: "object"` beside members that say which object adds nothing but noise.
    if (own !== ANY_OBJECT || parts.length === 0) parts.push(own);
    const type = intersection(parts);
    return schema['nullable'] === true ? union([type, NULL]) : type;
  } finally {
    context.path.delete(schema);
  }
}

/** The type the schema's own keywords say: `const`, `enum`, `type` (or what `properties` / `items` imply). */
function ownType(schema: Record<string, unknown>, depth: number, context: Context): TypeText {
  const literals = 'const' in schema ? [schema['const']] : Array.isArray(schema['enum']) ? schema['enum'] : undefined;
  if (literals !== undefined) {
    const type = literalUnion(literals, context);
    if (type !== undefined) return type;
  }
  const names = typeNames(schema) ?? (literals === undefined ? undefined : literalKinds(literals));
  if (names === undefined) return UNKNOWN;
  return union(names.map((name) => typeNamed(name, schema, depth, context)));
}

function typeNames(schema: Record<string, unknown>): string[] | undefined {
  const type = schema['type'];
  if (typeof type === 'string') return [type];
  if (Array.isArray(type)) return type.length === 0 ? undefined : [...new Set(type.map((name) => (typeof name === 'string' ? name : '')))];
  if (type !== undefined) return undefined;
  if ('properties' in schema || 'additionalProperties' in schema) return ['object'];
  if ('items' in schema || 'prefixItems' in schema) return ['array'];
  return undefined;
}

function typeNamed(name: string, schema: Record<string, unknown>, depth: number, context: Context): TypeText {
  switch (name) {
    case 'string':
    case 'boolean':
    case 'null':
      return atom(name);
    case 'number':
    case 'integer':
      return atom('number');
    case 'array':
      return arrayType(schema, depth, context);
    case 'object':
      return objectType(schema, depth, context);
    default:
      return UNKNOWN;
  }
}

/** `"a" | "b" | 1`, or undefined when the literals are too many or too long for a prompt (or not JSON). */
function literalUnion(values: readonly unknown[], context: Context): TypeText | undefined {
  if (values.length > MAX_ENUM_MEMBERS) return undefined;
  const literals: TypeText[] = [];
  let chars = 0;
  for (const value of values) {
    if (typeof value === 'number' && !Number.isFinite(value)) return undefined;
    let text: string | undefined;
    try {
      text = jsonText(value);
    } catch {
      return undefined; // a BigInt, a cycle
    }
    if (text === undefined) return undefined;
    chars += text.length + 3;
    if (chars > MAX_ENUM_CHARS) return undefined;
    literals.push(atom(text));
  }
  context.budget -= chars;
  return union(literals);
}

/** The type names of literals, for an enum too large (or too strange) to list. */
function literalKinds(values: readonly unknown[]): string[] {
  return [...new Set(values.map((value) => (value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value)))];
}

function arrayType(schema: Record<string, unknown>, depth: number, context: Context): TypeText {
  const prefixItems = schema['prefixItems'];
  const items = schema['items'];
  // 2020-12 `prefixItems` + `items` for the rest; draft-07 `items: [...]` + `additionalItems`.
  const tuple: unknown[] | undefined = Array.isArray(prefixItems) ? prefixItems : Array.isArray(items) ? items : undefined;
  if (tuple !== undefined) {
    const rest = Array.isArray(prefixItems) ? items : schema['additionalItems'];
    if (tuple.length > MAX_TUPLE_ITEMS) return atom('unknown[]');
    const elements = tuple.map((element) => typeOf(element, depth, context).text);
    if (isRecord(rest)) elements.push(`...${arrayOf(typeOf(rest, depth, context)).text}`);
    return atom(`[${elements.join(', ')}]`);
  }
  return items === undefined ? atom('unknown[]') : arrayOf(typeOf(items, depth, context));
}

/** `T[]`, `(A | B)[]`, or `Array<…>` for an element type that spans lines (a `[]` after a block is easy to miss). */
function arrayOf(element: TypeText): TypeText {
  if (element.text.includes('\n')) return atom(`Array<${element.text}>`);
  return atom(element.kind === 'atom' ? `${element.text}[]` : `(${element.text})[]`);
}

function objectType(schema: Record<string, unknown>, depth: number, context: Context): TypeText {
  const properties = isRecord(schema['properties']) ? schema['properties'] : {};
  const required = new Set(Array.isArray(schema['required']) ? schema['required'].filter((key): key is string => typeof key === 'string') : []);
  const additional = schema['additionalProperties'];
  const members: { doc: string | undefined; line: string }[] = [];
  const propertyTypes: TypeText[] = [];
  // Set when a property cannot be shown (past the budget, a name too long): the object is then left open to any key.
  let open = false;
  for (const key of [...Object.keys(properties), ...[...required].filter((key) => !Object.hasOwn(properties, key))]) {
    if (context.budget <= 0) {
      open = true;
      break;
    }
    if (key.length > MAX_KEY_CHARS) {
      open = true;
      continue;
    }
    // A required key without a schema of its own is checked against additionalProperties.
    const propertySchema = Object.hasOwn(properties, key) ? properties[key] : isRecord(additional) ? additional : true;
    const type = typeOf(propertySchema, depth, context);
    const doc = docComment(describe(propertySchema, context.root));
    // The line's indentation too: it is most of the output of a deep schema.
    context.budget -= key.length + (doc?.length ?? 0) + PROPERTY_CHARS + 2 * depth;
    members.push({ doc, line: `${propertyKey(key)}${required.has(key) ? '' : '?'}: ${type.text}` });
    // An optional property is `T | undefined` to the index signature (without exactOptionalPropertyTypes).
    propertyTypes.push(required.has(key) ? type : union([type, UNDEFINED]));
  }
  const valueType = open || additional === true ? UNKNOWN : isRecord(additional) ? typeOf(additional, depth, context) : undefined;
  if (members.length === 0) {
    if (valueType !== undefined) return atom(`Record<string, ${valueType.text}>`);
    return additional === false ? EMPTY_OBJECT : ANY_OBJECT;
  }
  if (valueType !== undefined) members.push({ doc: undefined, line: `[key: string]: ${indexType(valueType, propertyTypes).text}` });
  const inline = `{ ${members.map((member) => member.line).join('; ')} }`;
  if (members.every((member) => member.doc === undefined) && inline.length <= INLINE_OBJECT_CHARS && !inline.includes('\n')) return atom(inline);
  return atom(`{\n${members.map((member) => indent(withDoc(member.doc, `${member.line};`))).join('\n')}\n}`);
}

/** TypeScript requires every property to fit the index signature: the union of them all when short, else `unknown`. */
function indexType(valueType: TypeText, propertyTypes: readonly TypeText[]): TypeText {
  const type = union([valueType, ...propertyTypes]);
  return type.text.length <= INLINE_OBJECT_CHARS && !type.text.includes('\n') ? type : UNKNOWN;
}

function union(types: readonly TypeText[]): TypeText {
  const parts = new Map<string, TypeText>();
  for (const type of types) {
    if (type.text === 'unknown') return UNKNOWN;
    for (const part of type.kind === 'union' ? type.parts : [type]) if (part.text !== 'never') parts.set(part.text, part);
  }
  const list = [...parts.values()];
  if (list.length <= 1) return list[0] ?? NEVER;
  return { text: list.map((part) => part.text).join(' | '), kind: 'union', parts: list };
}

function intersection(types: readonly TypeText[]): TypeText {
  const parts = new Map<string, TypeText>();
  for (const type of types) {
    if (type.text === 'never') return NEVER;
    for (const part of type.kind === 'intersection' ? type.parts : [type]) if (part.text !== 'unknown') parts.set(part.text, part);
  }
  const list = [...parts.values()];
  if (list.length <= 1) return list[0] ?? UNKNOWN;
  return { text: list.map((part) => (part.kind === 'union' ? `(${part.text})` : part.text)).join(' & '), kind: 'intersection', parts: list };
}

/**
 * What `ref` points to in `root`: `#` itself or a JSON Pointer such as `#/$defs/Event` or
 * `#/definitions/Event`; undefined (so `unknown`) for anything else, an external URL included.
 */
function resolveRef(ref: string, root: unknown): unknown {
  if (ref === '#') return root;
  if (!ref.startsWith('#/')) return undefined;
  let target = root;
  for (const encoded of ref.slice(2).split('/')) {
    let segment: string;
    try {
      segment = decodeURIComponent(encoded).replaceAll('~1', '/').replaceAll('~0', '~');
    } catch {
      return undefined;
    }
    // Own properties only: `#/__proto__` must not reach Object.prototype.
    if (target === null || typeof target !== 'object' || !Object.hasOwn(target, segment)) return undefined;
    target = (target as Record<string, unknown>)[segment];
  }
  return target;
}

/** A schema's description, or (for a bare `$ref`) the description of what it refers to. */
function describe(schema: unknown, root: unknown): unknown {
  if (!isRecord(schema)) return undefined;
  if (typeof schema['description'] === 'string') return schema['description'];
  if (typeof schema['$ref'] !== 'string') return undefined;
  const target = resolveRef(schema['$ref'], root);
  return isRecord(target) ? target['description'] : undefined;
}

/** `/** text *\/` on one line, shortened to ~300 characters, or undefined for no description. */
function docComment(description: unknown): string | undefined {
  if (typeof description !== 'string') return undefined;
  let text = description
    .slice(0, MAX_DESCRIPTION_CHARS * 4)
    .replace(/\s+/g, ' ')
    .trim();
  if (text.length > MAX_DESCRIPTION_CHARS) {
    // Not between the halves of a surrogate pair.
    text = `${text
      .slice(0, MAX_DESCRIPTION_CHARS - 1)
      .replace(/[\uD800-\uDBFF]$/, '')
      .trimEnd()}…`;
  }
  return text === '' ? undefined : `/** ${text.replaceAll('*/', '*\\/')} */`;
}

function withDoc(doc: string | undefined, line: string): string {
  return doc === undefined ? line : `${doc}\n${line}`;
}

function propertyKey(key: string): string {
  return isAsciiIdentifier(key) ? key : (jsonText(key) as string);
}

/** JSON text, which is TypeScript too, on one line: U+2028 and U+2029 (raw in JSON) escaped. */
function jsonText(value: unknown): string | undefined {
  return (JSON.stringify(value) as string | undefined)?.replace(/[\u2028\u2029]/g, (separator) => `\\u${separator.charCodeAt(0).toString(16)}`);
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `  ${line}`)
    .join('\n');
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
