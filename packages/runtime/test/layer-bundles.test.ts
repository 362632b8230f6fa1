// Strata's own layers reach the worker as one CommonJS file each (their package's `require`
// condition, built by scripts/bundle-layer.mjs), which the worker requires: no ESM loader, a few
// modules fewer. What they import of @strata/runtime must still be the worker's own modules (one
// copy of Strata's classes), never a copy inside the bundle.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { LayerConfigError } from '../src/layers/index.js';
import { loadLayer } from '../src/layers/load-layer.js';
import { shareRuntimeWithLayers } from '../src/worker/shared-with-layers.js';

const requireHere = createRequire(import.meta.url);
const LAYERS = ['emptyroot', 'landlock', 'seccomp', 'seatbelt', 'clock'];

test("each of Strata's layer modules requires as its CommonJS bundle, which leaves @strata/runtime outside", (t) => {
  for (const name of LAYERS) {
    const specifier = `@strata/layer-${name}/layer`;
    const bundle = requireHere.resolve(specifier);
    t.regex(bundle, /dist\/src\/layer\.cjs$/, specifier);
    t.regex(fileURLToPath(import.meta.resolve(specifier)), /dist\/src\/layer\.js$/, `${specifier} for import`);
    const source = readFileSync(bundle, 'utf8');
    t.regex(source, /require\("@strata\/runtime\/(layers|native)"\)/, `${specifier} requires the runtime's entry points`);
    t.notRegex(source, /class (LayerConfigError|LayerFailed|StrataError)\b/, `${specifier} holds no copy of Strata's errors`);
  }
});

test("the worker builds Strata's layers from the bundles, with the runtime's own classes", async (t) => {
  // as the worker does before it loads any layer
  shareRuntimeWithLayers();
  for (const name of LAYERS) {
    const layer = await loadLayer({ module: `@strata/layer-${name}/layer`, options: {} });
    t.is(layer.name, name);
    t.true(
      Object.keys(requireHere.cache).some((file) => file.endsWith(`layer-${name}/dist/src/layer.cjs`)),
      `${name} was required`,
    );
  }
  // a refusal from inside a bundle is the runtime's own LayerConfigError
  const error = await t.throwsAsync(() => loadLayer({ module: '@strata/layer-emptyroot/layer', options: { bindPaths: ['relative/path'] } }));
  t.true(error.cause instanceof LayerConfigError, String(error.cause));
  t.false(
    Object.keys(requireHere.cache).some((file) => /runtime\/dist\/src\/(layers|native)\//.test(file)),
    "no second copy of the runtime's layer-author modules was required",
  );
});
