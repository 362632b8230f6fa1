/**
 * A model's reply as a cell. Models wrap code in markdown fences and often write it as a module
 * whose default export is the entry point (`export default async () => { … }`); a cell is a
 * classic script whose completion value is its result. {@link normalizeCode} takes the code out
 * of the fences and turns a default export into a call of it. Top-level `await` and the
 * last-expression result are the session's (cell-code.ts): the text is left for it as written.
 *
 * @module
 */
import { stripTypes } from '@strata/runtime';
import { parse, type Node } from 'acorn';

/**
 * Model output → a cell `AgentSandbox`'s `session.run` (or `Runtime.eval`) can run. Never
 * rejects, and linear in the text's length; asynchronous because TypeScript is parsed with its
 * types stripped, in the stripper's worker thread (`stripTypes`), never on the caller's event loop.
 *
 * - **Fences.** With fenced blocks (```` ``` ```` or `~~~`), the code is the blocks labelled
 *   `js`, `javascript`, `ts` or `typescript` (also `mjs`, `cjs`, `mts`, `cts`), joined in order
 *   with a newline; without any, the first unlabelled block. Text outside the fences is dropped,
 *   and so are blocks in other languages (`json`, `bash`, …). An unterminated fence runs to the
 *   end of the text. A text with no such block is returned as it is.
 * - **A default export becomes the result.** `export default async () => { … }`,
 *   `export default async function () { … }`, `export default (async () => …)`, `module.exports
 *   = async () => …`, or a name of a top-level function: `;(` replaces the prefix, same length, and
 *   the function is called where it ends (`;(async () => { … })()`), so every line keeps its
 *   number. A default export that is not a function is the result as it is. `export` before a
 *   declaration (`export const`, `export function`) and `export { … }` lists are blanked out.
 *   The completion value is the call's when the export is the cell's last statement (or only
 *   declarations follow it, in a cell without a top-level `await`). Code longer than
 *   32 KiB is not rewritten.
 * - TypeScript is taken out of its fence as it is, and its default export is rewritten the same
 *   way: the places come from the code with its types stripped (`stripTypes`, which keeps every
 *   character where it was), the edits go to the TypeScript itself, so the result is still
 *   TypeScript for `language: 'typescript'`. TypeScript that has no JavaScript form (an `enum`),
 *   or that the stripper refuses (past its bounds), is left as it is.
 *
 * ```ts
 * await normalizeCode('Here you go:\n```js\nconst r = await lookup("A1");\nr\n```'); // 'const r = await lookup("A1");\nr'
 * await normalizeCode('export default async () => 42'); // ';(             async () => 42)();'
 * ```
 *
 * Anything but a string gives `''`.
 */
export async function normalizeCode(text: string): Promise<string> {
  if (typeof text !== 'string') return '';
  let code = text;
  try {
    code = fencedCode(text);
    return await callDefaultExport(code);
  } catch {
    // Nothing above is meant to throw; should anything (an engine limit on a huge text), the
    // guest reports what it makes of the code.
    return code;
  }
}

// --- fences ----------------------------------------------------------------------------------

const CODE_LANGUAGES = new Set(['js', 'javascript', 'mjs', 'cjs', 'ts', 'typescript', 'mts', 'cts']);

interface Fence {
  readonly char: '`' | '~';
  readonly length: number;
  readonly indent: number;
  readonly language: string;
}

/** The code of the reply's fenced blocks (see {@link normalizeCode}), or the text when it has none. */
function fencedCode(text: string): string {
  if (!text.includes('```') && !text.includes('~~~')) return text;
  const lines = text.split('\n');
  const labelled: string[] = [];
  let bare: string | undefined;
  let i = 0;
  while (i < lines.length) {
    const fence = opening(lines[i]!);
    if (fence === undefined) {
      i++;
      continue;
    }
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !closes(lines[j]!, fence); j++) body.push(dedent(withoutCR(lines[j]!), fence.indent));
    const code = body.join('\n');
    if (CODE_LANGUAGES.has(fence.language)) labelled.push(code);
    else if (fence.language === '' && bare === undefined) bare = code;
    i = j + 1;
  }
  if (labelled.length > 0) return labelled.join('\n');
  return bare ?? text;
}

const withoutCR = (line: string) => (line.endsWith('\r') ? line.slice(0, -1) : line);
const isBlank = (c: string) => c === ' ' || c === '\t';

/** The fence a line opens (three or more backticks or tildes, then an info string), if it opens one. */
function opening(raw: string): Fence | undefined {
  const line = withoutCR(raw);
  let at = 0;
  while (at < line.length && isBlank(line[at]!)) at++;
  const char = line[at];
  if (char !== '`' && char !== '~') return undefined;
  const start = at;
  while (line[at] === char) at++;
  const length = at - start;
  if (length < 3) return undefined;
  const info = line.slice(at).trim();
  // CommonMark: a backtick fence's info string has no backtick (that is inline code).
  if (char === '`' && info.includes('`')) return undefined;
  let end = 0;
  while (end < info.length && !isBlank(info[end]!)) end++;
  return { char, length, indent: start, language: info.slice(0, end).toLowerCase() };
}

/** Whether a line closes `fence`: the same character, at least as many, nothing else. */
function closes(raw: string, fence: Fence): boolean {
  const line = withoutCR(raw).trim();
  if (line.length < fence.length) return false;
  for (let k = 0; k < line.length; k++) if (line[k] !== fence.char) return false;
  return true;
}

/** A content line without the indentation its fence had (up to that many spaces). */
function dedent(line: string, indent: number): string {
  let k = 0;
  while (k < indent && line[k] === ' ') k++;
  return line.slice(k);
}

// --- exports -----------------------------------------------------------------------------------

interface AnyNode extends Node {
  [key: string]: unknown;
}

interface Edit {
  readonly start: number;
  readonly end: number;
  readonly text: string;
}

/**
 * The longest code whose exports are rewritten. acorn's scope checks take time quadratic in the
 * names declared in one scope, and in `var`s times block depth (a 1 MB cell of `const`s takes
 * minutes; at this length the worst case found, 4 000 `var`s 2 000 blocks deep, about 0.4 s); a
 * model's cell is far smaller, and a longer one is left as it is, so the whole stays linear.
 */
export const MAX_REWRITTEN_CHARS = 32 * 1024;

/** The code with its default export called (see {@link normalizeCode}); as it is when it has none or does not parse. */
async function callDefaultExport(code: string): Promise<string> {
  if (code.length > MAX_REWRITTEN_CHARS || !code.includes('export')) return code;
  // TypeScript: parsed without its types, which stripTypes replaces by blanks in place, so every
  // node's position is the same in `code`.
  const program = parseProgram(code) ?? (await parseWithoutTypes(code));
  if (program === undefined) return code;
  const body = program['body'] as AnyNode[];
  const functions = topLevelFunctions(body);
  const edits: Edit[] = [];
  let entry: { statement: AnyNode; value: AnyNode } | undefined;
  let moduleExports: { statement: AnyNode; value: AnyNode } | undefined;
  for (const statement of body) {
    if (statement.type === 'ExportDefaultDeclaration') {
      entry = { statement, value: statement['declaration'] as AnyNode };
    } else if (statement.type === 'ExportNamedDeclaration' && statement['source'] === null) {
      const declaration = statement['declaration'] as AnyNode | null;
      // `export const a = 1` keeps its declaration; `export { a, b as c }` has nothing to keep.
      const end = declaration === null ? statement.end : declaration.start;
      edits.push({ start: statement.start, end, text: blank(code.slice(statement.start, end)) });
    } else if (statement.type === 'ExpressionStatement') {
      const assigned = moduleExportsValue(statement);
      if (assigned !== undefined) moduleExports = { statement, value: assigned };
    }
  }
  const exported = entry ?? moduleExports;
  if (exported !== undefined) {
    const { statement, value } = exported;
    edits.push({ start: statement.start, end: value.start, text: `;(${blank(code.slice(statement.start + 2, value.start))}` });
    // A statement that consumed its `;` ends after the value; one that did not gets one.
    const close = `)${callable(value, functions) ? '()' : ''}${statement.end === value.end ? ';' : ''}`;
    edits.push({ start: value.end, end: value.end, text: close });
  }
  if (edits.length === 0) return code;
  return applyEdits(code, edits);
}

/** The program as a module (where `export` parses), else as a script; undefined when neither parses. */
function parseProgram(code: string): AnyNode | undefined {
  for (const sourceType of ['module', 'script'] as const) {
    try {
      return parse(code, { ecmaVersion: 'latest', sourceType, preserveParens: true, allowAwaitOutsideFunction: true }) as unknown as AnyNode;
    } catch {
      // Not this kind of program (or not JavaScript, or nested past the parser's stack).
    }
  }
  return undefined;
}

/** `code` as TypeScript, parsed with its types blanked out; undefined when it is not TypeScript that strips. */
async function parseWithoutTypes(code: string): Promise<AnyNode | undefined> {
  let stripped: string;
  try {
    stripped = await stripTypes(code);
  } catch {
    return undefined;
  }
  // Positions are what the rewrite relies on: a stripping that moved anything is not used.
  return stripped.length === code.length ? parseProgram(stripped) : undefined;
}

/** The value of `module.exports = value`, as a statement of its own. */
function moduleExportsValue(statement: AnyNode): AnyNode | undefined {
  const expression = statement['expression'] as AnyNode;
  if (expression.type !== 'AssignmentExpression' || expression['operator'] !== '=' || expression.start !== statement.start) return undefined;
  const target = expression['left'] as AnyNode;
  if (target.type !== 'MemberExpression') return undefined;
  const object = target['object'] as AnyNode;
  const property = target['property'] as AnyNode;
  const named = target['computed'] === true ? property.type === 'Literal' && property['value'] === 'exports' : property['name'] === 'exports';
  return object.type === 'Identifier' && object['name'] === 'module' && named ? (expression['right'] as AnyNode) : undefined;
}

/** Names of the top-level functions that calling makes sense of: declarations, and `const f = () => …`. */
function topLevelFunctions(body: AnyNode[]): Set<string> {
  const names = new Set<string>();
  for (const node of body) {
    const statement = node.type === 'ExportNamedDeclaration' && node['declaration'] !== null ? (node['declaration'] as AnyNode) : node;
    if (statement.type === 'FunctionDeclaration' && statement['generator'] !== true) {
      names.add((statement['id'] as AnyNode)['name'] as string);
    } else if (statement.type === 'VariableDeclaration') {
      for (const declarator of statement['declarations'] as AnyNode[]) {
        const id = declarator['id'] as AnyNode;
        const init = declarator['init'] as AnyNode | null;
        if (id.type === 'Identifier' && init !== null && callable(init, new Set())) names.add(id['name'] as string);
      }
    }
  }
  return names;
}

/** Whether the exported value is a function to call: a (non-generator) function, or a name of one. */
function callable(value: AnyNode, functions: ReadonlySet<string>): boolean {
  let node = value;
  while (node.type === 'ParenthesizedExpression') node = node['expression'] as AnyNode;
  switch (node.type) {
    case 'ArrowFunctionExpression':
      return true;
    case 'FunctionExpression':
    case 'FunctionDeclaration':
      return node['generator'] !== true;
    case 'Identifier':
      return functions.has(node['name'] as string);
    default:
      return false;
  }
}

/** Spaces for every character but a line break: the text's lines keep their numbers. */
function blank(text: string): string {
  return text.replace(/[^\n\r\u2028\u2029]/g, ' ');
}

/** The edits (non-overlapping) applied in one pass. */
function applyEdits(code: string, edits: Edit[]): string {
  const sorted = [...edits].sort((a, b) => a.start - b.start || a.end - b.end);
  const parts: string[] = [];
  let at = 0;
  for (const edit of sorted) {
    parts.push(code.slice(at, edit.start), edit.text);
    at = edit.end;
  }
  parts.push(code.slice(at));
  return parts.join('');
}
