/**
 * Checking the model's code against the tools' declarations before anything runs, with the
 * TypeScript compiler API: a hallucinated tool, a missing field or a wrong argument type comes
 * back as diagnostics at the code's own lines. Opt-in (`typecheck: true`), because it costs: the
 * compiler is loaded on first use (`typescript` is an optional peer dependency) and the standard
 * library's declarations are parsed once per process; each check then parses only the cell.
 * TypeScript is checked as TypeScript. JavaScript is checked as JavaScript (`checkJs`), and of its
 * diagnostics only those about the API are kept: a name or property that does not exist, a call
 * with the wrong arguments, a value that does not fit a type the declarations give. Inference
 * complaints (`let x = 1; x = 'a'`) are JavaScript the model may write, not a misuse of a tool.
 *
 * @module
 */
import { createRequire } from 'node:module';
import { InvalidOption } from '@strata/runtime';

/** One problem the compiler found in the code, at the code's own line and column (from 1). */
export interface TypeDiagnostic {
  readonly line: number;
  readonly column: number;
  readonly message: string;
  /** TypeScript's code (`TS2339`). */
  readonly code: string;
}

type Ts = typeof import('typescript');

let ts: Ts | undefined;
const libFiles = new Map<string, unknown>();

function compiler(): Ts {
  if (ts === undefined) {
    try {
      ts = createRequire(import.meta.url)('typescript') as Ts;
    } catch {
      throw new InvalidOption('typecheck needs the TypeScript compiler: npm install typescript (an optional peer dependency of @strata/agent)');
    }
  }
  return ts;
}

// What the guest has beside the language (WEB_POLYFILLS' part of it that code reaches for).
const GUEST_GLOBALS = `
declare var console: { log(...data: any[]): void; info(...data: any[]): void; warn(...data: any[]): void; error(...data: any[]): void; debug(...data: any[]): void };
declare function setTimeout(handler: (...args: any[]) => void, timeout?: number, ...args: any[]): number;
declare function clearTimeout(id: number | undefined): void;
declare function setInterval(handler: (...args: any[]) => void, timeout?: number, ...args: any[]): number;
declare function clearInterval(id: number | undefined): void;
declare function queueMicrotask(callback: () => void): void;
declare function structuredClone<T>(value: T): T;
declare function atob(data: string): string;
declare function btoa(data: string): string;
declare class TextEncoder { encode(input?: string): Uint8Array }
declare class TextDecoder { constructor(label?: string); decode(input?: ArrayBufferView | ArrayBuffer): string }
`;

// In JavaScript, the diagnostics kept whatever they relate to: names and properties that do not
// exist (2304, 2339, 2551, 2552), arity (2554, 2555), arguments (2345), object literals with
// fields a type does not have or without the ones it needs (2353, 2561, 2739, 2740, 2741), syntax
// (1xxx are added below). Others count when they point into the declarations (relatedInformation).
const API_MISUSE = new Set([2304, 2339, 2551, 2552, 2554, 2555, 2345, 2353, 2561, 2739, 2740, 2741]);

const CELL = '/strata/cell';
const DECLARATIONS = '/strata/declarations.d.ts';
const GLOBALS = '/strata/guest-globals.d.ts';

/**
 * Type-checks `code` (a cell: top-level await allowed) against `declarations` (a bridge's
 * `declarations()`, or several joined). Returns the problems, none when it checks.
 *
 * @throws `InvalidOption` (from `@strata/runtime`) when the `typescript` package is not installed.
 */
export function typecheck(code: string, declarations: string, language: 'javascript' | 'typescript' = 'javascript'): TypeDiagnostic[] {
  const t = compiler();
  // A module, so that top-level await is allowed; its one line of prefix is taken off the lines.
  const file = `${CELL}.${language === 'typescript' ? 'ts' : 'js'}`;
  const text = `export {};\n${code}`;
  const options = {
    target: t.ScriptTarget.ES2022,
    module: t.ModuleKind.ES2022,
    lib: ['lib.es2023.d.ts'],
    strict: false,
    noImplicitAny: false,
    allowJs: true,
    checkJs: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
  };
  const sources: Record<string, string> = { [file]: text, [DECLARATIONS]: declarations, [GLOBALS]: GUEST_GLOBALS };
  const defaultHost = t.createCompilerHost(options);
  const host = {
    ...defaultHost,
    fileExists: (name: string) => name in sources || defaultHost.fileExists(name),
    readFile: (name: string) => sources[name] ?? defaultHost.readFile(name),
    getSourceFile: (name: string, version: unknown) => {
      if (name in sources) return t.createSourceFile(name, sources[name]!, t.ScriptTarget.ES2022, true);
      // The standard library's files are the same for every check: parsed once.
      let cached = libFiles.get(name) as ReturnType<typeof t.createSourceFile> | undefined;
      if (cached === undefined) {
        const content = defaultHost.readFile(name);
        if (content === undefined) return undefined;
        cached = t.createSourceFile(name, content, version as never, false);
        libFiles.set(name, cached);
      }
      return cached;
    },
    writeFile: () => undefined,
  };
  const program = t.createProgram({ rootNames: [file, DECLARATIONS, GLOBALS], options, host: host as never });
  const all = [...program.getSyntacticDiagnostics(), ...program.getSemanticDiagnostics(), ...program.getGlobalDiagnostics()];
  const diagnostics = language === 'typescript' ? all : all.filter((d) => d.code < 2000 || API_MISUSE.has(d.code) || (d.relatedInformation ?? []).some((r) => r.file?.fileName === DECLARATIONS));
  return diagnostics.map((d) => {
    const message = t.flattenDiagnosticMessageText(d.messageText, '\n');
    if (d.file === undefined || d.start === undefined || d.file.fileName !== file) return { line: 0, column: 0, message, code: `TS${d.code}` };
    const at = d.file.getLineAndCharacterOfPosition(d.start);
    return { line: at.line, column: at.character + 1, message, code: `TS${d.code}` };
  });
}

/** Diagnostics as the text of an error: one line each, `line:column TS2339 message`. */
export function formatDiagnostics(diagnostics: readonly TypeDiagnostic[]): string {
  return diagnostics.map((d) => `${d.line > 0 ? `${d.line}:${d.column} ` : ''}${d.code} ${d.message}`).join('\n');
}
