import type { ConsoleEntry } from '../console-capture.js';
import { forStream, type OutputStream } from './terminal-text.js';

/**
 * How many bytes may wait in this process for a slow reader before guest output is dropped.
 * On Linux, writes to pipes, files and terminals are synchronous and nothing waits; elsewhere
 * (macOS pipes) a guest that prints faster than the reader reads would otherwise grow this
 * process's memory without bound.
 */
export const MAX_PENDING_OUTPUT_BYTES = 8 * 1024 * 1024;

/**
 * Writes a guest's console to this process's stdout and stderr as it arrives, so output of any
 * length streams (the capture `execute` keeps is capped at 64 KiB). Lines that would push the
 * pending bytes past {@link MAX_PENDING_OUTPUT_BYTES} are dropped and counted.
 */
export class ConsoleStream {
  readonly #stdout: OutputStream;
  readonly #stderr: OutputStream;
  #dropped = 0;

  constructor(stdout: OutputStream, stderr: OutputStream) {
    this.#stdout = stdout;
    this.#stderr = stderr;
  }

  /** Lines dropped because the reader fell behind. */
  get dropped(): number {
    return this.#dropped;
  }

  /** Writes one console entry as a line on its stream. */
  write(entry: ConsoleEntry): void {
    const stream = entry.stream === 'stderr' ? this.#stderr : this.#stdout;
    if ((stream.writableLength ?? 0) > MAX_PENDING_OUTPUT_BYTES) {
      this.#dropped++;
      return;
    }
    stream.write(`${forStream(stream, entry.text)}\n`);
  }
}
