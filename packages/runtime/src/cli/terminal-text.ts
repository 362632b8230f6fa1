/**
 * Guest text made safe to show on a terminal. A guest's output is untrusted: raw escape
 * sequences could retitle the window, rewrite lines already printed (`\r`, cursor movement)
 * or hide text, and bidirectional overrides can make text read differently than it is.
 *
 * @module
 */

// C0 controls but tab and newline, DEL, C1 controls, and the bidirectional embeddings, overrides
// and isolates (U+202A–U+202E, U+2066–U+2069).
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** `text` with every terminal control character shown as an escape (`\x1b`, `\u202e`); tab and newline kept. */
export function escapeForTerminal(text: string): string {
  return text.replace(UNSAFE, (c) => {
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/** What can be written to: a stream, and whether it is a terminal (only then is text escaped). */
export interface OutputStream {
  write(text: string): unknown;
  readonly isTTY?: boolean | undefined;
  /** Bytes accepted but not yet handed to the OS (Node's `Writable.writableLength`). */
  readonly writableLength?: number;
}

/** `text` as it should reach `stream`: escaped on a terminal, unchanged into a pipe or a file. */
export function forStream(stream: OutputStream, text: string): string {
  return stream.isTTY === true ? escapeForTerminal(text) : text;
}

/** Where a command writes: the process's stdout and stderr, or test doubles. */
export interface CliIo {
  readonly stdout: OutputStream;
  readonly stderr: OutputStream;
}
