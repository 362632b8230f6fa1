/**
 * Small helpers for a layer's `selfTest`: try something the layer exists to stop and say what
 * happened, as an errno code, never by throwing.
 *
 * @module
 */
import { connect } from 'node:net';

/** The errno code (`'EACCES'`, `'ENOENT'`...) of what `run` throws, or `'none'` when it does not throw. */
export function errnoOf(run: () => void): string {
  try {
    run();
    return 'none';
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? String(error);
  }
}

/**
 * A TCP connect (default: 127.0.0.1, the discard port): resolves with the error code,
 * `'connected'` (the layer let it through) or `'timeout'` after `timeoutMs`.
 */
export function tryConnect(target: { host: string; port: number } = { host: '127.0.0.1', port: 9 }, timeoutMs = 5_000): Promise<string> {
  return new Promise((resolve) => {
    let socket: ReturnType<typeof connect>;
    try {
      socket = connect(target);
    } catch (error) {
      resolve((error as NodeJS.ErrnoException).code ?? String(error));
      return;
    }
    const timer = setTimeout(() => {
      socket.destroy();
      resolve('timeout');
    }, timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve(error.code ?? error.message);
    });
  });
}
