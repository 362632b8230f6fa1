// End to end through Strata itself: IsolatedRuntime starts a worker (a child process) with the
// seccomp layer; the filter is applied there, never in ava's process.
import test from 'ava';
import { readdirSync, readFileSync } from 'node:fs';
import { IsolatedRuntime } from '@strata/runtime';
import { WEB_POLYFILLS } from '@strata/polyfills';
import { checkGuestStillWorks, platformTest } from '@strata/runtime/testing';
import { seccomp, SECCOMP_LAYER_MODULE } from '../src/index.js';
import { LayerConfigError } from '@strata/runtime/layers';

const descriptor = () => seccomp();

const linux = process.platform === 'linux' && (process.arch === 'x64' || process.arch === 'arm64');
const maybe = platformTest(test.serial, { feature: 'linux', available: linux, reason: 'Linux only (x64 or arm64)' });

test('seccomp() names the layer module and passes the requirement through', (t) => {
  t.deepEqual(seccomp(), { module: SECCOMP_LAYER_MODULE, options: {} });
  t.is(SECCOMP_LAYER_MODULE, '@strata/layer-seccomp/layer');
  t.deepEqual(seccomp({ requirement: 'auto' }), { module: SECCOMP_LAYER_MODULE, options: {}, requirement: 'auto' });
  t.throws(() => seccomp({ requirement: 'sometimes' as never }), { instanceOf: LayerConfigError, code: 'ERR_STRATA_LAYER_CONFIG' });
  t.throws(() => seccomp({ strict: true } as never), { instanceOf: LayerConfigError, code: 'ERR_STRATA_LAYER_CONFIG' });
});

maybe("IsolatedRuntime with sandbox 'require' and the seccomp layer: full, self-tested, on every thread; guest code still works", async (t) => {
  const rt = await IsolatedRuntime.start({ sandbox: 'require', layers: [descriptor()], bootstrap: WEB_POLYFILLS });
  try {
    const entry = rt.report.layers.find((l) => l.name === 'seccomp');
    t.truthy(entry);
    t.is(entry!.enforcement, 'full');
    t.is(entry!.selfTest, 'passed');
    t.true(entry!.capability.available);
    t.is(entry!.detail.highestReviewed, 471);
    // The launch chain ran strata-no-io-uring before Node: libuv made no ring, so all three io_uring calls are denied.
    t.is(entry!.detail.ioUring, 'denied');
    t.is(entry!.version, '0.1.0');

    // from outside: every thread of the worker has the filter and no_new_privs
    const tasks = readdirSync(`/proc/${rt.pid}/task`);
    t.true(tasks.length >= 5);
    for (const tid of tasks) {
      const status = readFileSync(`/proc/${rt.pid}/task/${tid}/status`, 'utf8');
      t.regex(status, /^Seccomp:\s+2$/m, `thread ${tid}`);
      t.regex(status, /^NoNewPrivs:\s+1$/m, `thread ${tid}`);
    }

    // guest code: eval, host calls, modules, WEB_POLYFILLS timers, console, a large allocation,
    // many commands (the worker's own threads keep working under the filter)
    t.deepEqual(await checkGuestStillWorks(rt), []);
  } finally {
    await rt.close();
  }
});
