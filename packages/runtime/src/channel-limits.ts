/**
 * How large the frames between parent and worker may be, in each direction. The worker must
 * never send what the parent refuses: an oversized frame from a worker is a protocol violation
 * and kills it, so a guest's over-large argument has to be refused in the worker, as a catchable
 * error, against the same limit.
 *
 * @module
 */

import { DEFAULT_LIMITS } from '@strata/wire';

// A message holds a few items besides its value (type, id, outcome...), and a bind its function
// list: room so that a value the runtimes accept (MAX_VALUE_NODES) always fits in a frame.
const ENVELOPE_NODES = 1024;

/** What the parent accepts from an untrusted worker: the wire's strict limits, sized for 1 MiB results. */
export const WORKER_FRAME_LIMITS = Object.freeze({ maxFrameBytes: 16 * 1024 * 1024, maxNodes: DEFAULT_LIMITS.maxNodes + ENVELOPE_NODES });

/** What the worker accepts from its (trusted) parent: room for large bootstraps and module sources. */
export const PARENT_FRAME_LIMITS = Object.freeze({
  maxFrameBytes: 64 * 1024 * 1024,
  maxStringBytes: 64 * 1024 * 1024,
  maxNodes: DEFAULT_LIMITS.maxNodes + ENVELOPE_NODES,
});
