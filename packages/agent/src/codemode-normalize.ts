/**
 * Code and names as `@cloudflare/codemode`'s executors take them. Its executors normalize the
 * code they are given into one function expression, which they call; a tool's name becomes an
 * identifier by a rule of its own. {@link codemodeFunction} and {@link codemodeToolName} give the
 * same answers (our own implementation of the documented behaviour), so code a model wrote for
 * codemode's executors runs the same here. Pure functions of their text.
 *
 * @module
 */
import { parse, type Node } from 'acorn';

/**
 * The longest code `StrataExecutor` accepts, in UTF-16 code units. The code is parsed in the host
 * (acorn) to find its form, and acorn's scope tracking is quadratic in the names one scope
 * declares: at this size a hostile program costs tens of milliseconds, at eight times it seconds.
 */
export const MAX_CODE_CHARS = 64 * 1024;

interface AnyNode extends Node {
  [key: string]: unknown;
}

// The labels codemode strips a whole-text fence for (and none).
const FENCE_LABELS = new Set(['', 'js', 'javascript', 'ts', 'typescript', 'tsx', 'jsx']);

/** The code inside one fenced block that is the whole text (```` ```js … ``` ````), else the text. */
function withoutFence(text: string): string {
  if (!text.startsWith('```') || !text.endsWith('```') || text.length < 7) return text;
  const newline = text.indexOf('\n');
  if (newline === -1) return text;
  const label = text.slice(3, newline).trim();
  if (!FENCE_LABELS.has(label)) return text;
  return text.slice(newline + 1, text.length - 3);
}

/**
 * The code as one function expression (source text) to call, by codemode's rules: a markdown
 * fence around the whole text is dropped; an arrow function is taken as it is; `export default`
 * is unwrapped (an anonymous function is called, an anonymous class is the result); a lone
 * function declaration is declared and called; otherwise the code becomes the body of an async
 * arrow function whose last expression statement is returned, and code that does not parse as a
 * module (a top-level `return`) is that body as written. Empty code is `async () => {}`.
 *
 * The caller bounds the length ({@link MAX_CODE_CHARS}).
 */
export function codemodeFunction(code: string): string {
  const source = withoutFence(code.trim()).trim();
  if (source === '') return 'async () => {}';
  let body: AnyNode[];
  try {
    body = (parse(source, { ecmaVersion: 'latest', sourceType: 'module' }) as unknown as { body: AnyNode[] }).body;
  } catch {
    // Not a module (a top-level return, or a syntax error the guest's parser will report).
    return `async () => {\n${source}\n}`;
  }
  const text = (node: AnyNode) => source.slice(node.start, node.end);
  const only = body.length === 1 ? body[0]! : undefined;
  if (only?.type === 'ExpressionStatement' && (only['expression'] as AnyNode).type === 'ArrowFunctionExpression') {
    // The expression alone: a trailing `;` or comment would break the call around it.
    return text(only['expression'] as AnyNode);
  }
  if (only?.type === 'ExportDefaultDeclaration') {
    const declaration = only['declaration'] as AnyNode;
    const anonymous = declaration['id'] === null || declaration['id'] === undefined;
    if (declaration.type === 'FunctionDeclaration' && anonymous) return `async () => {\nreturn (${text(declaration)})();\n}`;
    if (declaration.type === 'ClassDeclaration' && anonymous) return `async () => {\nreturn (${text(declaration)});\n}`;
    return codemodeFunction(text(declaration));
  }
  if (only?.type === 'FunctionDeclaration') return `async () => {\n${source}\nreturn ${(only['id'] as AnyNode)['name'] as string}();\n}`;
  const last = body.at(-1);
  if (last?.type === 'ExpressionStatement') {
    return `async () => {\n${source.slice(0, last.start)}return (${text(last['expression'] as AnyNode)})\n}`;
  }
  return `async () => {\n${source}\n}`;
}

// Reserved words (ECMAScript's, its older future reserved words, and names no binding may take)
// that a tool name gets a trailing `_` for, as codemode's rule has them.
const RESERVED = new Set(
  (
    'abstract arguments await boolean break byte case catch char class const continue debugger default delete do double else enum eval ' +
    'export extends false final finally float for function goto if implements import in instanceof int interface let long native new ' +
    'null package private protected public return short static super switch synchronized this throw throws transient true try typeof ' +
    'undefined var void volatile while with yield'
  ).split(' '),
);

/**
 * A tool's name as the guest calls it (`codemode.<name>`), by codemode's rule: `-`, `.` and
 * white space become `_`, other characters outside `A-Z a-z 0-9 _ $` are dropped, a leading digit
 * gets a `_` before it, a reserved word one after it, and nothing left is `_`.
 */
export function codemodeToolName(name: string): string {
  let id = name.replace(/[-.\s]/g, '_').replace(/[^A-Za-z0-9_$]/g, '');
  if (id === '') return '_';
  if (/^[0-9]/.test(id)) id = `_${id}`;
  return RESERVED.has(id) ? `${id}_` : id;
}
