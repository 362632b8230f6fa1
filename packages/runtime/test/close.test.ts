// close() while a command runs settles, rejects what was waiting with RuntimeClosed and kills the
// worker, also in a process with nothing else on its event loop.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import test from 'ava';

const FIXTURE = fileURLToPath(new URL('./fixtures/close-during-command.js', import.meta.url));

const EXPECTED: Record<string, string[]> = {
  'endless-loop': ['ERR_STRATA_CLOSED'],
  'pending-host-call': ['ERR_STRATA_CLOSED'],
  'slow-host-call': ['ERR_STRATA_CLOSED'],
  'queued-commands': ['ERR_STRATA_CLOSED', 'ERR_STRATA_CLOSED', 'ERR_STRATA_CLOSED'],
};

for (const [scenario, outcomes] of Object.entries(EXPECTED)) {
  test(`close() during a command settles in an otherwise idle process: ${scenario}`, (t) => {
    const run = spawnSync(process.execPath, [FIXTURE, scenario], { encoding: 'utf8', timeout: 60_000 });
    t.is(run.status, 0, `exit status ${run.status} (13 is an unsettled top-level await); stderr: ${run.stderr}`);
    t.deepEqual(JSON.parse(run.stdout.trim()), { closed: true, outcomes });
  });
}
