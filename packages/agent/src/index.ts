/**
 * `@strata/agent`: what agents use on top of Strata. `AgentSandbox` runs an agent's cells in one
 * sandboxed worker, keeps state across them, and journals every tool call, so that a restore (in
 * another process, later), a crash or an approval replays exactly, and no completed tool call
 * ever runs twice.
 *
 * @packageDocumentation
 */
export { AgentSandbox, SESSION_EVENTS_CHANNEL } from './agent-sandbox.js';
export type { AgentSandboxOptions, CellResult, RunOptions, SessionEvent, ToolCall } from './agent-sandbox.js';
export { JournalError, SessionLimitExceeded, SessionStateError } from './errors.js';
export { JOURNAL_FORMAT, JOURNAL_VERSION } from './journal.js';
export type { CallRecord, CallStatus, CellRecord, CellStatus, Journal, JournalSettings, RecordedError } from './journal.js';
export type { Tool, ToolFunction, ToolObject, ToolSet } from './tools.js';
