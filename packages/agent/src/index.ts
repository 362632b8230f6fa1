/**
 * `@strata/agent`: what agents use on top of Strata. `AgentSandbox` runs an agent's cells in one
 * sandboxed worker, keeps state across them, and journals every tool call, so that a restore (in
 * another process, later), a crash or an approval replays exactly, and no completed tool call
 * ever runs twice. `ToolBridge` is code mode: tools with schemas as a validated, namespaced API
 * in the guest and as TypeScript declarations for the model; `mcpTools` bridges another MCP
 * server's tools and `openApiTools` an HTTP API's operations; `@strata/agent/mcp` is the server
 * behind `strata mcp`, `@strata/agent/ai` the AI SDK tool, `@strata/agent/codemode` an `Executor`
 * for Cloudflare's `@cloudflare/codemode`.
 *
 * @packageDocumentation
 */
export { AgentSandbox, SESSION_EVENTS_CHANNEL } from './agent-sandbox.js';
export type { AgentSandboxOptions, CellResult, PendingCall, RunOptions, SessionEvent } from './agent-sandbox.js';
export {
  JournalConflict,
  JournalError,
  JournalStoreError,
  LeaseHeld,
  LeaseLost,
  SessionLimitExceeded,
  SessionStateError,
  TypeCheckFailed,
  UpstreamHttpError,
  UpstreamMcpError,
} from './errors.js';
export { MemoryJournalStore } from './stores/memory-store.js';
export { SqliteJournalStore } from './stores/sqlite-store.js';
// For authors of other stores: the same checks of the same arguments, and the rows read back as a checked journal.
export {
  checkAppend,
  checkExpectation,
  checkLeaseRequest,
  checkListOptions,
  checkStoreSessionId,
  MAX_LEASE_TTL_MS,
  MAX_LIST_LIMIT,
} from './stores/store-checks.js';
export { assembleJournal, storedRowsOf } from './stores/journal-rows.js';
export type { JournalLimits } from './journal.js';
export type { SqliteJournalStoreOptions } from './stores/sqlite-store.js';
export type {
  CallRow,
  CellRow,
  JournalAppend,
  JournalStore,
  Lease,
  SessionRow,
  SessionSummary,
  StoredRows,
  WriteExpectation,
} from './stores/journal-store.js';
export type { AgentErrorCode } from './errors.js';
export { JOURNAL_FORMAT, JOURNAL_VERSION, SESSION_ID_PATTERN } from './journal.js';
export type { CallRecord, CallStatus, CellRecord, CellStatus, Journal, JournalSettings, RecordedError, ToolCall } from './journal.js';
export type { Tool, ToolFunction, ToolObject, ToolSet } from './tools.js';
export { ToolBridge, toIdentifier } from './tool-bridge.js';
export { currentToolCall } from './tool-call-context.js';
export type { ToolCallContext } from './tool-call-context.js';
export type {
  ApprovalDecision,
  ApprovalRequest,
  BindOptions,
  BridgeTool,
  BridgedTool,
  JsonSchema,
  StandardResult,
  StandardSchemaV1,
  ToolBridgeOptions,
} from './tool-bridge.js';
export { mcpTools } from './mcp-tools.js';
export { typecheck, formatDiagnostics, DEFAULT_TYPECHECK_TIMEOUT_MS } from './typecheck.js';
export { normalizeCode } from './normalize-code.js';
export { renderDeclarations, schemaToType } from './declarations.js';
export type { DeclarationOptions, DeclaredTool } from './declarations.js';
export type { TypeDiagnostic, TypecheckOptions } from './typecheck.js';
export type { McpServerCommand, McpTools, McpToolsOptions } from './mcp-tools.js';
export { openApiTools } from './openapi-tools.js';
export type { OpenApiEgress, OpenApiOperation, OpenApiTools, OpenApiToolsOptions } from './openapi-tools.js';
