/** One `console.*` call made by the guest. */
export interface ConsoleEntry {
  /** The console method: `log`, `info`, `debug`, `warn`, `error`, `trace`, `assert`, … */
  readonly level: string;
  /** `stdout` for log/info/debug, `stderr` for warn/error/trace/assert. */
  readonly stream: 'stdout' | 'stderr';
  /** The formatted text, without a trailing newline. */
  readonly text: string;
}

/** The marker line that ends a stream cut at `maxOutputBytes`. */
export const TRUNCATED_MARKER = '[truncated]\n';

/**
 * Collects console output into `stdout` and `stderr`, each capped at `maxBytes` (UTF-8) and,
 * past the cap, ended with a `[truncated]` line; later output is counted, not kept.
 */
export class ConsoleCapture {
  #stdout = '';
  #stderr = '';
  #bytes = { stdout: 0, stderr: 0 };
  #cut = { stdout: false, stderr: false };
  #stopped = false;
  readonly #maxBytes: number;
  readonly #onStop: (capture: ConsoleCapture) => void;

  /** @internal */
  constructor(maxBytes: number, onStop: (capture: ConsoleCapture) => void) {
    this.#maxBytes = maxBytes;
    this.#onStop = onStop;
  }

  /** Everything written to stdout so far, one line per call. */
  get stdout(): string {
    return this.#stdout;
  }

  /** Everything written to stderr so far, one line per call. */
  get stderr(): string {
    return this.#stderr;
  }

  /** Whether either stream was cut at the cap. */
  get truncated(): boolean {
    return this.#cut.stdout || this.#cut.stderr;
  }

  /** @internal */
  write(entry: ConsoleEntry): void {
    if (this.#stopped) return;
    const stream = entry.stream;
    if (this.#cut[stream]) return;
    const line = `${entry.text}\n`;
    const bytes = Buffer.byteLength(line);
    const room = this.#maxBytes - this.#bytes[stream];
    let add = line;
    if (bytes > room) {
      // Keep what fits, cut at a character boundary, then the marker.
      const fitted = Buffer.from(line)
        .subarray(0, Math.max(0, room))
        .toString('utf8')
        .replace(/\uFFFD$/, '');
      add = `${fitted}${fitted.endsWith('\n') || fitted === '' ? '' : '\n'}${TRUNCATED_MARKER}`;
      this.#cut[stream] = true;
    }
    this.#bytes[stream] += Buffer.byteLength(add);
    if (stream === 'stdout') this.#stdout += add;
    else this.#stderr += add;
  }

  /** Stops collecting; what was collected stays readable. */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#onStop(this);
  }
}
