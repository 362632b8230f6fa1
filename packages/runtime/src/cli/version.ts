import { readFileSync } from 'node:fs';

/**
 * The version of `@strata/runtime`, from its package.json. Read at run time rather than copied in
 * at build time, so `strata --version` cannot disagree with what npm installed.
 */
export function packageVersion(): string {
  // This file compiles to dist/src/cli/version.js, three levels below the package root.
  const manifest = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
  return typeof manifest.version === 'string' ? manifest.version : 'unknown';
}
