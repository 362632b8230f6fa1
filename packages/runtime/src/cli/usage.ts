/**
 * The help texts of `strata`. Kept beside nothing else so that `--help` and the README can be
 * compared line by line.
 *
 * @module
 */
import { EXIT_STATUS_TABLE } from './exit-status.js';

const EXIT_STATUSES = ['Exit status:', ...EXIT_STATUS_TABLE.map(([code, meaning]) => `  ${code}  ${meaning}`)].join('\n');

const MAIN = `Usage: strata <command> [options]

Runs untrusted JavaScript in a V8 isolate inside a supervised worker process.

Commands:
  run FILE      run a program in a sandboxed worker and print its console and result
  doctor        print the protection this machine can provide (the layer report)
  mcp           serve code mode over MCP (stdio or HTTP): an execute tool with bridged tools
  help [CMD]    print this help, or a command's

Options:
  -h, --help    print help
  --version     print the version of @strata/runtime

${EXIT_STATUSES}
`;

const RUN = `Usage: strata run FILE [options]

Runs FILE (UTF-8 JavaScript) in a fresh worker with the default layers, streams its console
(console.log to stdout, console.warn/error to stderr) and prints its result.

FILE is a script, not a module: its completion value (its last expression) is the result, and
a promise is awaited. Top-level await is not available in a script; wrap the program in an async
function and end with its call:

  (async () => {
    const data = await somethingAsync();
    return data.length;
  })()

The guest has no require, import, process or file system, and no network: fetch exists
(a web polyfill) and rejects with a TypeError, as strata run gives it no egress policy.

Options:
  --sandbox MODE   require: refuse to run unless every OS layer is in force (exit 3);
                   auto (default): apply what this machine can, warn about the rest;
                   off: the base hardening only, no OS layers
  --timeout MS     the guest's time limit in milliseconds (default 30000); time spent in
                   the guest counts, and the worker is killed 2 s past it if the guest
                   cannot be interrupted
  --memory BYTES   the worker's resident memory ceiling, e.g. 512M, 1G (default 1G)
  --strict-eval    refuse eval and the Function constructors inside the guest
  --no-polyfills   no web polyfills (on by default: setTimeout on virtual time, TextEncoder,
                   TextDecoder, atob, btoa, Blob, EventTarget, AbortController, structuredClone,
                   URL, URLSearchParams, URLPattern, self, navigator; they run inside the
                   isolate and add no authority)
  --json           print one JSON object on one line, and nothing else (stderr stays empty):
                   {status, result, error, errorType, stack, stdout, stderr, truncated,
                    sandbox, sandboxExtras, report}; the console is collected into it
                   (64 KiB per stream, then truncated: true); a file, usage or sandbox
                   refusal is reported the same way (errorType FileUnreadable,
                   InvalidOption, SandboxUnavailable; sandbox and report null).
                   Values JSON cannot express are tagged:
                   {"$undefined":true} {"$bigint":"12"} {"$number":"NaN"|"Infinity"|"-Infinity"|"-0"}
                   {"$date":"1970-01-01T00:00:00.000Z"} {"$bytes":"<base64>"}
                   {"$map":[[k,v],...]} {"$set":[v,...]}; an object whose only key starts with
                   "$" is wrapped as {"$object":{...}} so it is never mistaken for a tag
  -h, --help       print this help

Output without --json: the console as it happens, then the result: a string as it is, other
values as Node's util.inspect prints them, nothing for undefined. On failure, "errorType: message"
on stderr. On a terminal, control characters from the guest are shown escaped.

${EXIT_STATUSES}
`;

const DOCTOR = `Usage: strata doctor [--json]

Starts a worker the way "strata run" does (sandbox auto, the default layers) and prints what is in
force: Node version, platform, the native helpers, privileges, the base hardening, the sandbox,
and one row per OS layer (name, version, requirement, enforcement, selfTest, provides, missing),
then a one-line verdict.

Options:
  --json        print the whole report as one JSON object
  -h, --help    print this help

Exit status:
  0  everything this platform can provide is in force
  1  protection is degraded (the verdict says what is missing and what to do)
  4  Strata could not start a worker here
`;

/** The help text for `topic` (`undefined`: the main help). Ends with a newline. */
const MCP = `Usage: strata mcp [--config FILE] [--session [--store FILE] [--session-id ID]] [--sandbox MODE] [--timeout MS]
                  [--http HOST:PORT [--token-file FILE]]

Serves code mode over MCP on stdin/stdout, or over Streamable HTTP with --http. Needs
@strata/agent and the MCP SDK installed beside @strata/runtime: npm install @strata/agent
@modelcontextprotocol/sdk (1.x), or @modelcontextprotocol/server and @modelcontextprotocol/node (2.x).
Its one tool, execute, runs the model's code (JavaScript or TypeScript) in a fresh pooled sandbox
and answers with the result, the console output and a receipt of every tool call; its description
holds the TypeScript declarations of the bridged tools. A throw, a timeout or a crash is an MCP
tool error; the server goes on.

Options:
  --config FILE    a JSON file: { "tools": [{ "module": "./tools.js", "namespace": "tools" },
                   { "mcp": { "command": "npx", "args": ["some-mcp-server"] }, "namespace": "gh" }],
                   "session": false, "sandbox": "auto", "timeout": 30000, "maxMemory": ..., "poolSize": 2,
                   "isolatesPerWorker": 1 }  (above 1: each call a fresh isolate of a shared worker)
  --session        one AgentSandbox for the connection: state persists across execute calls
  --store FILE     with --session: keep the session's journal in this SQLite file, so that it
                   outlives the server (made if missing; the file is readable by its owner only)
  --session-id ID  with --store: resume this session if the file has it, or start it under this
                   id (default: a new id, printed on stderr)
  --sandbox MODE   require, auto (default) or off
  --timeout MS     the soft timeout of each run (default 30000)
  --http HOST:PORT serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio (port 0: any
                   free port; the address is printed on stderr). Every request needs the bearer
                   token (Authorization: Bearer TOKEN) when one is given; one is required unless
                   HOST is loopback (127.0.0.1, ::1, localhost). Stops on SIGTERM or SIGINT.
                   With --session, every client with the token shares the one session.
  --token-file FILE  with --http: the bearer token, read from FILE (at least 16 characters);
                   or set STRATA_MCP_TOKEN. Never on the command line (other users can read it)
  -h, --help       print this help
`;

export function helpText(topic: 'run' | 'doctor' | 'mcp' | undefined): string {
  return topic === 'run' ? RUN : topic === 'doctor' ? DOCTOR : topic === 'mcp' ? MCP : MAIN;
}

/** The short usage printed after a usage error: the first line of the relevant help. */
export function shortUsage(topic: 'run' | 'doctor' | 'mcp' | undefined): string {
  const first = helpText(topic).split('\n')[0]!;
  return `${first}\nTry 'strata ${topic === undefined ? '' : `${topic} `}--help' for more.\n`;
}
