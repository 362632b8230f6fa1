/**
 * `@strata/agent/ai`: code mode for the AI SDK (`ai`). {@link codeTool} is one tool for
 * `generateText` / `streamText` whose input is JavaScript; the model writes code that calls the
 * bridged tools (`await tools.weather({ city: 'Oslo' })`), and each call of the tool runs it in a
 * fresh sandbox. Whatever the code does (a throw, an endless loop, a crash), the tool answers with
 * `status: 'error'` for the model to read; it never fails the generation.
 *
 * A subpath of its own because `ai` is an optional peer dependency: `@strata/agent` loads without it.
 *
 * @module ai
 */
import { jsonSchema, tool, type ModelMessage, type Tool, type ToolExecutionOptions } from 'ai';
import { WEB_POLYFILLS } from '@strata/polyfills';
import { egressHandler, InvalidOption, IsolatedRuntime, SandboxPool, type IsolatedRuntimeOptions, type StrataRuntime } from '@strata/runtime';
import { executeCell } from './cell-code.js';
import { normalizeCode } from './normalize-code.js';
import type { AgentSandboxOptions } from './agent-sandbox.js';
import { ApprovalCells, approvalLimits, type CodeApprovalStatus, type CodeToolApprovalOptions, type WaitingCall } from './code-tool-approvals.js';
import { failure, callOf, jsonOf, nameOf, messageOf, type CodeToolOutput } from './code-tool-output.js';
import type { ToolCall } from './journal.js';
import { ToolBridge } from './tool-bridge.js';

/** Options of {@link codeTool}. */
export interface CodeToolOptions {
  /** The tools the model's code can call: one bridge or several (distinct namespaces). */
  bridge: ToolBridge | readonly ToolBridge[];
  /**
   * Where the code runs: a `SandboxPool` (a fresh pooled sandbox per call), or a function that
   * gives a runtime (an `IsolatedRuntime` or a `Runtime`: any {@link StrataRuntime}) per call.
   * Either way the runtime is closed after the call. Default: a fresh `IsolatedRuntime` per call,
   * with the web polyfills.
   */
  sandbox?: SandboxPool | (() => Promise<StrataRuntime>);
  /**
   * Soft timeout per run, ms, when Strata starts the runtime (no `sandbox`). Default 30 000. With
   * a `sandbox`, set it there (`SandboxPool.start({ timeout })`): giving both is an `InvalidOption`.
   */
  timeout?: number;
  /**
   * What the model's `fetch` may reach, when Strata starts the runtime (no `sandbox`): the
   * runtime's `egress` (a policy, or your own handler). Default none: `fetch` refuses. With a
   * `sandbox`, set it there (`SandboxPool.start({ egress })`): giving both is an `InvalidOption`.
   */
  egress?: IsolatedRuntimeOptions['egress'];
  /** Extra text for the tool's description (after the declarations). */
  description?: string;
  /**
   * When a bridged tool has `needsApproval`: how paused code calls wait for the user's decision
   * (in memory, by tool call id; see {@link CodeTool}).
   */
  approvals?: CodeToolApprovalOptions;
}

/**
 * The code tool: an AI SDK `Tool`, plus its approval check. When a bridged tool has
 * `needsApproval`, each code call runs in an `AgentSandbox` session, in the SDK's approval check:
 * a call that needs approval pauses the code, and the SDK shows a `tool-approval-request` for the
 * code call whose reason names the calls it waits on; approved, the code resumes by replay.
 */
export type CodeTool = Tool<CodeToolInput, CodeToolOutput> & {
  /**
   * The approval check, for `generateText`'s `toolApproval: { code: tool.toolApproval }`: as the
   * tool's own `needsApproval`, with the waiting calls (tool and input) as the request's reason.
   * A `toolApproval` of your own for the code tool must call it: without the check, a call that
   * needs approval is denied in the guest.
   */
  readonly toolApproval: (
    input: CodeToolInput,
    options: { readonly toolCallId: string; readonly messages: readonly ModelMessage[] },
  ) => Promise<CodeApprovalStatus>;
  /** The bridged calls a paused code call waits on, by the code call's tool call id; undefined when it does not wait. */
  waitingCalls(toolCallId: string): readonly WaitingCall[] | undefined;
};

/** The code tool's input, as the model writes it. */
export interface CodeToolInput {
  readonly code: string;
}

export type { CodeToolCall, CodeToolOutput } from './code-tool-output.js';
export type { CodeApprovalStatus, CodeToolApprovalOptions, WaitingCall } from './code-tool-approvals.js';

const DEFAULT_TIMEOUT = 30_000;

/**
 * One AI SDK tool that runs the model's JavaScript in a sandbox, with the bridges' tools in
 * their namespaces; its description carries their TypeScript declarations.
 *
 * ```ts
 * import { generateText, stepCountIs } from 'ai';
 * import { codeTool } from '@strata/agent/ai';
 * const { text } = await generateText({ model, tools: { code: codeTool({ bridge }) }, stopWhen: stepCountIs(5), prompt });
 * ```
 *
 * @throws `InvalidOption` (`@strata/runtime`) for bad options (not a bridge, two bridges with one namespace,
 * a bad timeout, a timeout beside a sandbox, a `sandbox` function beside a tool that needs approval).
 * Running never throws for the code's own failure.
 */
export function codeTool(options: CodeToolOptions): CodeTool {
  const { bridges, start, description, cells } = checkOptions(options);
  const base = tool({
    description: toolDescription(bridges, description, cells !== undefined),
    inputSchema: jsonSchema<CodeToolInput>(
      {
        type: 'object',
        properties: { code: { type: 'string', description: 'JavaScript to run; the value of its last expression is the result. Top-level await is fine.' } },
        required: ['code'],
        additionalProperties: false,
      },
      {
        validate: (value) =>
          isInput(value) ? { success: true, value } : { success: false, error: new TypeError('the input must be { code: string }: the JavaScript to run') },
      },
    ),
    execute: (input: CodeToolInput, execution: ToolExecutionOptions<unknown>) => {
      if (cells === undefined || !isInput(input)) return run(bridges, start, input, execution?.abortSignal);
      return cells.execute(input.code, String(execution?.toolCallId), execution?.messages ?? [], execution?.abortSignal);
    },
  });
  const toolApproval: CodeTool['toolApproval'] = async (input, approval) =>
    cells === undefined || !isInput(input) ? { type: 'not-applicable' } : cells.check(input.code, String(approval?.toolCallId), approval?.messages ?? []);
  const approvalParts =
    cells === undefined
      ? {}
      : {
          needsApproval: async (input: CodeToolInput, approval: { toolCallId: string; messages: ModelMessage[] }) =>
            (await toolApproval(input, approval)).type === 'user-approval',
        };
  return Object.assign(base, approvalParts, {
    toolApproval,
    waitingCalls: (toolCallId: string) => cells?.waitingCalls(toolCallId),
  }) as CodeTool;
}

type StartRuntime = () => Promise<StrataRuntime>;

function checkOptions(options: CodeToolOptions): {
  bridges: readonly ToolBridge[];
  start: StartRuntime;
  description: string | undefined;
  cells: ApprovalCells | undefined;
} {
  if (options === null || typeof options !== 'object')
    throw new InvalidOption('codeTool options must be an object ({ bridge, sandbox?, timeout?, egress?, description? })');
  const bridges: readonly ToolBridge[] = Array.isArray(options.bridge) ? options.bridge : [options.bridge as ToolBridge];
  const namespaces = new Map<string, number>();
  for (const [i, bridge] of bridges.entries()) {
    const where = Array.isArray(options.bridge) ? `bridge[${i}]` : 'bridge';
    if (!(bridge instanceof ToolBridge)) throw new InvalidOption(`${where} must be a ToolBridge (new ToolBridge({ tools }))`);
    const other = namespaces.get(bridge.namespace);
    if (other !== undefined)
      throw new InvalidOption(
        `bridge[${other}] and bridge[${i}] both use the namespace ${bridge.namespace}: give each bridge its own (new ToolBridge({ namespace, tools }))`,
      );
    namespaces.set(bridge.namespace, i);
  }
  if (options.description !== undefined && typeof options.description !== 'string') throw new InvalidOption('description must be a string');
  const { sandbox, timeout, egress } = options;
  if (timeout !== undefined && (typeof timeout !== 'number' || Number.isNaN(timeout) || timeout <= 0)) {
    throw new InvalidOption(`timeout must be a positive number of milliseconds (or Infinity), got ${String(timeout)}`);
  }
  if (sandbox !== undefined && timeout !== undefined) {
    throw new InvalidOption(
      'timeout applies only to the runtimes Strata starts; with a sandbox, set the timeout there (SandboxPool.start({ timeout }) or in your function)',
    );
  }
  if (sandbox !== undefined && egress !== undefined) {
    throw new InvalidOption(
      'egress applies only to the runtimes Strata starts; with a sandbox, set it there (SandboxPool.start({ egress }) or in your function)',
    );
  }
  // A policy is checked (and becomes its handler) once, here, not at every call.
  const handler = egress === undefined || typeof egress === 'function' ? egress : egressHandler(egress);
  let start: StartRuntime;
  if (sandbox === undefined)
    start = () =>
      IsolatedRuntime.start({ bootstrap: [WEB_POLYFILLS], timeout: timeout ?? DEFAULT_TIMEOUT, ...(handler === undefined ? {} : { egress: handler }) });
  else if (sandbox instanceof SandboxPool) start = () => sandbox.checkout();
  else if (typeof sandbox === 'function') start = sandbox;
  else throw new InvalidOption('sandbox must be a SandboxPool or a function that resolves to an IsolatedRuntime or a Runtime');
  const limits = approvalLimits(options.approvals);
  if (!bridges.some((bridge) => bridge.mayNeedApproval)) return { bridges, start, description: options.description, cells: undefined };
  // A tool may need approval: each code call is a session's cell, which can pause and be resumed by replay.
  if (typeof sandbox === 'function') {
    throw new InvalidOption(
      'a bridged tool has needsApproval, and approvals need a session (AgentSandbox) that a sandbox function cannot give: give no sandbox, or a SandboxPool started with a clock',
    );
  }
  const session = (): AgentSandboxOptions =>
    sandbox instanceof SandboxPool
      ? { tools: bridges, pool: sandbox }
      : { tools: bridges, timeout: timeout ?? DEFAULT_TIMEOUT, ...(handler === undefined ? {} : { egress: handler }) };
  return { bridges, start, description: options.description, cells: new ApprovalCells(session, limits) };
}

// What a run calls on its runtime: bindFunction and eval (binding the bridges), execute (the cell), close.
const CALLED = ['bindFunction', 'eval', 'execute', 'close'] as const satisfies readonly (keyof StrataRuntime)[];

/** Whether the caller's `sandbox()` gave what its type promised (a plain JavaScript caller may not). */
function keepsContract(value: unknown): value is StrataRuntime {
  return value !== null && typeof value === 'object' && CALLED.every((method) => typeof (value as Record<string, unknown>)[method] === 'function');
}

const isInput = (value: unknown): value is CodeToolInput =>
  value !== null && typeof value === 'object' && typeof (value as { code?: unknown }).code === 'string';

/** What the tool does, the bridges' declarations for the model, then the caller's text. */
function toolDescription(bridges: readonly ToolBridge[], extra: string | undefined, approvals: boolean): string {
  const lines = [
    'Runs JavaScript in a sandbox, fresh for each call: no network, no files, no require, and no state kept between calls.',
    'The value of the last expression is the result; console output is returned too. Top-level await is fine.',
  ];
  if (bridges.length > 0)
    lines.push('The code can call these tools (each returns a promise: await it):', '```ts', ...bridges.map((bridge) => bridge.declarations()), '```');
  if (approvals)
    lines.push(
      "Some tools need the user's approval: the code pauses before calling one until the user decides, and a denial refuses the whole code call. One decision per code call: make each such call in a code call of its own (a later one in the same code call is denied).",
    );
  if (extra !== undefined && extra !== '') lines.push(extra);
  return lines.join('\n');
}

/** One call of the tool: a runtime, the bridges bound, the cell run, the runtime closed. */
async function run(bridges: readonly ToolBridge[], start: StartRuntime, input: CodeToolInput, signal: AbortSignal | undefined): Promise<CodeToolOutput> {
  const calls: ToolCall[] = [];
  if (!isInput(input)) return failure('TypeError', 'the input must be { code: string }: the JavaScript to run', calls);
  let runtime: StrataRuntime;
  try {
    runtime = await start();
  } catch (error) {
    if (error instanceof InvalidOption) throw error;
    return failure(nameOf(error), `the sandbox could not start: ${messageOf(error)}`, calls);
  }
  if (!keepsContract(runtime)) throw new InvalidOption('sandbox() must resolve to an IsolatedRuntime or a Runtime');
  // The generation was aborted: stop the run where it is (the run then ends as RuntimeClosed).
  const abort = () => void runtime.close().catch(() => undefined);
  const aborted = () => signal?.aborted === true;
  signal?.addEventListener('abort', abort, { once: true });
  try {
    if (aborted()) return failure('AbortError', 'the generation was aborted before the code ran', calls);
    for (const bridge of bridges) await bridge.bind(runtime, { onCall: (call) => calls.push(call) });
    const outcome = await executeCell(runtime, await normalizeCode(input.code), 'javascript', 'code');
    if (outcome.status === 'error' && aborted())
      return { ...failure('AbortError', 'the generation was aborted: the run was stopped', calls), stdout: outcome.stdout, stderr: outcome.stderr };
    return {
      status: outcome.status,
      ...(outcome.status === 'ok' ? { result: jsonOf(outcome.result) } : { error: outcome.error ?? '', errorType: outcome.errorType ?? 'Error' }),
      stdout: outcome.stdout,
      stderr: outcome.stderr,
      ...(outcome.truncated ? { truncated: true as const } : {}),
      calls: calls.map(callOf),
    };
  } catch (error) {
    // Binding failed (the worker died under it): the run's failure, not the host's.
    if (error instanceof InvalidOption) throw error;
    return failure(nameOf(error), messageOf(error), calls);
  } finally {
    signal?.removeEventListener('abort', abort);
    await runtime.close().catch(() => undefined);
  }
}
