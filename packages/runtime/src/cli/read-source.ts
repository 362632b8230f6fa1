import { open } from 'node:fs/promises';

/**
 * The largest program `strata run` reads. A command to the worker travels in one frame of at
 * most 16 MiB; half of that leaves room for UTF-8 growth and keeps a mistaken FILE (a log, a
 * disk image) from being read into memory whole.
 */
export const MAX_SOURCE_BYTES = 8 * 1024 * 1024;

/** FILE could not be read; the message says why in words a user can act on. Exit status 2. */
export class FileUnreadable extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'FileUnreadable';
  }
}

/**
 * Reads a program as UTF-8, at most `maxBytes`. Reads in chunks rather than trusting the file's
 * size, so a FIFO or `/dev/stdin` works too and is cut off at the same limit.
 *
 * @throws {@link FileUnreadable} when the file is missing, unreadable, a directory or too large.
 */
export async function readSource(path: string, maxBytes = MAX_SOURCE_BYTES): Promise<string> {
  const chunks: Buffer[] = [];
  let total = 0;
  let handle;
  try {
    handle = await open(path, 'r');
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(1024 * 1024, maxBytes + 1 - total));
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      chunks.push(chunk.subarray(0, bytesRead));
      total += bytesRead;
      if (total > maxBytes) throw new FileUnreadable(`cannot run ${path}: it is larger than ${maxBytes} bytes`);
    }
  } catch (error) {
    if (error instanceof FileUnreadable) throw error;
    throw new FileUnreadable(`cannot read ${path}: ${describe(error)}`, { cause: error });
  } finally {
    await handle?.close();
  }
  return Buffer.concat(chunks, total).toString('utf8');
}

function describe(error: unknown): string {
  switch ((error as NodeJS.ErrnoException).code) {
    case 'ENOENT':
      return 'no such file';
    case 'EISDIR':
      return 'it is a directory';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    default:
      return (error as Error).message;
  }
}
