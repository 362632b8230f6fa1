/**
 * What `strata doctor` found, and the verdict on it. Pure: the facts are gathered by
 * `doctor-command.ts`; deciding whether they add up to "everything this platform can provide is
 * in force" is a function of them alone, so it is tested without a worker.
 *
 * @module
 */
import type { SandboxReport } from '../isolated/isolated-runtime.js';
import type { LayerReport } from '../layers/layer.js';

/** The facts `strata doctor` gathers. JSON-serialisable. */
export interface DoctorFacts {
  /** The version of `@strata/runtime`. */
  readonly strata: string;
  readonly node: { readonly version: string; readonly platform: string; readonly arch: string };
  /** The native helpers, prebuilt (`prebuilds/<platform>-<arch>`) or built at install (`build/Release`): the exec helper and the memory watchdog. */
  readonly nativeHelpers: { readonly built: boolean; readonly directory: string; readonly strataExec: boolean; readonly watchdog: boolean };
  /**
   * How this process starts a worker: `posix_spawn` (Linux with pidfd_open), or `child_process`,
   * which forks this process first, with why; `method` `null` when it cannot tell (`reason` says
   * why: the spawn addon was not built).
   */
  readonly workerSpawn?: { readonly method: 'posix_spawn' | 'child_process' | null; readonly reason: string | null };
  /** Whether this process is root, its uid, and the uid the worker runs as (`null`: unknown). */
  readonly privileges: { readonly root: boolean; readonly uid: number | null; readonly workerUid: number | null };
  /** The worker doctor started: its pid and how long it took to answer; `null` if none started. */
  readonly worker: { readonly pid: number; readonly startMs: number } | null;
  readonly sandbox: string | null;
  readonly sandboxExtras: readonly string[] | null;
  /** The runtime's layer report (`rt.report`); `null` if no worker started. */
  readonly report: SandboxReport | null;
  /** Why no worker could be started or answer, if so. */
  readonly error: { readonly errorType: string; readonly message: string } | null;
  /** The default OS layers this platform should have and cannot get here (not built, or not installed). */
  readonly missingDefaultLayers?: readonly string[];
}

/** `'ok'`: all in force. `'degraded'`: a worker runs, with less protection than it should have. `'unavailable'`: no worker. */
export type DoctorStatus = 'ok' | 'degraded' | 'unavailable';

/** What `strata doctor --json` prints: the facts and the verdict. */
export interface DoctorReport extends DoctorFacts {
  readonly status: DoctorStatus;
  /** One line: what is missing and what to do about it. */
  readonly summary: string;
}

/** The layers of a report, typed as the layer pipeline writes them; `[]` when there are none. */
export function layersOf(report: SandboxReport | null): readonly LayerReport[] {
  // `as unknown as`: the report's element type is widening from plain wire objects to LayerReport.
  return (report?.layers ?? []) as unknown as readonly LayerReport[];
}

/** The verdict on `facts`: whether everything this platform should provide is in force, in one line. */
export function assess(facts: DoctorFacts): DoctorReport {
  const verdict = (status: DoctorStatus, summary: string): DoctorReport => ({ status, summary, ...facts });
  if (facts.error !== null || facts.report === null) {
    const why = facts.error === null ? 'no layer report' : `${facts.error.errorType}: ${facts.error.message}`;
    return verdict('unavailable', `unavailable: no worker could be started (${why}). ${adviceWhenUnavailable(facts)}`);
  }
  const layers = layersOf(facts.report);
  const problems: string[] = [];
  for (const layer of layers) {
    const missing = layer.capability?.missing ?? [];
    const gap = missing.length > 0 ? ` (missing ${missing.join(', ')})` : '';
    if (layer.requirement !== 'off' && layer.enforcement === 'none') problems.push(`${layer.name} is not in force${gap}`);
    else if (layer.requirement !== 'off' && layer.enforcement === 'partial') problems.push(`${layer.name} is only partly in force${gap}`);
    if (layer.selfTest === 'failed') problems.push(`${layer.name} failed its self-test`);
  }
  const absent = facts.missingDefaultLayers ?? [];
  if (absent.length > 0)
    problems.push(
      `the default layer${absent.length === 1 ? '' : 's'} ${absent.join(', ')} ${absent.length === 1 ? 'is' : 'are'} not installed (install ${absent.map((a) => `@strata/layer-${a}`).join(', ')})`,
    );
  if (facts.sandbox === 'none' || facts.sandbox === null) {
    problems.unshift(
      layers.length === 0 ? 'no OS sandbox layer is in force (sandbox off): this release of Strata has none for this platform' : whatIsInForce(layers),
    );
  }
  if (problems.length === 0) {
    const extras = (facts.sandboxExtras ?? []).length > 0 ? ` + ${facts.sandboxExtras!.join(', ')}` : '';
    return verdict('ok', `ok: sandbox ${facts.sandbox}${extras} in force, and every layer passed its self-test`);
  }
  const advice =
    layers.length === 0
      ? `guests run with the base hardening only, so a V8 escape would get the worker's authority${uidClause(facts)}; 'strata run --sandbox require' refuses until the OS layers are in force.`
      : absent.length > 0 && problems.length === 1
        ? "'strata run --sandbox require' refuses with the default layers until they are."
        : "the missing column says what this machine lacks (often an older kernel); 'strata run --sandbox require' refuses here.";
  return verdict('degraded', `degraded: ${problems.join('; ')}. ${capitalise(advice)}`);
}

/** The names of the layers at each enforcement, in report order. */
export function layersByEnforcement(layers: readonly LayerReport[]): { readonly full: string[]; readonly partial: string[]; readonly none: string[] } {
  const at = (enforcement: LayerReport['enforcement']) => layers.filter((l) => l.enforcement === enforcement).map((l) => l.name);
  return { full: at('full'), partial: at('partial'), none: at('none') };
}

/**
 * When `sandbox` is `'none'`: what is in force all the same. That name says only that the OS
 * sandbox is not whole (landlock and seccomp both fully in force, or seatbelt), not that nothing
 * is: seccomp may be full with Landlock partial. The layers not fully in force follow as problems.
 */
function whatIsInForce(layers: readonly LayerReport[]): string {
  const { full, partial } = layersByEnforcement(layers);
  if (full.length === 0 && partial.length === 0) return 'no OS sandbox is in force (sandbox off): no layer is in force';
  const inForce = full.length === 0 ? 'no layer is fully in force' : `${listed(full)} ${full.length === 1 ? 'is' : 'are'} in force`;
  return `${inForce}, but not the whole OS sandbox (sandbox 'none': it names only landlock+seccomp, or seatbelt, fully in force)`;
}

function listed(names: readonly string[]): string {
  return names.length <= 1 ? names.join('') : `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`;
}

function adviceWhenUnavailable(facts: DoctorFacts): string {
  if (facts.node.platform !== 'linux') return `Strata's worker runs on Linux only in this release (this is ${facts.node.platform}).`;
  if (!facts.nativeHelpers.built) return "Build the native helpers: run 'npm ci' or 'npm rebuild @strata/runtime' (needs python3, make and a C compiler).";
  return 'The error above says what failed.';
}

function uidClause(facts: DoctorFacts): string {
  return facts.privileges.workerUid === null ? '' : ` (uid ${facts.privileges.workerUid})`;
}

function capitalise(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
