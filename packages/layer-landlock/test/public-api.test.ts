// The main entry is the package's public API: the factory and the module it names. Everything else
// (the helper, the read set, the rights, the stack) is internal: tests import it from the module
// that defines it.
import test from 'ava';

test('the main entry exports the factory and its module name, nothing internal', async (t) => {
  t.deepEqual(Object.keys(await import('../src/index.js')).sort(), ['LANDLOCK_LAYER_MODULE', 'landlock']);
});
