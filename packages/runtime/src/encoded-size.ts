const ARRAY = 0;
const OBJECT = 1;
const MAP = 2;
const SET = 3;

/** One container being measured. */
interface Frame {
  kind: number;
  container: object;
  /** Array length, number of keys, Set size, or twice the Map size. */
  length: number;
  /** Children measured so far (keys and values both count for a Map). */
  index: number;
  keys: string[] | undefined;
  iterator: Iterator<unknown> | undefined;
  /** The value half of the Map entry whose key was just measured. */
  pendingValue: unknown;
  /** `total` before the container. */
  start: number;
  /** Whether the container is in the memo (it holds a container, so it is looked up and remembered). */
  marked: boolean;
}

/** Memo entry of a container that is still being measured. */
const OPEN = -1;
/**
 * Containers with fewer children than this are looked up only once they turn out to hold a
 * container; one that holds none is measured again at each place (it costs no more).
 */
const MEMO_MIN_LENGTH = 16;

const header = (n: number): number => (n < 24 ? 1 : n < 0x100 ? 2 : n < 0x10000 ? 3 : n < 0x100000000 ? 5 : 9);

/**
 * The size of a transferable value in CBOR, as the wire sends it, computed without encoding.
 * Stops counting once past `cap`, so a huge result costs no more than the cap to measure.
 * Headers are counted at their exact CBOR width; tags for Set, Map, Date and bigint at 3 bytes.
 *
 * A container reachable along several paths is written out at each of them, so it counts at
 * each; it is measured once and its size remembered, so the cost stays linear in the distinct
 * containers however many paths there are. A value that contains itself has no finite encoding:
 * the result is `Infinity`.
 */
export function encodedSize(value: unknown, cap: number): number {
  return new Measure(cap).run(value);
}

/** One run of {@link encodedSize}. */
class Measure {
  private total = 0;
  private depth = 0;
  private readonly stack: Frame[] = [];
  // created at the first container that needs it, so most small values never allocate one
  private memo: Map<object, number> | undefined;
  private cycle = false;

  constructor(private readonly cap: number) {}

  run(value: unknown): number {
    const { stack } = this;
    this.visit(value);
    while (this.depth > 0 && this.total <= this.cap && !this.cycle) {
      const frame = stack[this.depth - 1]!;
      if (frame.index >= frame.length) {
        if (frame.marked || frame.length >= MEMO_MIN_LENGTH) (this.memo ??= new Map()).set(frame.container, this.total - frame.start);
        frame.container = frame.keys = frame.iterator = undefined as never;
        this.depth--;
        continue;
      }
      const i = frame.index++;
      switch (frame.kind) {
        case ARRAY:
          this.visit((frame.container as unknown[])[i]);
          break;
        case OBJECT: {
          const key = frame.keys![i]!;
          this.total += stringSize(key, this.cap);
          this.visit((frame.container as Record<string, unknown>)[key]);
          break;
        }
        case MAP:
          if (i % 2 === 0) {
            const entry = frame.iterator!.next().value as [unknown, unknown];
            frame.pendingValue = entry[1];
            this.visit(entry[0]);
          } else {
            const entryValue = frame.pendingValue;
            frame.pendingValue = undefined;
            this.visit(entryValue);
          }
          break;
        default:
          this.visit(frame.iterator!.next().value);
      }
    }
    // drop references to the value
    for (let level = 0; level < this.depth; level++) {
      const frame = stack[level]!;
      frame.container = frame.keys = frame.iterator = frame.pendingValue = undefined as never;
    }
    return this.cycle ? Infinity : this.total;
  }

  private visit(v: unknown): void {
    switch (typeof v) {
      case 'undefined':
      case 'boolean':
        this.total += 1;
        return;
      case 'number':
        this.total += Number.isInteger(v) && Math.abs(v) < 2 ** 53 ? header(Math.abs(v)) : 9;
        return;
      case 'bigint':
        this.total += 3 + Math.ceil(v.toString(16).length / 2);
        return;
      case 'string':
        this.total += stringSize(v, this.cap);
        return;
    }
    if (v === null) {
      this.total += 1;
      return;
    }
    if (v instanceof Uint8Array) {
      this.total += header(v.byteLength) + v.byteLength;
      return;
    }
    if (v instanceof Date) {
      this.total += 3 + 9;
      return;
    }
    // the enclosing container holds a container: it must be in the memo
    if (this.depth > 0 && !this.settle()) return;
    const object = v as object;
    let kind: number;
    let length: number;
    let keys: string[] | undefined;
    if (Array.isArray(v)) {
      kind = ARRAY;
      length = v.length;
    } else if (v instanceof Map) {
      kind = MAP;
      length = v.size * 2;
    } else if (v instanceof Set) {
      kind = SET;
      length = v.size;
    } else {
      kind = OBJECT;
      keys = Object.keys(object);
      length = keys.length;
    }
    // a short container is looked up only once it turns out to hold a container (settle)
    if (length >= MEMO_MIN_LENGTH) {
      const known = this.memo?.get(object);
      if (known !== undefined) {
        if (known === OPEN) this.cycle = true;
        else this.total += known;
        return;
      }
    }
    const start = this.total;
    if (kind === ARRAY) {
      this.total += header(length);
      this.open(ARRAY, object, length, undefined, undefined, start);
    } else if (kind === MAP) {
      this.total += 3 + header(length / 2);
      this.open(MAP, object, length, undefined, (v as Map<unknown, unknown>).entries(), start);
    } else if (kind === SET) {
      this.total += 3 + header(length);
      this.open(SET, object, length, undefined, (v as Set<unknown>).values(), start);
    } else {
      this.total += header(length);
      this.open(OBJECT, object, length, keys, undefined, start);
    }
  }

  /**
   * Puts the innermost open container into the memo as open, now that it holds a container.
   * If it was there already it was opened again without a look-up (it looked short): open
   * means the value contains itself; measured means the partial count is replaced by its size.
   *
   * @returns false when the innermost container was dropped that way (skip its children).
   */
  private settle(): boolean {
    const frame = this.stack[this.depth - 1]!;
    if (frame.marked) return true;
    const known = this.memo?.get(frame.container);
    if (known === undefined) {
      (this.memo ??= new Map()).set(frame.container, OPEN);
      frame.marked = true;
      return true;
    }
    if (known === OPEN) {
      this.cycle = true;
    } else {
      this.total = frame.start + known;
      frame.container = frame.keys = frame.iterator = frame.pendingValue = undefined as never;
      this.depth--;
    }
    return false;
  }

  private open(
    kind: number,
    container: object,
    length: number,
    keys: string[] | undefined,
    iterator: Iterator<unknown> | undefined,
    start: number,
  ): void {
    const frame = this.stack[this.depth];
    if (frame === undefined) {
      this.stack.push({ kind, container, length, index: 0, keys, iterator, pendingValue: undefined, start, marked: false });
    } else {
      frame.kind = kind;
      frame.container = container;
      frame.length = length;
      frame.index = 0;
      frame.keys = keys;
      frame.iterator = iterator;
      frame.start = start;
      frame.marked = false;
    }
    this.depth++;
  }
}

/** A text item: its header and UTF-8 bytes, counted without allocating. */
function stringSize(v: string, cap: number): number {
  // UTF-8 length without allocating: at most 3 bytes per UTF-16 unit.
  const bytes = v.length * 3 < 1024 ? Buffer.byteLength(v) : v.length > cap ? v.length : Buffer.byteLength(v);
  return header(bytes) + bytes;
}
