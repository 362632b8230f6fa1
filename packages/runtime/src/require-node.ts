/**
 * Imported first by every entry point, before anything that loads isolated-vm: ES modules
 * evaluate their imports in order, so an unsupported Node.js fails here, with Strata's error.
 *
 * @module
 */
import { assertSupportedNode } from './node-version.js';

assertSupportedNode();
