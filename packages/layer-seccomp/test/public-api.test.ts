// The main entry is the package's public API: the factory and the module it names. Everything else
// (the policy, the filter compiler, the syscall table, the helpers) is internal: tests import it
// from the module that defines it.
import test from 'ava';

test('the main entry exports the factory and its module name, nothing internal', async (t) => {
  t.deepEqual(Object.keys(await import('../src/index.js')).sort(), ['SECCOMP_LAYER_MODULE', 'seccomp']);
});
