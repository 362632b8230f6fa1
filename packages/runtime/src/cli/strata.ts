#!/usr/bin/env node
/**
 * The `strata` command (the bin of `@strata/runtime`). This file only checks the Node version and
 * then loads the CLI: `/usr/bin/env node` may find an older Node first on PATH, and isolated-vm
 * would then fail to load with a message about native module versions instead of this one.
 *
 * @module
 */
import { ExitStatus } from './exit-status.js';

const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  process.stderr.write(
    `strata: Node.js 24 or later is required (this is ${process.version} at ${process.execPath}); ` +
      "'npm ci' installs Node 24 into node_modules/.bin: run strata with it, or put it first on PATH\n",
  );
  process.exitCode = ExitStatus.strataFailed;
} else {
  const { main } = await import('./main.js');
  await main(process.argv.slice(2));
}
