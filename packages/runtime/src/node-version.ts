/**
 * The Node.js versions Strata runs on. The engine, isolated-vm 7, ships native code for Node 24's
 * ABI only (on an older Node its loader fails with "No native build was found … node=20…", which
 * says nothing about Strata), so the in-process `Runtime` and every worker need Node 24. The
 * parent of an `IsolatedRuntime` or `SandboxPool` never loads the engine: it needs Node 22, and
 * starts its workers on a Node 24 (`workerNode`). Importing `@strata/runtime` checks the host
 * first and says what to do.
 *
 * @module
 */
import { StrataError } from './errors.js';

/** The oldest Node.js major version `@strata/runtime` can be imported on (`IsolatedRuntime` and `SandboxPool` work there). */
export const MIN_NODE_MAJOR = 22;

/** The oldest Node.js major version the engine runs on: the in-process `Runtime`, and the Node every worker runs. */
export const ENGINE_NODE_MAJOR = 24;

/** The host's Node.js is older than Strata supports ({@link MIN_NODE_MAJOR}, or {@link ENGINE_NODE_MAJOR} where the engine runs). */
export class UnsupportedNode extends StrataError {
  constructor(message: string) {
    super(message, { code: 'ERR_STRATA_NODE_VERSION' });
  }
}

/** The major version in `version` (as in `process.version`), or NaN. */
export function nodeMajor(version: string): number {
  return Number(/^v?(\d+)\./.exec(version)?.[1]);
}

const installNode = (major: number) =>
  `nodejs.org, your version manager, or \`npm install node-${process.platform}-${process.arch}@${major}\` and its node_modules/.bin/node`;

/** Why `version` cannot import `@strata/runtime`, or undefined when it can. */
export function nodeVersionProblem(version: string): string | undefined {
  const major = nodeMajor(version);
  if (Number.isInteger(major) && major >= MIN_NODE_MAJOR) return undefined;
  return (
    `@strata/runtime needs Node.js ${MIN_NODE_MAJOR} or later (${ENGINE_NODE_MAJOR} for the in-process Runtime); this is ${version}. ` +
    `Run your program with Node ${ENGINE_NODE_MAJOR} (${installNode(ENGINE_NODE_MAJOR)})`
  );
}

/** Why `version` cannot run the engine (isolated-vm), or undefined when it can. */
export function engineNodeProblem(version: string): string | undefined {
  const major = nodeMajor(version);
  if (Number.isInteger(major) && major >= ENGINE_NODE_MAJOR) return undefined;
  return (
    `the in-process Runtime needs Node.js ${ENGINE_NODE_MAJOR} or later; this is ${version}. Its engine, isolated-vm 7, ships native ` +
    `code for Node ${ENGINE_NODE_MAJOR} only. On this Node use IsolatedRuntime or SandboxPool, whose worker runs on a Node ` +
    `${ENGINE_NODE_MAJOR} (the workerNode option, or node-${process.platform}-${process.arch}@${ENGINE_NODE_MAJOR} installed beside ` +
    `@strata/runtime), or run your program with Node ${ENGINE_NODE_MAJOR} (${installNode(ENGINE_NODE_MAJOR)})`
  );
}

/** Throws {@link UnsupportedNode} unless this process runs a Node.js `@strata/runtime` can be imported on. */
export function assertSupportedNode(version: string = process.version): void {
  const problem = nodeVersionProblem(version);
  if (problem !== undefined) throw new UnsupportedNode(`${problem} (at ${process.execPath})`);
}

/** Throws {@link UnsupportedNode} unless this process can run the engine. */
export function assertEngineNode(version: string = process.version): void {
  const problem = engineNodeProblem(version);
  if (problem !== undefined) throw new UnsupportedNode(`${problem} (at ${process.execPath})`);
}
