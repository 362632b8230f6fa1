/**
 * Small helpers for a layer's `selfTest`: try something the layer exists to stop and say what
 * happened, as an errno code, never by throwing.
 *
 * @module
 */
import { getSystemErrorName } from 'node:util';
import { loadWatchdog } from '../native/native-paths.js';

/** The errno code (`'EACCES'`, `'ENOENT'`...) of what `run` throws, or `'none'` when it does not throw. */
export function errnoOf(run: () => void): string {
  try {
    run();
    return 'none';
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? String(error);
  }
}

const IPV4 = /^\d{1,3}(?:\.\d{1,3}){3}$/;

/**
 * A TCP connect (default: 127.0.0.1, the discard port): resolves with the error code,
 * `'connected'` (the layer let it through) or `'timeout'` after `timeoutMs`. To an IPv4 address
 * on Linux, one `connect(2)` in the watchdog addon (a worker need not compile node:net for its
 * self-test); elsewhere through node:net.
 */
export async function tryConnect(target: { host: string; port: number } = { host: '127.0.0.1', port: 9 }, timeoutMs = 5_000): Promise<string> {
  const native = IPV4.test(target.host) ? nativeConnect() : undefined;
  let outcome: number | undefined;
  try {
    outcome = native?.(target.host, target.port, Math.min(Math.max(Math.ceil(timeoutMs), 1), 60_000));
  } catch {
    // not an address or port the addon takes (999.0.0.1, port 0): node:net says what it makes of it
  }
  if (outcome !== undefined) return outcome === 0 ? 'connected' : outcome === -1 ? 'timeout' : getSystemErrorName(-outcome);
  const { connect } = await import('node:net');
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

/** The watchdog addon's connect, where it is built (Linux). */
function nativeConnect(): ((ipv4: string, port: number, timeoutMs: number) => number) | undefined {
  if (process.platform !== 'linux') return undefined;
  try {
    const watchdog = loadWatchdog();
    return (ipv4, port, timeoutMs) => watchdog.tcpConnect(ipv4, port, timeoutMs);
  } catch {
    return undefined;
  }
}
