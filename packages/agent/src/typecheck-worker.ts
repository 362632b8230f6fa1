/**
 * The type checker's worker thread (see typecheck.ts): the TypeScript compiler API, loaded and
 * warmed up here, away from the host's event loop. Any failure makes the parent replace this
 * thread; the parent also terminates it past the check's time budget.
 *
 * @module
 */
import { createRequire } from 'node:module';
import { serveBoundedRequests } from '@strata/runtime/bounded-worker';
import { COMPILER_MISSING, COMPILER_UNSUPPORTED, SUPPORTED_TYPESCRIPT, type TypecheckRequest } from './typecheck-protocol.js';
import type { TypeDiagnostic } from './typecheck.js';

type Ts = typeof import('typescript');

/** The installed compiler, or the error that says why it cannot be used. */
function loadCompiler(): Ts {
  let loaded: unknown;
  try {
    loaded = createRequire(import.meta.url)('typescript');
  } catch (error) {
    throw Object.assign(
      new Error(
        `typecheck needs the TypeScript compiler: npm install typescript@"${SUPPORTED_TYPESCRIPT}" (an optional peer dependency of @strata/agent) (${(error as Error).message.split('\n', 1)[0]})`,
      ),
      {
        code: COMPILER_MISSING,
      },
    );
  }
  const version = String((loaded as { version?: unknown } | null)?.version ?? 'unknown');
  const [major = NaN, minor = NaN] = version.split('.').map(Number);
  const supported = major === 5 ? minor >= 5 : major === 6;
  const api = loaded as Partial<Ts> | null;
  if (!supported || typeof api?.createProgram !== 'function' || api.ScriptTarget?.ES2022 === undefined) {
    throw Object.assign(
      new Error(
        `typecheck needs TypeScript ${SUPPORTED_TYPESCRIPT}, whose compiler API it uses; the installed typescript is ${version}` +
          (major >= 7 ? ' (TypeScript 7, the native port, has no such JavaScript API)' : '') +
          `: npm install typescript@"${SUPPORTED_TYPESCRIPT}"`,
      ),
      { code: COMPILER_UNSUPPORTED },
    );
  }
  return loaded as Ts;
}

let compiler: Ts | Error;
try {
  compiler = loadCompiler();
} catch (error) {
  compiler = error as Error;
}
const libFiles = new Map<string, unknown>();

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

function check({ code, declarations, language }: TypecheckRequest): TypeDiagnostic[] {
  if (compiler instanceof Error) throw compiler;
  const t = compiler;
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
  const diagnostics =
    language === 'typescript'
      ? all
      : all.filter((d) => d.code < 2000 || API_MISUSE.has(d.code) || (d.relatedInformation ?? []).some((r) => r.file?.fileName === DECLARATIONS));
  return diagnostics.map((d) => {
    const message = t.flattenDiagnosticMessageText(d.messageText, '\n');
    if (d.file === undefined || d.start === undefined || d.file.fileName !== file) return { line: 0, column: 0, message, code: `TS${d.code}` };
    const at = d.file.getLineAndCharacterOfPosition(d.start);
    return { line: at.line, column: at.character + 1, message, code: `TS${d.code}` };
  });
}

serveBoundedRequests<TypecheckRequest, TypeDiagnostic[]>(check, {
  // The compiler's load and the standard library's parse are not a check's cost.
  warmUp: () => {
    if (!(compiler instanceof Error)) check({ code: '', declarations: '', language: 'typescript' });
  },
  // A missing or unsupported compiler stays so: the thread need not be replaced for it.
  recoverable: (error) => {
    const code = (error as { code?: unknown } | null)?.code;
    return code === COMPILER_MISSING || code === COMPILER_UNSUPPORTED;
  },
});
