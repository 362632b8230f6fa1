/**
 * The Node.js this package runs on. isolated-vm 7, the engine, ships native code for Node 24's
 * ABI only; on an older Node its loader fails with "No native build was found … node=20…", which
 * says nothing about Strata. Importing `@strata/runtime` checks first and says what to do.
 *
 * @module
 */
import { StrataError } from './errors.js';

/** The oldest Node.js major version `@strata/runtime` runs on. */
export const MIN_NODE_MAJOR = 24;

/** The host's Node.js is older than {@link MIN_NODE_MAJOR}. */
export class UnsupportedNode extends StrataError {
  constructor(message: string) {
    super(message, { code: 'ERR_STRATA_NODE_VERSION' });
  }
}

/** Why `version` (as in `process.version`) cannot run `@strata/runtime`, or undefined when it can. */
export function nodeVersionProblem(version: string): string | undefined {
  const major = Number(/^v?(\d+)\./.exec(version)?.[1]);
  if (Number.isInteger(major) && major >= MIN_NODE_MAJOR) return undefined;
  return (
    `@strata/runtime needs Node.js ${MIN_NODE_MAJOR} or later; this is ${version}. Its engine, isolated-vm 7, ships native ` +
    `code for Node ${MIN_NODE_MAJOR} only. Run your program with Node ${MIN_NODE_MAJOR} (nodejs.org, your version manager, or ` +
    `\`npm install node-${process.platform}-${process.arch}@${MIN_NODE_MAJOR}\` and its node_modules/.bin/node)`
  );
}

/** Throws {@link UnsupportedNode} unless this process runs a Node.js `@strata/runtime` supports. */
export function assertSupportedNode(version: string = process.version): void {
  const problem = nodeVersionProblem(version);
  if (problem !== undefined) throw new UnsupportedNode(`${problem} (at ${process.execPath})`);
}
