#!/usr/bin/env node
/**
 * The `strata` command (the bin of `@strata/runtime`). This file only checks the Node version and
 * then loads the CLI: `/usr/bin/env node` may find an older Node first on PATH, and isolated-vm
 * would then fail to load with a message about native module versions instead of this one.
 *
 * @module
 */
import { nodeVersionProblem } from '../node-version.js';
import { ExitStatus } from './exit-status.js';

const problem = nodeVersionProblem(process.version);
if (problem !== undefined) {
  process.stderr.write(`strata: ${problem} (at ${process.execPath})\n`);
  process.exitCode = ExitStatus.strataFailed;
} else {
  const { main } = await import('./main.js');
  await main(process.argv.slice(2));
}
