import { ConsoleCapture, type ConsoleEntry } from './console-capture.js';
import { InvalidOption } from './errors.js';

/**
 * Where a runtime's guest console output goes: to every listener and every active capture.
 * With neither, it is dropped — never written to this process's stdout.
 */
export class ConsoleHub {
  readonly #listeners = new Set<(entry: ConsoleEntry) => void>();
  readonly #captures = new Set<ConsoleCapture>();
  readonly #maxOutputBytes: number;

  constructor(maxOutputBytes: number) {
    this.#maxOutputBytes = maxOutputBytes;
  }

  /** Adds a listener; returns the function that removes it. */
  listen(listener: (entry: ConsoleEntry) => void): () => void {
    if (typeof listener !== 'function') throw new InvalidOption('onConsole: listener must be a function');
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  /** A capture that collects until its `stop()`, each stream capped at maxOutputBytes. */
  capture(): ConsoleCapture {
    const capture = new ConsoleCapture(this.#maxOutputBytes, (c) => this.#captures.delete(c));
    this.#captures.add(capture);
    return capture;
  }

  emit(entry: ConsoleEntry): void {
    for (const capture of this.#captures) capture.write(entry);
    for (const listener of this.#listeners) {
      try {
        listener(entry);
      } catch {
        // A listener's bug must not become the guest's exception, nor a crash here.
      }
    }
  }

  /** Stops every capture (the runtime closed); what they collected stays readable. */
  stopCaptures(): void {
    for (const capture of this.#captures) capture.stop();
  }
}
