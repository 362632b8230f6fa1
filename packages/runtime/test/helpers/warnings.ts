/** A process warning as the tests read it. */
export interface SeenWarning {
  readonly code: string | undefined;
  readonly message: string;
}

/** The process warnings (code and message) emitted while `run` runs, and what it gave. */
export async function warningsDuring<T>(run: () => Promise<T>): Promise<{ value: T; warnings: SeenWarning[] }> {
  const warnings: SeenWarning[] = [];
  const listener = (warning: Error & { code?: string }) => warnings.push({ code: warning.code, message: warning.message });
  process.on('warning', listener);
  try {
    const value = await run();
    // Warnings are emitted on the next tick.
    await new Promise((resolve) => setImmediate(resolve));
    return { value, warnings };
  } finally {
    process.off('warning', listener);
  }
}
