// AgentSandbox and code mode on a pool of shared workers (SandboxPool({ isolatesPerWorker })):
// sessions of one tenant share a worker, another tenant's never do, and when the shared worker
// dies every session in it recovers by replaying its journal in a new one.
import test from 'ava';
import { SandboxPool } from '@strata/runtime';
import { AgentSandbox } from '../src/index.js';
import { checkNoLeaks } from './helpers/leaks.js';

checkNoLeaks(test);

test('sessions of one tenant share a worker; a V8 abort in one ends the worker, and every session of it recovers by replay', async (t) => {
  await using pool = await SandboxPool.start({ size: 1, isolatesPerWorker: 4, timeout: 10_000, clock: { at: 0, seed: 1 } });
  let counted = 0;
  const tools = { count: async () => ++counted };
  await using a = await AgentSandbox.start({ pool, tenant: 'acme', tools });
  await using b = await AgentSandbox.start({ pool, tenant: 'acme', tools });
  await using other = await AgentSandbox.start({ pool, tenant: 'globex', tools });
  t.is((await a.run('globalThis.who = "a"; await count()')).status, 'ok');
  t.is((await b.run('globalThis.who = "b"; await count()')).status, 'ok');
  t.is((await other.run('globalThis.who = "other"')).status, 'ok');
  t.is(a.pid, b.pid, 'one tenant, one worker');
  t.not(a.pid, other.pid, 'another tenant, another worker');
  const sharedPid = a.pid;
  const crashed = await a.run("'ab'.repeat(2 ** 27).split('')");
  t.is(crashed.status, 'error');
  t.is(crashed.errorType, 'WorkerCrashed', crashed.error);
  // b's worker died with a's: its next cell runs in a new worker after replaying its journal,
  // and the tool call it completed is not run again.
  const before = counted;
  const bAfter = await b.run('who');
  t.is(bAfter.status, 'ok', bAfter.error);
  t.is(bAfter.result, 'b');
  const aAfter = await a.run('who');
  t.is(aAfter.status, 'ok', aAfter.error);
  t.is(aAfter.result, 'a');
  t.is(counted, before, 'completed calls are replayed from the journal, not run again');
  t.not(a.pid, sharedPid);
  t.is(a.pid, b.pid, 'the two sessions share the new worker too');
  t.is((await other.run('who')).result, 'other', "the other tenant's worker was untouched");
});
