import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { WorkerCrashed } from '../errors.js';
import type { LayerReport } from '../layers/layer.js';
import { processState } from './worker-process.js';

/** What the parent saw of the worker from outside, in /proc. */
export interface OutsideView {
  /** Threads inspected (every task under /proc/<pid>/task). */
  readonly threads: number;
  /** Every thread has NoNewPrivs 1. */
  readonly noNewPrivs: boolean;
  /** Every thread's effective capability set is empty. */
  readonly noCapabilities: boolean;
  /** The seccomp mode every thread shows (0 none, 2 filter; 0 too on a kernel without seccomp, whose status has no Seccomp line), or 'mixed'. */
  readonly seccomp: 0 | 1 | 2 | 'mixed';
  /** The worker's uid and gid (real). */
  readonly uid: number;
  readonly gid: number;
  /** The namespaces (of user, mnt, net, ipc, pid) in which the worker differs from this process. */
  readonly ownNamespaces: readonly string[];
}

const NAMESPACES = ['user', 'mnt', 'net', 'ipc', 'pid'] as const;

/** The namespaces an empty root gives the worker of its own. */
const EMPTYROOT_NAMESPACES = ['user', 'mnt', 'net', 'ipc'] as const;

/** Reads the worker's credentials, seccomp state and namespaces from /proc (Linux). */
export function inspectWorker(pid: number): OutsideView {
  const tasks = readdirSync(`/proc/${pid}/task`);
  let noNewPrivs = true;
  let noCapabilities = true;
  const modes = new Set<number>();
  let uid = -1;
  let gid = -1;
  for (const task of tasks) {
    let status: string;
    try {
      status = readFileSync(`/proc/${pid}/task/${task}/status`, 'latin1');
    } catch {
      continue; // the thread ended while we looked
    }
    if (!/^NoNewPrivs:\s+1$/m.test(status)) noNewPrivs = false;
    if (!/^CapEff:\s+0+$/m.test(status)) noCapabilities = false;
    modes.add(Number(/^Seccomp:\s+(\d)$/m.exec(status)?.[1] ?? 0));
    uid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1] ?? -1);
    gid = Number(/^Gid:\s+(\d+)/m.exec(status)?.[1] ?? -1);
  }
  const ownNamespaces = NAMESPACES.filter((ns) => {
    try {
      return readlinkSync(`/proc/${pid}/ns/${ns}`) !== readlinkSync(`/proc/self/ns/${ns}`);
    } catch {
      return false;
    }
  });
  const seccomp = modes.size === 1 ? ([...modes][0] as 0 | 1 | 2) : 'mixed';
  return Object.freeze({ threads: tasks.length, noNewPrivs, noCapabilities, seccomp, uid, gid, ownNamespaces: Object.freeze(ownNamespaces) });
}

/**
 * Checks from outside what the worker and its layers promised, before any guest code runs: the
 * base hardening (NoNewPrivs and no effective capability on every thread; as root, uid 65534), seccomp
 * mode 2 on every thread when a seccomp layer reports itself in force, namespaces of its own when
 * an emptyroot layer does. A broken promise kills the worker: the runtime never starts.
 */
export function verifyWorker(pid: number, layers: readonly LayerReport[], startedAsRoot: boolean): OutsideView {
  let view: OutsideView;
  try {
    view = inspectWorker(pid);
  } catch (error) {
    if (hasEnded(pid)) throw new WorkerEndedWhileChecked(pid);
    throw error;
  }
  const broken = brokenPromises(view, layers, startedAsRoot);
  // Looked at after the readings: a process that is alive now was alive for all of them.
  if (broken.length > 0 && hasEnded(pid)) throw new WorkerEndedWhileChecked(pid);
  if (broken.length > 0) throw new WorkerCrashed(`the worker's sandbox failed verification from outside: ${broken.join('; ')}`, 'start');
  return view;
}

/**
 * The worker had ended when it was looked at (its memory cap, a crash, right after its report):
 * a zombie has no namespaces to show, and what it no longer shows is no broken promise. Its own
 * end, once reported, says why it is gone.
 */
export class WorkerEndedWhileChecked extends WorkerCrashed {
  constructor(pid: number) {
    super(`the worker (pid ${pid}) ended while its sandbox was checked from outside`, 'start');
    this.name = 'WorkerCrashed';
  }
}

/** The process is a zombie or gone. The parent reaps its workers on its own event loop, so the pid is still the worker's. */
export function hasEnded(pid: number): boolean {
  const state = processState(pid);
  return state === undefined || state === 'Z' || state === 'X' || state === 'x';
}

function brokenPromises(view: OutsideView, layers: readonly LayerReport[], startedAsRoot: boolean): string[] {
  const broken: string[] = [];
  if (!view.noNewPrivs) broken.push('a worker thread lacks NoNewPrivs');
  if (startedAsRoot && (view.uid !== 65534 || view.gid !== 65534)) broken.push(`the worker runs as uid ${view.uid} gid ${view.gid}, not 65534`);
  if (!view.noCapabilities) broken.push('a worker thread has effective capabilities');
  const inForce = (name: string) => layers.some((l) => l.name === name && l.enforcement !== 'none');
  if (inForce('seccomp') && view.seccomp !== 2) broken.push(`a seccomp layer is in force but the worker's threads show seccomp mode ${view.seccomp}`);
  const shared = EMPTYROOT_NAMESPACES.filter((ns) => !view.ownNamespaces.includes(ns));
  if (inForce('emptyroot') && shared.length > 0)
    broken.push(`an emptyroot layer is in force but the worker shares this process's ${shared.join(', ')} namespace(s)`);
  return broken;
}
