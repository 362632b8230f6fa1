/**
 * A cell as the guest runs it. Cells are classic scripts evaluated one after another in one
 * context, so a top-level `const` of one cell is visible to the next, as in a browser console.
 * A classic script cannot `await` at its top level, and a model's cell often does
 * (`const total = await lookup("A1")`): such a cell is rewritten, the way Node's REPL does it,
 * into an async function whose top-level declarations are hoisted out of it, so they still
 * outlive the cell, and whose last expression is its result. A cell without a top-level `await`
 * runs as written. The rewrite is a pure function of the text: replay gives the same program.
 *
 * @module
 */
import { parse, type Node } from 'acorn';
import { JsError, stripTypes, type ExecutionResult, type StrataRuntime } from '@strata/runtime';

/**
 * Cells longer than this run as written, without the rewrite: acorn's scope tracking is quadratic
 * in the names one scope declares, and a hostile cell of many thousands of declarations would
 * stall the parent. A cell this long with a top-level await is the guest's SyntaxError.
 */
export const MAX_REWRITTEN_CHARS = 64 * 1024;

/** The cell as the guest runs it (line numbers kept: the wrapper opens on the first line). */
export function prepareCell(code: string): string {
  if (code.length > MAX_REWRITTEN_CHARS) return code;
  let program: Program;
  try {
    program = parse(code, { ecmaVersion: 'latest', sourceType: 'script', allowAwaitOutsideFunction: true }) as unknown as Program;
  } catch {
    // Not JavaScript acorn accepts: the guest's own parser reports it, at its own line.
    return code;
  }
  if (!hasTopLevelAwait(program)) return code;
  return wrapAsync(code, program);
}

/** What can run a cell: either runtime, through the contract both implement. */
export type CellRunner = Pick<StrataRuntime, 'execute'>;

/**
 * Runs a cell: its types stripped first when it is TypeScript (in the stripper's worker thread;
 * TypeScript that cannot be stripped, or is past the stripper's bounds, is the cell's
 * SyntaxError, as the guest's own parser would report it), then {@link prepareCell}.
 */
export async function executeCell(runner: CellRunner, code: string, language: 'javascript' | 'typescript', filename: string): Promise<ExecutionResult> {
  let js = code;
  if (language === 'typescript') {
    try {
      js = await stripTypes(code, filename);
    } catch (error) {
      if (!(error instanceof JsError)) throw error;
      return {
        status: 'error',
        stdout: '',
        stderr: '',
        result: undefined,
        error: error.message.replace(/^SyntaxError: /, ''),
        errorType: 'SyntaxError',
        truncated: false,
      };
    }
  }
  return runner.execute(prepareCell(js), { filename });
}

interface AnyNode extends Node {
  [key: string]: unknown;
}
interface Program extends AnyNode {
  body: AnyNode[];
}

// Nodes whose bodies are their own function scope: `await` and `var` inside them are theirs.
const FUNCTION_SCOPES = new Set(['FunctionDeclaration', 'FunctionExpression', 'ArrowFunctionExpression', 'StaticBlock', 'PropertyDefinition']);

/** Every child node of `node`, in source order. */
function children(node: AnyNode): AnyNode[] {
  const out: AnyNode[] = [];
  for (const key of Object.keys(node)) {
    if (key === 'type' || key === 'start' || key === 'end' || key === 'loc' || key === 'range') continue;
    const value = node[key];
    if (Array.isArray(value)) {
      for (const item of value) if (isNode(item)) out.push(item);
    } else if (isNode(value)) {
      out.push(value);
    }
  }
  return out;
}

const isNode = (value: unknown): value is AnyNode => value !== null && typeof value === 'object' && typeof (value as { type?: unknown }).type === 'string';

/** Visits every node outside nested function scopes (class methods are FunctionExpressions). */
function walkOutsideFunctions(node: AnyNode, visit: (node: AnyNode, parent: AnyNode | undefined) => void, parent?: AnyNode): void {
  visit(node, parent);
  for (const child of children(node)) if (!FUNCTION_SCOPES.has(child.type)) walkOutsideFunctions(child, visit, node);
}

function hasTopLevelAwait(program: Program): boolean {
  let found = false;
  walkOutsideFunctions(program, (node) => {
    if (node.type === 'AwaitExpression' || (node.type === 'ForOfStatement' && node['await'] === true)) found = true;
  });
  return found;
}

/** The names a binding pattern declares. */
function boundNames(pattern: AnyNode, out: string[] = []): string[] {
  switch (pattern.type) {
    case 'Identifier':
      out.push(pattern['name'] as string);
      break;
    case 'ObjectPattern':
      for (const property of pattern['properties'] as AnyNode[])
        boundNames(property.type === 'RestElement' ? (property['argument'] as AnyNode) : (property['value'] as AnyNode), out);
      break;
    case 'ArrayPattern':
      for (const element of pattern['elements'] as (AnyNode | null)[]) if (element !== null) boundNames(element, out);
      break;
    case 'RestElement':
      boundNames(pattern['argument'] as AnyNode, out);
      break;
    case 'AssignmentPattern':
      boundNames(pattern['left'] as AnyNode, out);
      break;
  }
  return out;
}

interface Edit {
  readonly start: number;
  readonly end: number;
  readonly text: string;
}

/**
 * `let a, b; var c; (async () => { globalThis["f"] = f; …; return (last); })()`: declarations
 * hoisted out (let/const/class as `let`, var as `var`), each replaced by an assignment in place;
 * function declarations stay where they are (hoisted inside the wrapper) and are published as
 * globals at its top; the last expression statement is returned. Everything stays on its line:
 * the prefix and the wrapper's opening share the first line.
 */
function wrapAsync(code: string, program: Program): string {
  const lexical: string[] = [];
  const vars: string[] = [];
  const edits: Edit[] = [];
  const exported: string[] = [];
  const source = (node: AnyNode) => code.slice(node.start, node.end);

  // `var` anywhere outside functions belongs to the cell's top level.
  walkOutsideFunctions(program, (node, parent) => {
    if (node.type !== 'VariableDeclaration' || node['kind'] !== 'var' || parent === program) return;
    const declarators = node['declarations'] as AnyNode[];
    for (const d of declarators) vars.push(...boundNames(d['id'] as AnyNode));
    const inForHead =
      parent !== undefined &&
      ((parent.type === 'ForStatement' && parent['init'] === node) ||
        ((parent.type === 'ForInStatement' || parent.type === 'ForOfStatement') && parent['left'] === node));
    if (inForHead && parent.type !== 'ForStatement') edits.push({ start: node.start, end: node.end, text: assignmentTarget(declarators[0]!, source) });
    else edits.push({ start: node.start, end: node.end, text: assignments(declarators, source, inForHead ? '' : ';') });
  });

  const body = program.body;
  for (const [i, statement] of body.entries()) {
    if (statement.type === 'VariableDeclaration') {
      const declarators = statement['declarations'] as AnyNode[];
      const names = declarators.flatMap((d) => boundNames(d['id'] as AnyNode));
      (statement['kind'] === 'var' ? vars : lexical).push(...names);
      edits.push({ start: statement.start, end: statement.end, text: assignments(declarators, source, ';') });
    } else if (statement.type === 'FunctionDeclaration') {
      // Left in place (hoisted inside the wrapper, on its own lines) and published as a global
      // property at the wrapper's top, as a top-level function declaration would be.
      exported.push((statement['id'] as AnyNode)['name'] as string);
    } else if (statement.type === 'ClassDeclaration') {
      const name = (statement['id'] as AnyNode)['name'] as string;
      lexical.push(name);
      edits.push({ start: statement.start, end: statement.end, text: `${name} = ${source(statement)};` });
    } else if (i === body.length - 1) {
      returnCompletion(statement, source, edits);
    }
  }

  let text = code;
  for (const edit of [...edits].sort((a, b) => b.start - a.start)) text = text.slice(0, edit.start) + edit.text + text.slice(edit.end);
  const lets = [...new Set(lexical)];
  const varNames = [...new Set(vars)].filter((name) => !lets.includes(name));
  const prefix = (lets.length > 0 ? `let ${lets.join(', ')}; ` : '') + (varNames.length > 0 ? `var ${varNames.join(', ')}; ` : '');
  const publish = [...new Set(exported)].map((name) => `globalThis[${JSON.stringify(name)}] = ${name};`).join(' ');
  return `${prefix}(async () => { ${publish}${publish === '' ? '' : ' '}${text}\n})()`;
}

/**
 * The cell's result, as a script's completion value would be: the last expression statement is
 * returned, also at the end of a block, of each branch of an `if` and of a `try` and its `catch`
 * (the common endings of a cell); other endings give `undefined`.
 */
function returnCompletion(statement: AnyNode, source: (node: AnyNode) => string, edits: Edit[]): void {
  switch (statement.type) {
    case 'ExpressionStatement':
      edits.push({ start: statement.start, end: statement.end, text: `return (${source(statement['expression'] as AnyNode)});` });
      break;
    case 'BlockStatement': {
      const last = (statement['body'] as AnyNode[]).at(-1);
      if (last !== undefined) returnCompletion(last, source, edits);
      break;
    }
    case 'IfStatement':
      returnCompletion(statement['consequent'] as AnyNode, source, edits);
      if (statement['alternate'] !== null) returnCompletion(statement['alternate'] as AnyNode, source, edits);
      break;
    case 'TryStatement':
      // Not into `finally`: a return there would override the try's own.
      returnCompletion(statement['block'] as AnyNode, source, edits);
      if (statement['handler'] !== null) returnCompletion((statement['handler'] as AnyNode)['body'] as AnyNode, source, edits);
      break;
  }
}

/** `a = 1, ({ b } = o)` for the declarators of one declaration (`void 0` when none has a value). */
function assignments(declarators: AnyNode[], source: (node: AnyNode) => string, end: string): string {
  const parts = declarators.filter((d) => d['init'] !== null).map((d) => `${assignmentTarget(d, source)} = ${source(d['init'] as AnyNode)}`);
  return parts.length === 0 ? (end === '' ? '' : `void 0${end}`) : `void (${parts.join(', ')})${end}`;
}

/** A declarator's binding as an assignment target (`a`, `{ b }`, `[c]`: valid inside the parentheses of `void (…)` and in a for-in/of head). */
function assignmentTarget(declarator: AnyNode, source: (node: AnyNode) => string): string {
  return source(declarator['id'] as AnyNode);
}
