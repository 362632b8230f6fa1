/**
 * The Layer API: what a security or isolation layer is, what it reports, and the narrow
 * contexts its hooks see. A layer is a plain object (from a factory, or a class resolved by the
 * worker's container) with a name, a version and hooks; it never sees the container itself.
 *
 * @module
 */

/** How much a layer is insisted on. `'require'`: refuse to start unless it is fully provided. `'auto'`: apply what the platform can, warn about the rest. `'off'`: skip it. */
export type LayerRequirement = 'require' | 'auto' | 'off';

/** Where a layer runs relative to the others; the user's order is kept within each group. */
export type LayerOrder = 'pre' | 'post';

/** What a platform can provide of a layer, found by {@link Layer.probe} without side effects. */
export interface LayerCapability {
  /** Whether the layer can be applied at all here. */
  readonly available: boolean;
  /** What it would enforce here, in short stable words (e.g. `'frozen-date'`, `'fs-write-deny'`). */
  readonly provides: readonly string[];
  /** What it would not enforce here that it would elsewhere; empty when fully provided. */
  readonly missing: readonly string[];
  /** Platform facts worth reporting, e.g. `{ landlockAbi: 7 }`. JSON-serialisable. */
  readonly detail?: Readonly<Record<string, unknown>>;
  /**
   * What a reviewer should know that changes no verdict: each a sentence, printed by
   * `strata doctor` under the table (e.g. a kernel newer than the layer knows, whose added
   * protections the layer does not ask for).
   */
  readonly notes?: readonly string[];
}

/** How much of a layer is in force once the pipeline ran. */
export type Enforcement = 'full' | 'partial' | 'none';

/** One layer's line in the report. JSON-serialisable; field names are stable. */
export interface LayerReport {
  readonly name: string;
  readonly version: string;
  readonly requirement: LayerRequirement;
  readonly capability: LayerCapability;
  readonly enforcement: Enforcement;
  readonly selfTest: 'passed' | 'failed' | 'skipped';
  readonly detail: Readonly<Record<string, unknown>>;
}

/** What `probe` may look at: facts, no effects. */
export interface ProbeContext {
  readonly platform: NodeJS.Platform;
  readonly arch: string;
  /** The layer's own options, as given to its factory. */
  readonly options: Readonly<Record<string, unknown>>;
}

/** What `launch` sees: facts about the platform and the layer's options. It runs in the parent. */
export interface LaunchContext {
  readonly platform: NodeJS.Platform;
  readonly arch: string;
  readonly options: Readonly<Record<string, unknown>>;
  /**
   * Directories the worker must also read because layers are loaded from them: for each layer
   * named by a `file:` URL, its package's root (the nearest directory with a package.json), else
   * the module's own directory. Layers that confine the file system grant or bind these.
   */
  readonly layerPaths: readonly string[];
  /**
   * The Node.js executable the worker runs (an absolute path; `IsolatedRuntime`'s `workerNode`,
   * this process's own Node by default): layers that confine the file system grant or bind its
   * files, not `process.execPath`'s, which may be another Node.
   */
  readonly workerNode: string;
}

/**
 * A link a layer adds to the worker's launch chain, for what must happen before Node starts its
 * threads: `program` (an absolute path) runs single-threaded as `program ...args -- next...`, does
 * its step, and execs the rest of the chain. It runs after the base hardening (as the worker's
 * user), before Node.
 */
export interface LaunchStep {
  readonly program: string;
  readonly args?: readonly string[];
  /**
   * Facts for this layer's report entry (JSON-serialisable), merged into its `detail`: what the
   * link will do that the worker cannot see afterwards (e.g. the files an empty root binds).
   */
  readonly report?: Readonly<Record<string, unknown>>;
}

/** What `apply` may do. */
export interface ApplyContext {
  readonly platform: NodeJS.Platform;
  readonly options: Readonly<Record<string, unknown>>;
  /**
   * This layer's capability as its probe found it in the parent (the same frozen object as the
   * report's `capability`): a layer acts on its probe's verdict from here (e.g. a feature in
   * `provides` only once a test-fire passed), never through a side channel such as the
   * environment.
   */
  readonly capability: LayerCapability;
  /**
   * Adds a script to every context the worker creates, after the host's bootstrap scripts and
   * before any guest code (isolate-level layers, such as a frozen clock, use this).
   */
  addContextBootstrap(source: string): void;
  /** Adds facts to this layer's report entry. */
  report(detail: Readonly<Record<string, unknown>>): void;
}

/**
 * What `seal` may do: put in force a restriction that must come last, once every layer has
 * applied (so every file a layer or the runtime needs is already loaded or open), and check it.
 * It cannot add context bootstraps: those belong in `apply`.
 */
export interface SealContext {
  readonly platform: NodeJS.Platform;
  readonly options: Readonly<Record<string, unknown>>;
  /** This layer's capability as its probe found it in the parent, the same frozen object as the report's: act on the probe's verdict from here (see {@link ApplyContext.capability}). */
  readonly capability: LayerCapability;
  /** Adds facts to this layer's report entry. */
  report(detail: Readonly<Record<string, unknown>>): void;
}

/**
 * What `selfTest` may do: try what the layer exists to stop. Self-tests run after every layer's
 * `apply` and `seal`, so the worker may no longer open files by then (a sealed Landlock domain
 * denies them all): a positive control that needs a file (e.g. "the runtime's own files are
 * readable") belongs in `apply`.
 */
export interface SelfTestContext {
  readonly platform: NodeJS.Platform;
  readonly options: Readonly<Record<string, unknown>>;
  /** This layer's capability as its probe found it in the parent; always set by the pipeline (see {@link ApplyContext.capability}). */
  readonly capability: LayerCapability;
  /** Evaluates `code` in a throwaway isolate set up exactly as the guest's will be, and returns its result. */
  evalInGuest(code: string): Promise<unknown>;
  /** Adds facts to this layer's report entry. */
  report(detail: Readonly<Record<string, unknown>>): void;
}

/**
 * A layer. `probe` reports what this platform can provide (no side effects); `apply` puts it in
 * force in the worker, after everything is loaded and before the isolate exists; `seal`
 * (optional) adds what must come after every layer's `apply`; `selfTest` tries what the layer
 * exists to stop and throws if anything gets through.
 *
 * In the worker the pipeline runs in phases, each over every applied layer in layer order:
 * every `apply`, then every `seal`, then every `selfTest`. An exception in any hook is
 * `LayerFailed` naming the layer and the hook, in every sandbox mode.
 */
export interface Layer {
  readonly name: string;
  readonly version: string;
  readonly order?: LayerOrder;
  /** In the parent, cached per process: what this platform can provide. No side effects (a dry run goes in a throwaway child). */
  probe(context: ProbeContext): LayerCapability | Promise<LayerCapability>;
  /** Optional, in the parent: a pre-exec link of the launch chain, for layers applied before Node's threads exist. */
  launch?(context: LaunchContext): LaunchStep | undefined | Promise<LaunchStep | undefined>;
  /**
   * In the worker, in layer order, once every layer module is loaded and the runtime has opened
   * what it keeps open (its memory watchdog's /proc files): puts the layer in force. A layer
   * applied later may still load files (an addon), so a restriction that would stop it goes in
   * `seal`. Positive controls that need files ("the binds work") belong here.
   */
  apply(context: ApplyContext): void | Promise<void>;
  /**
   * Optional, in the worker: after every layer's `apply` and before any `selfTest`, in layer
   * order. For restrictions that would stop other layers (or the runtime) from loading what they
   * need, such as a domain denying all file access (docs/design.md §3: load everything → dumpable →
   * seccomp → on Landlock ABI ≥ 8 the deny-all domain → selfTest → report). Nothing the worker
   * does after the seals opens a file.
   */
  seal?(context: SealContext): void | Promise<void>;
  /** In the worker, after every `apply` and `seal`: tries what the layer exists to stop, and throws naming what got through. */
  selfTest(context: SelfTestContext): void | Promise<void>;
}

/**
 * How a layer is named to `IsolatedRuntime.start({ layers })`: serialisable, so it can cross to
 * the worker, which imports `module` and builds the layer from its default export with
 * `options`. A layer package's factory (its default export) returns one of these.
 */
export interface LayerDescriptor {
  /** A module specifier the worker can import: a package export (`@strata/layer-clock/layer`) or an absolute `file:` URL. */
  readonly module: string;
  /** Plain data for the layer. */
  readonly options?: Readonly<Record<string, unknown>>;
  /** Overrides the runtime's `sandbox` mode for this layer. */
  readonly requirement?: LayerRequirement;
}

/**
 * What a layer module's default export may be: a factory taking the options, or a class whose
 * constructor takes them (resolved through the worker's container with the options injected
 * under the `LAYER_OPTIONS` token).
 */
export type LayerModuleExport = ((options: Readonly<Record<string, unknown>>) => Layer) | (new (...args: never[]) => Layer);
