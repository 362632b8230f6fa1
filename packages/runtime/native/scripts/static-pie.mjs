// Whether a C compiler links static position-independent executables (`-static-pie`) that run.
//
// The helpers of the worker's launch chain (strata-exec and the layers' links) are each exec'd
// once per worker start, and an exec of a dynamically linked program pays for the loader mapping
// and relocating libc first: about 0.8 ms more per exec than a static one on this project's VM,
// four execs a start. Static-PIE keeps address-space randomization. Linking it needs the C
// library's static archive (libc.a: Debian's libc6-dev has it; Fedora and others install it only
// on request), so the build asks the compiler first and links dynamically when it cannot.
//
// Plain JavaScript, like build.mjs: it runs during `npm ci`, before anything is compiled.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * True when `compiler` links a program with `-static-pie` (and, unless `run` is false, as for a
 * cross-compiler, the program runs and exits 0). Never throws: a missing compiler answers false.
 */
export function staticPieLinks(compiler = process.env.CC || 'cc', { run = true } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'strata-static-pie-'));
  try {
    const source = join(dir, 'probe.c');
    const program = join(dir, 'probe');
    writeFileSync(source, '#include <stdio.h>\nint main(void) { return puts("") == EOF; }\n');
    const linked = spawnSync(compiler, ['-static-pie', '-o', program, source], { stdio: 'ignore' });
    if (linked.error || linked.status !== 0) return false;
    if (!run) return true;
    const ran = spawnSync(program, [], { stdio: 'ignore', timeout: 10_000 });
    return !ran.error && ran.status === 0;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
