/**
 * `npm run demo`: a program a model might have written, run in a supervised worker process
 * with a bound tool; it reaches for what generated code reaches for first and finds nothing;
 * then a V8 abort (a fatal error in the worker) is contained; then the layer report is printed.
 */
import { WEB_POLYFILLS } from '@strata/polyfills';
import { IsolatedRuntime } from './index.js';

const untrusted = `
  const price = lookup('A1') * 2;
  console.log('two A1 cost', price, '| it is', new Date().toISOString(), '| a random number:', Math.random().toFixed(6));
  const reached = ['fetch', 'require', 'process', 'Deno', 'Bun', 'XMLHttpRequest', 'WebSocket']
    .map((name) => name + ': ' + typeof globalThis[name]);
  console.log('what the guest can reach:', reached.join(', '));
  const attempts = [];
  try { lookup.constructor.constructor('return process')().exit(1) } catch (e) { attempts.push('escape via Function: ' + e.name) }
  try { await import('node:fs') } catch (e) { attempts.push('import("node:fs"): ' + e.message) }
  await new Promise((resolve) => setTimeout(resolve, 5_000)); // virtual time: returns at once
  return attempts;
`;

async function main(): Promise<void> {
  process.removeAllListeners('warning'); // the demo prints its own account of the sandbox below
  // A frozen clock and a seeded Math.random (@strata/layer-clock): same program, same output.
  // sandbox: 'require': the worker starts only if every default OS layer is fully in force here.
  const options = { sandbox: 'require', timeout: 2_000, bootstrap: WEB_POLYFILLS, strictEval: true, clock: { at: '2026-01-01T00:00:00Z', seed: 7 } } as const;
  await using rt = await IsolatedRuntime.start(options);
  rt.bindFunction('lookup', (sku: string) => ({ A1: 3.5 })[sku]);
  console.log(`worker pid ${rt.pid} (this process is ${process.pid})\n`);

  const run = await rt.execute(`(async () => { ${untrusted} })()`);
  process.stdout.write(run.stdout);
  console.log('result:', JSON.stringify(run.result), '| status:', run.status, '\n');

  // An array of 2^28 one-character strings is past what V8 can hold: V8 aborts the worker process
  // (a fatal error, SIGTRAP), which the parent reports as WorkerCrashed and survives.
  const abort = "'ab'.repeat(2 ** 27).split('')";
  const crash = await rt.execute(abort);
  console.log(`${abort}: ${crash.status} (${crash.errorType}): ${crash.error?.replace(/ \(worker stderr:[\s\S]*$/, '').slice(0, 120)}`);
  console.log(`that runtime is closed: ${rt.closed}; this process carries on.`);
  await using next = await IsolatedRuntime.start(options);
  console.log('a fresh runtime answers 1 + 1 =', await next.eval('1 + 1'), '\n');

  console.log('layer report (rt.report.layers, abridged; the whole report follows):');
  for (const layer of next.report.layers) {
    console.log(`  ${layer.name.padEnd(10)} ${layer.enforcement.padEnd(5)} self-test ${layer.selfTest.padEnd(7)} ${layer.capability.provides.join(', ')}`);
  }
  const seen = next.report.verified;
  if (seen !== undefined) {
    console.log(
      `verified from outside (/proc): ${seen.threads} threads, seccomp mode ${seen.seccomp} and NoNewPrivs on every one: ${seen.noNewPrivs},` +
        ` no capabilities: ${seen.noCapabilities}, uid ${seen.uid}, own namespaces: ${seen.ownNamespaces.join(', ') || 'none'}`,
    );
  }
  console.log(`sandbox: ${next.sandbox}, extras: ${JSON.stringify(next.sandboxExtras)}\n`);
  console.log(JSON.stringify(next.report, null, 2));
}

await main();
