/**
 * What a runtime's context starts from: the prelude's setup and source, and the V8 startup
 * snapshot of "prelude + bootstrap scripts" that `Runtime.createSnapshot` makes, so that a
 * session's isolate deserializes its bootstrap instead of compiling and running it.
 *
 * @module
 */
import { ENTROPY_GLOBAL, EVENT_LOOP_GLOBAL, FETCH_CANCEL_GLOBAL, FETCH_GLOBAL } from '@strata/polyfills/constants';
import type { IsolatedVm } from './engine.js';
import { InvalidOption } from './errors.js';
import { guestPrelude, type PreludeSetup } from './guest/prelude.js';

/** The global the prelude's one-time attach step waits on, until the host takes it (before any guest code). */
export const ATTACH_GLOBAL = '__strataAttach';

/**
 * The cap on live ArrayBuffer bytes of the bootstrap scripts while a snapshot is made (the
 * attach step sets the runtime's own `maxBufferBytes` after restore).
 */
export const SNAPSHOT_MAX_BUFFER_BYTES = 64 * 1024 * 1024;

/**
 * The prelude's setup. `offerFetch`: whether the fetch transport's forwarders are offered to the
 * bootstrap scripts (a fresh runtime offers them only with an egress; a snapshot always does, as
 * the egress is chosen per runtime after restore).
 */
export function preludeSetup(strictEval: boolean, offerFetch: boolean, maxBufferBytesBeforeAttach: number): PreludeSetup {
  return {
    strictEval,
    eventLoopGlobal: EVENT_LOOP_GLOBAL,
    attachGlobal: ATTACH_GLOBAL,
    entropyGlobal: ENTROPY_GLOBAL,
    fetchGlobals: offerFetch ? [FETCH_GLOBAL, FETCH_CANCEL_GLOBAL] : undefined,
    maxBufferBytesBeforeAttach,
  };
}

/** The prelude as one script: the function's source, called with its setup (plain data). */
export function preludeSource(setup: PreludeSetup): string {
  return `(${guestPrelude.toString()})(${JSON.stringify(setup)});`;
}

/** The filename bootstrap script `index` runs under, in a fresh runtime and in a snapshot alike. */
export const bootstrapFilename = (index: number): string => `strata:bootstrap-${index}`;

/** Options of `Runtime.createSnapshot`: what the snapshot fixes for every runtime restored from it. */
export interface RuntimeSnapshotOptions {
  /** Scripts run once, inside the snapshot, in order (for example `WEB_POLYFILLS`). Host code: trusted, never guest code. */
  bootstrap?: string | readonly string[];
  /** Forbid code generation from strings, from the prelude on (the bootstrap scripts hold only the tamed `eval` and `Function`). Default false. */
  strictEval?: boolean;
}

/**
 * A V8 startup snapshot of the prelude and the bootstrap scripts, made by `Runtime.createSnapshot`
 * and restored by `Runtime.start({ snapshot })`: each runtime started from it deserializes the
 * bootstrap's heap instead of compiling and running its scripts.
 *
 * Opaque, and only good in the process that made it: `Runtime.start` refuses any object that
 * `Runtime.createSnapshot` did not return (a snapshot holds compiled code; never accept one from
 * elsewhere).
 */
export class RuntimeSnapshot {
  /** The bootstrap scripts it holds, in order. */
  readonly bootstrap: readonly string[];
  /** Whether code generation was tamed before the bootstrap ran. */
  readonly strictEval: boolean;
  /** The snapshot's size. */
  readonly byteLength: number;

  /** @internal Only `Runtime.createSnapshot` makes one. */
  constructor(blob: IsolatedVm.ExternalCopy<ArrayBuffer>, bootstrap: readonly string[], strictEval: boolean, key: symbol) {
    if (key !== kMake) throw new InvalidOption('a RuntimeSnapshot is made by Runtime.createSnapshot');
    this.bootstrap = Object.freeze([...bootstrap]);
    this.strictEval = strictEval;
    this.byteLength = blob.copy().byteLength;
    blobs.set(this, blob);
    Object.freeze(this);
  }
}

const kMake = Symbol('strata.makeRuntimeSnapshot');
const blobs = new WeakMap<RuntimeSnapshot, IsolatedVm.ExternalCopy<ArrayBuffer>>();

/** @internal A snapshot, from the blob V8 made. */
export function makeRuntimeSnapshot(blob: IsolatedVm.ExternalCopy<ArrayBuffer>, bootstrap: readonly string[], strictEval: boolean): RuntimeSnapshot {
  return new RuntimeSnapshot(blob, bootstrap, strictEval, kMake);
}

/** @internal The blob of a snapshot `Runtime.createSnapshot` made, or an {@link InvalidOption} for anything else. */
export function snapshotBlob(snapshot: unknown): IsolatedVm.ExternalCopy<ArrayBuffer> {
  const blob = typeof snapshot === 'object' && snapshot !== null ? blobs.get(snapshot as RuntimeSnapshot) : undefined;
  if (blob === undefined) throw new InvalidOption('snapshot must be a RuntimeSnapshot made by Runtime.createSnapshot in this process');
  return blob;
}
