/**
 * The fuzz loop behind both the CI fuzz test and `npm run fuzz`: valid, mutated and
 * random frames through {@link FrameReader}, {@link decodeMessage} and
 * {@link decodeValue}, asserting that each either yields a value or throws
 * {@link ProtocolError}, quickly and in bounded memory.
 *
 * @module
 */

import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { FrameReader, ProtocolError, decodeMessage, decodeValue, encodeFrame, encodeValue, resolveLimits, type Limits, type WireValue } from '../src/index.js';
import { FrameMutator } from './frame-mutator.js';
import { Prng } from './prng.js';
import { ValueGenerator } from './value-generator.js';
import { wireEqual } from './wire-equal.js';

/** What to run. */
export interface FuzzOptions {
  /** PRNG seed; the run is a pure function of it (and the stop condition). */
  seed: number;
  /** Stop after this many frames. */
  frames?: number;
  /** Stop after this many seconds. */
  seconds?: number;
  /** Decoder limits; smaller ones make limit paths reachable from small frames. */
  limits?: Partial<Limits>;
  /**
   * A frame (at most a few KiB here) that takes longer than this counts as a hang;
   * default 1000 ms, far above a loaded machine's GC pauses.
   */
  slowFrameMs?: number;
  /** Called about once a second with the running totals. */
  onProgress?: (stats: FuzzStats) => void;
}

/** One input that broke a promise. */
export interface FuzzFailure {
  /**
   * Which promise: `throw` (a non-ProtocolError escaped), `round-trip`, `re-encode`,
   * `limits` (encoder and decoder disagreed), `slow`.
   */
  kind: string;
  /** Index of the frame in the run. */
  frame: number;
  /** What went wrong. */
  detail: string;
  /** The input, hex, cut to 256 bytes. */
  inputHex: string;
}

/** Totals of a run. */
export interface FuzzStats {
  /** The seed the run started from. */
  seed: number;
  /** Frames (or streams of frames) tried. */
  frames: number;
  /** Wall time of the run. */
  elapsedMs: number;
  /**
   * Count per outcome: `message`, `value` (decodes, but is no message), `protocol-error`,
   * `incomplete` (the stream ended inside a frame), `limits-agree` (encoder and decoder
   * agreed on a value under random tight limits).
   */
  outcomes: Record<string, number>;
  failures: FuzzFailure[];
  /**
   * Largest used-heap size above the starting point, sampled every few thousand frames
   * (after a full GC when the script could enable `gc()`, so it measures what is kept).
   */
  maxHeapGrowthBytes: number;
  /** Slowest single frame, in milliseconds. */
  slowestFrameMs: number;
}

const MAX_FAILURES = 20;

/**
 * Run the fuzz loop until the frame count or the time is up (whichever comes first;
 * with neither, it runs forever).
 */
export function runFuzz(options: FuzzOptions): FuzzStats {
  const rng = new Prng(options.seed);
  const limits = resolveLimits(options.limits);
  const values = new ValueGenerator(rng);
  const mutator = new FrameMutator(rng);
  const stats: FuzzStats = {
    seed: options.seed,
    frames: 0,
    elapsedMs: 0,
    outcomes: { message: 0, value: 0, 'protocol-error': 0, incomplete: 0, 'limits-agree': 0 },
    failures: [],
    maxHeapGrowthBytes: 0,
    slowestFrameMs: 0,
  };
  const maxFrames = options.frames ?? Infinity;
  const slowFrameMs = options.slowFrameMs ?? 1000;
  const deadline = options.seconds === undefined ? Infinity : options.seconds * 1000;
  const start = performance.now();
  const gc = exposeGc();
  gc?.();
  const heapStart = getHeapStatistics().used_heap_size;
  let lastProgress = start;
  // recent valid frames, the material mutations start from
  const pool: Uint8Array[] = [];

  const fail = (kind: string, detail: string, input: Uint8Array): void => {
    if (stats.failures.length < MAX_FAILURES) {
      stats.failures.push({ kind, frame: stats.frames, detail, inputHex: Buffer.from(input.subarray(0, 256)).toString('hex') });
    }
  };

  // Decoded values must go back through the encoder and come out the same.
  const reencode = (value: WireValue, input: Uint8Array): void => {
    try {
      const again = decodeValue(encodeValue(value, limits), limits);
      if (!wireEqual(value, again)) fail('re-encode', 'decoded value changed on a second round trip', input);
    } catch (error) {
      fail('re-encode', `decoded value refused by the encoder: ${describe(error)}`, input);
    }
  };

  const decodeBody = (body: Uint8Array, input: Uint8Array): void => {
    try {
      decodeMessage(body, limits);
      stats.outcomes['message']!++;
    } catch (error) {
      if (!(error instanceof ProtocolError)) return fail('throw', describe(error), input);
      try {
        // not a message; is it at least a value?
        reencode(decodeValue(body, limits), input);
        stats.outcomes['value']!++;
      } catch (inner) {
        if (!(inner instanceof ProtocolError)) return fail('throw', describe(inner), input);
        if (inner.reason.startsWith('internal')) return fail('throw', inner.reason, input);
        stats.outcomes['protocol-error']!++;
      }
    }
  };

  // Feed a stream through a reader in random chunks.
  const feed = (stream: Uint8Array): void => {
    const reader = new FrameReader({ limits });
    let pos = 0;
    try {
      while (pos < stream.length) {
        const size = rng.chance(0.5) ? stream.length - pos : 1 + rng.int(Math.max(1, stream.length - pos));
        const bodies = reader.push(stream.subarray(pos, pos + size));
        pos += size;
        for (const body of bodies) decodeBody(body, stream);
      }
      if (reader.partialSince !== undefined) stats.outcomes['incomplete']!++;
    } catch (error) {
      if (!(error instanceof ProtocolError)) return fail('throw', describe(error), stream);
      stats.outcomes['protocol-error']!++;
    }
  };

  while (stats.frames < maxFrames) {
    const now = performance.now();
    if (now - start >= deadline) break;
    if (now - lastProgress >= 1000) {
      lastProgress = now;
      stats.elapsedMs = now - start;
      options.onProgress?.(stats);
    }
    const before = performance.now();
    const choice = rng.int(100);
    if (choice < 15 || pool.length === 0) {
      // valid: must round-trip exactly
      const message = values.message();
      let frame: Uint8Array;
      try {
        frame = encodeFrame(message, limits);
      } catch (error) {
        // the generator can exceed small limits; anything else is a bug
        if (!(error instanceof ProtocolError)) fail('throw', describe(error), new Uint8Array(0));
        stats.frames++;
        continue;
      }
      if (pool.length < 64) pool.push(frame);
      else pool[rng.int(pool.length)] = frame;
      try {
        const reader = new FrameReader({ limits });
        const bodies = reader.push(frame);
        const decoded = bodies.length === 1 ? decodeMessage(bodies[0]!, limits) : undefined;
        if (!wireEqual(message, decoded)) fail('round-trip', 'valid message did not round-trip', frame);
        else stats.outcomes['message']!++;
      } catch (error) {
        fail(error instanceof ProtocolError ? 'round-trip' : 'throw', describe(error), frame);
      }
    } else if (choice < 25) {
      // the encoder must refuse exactly what the decoder refuses, limit by limit
      const value = values.value();
      const tight = tightLimits(rng);
      let bytes: Uint8Array | undefined;
      try {
        bytes = encodeValue(value, limits);
      } catch (error) {
        if (!(error instanceof ProtocolError)) fail('throw', describe(error), new Uint8Array(0));
      }
      if (bytes !== undefined) {
        const encodeOk = attempt(() => encodeValue(value, tight));
        const decodeOk = attempt(() => decodeValue(bytes, tight));
        if (encodeOk instanceof Error || decodeOk instanceof Error) {
          fail('throw', describe(encodeOk instanceof Error ? encodeOk : decodeOk), bytes);
        } else if (encodeOk !== decodeOk) {
          fail('limits', `encoder ${encodeOk ? 'accepted' : 'refused'} but decoder ${decodeOk ? 'accepted' : 'refused'} under ${JSON.stringify(tight)}`, bytes);
        } else {
          stats.outcomes['limits-agree']!++;
        }
      }
    } else if (choice < 80) {
      // mutated, usually with the header fixed up so the body reaches the decoder
      const mutated = mutator.mutate(rng.pick(pool), rng.pick(pool));
      if (mutated.length >= 4 && rng.chance(0.7)) {
        new DataView(mutated.buffer, mutated.byteOffset).setUint32(0, mutated.length - 4);
      }
      feed(mutated);
    } else if (choice < 90) {
      // random body bytes, straight into the value decoder
      const body = rng.bytes(rng.int(48));
      try {
        reencode(decodeValue(body, limits), body);
        stats.outcomes['value']!++;
      } catch (error) {
        if (!(error instanceof ProtocolError)) fail('throw', describe(error), body);
        else stats.outcomes['protocol-error']!++;
      }
    } else {
      // several frames, mutated or not, back to back in one stream
      const parts = Array.from({ length: 2 + rng.int(4) }, () => (rng.chance(0.5) ? rng.pick(pool) : mutator.mutate(rng.pick(pool), rng.pick(pool))));
      feed(Buffer.concat(parts));
    }
    const took = performance.now() - before;
    if (took > stats.slowestFrameMs) stats.slowestFrameMs = took;
    if (took > slowFrameMs) fail('slow', `took ${took.toFixed(0)} ms`, new Uint8Array(0));
    stats.frames++;
    if (stats.frames % 4096 === 0) {
      gc?.();
      const growth = getHeapStatistics().used_heap_size - heapStart;
      if (growth > stats.maxHeapGrowthBytes) stats.maxHeapGrowthBytes = growth;
    }
  }
  stats.elapsedMs = performance.now() - start;
  return stats;
}

/** Small random limits, so every limit is hit by the small values the generator makes. */
function tightLimits(rng: Prng): Limits {
  return resolveLimits({
    maxFrameBytes: 1 + rng.int(400),
    maxDepth: 1 + rng.int(4),
    maxNodes: 1 + rng.int(60),
    maxStringBytes: 1 + rng.int(40),
    maxBigIntBytes: 1 + rng.int(12),
  });
}

/** `true` if `run` returned, `false` if it threw a ProtocolError, the error otherwise. */
function attempt(run: () => unknown): boolean | Error {
  try {
    run();
    return true;
  } catch (error) {
    if (error instanceof ProtocolError) return false;
    return error instanceof Error ? error : new Error(String(error));
  }
}

/** `gc()` if this process can have it (V8 lets a running process switch it on). */
function exposeGc(): (() => void) | undefined {
  try {
    setFlagsFromString('--expose-gc');
    return runInNewContext('gc') as () => void;
  } catch {
    return undefined;
  }
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error).slice(0, 300);
  // where an unexpected error came from is the useful part
  const at = error instanceof ProtocolError ? '' : ` ${(error.stack ?? '').split('\n').slice(1, 4).join(' <').trim()}`;
  return `${error.name}: ${error.message}`.slice(0, 300) + at;
}
