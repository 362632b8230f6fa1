/** One URLPattern case: constructor arguments, and the arguments of test() and exec(). */
export interface PatternCase {
  pattern: unknown[];
  inputs?: unknown[];
}

/** What one case does, as plain JSON; runs in the guest and in Node alike (no closure). */
export function urlPatternOutcome(entry: PatternCase): unknown {
  const COMPONENTS = ['protocol', 'username', 'password', 'hostname', 'port', 'pathname', 'search', 'hash'];
  const errorName = (e: unknown): string => (e as Error)?.constructor?.name ?? typeof e;
  type Pattern = Record<string, string> & { test(...a: unknown[]): boolean; exec(...a: unknown[]): null | Record<string, unknown> };
  let pattern: Pattern;
  try {
    pattern = new (globalThis as unknown as { URLPattern: new (...a: unknown[]) => Pattern }).URLPattern(...entry.pattern);
  } catch (e) {
    return { construct: errorName(e) };
  }
  const components: Record<string, string> = {};
  for (const c of COMPONENTS) components[c] = pattern[c]!;
  const out: Record<string, unknown> = { construct: 'ok', components };
  if (!entry.inputs) return out;
  try {
    out['test'] = pattern.test(...entry.inputs);
  } catch (e) {
    out['test'] = errorName(e);
  }
  try {
    const result = pattern.exec(...entry.inputs);
    if (result === null) {
      out['exec'] = null;
    } else {
      const exec: Record<string, unknown> = { inputs: result['inputs'] };
      for (const c of COMPONENTS) {
        const { input, groups } = result[c] as { input: string; groups: Record<string, string | undefined> };
        const plain: Record<string, string | null> = {};
        for (const [k, v] of Object.entries(groups)) plain[k] = v === undefined ? null : v;
        exec[c] = { input, groups: plain };
      }
      out['exec'] = exec;
    }
  } catch (e) {
    out['exec'] = errorName(e);
  }
  return out;
}
