/**
 * `npm run demo`: a program a model might write, run with a bound tool, reaching for the things
 * generated code reaches for first, and finding nothing; then two failures, contained.
 *
 * This build has the in-process engine only. The supervised, sandboxed worker
 * (IsolatedRuntime) and its OS layers are the next milestones; until then there is no layer
 * report to print, and this demo says so instead of pretending.
 */
import { WEB_POLYFILLS } from '@strata/polyfills';
import { Runtime } from './index.js';

const untrusted = `
  const price = lookup('A1') * 2;
  const reached = ['fetch', 'require', 'process', 'Deno', 'Bun', 'XMLHttpRequest', 'WebSocket', 'import']
    .map((name) => name + ': ' + (typeof globalThis[name]));
  console.log('price of two A1:', price);
  console.log('what the guest can reach:', reached.join(', '));
  const attempts = [];
  try { tool.constructor.constructor('return process')().exit(1) } catch (e) { attempts.push('escape via Function: ' + e.name) }
  await new Promise((resolve) => setTimeout(resolve, 5_000)); // virtual time: returns at once
  attempts;
`;

async function main(): Promise<void> {
  await using rt = await Runtime.create({ timeout: 1_000, maxHeapSize: 32 * 1024 * 1024, bootstrap: WEB_POLYFILLS, strictEval: true });
  rt.bindFunction('lookup', (sku: string) => ({ A1: 3.5 })[sku]);
  rt.bindFunction('tool', () => 'ok');

  const run = await rt.execute(`(async () => { ${untrusted} })()`);
  process.stdout.write(run.stdout);
  console.log('result:', JSON.stringify(run.result), '| status:', run.status);

  const loop = await rt.execute('for (;;) {}');
  console.log(`an endless loop: ${loop.status} (${loop.errorType}), and the runtime still answers:`, await rt.eval('1 + 1'));

  const heap = await rt.execute('const a = []; for (;;) a.push(new Array(1e5).fill(1))');
  console.log(`a heap bomb: ${heap.status} (${heap.errorType}); the runtime is closed: ${rt.closed}; this process carries on.`);

  console.log('\nlayer report: none — this build runs the isolate in-process (Runtime, for buggy code).');
  console.log('The sandboxed worker and its OS layers (IsolatedRuntime) are not built yet; see the README.');
}

await main();
