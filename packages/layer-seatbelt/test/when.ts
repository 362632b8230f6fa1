// Tests that need a platform: skipped elsewhere with the reason in the title (ava prints it).
import test, { type ExecutionContext } from 'ava';

type Run = (t: ExecutionContext) => void | Promise<void>;

/** A serial test that runs only when `condition` holds; otherwise skipped, saying `reason`. */
export const when = (condition: boolean, reason: string) => (title: string, run: Run) =>
  condition ? test.serial(title, run) : test.skip(`${title} [skipped: ${reason}]`, run);

const darwin = process.platform === 'darwin';

/** macOS only: Seatbelt, the addon, the dry run. */
export const onMac = when(darwin, `needs macOS, this is ${process.platform}`);

/** Everywhere but macOS: what the layer says and does where Seatbelt does not exist. */
export const offMac = when(!darwin, 'on macOS the layer is available instead');
