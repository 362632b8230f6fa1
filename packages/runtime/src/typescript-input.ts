/**
 * `language: 'typescript'`: the types are stripped in this process, before the code reaches an
 * isolate or a worker, by Node's `module.stripTypeScriptTypes` in strip mode. Strip mode replaces
 * every type with whitespace, so the guest's errors keep their lines and columns; it transforms
 * nothing, so TypeScript that has no JavaScript of its own to erase to (an enum, a namespace with
 * values, a parameter property, `import x = require(…)`) is refused as the guest's `SyntaxError`,
 * saying what to write instead.
 *
 * @module
 */
import * as nodeModule from 'node:module';
import { InvalidOption, JsError } from './errors.js';

/** The languages `eval`, `execute` and `evalModule` accept. */
export type SourceLanguage = 'javascript' | 'typescript';

/** Node's `module.stripTypeScriptTypes`, or a stand-in (tests). */
export type StripTypes = (code: string, options: { mode: 'strip' }) => string;

// The Node.js releases that have module.stripTypeScriptTypes.
const STRIP_SINCE = '22.13 (or 23.2)';

/** Node's stripper, or null where this Node.js has none. */
const nodeStripper = (): StripTypes | null => (nodeModule as { stripTypeScriptTypes?: StripTypes }).stripTypeScriptTypes ?? null;

/**
 * Throws {@link InvalidOption} unless `language` is absent, `'javascript'`, or `'typescript'` on a
 * Node.js that can strip types. `method` names the call in the message.
 */
export function assertLanguage(language: unknown, method: string, strip: StripTypes | null = nodeStripper()): asserts language is SourceLanguage | undefined {
  if (language === undefined || language === 'javascript') return;
  if (language !== 'typescript') {
    throw new InvalidOption(`${method}: language must be 'javascript' or 'typescript' (got ${describe(language)})`);
  }
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
 *
 * @throws {@link InvalidOption} for a bad `language`; {@link JsError} (`guestName` `'SyntaxError'`)
 * for TypeScript that does not parse or needs a transform.
 */
export function toJavaScript(code: string, language: unknown, filename: string, method: string, strip: StripTypes | null = nodeStripper()): string {
  assertLanguage(language, method, strip);
  if (language !== 'typescript') return code;
  try {
    return strip!(code, { mode: 'strip' });
  } catch (error) {
    throw refusal(error, code, filename, method);
  }
}

/** What a failed strip becomes: the guest's SyntaxError at the place Node names, or InvalidOption. */
function refusal(error: unknown, code: string, filename: string, method: string): Error {
  const errorCode = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  if (errorCode === 'ERR_NO_TYPESCRIPT') {
    return new InvalidOption(`${method}: language 'typescript': this Node.js (${process.version}) was built without TypeScript support (${message})`);
  }
  if (errorCode !== 'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX' && errorCode !== 'ERR_INVALID_TYPESCRIPT_SYNTAX') return error as Error;
  const text = errorCode === 'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX' ? needsTransform(message) : message;
  const place = placeOf(error as Error, code);
  const at = place === undefined ? filename : `${filename}:${place.line}${place.column === undefined ? '' : `:${place.column}`}`;
  return new JsError('SyntaxError', `${text} [${at}]`, `SyntaxError: ${text} [${at}]\n    at ${at}`);
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
export function placeOf(error: Error, code: string): { line: number; column: number | undefined } | undefined {
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
 * was (Node's `module.stripTypeScriptTypes` in strip mode): what `language: 'typescript'` does
 * before `eval`, for code you run some other way (an `AgentSandbox` cell does this too).
 *
 * @throws {@link JsError} (`guestName` `'SyntaxError'`, placed at `filename:line:column`) for
 * TypeScript that does not parse or needs a transform (an enum, a namespace with values);
 * {@link InvalidOption} on a Node.js without `stripTypeScriptTypes`.
 */
export function stripTypes(code: string, filename = '<eval>'): string {
  if (typeof code !== 'string') throw new InvalidOption('stripTypes: code must be a string');
  return toJavaScript(code, 'typescript', filename, 'stripTypes');
}
