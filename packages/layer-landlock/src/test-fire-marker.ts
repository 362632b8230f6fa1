/**
 * The line the test-fire child (test-fire.ts) prints when everything worked. A module of its own:
 * the layer, which the worker imports too, reads the marker without loading the child's script
 * (and node:worker_threads with it).
 *
 * @module
 */
export const TEST_FIRE_MARKER = 'strata-landlock: stack test-fire ok';
