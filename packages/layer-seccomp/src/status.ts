/**
 * The seccomp state of every thread, read from /proc/<pid>/task/<tid>/status (Seccomp,
 * Seccomp_filters, NoNewPrivs). Works on this process or on another (the parent's outside check).
 *
 * @module
 */
import { readdirSync, readFileSync } from 'node:fs';

/** One thread's seccomp state. */
export interface ThreadSeccompStatus {
  readonly tid: number;
  /** 0: none, 1: strict, 2: filter. */
  readonly mode: number;
  /** How many filters are stacked on the thread. */
  readonly filters: number;
  readonly noNewPrivs: number;
}

function field(status: string, name: string): number {
  const match = new RegExp(`^${name}:\\s*(\\d+)$`, 'm').exec(status);
  if (!match) throw new Error(`no ${name} line in /proc status (a kernel without seccomp?)`);
  return Number(match[1]);
}

/** Every thread of `pid` (default: this process). Throws when /proc cannot be read. */
export function threadStatus(pid: number | 'self' = 'self'): ThreadSeccompStatus[] {
  const dir = `/proc/${pid}/task`;
  const out: ThreadSeccompStatus[] = [];
  for (const tid of readdirSync(dir)) {
    let status: string;
    try {
      status = readFileSync(`${dir}/${tid}/status`, 'utf8');
    } catch (error) {
      // The thread ended meanwhile: before the open (ENOENT), or between the open and the read (ESRCH, seen on Linux 7.3).
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ESRCH') continue;
      throw error;
    }
    out.push({ tid: Number(tid), mode: field(status, 'Seccomp'), filters: field(status, 'Seccomp_filters'), noNewPrivs: field(status, 'NoNewPrivs') });
  }
  return out;
}
