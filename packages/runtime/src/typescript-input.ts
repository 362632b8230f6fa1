/**
 * `language: 'typescript'`: the types are stripped before the code reaches an isolate or a
 * worker, by Node's `module.stripTypeScriptTypes` in strip mode. Strip mode replaces every type
 * with whitespace, so the guest's errors keep their lines and columns; it transforms nothing, so
 * TypeScript that has no JavaScript of its own to erase to (an enum, a namespace with values, a
 * parameter property, `import x = require(…)`) is refused as the guest's `SyntaxError`, saying
 * what to write instead.
 *
 * The stripper (swc compiled to WebAssembly) runs in a worker thread of its own, never on the
 * host's event loop: deep nesting makes it trap, and a trapped instance fails every later call in
 * its thread, so the thread is replaced after any failure that is not an ordinary syntax error,
 * and terminated past {@link STRIP_TIMEOUT_MS}. Before it, a cheap linear check refuses code longer
 * than {@link MAX_TYPESCRIPT_CHARS} or nested deeper than {@link MAX_TYPESCRIPT_NESTING}.
 *
 * @module
 */
import * as nodeModule from 'node:module';
import { BoundedWorker, type BoundedOutcome } from './bounded-worker.js';
import { InvalidOption, JsError, ThreadUnavailable } from './errors.js';

/** The languages `eval`, `execute` and `evalModule` accept. */
export type SourceLanguage = 'javascript' | 'typescript';

/** What strips the types of one input: the worker thread's stripper, or a stand-in (tests). */
export type Stripper = (code: string) => Promise<BoundedOutcome<string>>;

/**
 * The longest TypeScript stripped, in UTF-16 code units (1 Mi, about 1 MB of code; a model's cell
 * is a few KB): longer is the guest's SyntaxError.
 */
export const MAX_TYPESCRIPT_CHARS = 1024 * 1024;

/**
 * The deepest nesting of brackets (`(`, `[`, `{`, `${`) outside strings and comments that is
 * stripped. Node's stripper traps at about 1 000 nested object literals and 2 000 parentheses;
 * code a person or a model writes stays far below this.
 */
export const MAX_TYPESCRIPT_NESTING = 500;

/**
 * How long one strip may take in the stripper's thread before the thread is terminated, in ms.
 * A strip at {@link MAX_TYPESCRIPT_CHARS} takes well under a second on an idle machine: the margin
 * is for a loaded one.
 */
export const STRIP_TIMEOUT_MS = 20_000;

// How long the stripper's thread may take to start and load the stripper.
const STRIP_START_TIMEOUT_MS = 30_000;

// The Node.js releases that have module.stripTypeScriptTypes.
const STRIP_SINCE = '22.13 (or 23.2)';

let stripperThread: BoundedWorker<string, string> | undefined;

/** The stripper in its worker thread (created on first use), or null where this Node.js has none. */
function nodeStripper(): Stripper | null {
  if (typeof (nodeModule as { stripTypeScriptTypes?: unknown }).stripTypeScriptTypes !== 'function') return null;
  return (code) => {
    stripperThread ??= new BoundedWorker({ script: new URL('./strip-worker.js', import.meta.url), startTimeout: STRIP_START_TIMEOUT_MS });
    return stripperThread.run(code, STRIP_TIMEOUT_MS);
  };
}

/** Terminates the stripper's thread (a later strip starts a new one): for tests that count threads and descriptors. */
export async function closeStripper(): Promise<void> {
  await stripperThread?.close();
}

/**
 * Throws {@link InvalidOption} unless `language` is absent, `'javascript'`, or `'typescript'` on a
 * Node.js that can strip types. `method` names the call in the message.
 */
export function assertLanguage(language: unknown, method: string, stripper?: Stripper | null): asserts language is SourceLanguage | undefined {
  if (language === undefined || language === 'javascript') return;
  if (language !== 'typescript') {
    throw new InvalidOption(`${method}: language must be 'javascript' or 'typescript' (got ${describe(language)})`);
  }
  // Looked up only for TypeScript: JavaScript, the common case, pays for nothing here.
  const strip = stripper === undefined ? nodeStripper() : stripper;
  if (typeof strip !== 'function') {
    throw new InvalidOption(
      `${method}: language 'typescript' needs Node.js ${STRIP_SINCE} or later, whose module.stripTypeScriptTypes strips the types; ` +
        `this is ${process.version}. Upgrade Node.js, or strip the types yourself and pass JavaScript`,
    );
  }
}

/**
 * The code as JavaScript: as it is for `'javascript'`, with its types blanked out for
 * `'typescript'`. `filename` places a refusal, as V8 places a syntax error (`[file:line:column]`).
 * A bad `language` throws at once; everything else is the promise's.
 *
 * @throws {@link InvalidOption} for a bad `language`. Rejects with {@link JsError} (`guestName`
 * `'SyntaxError'`) for TypeScript that does not parse, needs a transform, is past
 * {@link MAX_TYPESCRIPT_CHARS} or {@link MAX_TYPESCRIPT_NESTING}, or that the stripper cannot
 * take within {@link STRIP_TIMEOUT_MS}; {@link ThreadUnavailable} when the stripper's thread cannot start.
 */
export function toJavaScript(code: string, language: unknown, filename: string, method: string, stripper?: Stripper | null): Promise<string> {
  assertLanguage(language, method, stripper);
  if (language !== 'typescript') return Promise.resolve(code);
  const strip = stripper === undefined ? nodeStripper() : stripper;
  const refused = precheck(code, filename);
  if (refused !== undefined) return Promise.reject(refused);
  return strip!(code).then((outcome) => {
    if (outcome.status === 'ok' && typeof outcome.value === 'string') return outcome.value;
    throw refusal(outcome, code, filename, method);
  });
}

/**
 * {@link toJavaScript} for TypeScript; undefined for JavaScript (after the same check of
 * `language`), so that JavaScript stays on its synchronous path.
 */
export function stripIfTypeScript(code: string, language: unknown, filename: string, method: string): Promise<string> | undefined {
  if (language === undefined || language === 'javascript') return undefined;
  return toJavaScript(code, language, filename, method);
}

/** The guest's SyntaxError at `[filename]` or `[filename:line]`, saying `text`. */
function syntaxError(text: string, at: string): JsError {
  return new JsError('SyntaxError', `${text} [${at}]`, `SyntaxError: ${text} [${at}]\n    at ${at}`);
}

/**
 * A refusal for code too long or nested too deeply for the stripper, before it sees the code: one
 * linear pass counting brackets outside strings, comments and template text (a regular
 * expression's brackets count: the check only ever over-counts code no one writes).
 */
export function precheck(code: string, filename: string): JsError | undefined {
  if (code.length > MAX_TYPESCRIPT_CHARS) {
    return syntaxError(
      `the TypeScript is ${code.length} characters long, past the ${MAX_TYPESCRIPT_CHARS} (MAX_TYPESCRIPT_CHARS) whose types Strata strips: split it, or pass JavaScript`,
      filename,
    );
  }
  // Open brackets; a template literal's `${` is marked so that its `}` resumes the template.
  const open: boolean[] = [];
  let line = 1;
  let i = 0;
  let inTemplate = false;
  const n = code.length;
  while (i < n) {
    const c = code[i]!;
    if (c === '\n') line++;
    if (inTemplate) {
      if (c === '\\') i++;
      else if (c === '`') inTemplate = false;
      else if (c === '$' && code[i + 1] === '{') {
        open.push(true);
        inTemplate = false;
        i++;
        if (open.length > MAX_TYPESCRIPT_NESTING) return tooDeep(filename, line);
      }
      i++;
      continue;
    }
    if (c === '/' && code[i + 1] === '/') {
      while (i < n && code[i] !== '\n') i++;
      continue;
    }
    if (c === '/' && code[i + 1] === '*') {
      const close = code.indexOf('*/', i + 2);
      const stop = close === -1 ? n : close + 2;
      for (let j = i; j < stop; j++) if (code[j] === '\n') line++;
      i = stop;
      continue;
    }
    if (c === "'" || c === '"') {
      i++;
      while (i < n && code[i] !== c && code[i] !== '\n') i += code[i] === '\\' ? 2 : 1;
      i++;
      continue;
    }
    if (c === '`') inTemplate = true;
    else if (c === '(' || c === '[' || c === '{') {
      open.push(false);
      if (open.length > MAX_TYPESCRIPT_NESTING) return tooDeep(filename, line);
    } else if (c === ')' || c === ']' || c === '}') {
      if (open.pop() === true) inTemplate = true;
    }
    i++;
  }
  return undefined;
}

function tooDeep(filename: string, line: number): JsError {
  return syntaxError(
    `the TypeScript nests brackets more than ${MAX_TYPESCRIPT_NESTING} deep (MAX_TYPESCRIPT_NESTING), deeper than Strata strips types of: flatten it, or pass JavaScript`,
    `${filename}:${line}`,
  );
}

/** What a failed strip becomes: the guest's SyntaxError (at the place Node names, when it names one), InvalidOption, or ThreadUnavailable. */
function refusal(outcome: BoundedOutcome<string>, code: string, filename: string, method: string): Error {
  switch (outcome.status) {
    case 'unavailable':
      return new ThreadUnavailable(
        `${method}: language 'typescript': the type stripper's worker thread could not be started (${outcome.message}); nothing ran`,
      );
    case 'timeout':
      return syntaxError(
        `stripping the types took longer than ${STRIP_TIMEOUT_MS} ms (STRIP_TIMEOUT_MS) and was stopped: simplify or split the TypeScript, or pass JavaScript`,
        filename,
      );
    case 'crashed':
      return syntaxError(`the type stripper could not take this TypeScript (its thread died: ${outcome.message}): simplify it, or pass JavaScript`, filename);
    case 'ok':
      return syntaxError('the type stripper gave no JavaScript for this TypeScript: pass JavaScript', filename);
    case 'error':
      break;
  }
  const { code: errorCode, message } = outcome.error;
  if (errorCode === 'ERR_NO_TYPESCRIPT') {
    return new InvalidOption(`${method}: language 'typescript': this Node.js (${process.version}) was built without TypeScript support (${message})`);
  }
  if (errorCode !== 'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX' && errorCode !== 'ERR_INVALID_TYPESCRIPT_SYNTAX') {
    // A trap (deep nesting of a shape the pre-check does not count, a very long operator chain).
    return syntaxError(
      `the type stripper could not take this TypeScript (${message.split('\n', 1)[0]}), most likely because it is nested too deeply or chains too many operators: simplify it, or pass JavaScript`,
      filename,
    );
  }
  const text = errorCode === 'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX' ? needsTransform(message) : message;
  const place = placeOf(outcome.error, code);
  const at = place === undefined ? filename : `${filename}:${place.line}${place.column === undefined ? '' : `:${place.column}`}`;
  return syntaxError(text, at);
}

const NO_TRANSFORM = 'Strata strips types and does not transform';

/** Node's message for syntax strip mode cannot erase, as what it is and what to write instead. */
export function needsTransform(nodeMessage: string): string {
  if (/\benum\b/.test(nodeMessage)) {
    return `a TypeScript enum needs a transform, and ${NO_TRANSFORM}: use a union of literals instead of an enum (type Color = 'red' | 'green'), with a const object if the values are needed at run time`;
  }
  if (/\bnamespace\b|`module` keyword/.test(nodeMessage)) {
    return `a TypeScript namespace with values needs a transform, and ${NO_TRANSFORM}: use a plain object or top-level declarations instead of a namespace (a namespace that declares only types is fine)`;
  }
  if (/parameter property/.test(nodeMessage)) {
    return `a constructor parameter property (constructor(private x: T)) needs a transform, and ${NO_TRANSFORM}: declare the field in the class and assign it in the constructor`;
  }
  if (/import equals/.test(nodeMessage)) {
    return `import x = require(…) needs a transform, and ${NO_TRANSFORM}: use an import declaration (import x from '…')`;
  }
  if (/export assignment/.test(nodeMessage)) {
    return `export = … needs a transform, and ${NO_TRANSFORM}: use export default`;
  }
  if (/angle-bracket/.test(nodeMessage)) {
    return `an angle-bracket type assertion (<T>value) is not supported when types are stripped: write value as T`;
  }
  return `${nodeMessage} (${NO_TRANSFORM} TypeScript)`;
}

/**
 * Where Node's stripper put the error: its stack opens with `:line` and a code frame whose caret
 * line sits under the source line (tabs shown as four spaces). The column is given only when the
 * frame's line is the source's own line.
 */
export function placeOf(error: { readonly stack?: unknown }, code: string): { line: number; column: number | undefined } | undefined {
  let stack: string;
  try {
    stack = String(error.stack ?? '');
  } catch {
    return undefined;
  }
  const match = /^:(\d+)\n/.exec(stack);
  if (match === null) return undefined;
  const line = Number(match[1]);
  const frame = stack.slice(match[0].length, stack.indexOf('\n\n') === -1 ? undefined : stack.indexOf('\n\n')).split('\n');
  const caret = frame.findIndex((l) => /^\s*\^+\s*$/.test(l));
  const sourceLine = code.split('\n', line)[line - 1]?.replace(/\r$/, '');
  if (caret < 1 || sourceLine === undefined || frame[caret - 1] !== sourceLine.replaceAll('\t', '    ')) return { line, column: undefined };
  // Walk the source line until its display width reaches the caret's.
  const target = frame[caret]!.indexOf('^');
  let width = 0;
  let index = 0;
  while (index < sourceLine.length && width < target) width += sourceLine[index++] === '\t' ? 4 : 1;
  return { line, column: index + 1 };
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  return typeof value === 'object' && value !== null ? 'an object' : String(value as string);
}

/**
 * TypeScript as JavaScript, its types blanked out so that every line and column stays where it
 * was (Node's `module.stripTypeScriptTypes` in strip mode, in a worker thread): what
 * `language: 'typescript'` does before `eval`, for code you run some other way (an `AgentSandbox`
 * cell does this too). Bounded: {@link MAX_TYPESCRIPT_CHARS}, {@link MAX_TYPESCRIPT_NESTING},
 * {@link STRIP_TIMEOUT_MS}; no input affects a later strip.
 *
 * ```ts
 * await stripTypes('const n: number = 1'); // 'const n         = 1'
 * ```
 *
 * Rejects with {@link JsError} (`guestName` `'SyntaxError'`, placed at `filename:line:column`
 * where known) for TypeScript that does not parse, needs a transform (an enum, a namespace with
 * values) or is past a bound; {@link InvalidOption} on a Node.js without `stripTypeScriptTypes`;
 * {@link ThreadUnavailable} when the stripper's thread cannot start.
 */
export async function stripTypes(code: string, filename = '<eval>'): Promise<string> {
  if (typeof code !== 'string') throw new InvalidOption('stripTypes: code must be a string');
  return toJavaScript(code, 'typescript', filename, 'stripTypes');
}
