/**
 * The `strata` command line, parsed: pure, no I/O. `node:util` `parseArgs` in strict mode, so an
 * unknown option or a missing value is a {@link UsageError}, never silently ignored.
 *
 * @module
 */
import { parseArgs } from 'node:util';
import type { SandboxMode } from '../isolated/isolated-options.js';

/** The command line was wrong; the message says how. Exit status 2, with the usage. */
export class UsageError extends Error {
  /** The subcommand whose usage to print, if it is known. */
  readonly command: 'run' | 'doctor' | 'mcp' | undefined;

  constructor(message: string, command?: 'run' | 'doctor' | 'mcp') {
    super(message);
    this.name = 'UsageError';
    this.command = command;
  }
}

/** `strata run FILE …`, with every default filled in. */
export interface RunArgs {
  readonly command: 'run';
  readonly file: string;
  readonly sandbox: SandboxMode;
  /** The guest's `timeout` in ms; `undefined` keeps the runtime's default (30 s). */
  readonly timeout: number | undefined;
  /** The worker's `maxMemory` in bytes; `undefined` keeps the runtime's default (1 GiB). */
  readonly memory: number | undefined;
  readonly strictEval: boolean;
  readonly polyfills: boolean;
  readonly json: boolean;
}

/** `strata doctor [--json]`. */
export interface DoctorArgs {
  readonly command: 'doctor';
  readonly json: boolean;
}

/** Where `strata mcp --http` listens. */
export interface McpHttpAddress {
  /** A host name or an IP address (IPv6 without its brackets). */
  readonly host: string;
  /** 0: any free port (the address served is printed on stderr). */
  readonly port: number;
}

/** `strata mcp [--config FILE] [--session [--store FILE] [--session-id ID]] [--sandbox MODE] [--timeout MS] [--http HOST:PORT [--token-file FILE]]`: an MCP server over stdio, or Streamable HTTP. */
export interface McpArgs {
  readonly command: 'mcp';
  readonly config: string | undefined;
  readonly session: boolean;
  /** A SQLite file that keeps the session (relative to the working directory). */
  readonly store: string | undefined;
  readonly sessionId: string | undefined;
  readonly sandbox: SandboxMode | undefined;
  readonly timeout: number | undefined;
  /** Serve over Streamable HTTP at this address instead of stdio. */
  readonly http: McpHttpAddress | undefined;
  /** With `http`: the file that holds the bearer token (never the token itself on the command line). */
  readonly tokenFile: string | undefined;
}

/** `strata help [COMMAND]`, `strata --help`, `strata COMMAND --help`. */
export interface HelpArgs {
  readonly command: 'help';
  readonly topic: 'run' | 'doctor' | 'mcp' | undefined;
}

/** `strata --version`. */
export interface VersionArgs {
  readonly command: 'version';
}

/** What the command line asks for. */
export type CliArgs = RunArgs | DoctorArgs | McpArgs | HelpArgs | VersionArgs;

const SANDBOX_MODES: readonly SandboxMode[] = ['require', 'auto', 'off'];

/**
 * Parses `argv` (without `node` and the script path).
 *
 * @throws {@link UsageError} for anything that is not a valid `strata` command line.
 */
export function parseCliArgs(argv: readonly string[]): CliArgs {
  const [first, ...rest] = argv;
  switch (first) {
    case undefined:
      throw new UsageError('a command is required');
    case 'run':
      return parseRun(rest);
    case 'doctor':
      return parseDoctor(rest);
    case 'mcp':
      return parseMcp(rest);
    case 'help':
    case '--help':
    case '-h':
      return parseHelp(rest);
    case '--version':
      if (rest.length > 0) throw new UsageError(`--version takes no arguments (got ${quote(rest[0]!)})`);
      return { command: 'version' };
    default:
      throw new UsageError(first.startsWith('-') ? `unknown option ${quote(first)}` : `unknown command ${quote(first)}`);
  }
}

function parseRun(argv: readonly string[]): RunArgs | HelpArgs {
  const { values, positionals } = strictParse('run', argv, {
    sandbox: { type: 'string' },
    timeout: { type: 'string' },
    memory: { type: 'string' },
    'strict-eval': { type: 'boolean' },
    polyfills: { type: 'boolean' },
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values['help'] === true) return { command: 'help', topic: 'run' };
  if (positionals.length === 0) throw new UsageError('run needs the FILE of the program to run', 'run');
  if (positionals.length > 1) throw new UsageError(`run takes one FILE (got ${positionals.map(quote).join(', ')})`, 'run');
  const sandbox = (values['sandbox'] ?? 'auto') as string;
  if (!(SANDBOX_MODES as readonly string[]).includes(sandbox)) {
    throw new UsageError(`--sandbox must be require, auto or off (got ${quote(sandbox)})`, 'run');
  }
  return {
    command: 'run',
    file: positionals[0]!,
    sandbox: sandbox as SandboxMode,
    timeout: values['timeout'] === undefined ? undefined : parseMilliseconds(values['timeout'] as string),
    memory: values['memory'] === undefined ? undefined : parseBytes(values['memory'] as string),
    strictEval: values['strict-eval'] === true,
    // On by default: see `strata run --help` (model-written code reaches for setTimeout and TextEncoder).
    polyfills: values['polyfills'] !== false,
    json: values['json'] === true,
  };
}

function parseDoctor(argv: readonly string[]): DoctorArgs | HelpArgs {
  const { values, positionals } = strictParse('doctor', argv, {
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values['help'] === true) return { command: 'help', topic: 'doctor' };
  if (positionals.length > 0) throw new UsageError(`doctor takes no arguments (got ${quote(positionals[0]!)})`, 'doctor');
  return { command: 'doctor', json: values['json'] === true };
}

function parseMcp(argv: readonly string[]): McpArgs | HelpArgs {
  const { values, positionals } = strictParse('mcp', argv, {
    config: { type: 'string' },
    session: { type: 'boolean' },
    store: { type: 'string' },
    'session-id': { type: 'string' },
    sandbox: { type: 'string' },
    timeout: { type: 'string' },
    http: { type: 'string' },
    'token-file': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values['help'] === true) return { command: 'help', topic: 'mcp' };
  if (values['token-file'] !== undefined && values['http'] === undefined) {
    throw new UsageError('--token-file is the bearer token of --http HOST:PORT: give --http too', 'mcp');
  }
  if (positionals.length > 0) throw new UsageError(`mcp takes no arguments (got ${quote(positionals[0]!)}); name the config with --config FILE`, 'mcp');
  const sandbox = values['sandbox'] as string | undefined;
  if (sandbox !== undefined && !(SANDBOX_MODES as readonly string[]).includes(sandbox)) {
    throw new UsageError(`--sandbox must be require, auto or off (got ${quote(sandbox)})`, 'mcp');
  }
  return {
    command: 'mcp',
    config: values['config'] as string | undefined,
    session: values['session'] === true,
    store: values['store'] as string | undefined,
    sessionId: values['session-id'] as string | undefined,
    sandbox: sandbox as SandboxMode | undefined,
    timeout: values['timeout'] === undefined ? undefined : parseMilliseconds(values['timeout'] as string),
    http: values['http'] === undefined ? undefined : parseHttpAddress(values['http'] as string),
    tokenFile: values['token-file'] as string | undefined,
  };
}

/** `HOST:PORT`, `[IPv6]:PORT`: where `strata mcp --http` listens. */
export function parseHttpAddress(text: string): McpHttpAddress {
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/.exec(text);
  const port = match === null ? NaN : Number(match[3]);
  if (match === null || port > 65535) {
    throw new UsageError(`--http must be HOST:PORT, such as 127.0.0.1:8808 or [::1]:8808 (port 0: any free port) (got ${quote(text)})`, 'mcp');
  }
  return { host: match[1] ?? match[2]!, port };
}

function parseHelp(argv: readonly string[]): HelpArgs {
  // `strata help --help` (or -h) asks for the main help: print it and succeed, not a usage error.
  if (argv.length === 0 || (argv.length === 1 && (argv[0] === '--help' || argv[0] === '-h'))) return { command: 'help', topic: undefined };
  const [topic, ...extra] = argv;
  if ((topic === 'run' || topic === 'doctor' || topic === 'mcp') && extra.length === 0) return { command: 'help', topic };
  throw new UsageError(`help takes a command name, run, doctor or mcp (got ${argv.map(quote).join(' ')})`);
}

type OptionSpec = Record<string, { type: 'string' | 'boolean'; short?: string }>;

function strictParse(command: 'run' | 'doctor' | 'mcp', argv: readonly string[], options: OptionSpec) {
  try {
    // allowNegative: `--no-polyfills`. parseArgs refuses `--no-x` for an option that is not boolean.
    return parseArgs({ args: [...argv], options, strict: true, allowPositionals: true, allowNegative: true });
  } catch (error) {
    // parseArgs's messages name the option and say what is wrong; keep them, drop its long hint.
    const message = (error as Error).message.split('. To specify a positional')[0]!;
    throw new UsageError(message.charAt(0).toLowerCase() + message.slice(1), command);
  }
}

/** A positive whole number of milliseconds. */
export function parseMilliseconds(text: string): number {
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(Number(text)) || Number(text) < 1) {
    throw new UsageError(`--timeout must be a positive whole number of milliseconds (got ${quote(text)})`, 'run');
  }
  return Number(text);
}

const MIN_MEMORY_BYTES = 1024 * 1024;
const UNITS: Record<string, number> = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 };

/** Bytes, as a whole number with an optional binary unit: `536870912`, `512M`, `512MiB`, `1G`. */
export function parseBytes(text: string): number {
  const match = /^(\d+)\s*(?:([kmg])(?:i?b)?|b)?$/i.exec(text);
  const bytes = match === null ? NaN : Number(match[1]) * UNITS[(match[2] ?? '').toLowerCase()]!;
  if (!Number.isSafeInteger(bytes) || bytes < 1) {
    throw new UsageError(`--memory must be a positive number of bytes, optionally with K, M or G (powers of 1024) (got ${quote(text)})`, 'run');
  }
  // A worker needs tens of MiB just to exist: under 1 MiB is surely a missing unit, not a wish.
  if (bytes < MIN_MEMORY_BYTES) {
    const hint = /^\d+$/.test(text) ? `; did you mean ${text}M?` : '';
    throw new UsageError(`--memory ${text} is ${bytes} bytes, less than the 1 MiB a worker could ever run in${hint}`, 'run');
  }
  return bytes;
}

function quote(text: string): string {
  return JSON.stringify(text);
}
