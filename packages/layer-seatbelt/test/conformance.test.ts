// The contract every layer keeps (@strata/runtime/testing), checked from outside in fresh workers.
// Off macOS the layer is unavailable, which the contract covers too: 'auto' skips it, 'require'
// refuses naming it, 'off' skips it, and the probe answers the same twice.
import test from 'ava';
import { checkLayerConformance } from '@strata/runtime/testing';
import { seatbelt } from '../src/index.js';

test(`the Seatbelt layer keeps the layer contract (${process.platform === 'darwin' ? 'applied' : `unavailable on ${process.platform}`})`, async (t) => {
  t.deepEqual(await checkLayerConformance(seatbelt()), []);
});
