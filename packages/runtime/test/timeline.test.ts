import test from 'ava';
import { IsolatedRuntime } from '../src/index.js';
import { collectTimeline, recordTimeline, stopRecordingTimeline } from '../src/testing/index.js';
import { checkNoLeaks } from './helpers/leaks.js';

checkNoLeaks(test);

// One test, serially: recording is per process, and the other tests of this file's process must
// not see its marks.
test.serial('the timeline follows a cold start and a round trip through both processes, in order', async (t) => {
  recordTimeline();
  try {
    const rt = await IsolatedRuntime.start({ prewarm: false, sandbox: 'require' });
    try {
      const start = await collectTimeline(rt);
      const labels = start.map(([label]) => label);
      // The configuration is written at spawn (before the worker's hello), and the layers' report
      // is checked from outside while the worker makes its isolate.
      const order = [
        'parent start',
        'parent spawn',
        'parent written',
        'worker node start',
        'worker modules loaded',
        'worker hello',
        'worker configure',
        'worker layers applied and self-tested',
        'parent reported',
        'parent verified',
        'parent configured',
        'parent ready',
      ];
      let last = -1;
      for (const label of order) {
        const at = labels.indexOf(label);
        t.true(at > last, `${label} comes after the marks before it (${labels.join(', ')})`);
        last = at;
      }
      const before = (a: string, b: string) => t.true(labels.indexOf(a) >= 0 && labels.indexOf(a) < labels.indexOf(b), `${a} before ${b}`);
      before('worker hello', 'parent hello');
      before('worker layers applied and self-tested', 'worker configured');
      before('worker configured', 'parent configured');
      // each default layer's hooks are marked
      t.true(
        labels.some((label) => /^worker \w+ selfTest$/.test(label)),
        'a self-test mark',
      );
      await rt.eval('1+1');
      const trip = (await collectTimeline(rt)).map(([label]) => label);
      // Causal order only: a "written" mark comes after its write returned, and the other side may
      // have read the bytes by then ("write" is the mark just before the system call).
      const path = [
        'parent encode',
        'parent write',
        'worker read',
        'worker decoded',
        'worker serve',
        'worker enter isolate',
        'worker left isolate',
        'worker ran',
        'worker write',
        'parent read',
        'parent decoded',
      ];
      last = -1;
      for (const label of path) {
        const at = trip.indexOf(label, last + 1);
        t.true(at > last, `${label} in order (${trip.join(', ')})`);
        last = at;
      }
    } finally {
      await rt.close();
    }
  } finally {
    stopRecordingTimeline();
  }
  // Off again: a new worker records nothing, and asking it returns nothing.
  const quiet = await IsolatedRuntime.start({ prewarm: false, sandbox: 'require' });
  try {
    await quiet.eval('1+1');
    t.deepEqual(await collectTimeline(quiet), []);
  } finally {
    await quiet.close();
  }
});
