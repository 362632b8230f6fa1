/**
 * The one walk over a nested value that every check of Strata's uses: the wire's encodability
 * check, the runtime's transferability check and encoded size, the agent's depth check. The
 * walk owns what they share; a {@link WalkVisitor} owns what differs (which values are refused,
 * how children are read, what is counted, how a path is written).
 *
 * What the walk owns:
 * - an explicit stack of open containers, never recursion, so hostile nesting cannot exhaust
 *   the call stack whatever limit a visitor sets;
 * - the iteration of children: array elements and object properties through the visitor (so
 *   it can read descriptors and refuse accessors), Map entries and Set elements through the
 *   built-in iterators captured at load time;
 * - a memo of containers met before: a container still open met again is a cycle; one closed
 *   is not walked again, its totals (nodes, bytes, height) count again at the new place, so a
 *   value with many paths (a DAG) costs time linear in its distinct containers;
 * - the path of the child in progress, read only when a visitor needs it for a message.
 *
 * @module
 */

/**
 * What a visitor makes of a value it is shown. `Opaque` is an object with no children that
 * still takes one level of nesting (the runtime counts a `Date` or `Uint8Array` so).
 */
export const WalkKind = Object.freeze({ Leaf: -1, Array: 0, Object: 1, Map: 2, Set: 3, Opaque: 4 } as const);

/** One of {@link WalkKind}'s values. */
export type WalkKind = (typeof WalkKind)[keyof typeof WalkKind];

/** A container's kind: a {@link WalkKind} other than `Leaf`. */
export type ContainerKind = Exclude<WalkKind, -1>;

const LEAF = -1;
const ARRAY = 0;
const OBJECT = 1;
const MAP = 2;
const SET = 3;

/**
 * The hooks of one walk. `walk.depth` is the number of containers open around the value a hook
 * is about; `walk.nodes` and `walk.bytes` are the visitor's counters, which the walk saves and
 * restores for shared containers. A hook refuses by throwing and ends the walk early with
 * {@link ValueWalk.stop}.
 */
export interface WalkVisitor {
  /**
   * Look every container up in the memo as it is met (true), or only long ones and, lazily,
   * short ones once they turn out to hold a container (false, cheaper: a short container that
   * holds only scalars is walked again at each place, which costs no more than a look-up).
   * The two differ in what a refusal inside a shared part names, so each check keeps the
   * policy its messages have always followed.
   */
  readonly lookUpEvery: boolean;
  /** Every value reached, the root first: check it, count it, and say whether to walk into it. */
  visit(value: unknown, walk: ValueWalk): WalkKind;
  /** The own keys of a value {@link visit} called an `Object`, in the order to walk them. */
  keys(object: object): readonly (string | symbol)[];
  /**
   * A container about to be opened (not met before, or met before but too short to look up):
   * not yet on the stack. `length` is its number of children, a Map's keys and values both.
   */
  enter(kind: ContainerKind, container: object, length: number, walk: ValueWalk): void;
  /** Read element `index` of an array; the path already ends at it. */
  element(array: readonly unknown[], index: number, walk: ValueWalk): unknown;
  /** Read property `key` of an object; the path already ends at it. */
  property(object: object, key: string | symbol, walk: ValueWalk): unknown;
  /**
   * A container whose children are all walked, still on the stack (its path is one level
   * shorter); `nodes` is what it added to `walk.nodes`, itself included.
   *
   * @returns whether to remember it for a later place even if it is short and holds no
   *   container (only a visitor that {@link lookUpEvery looks up every container} gains by it).
   */
  leave(kind: ContainerKind, container: object, nodes: number, walk: ValueWalk): boolean;
  /**
   * A container walked in full before, met again: `walk.nodes` and `walk.bytes` already count it
   * again here. `height` is its levels of containers, itself included (an array of scalars is 1).
   */
  shared(height: number, walk: ValueWalk): void;
  /** A container met again inside itself (the value contains itself); the path ends at it. */
  cycle(walk: ValueWalk): void;
}

/** What the walk learned about one container, for a later place that reaches it again. */
interface Seen {
  /** Still on the stack: meeting it again means the value contains itself. */
  open: boolean;
  /** The visitor's counts for it, itself included (once closed). */
  nodes: number;
  bytes: number;
  /** Levels of containers, itself included (once closed). */
  height: number;
}

/**
 * Containers with fewer children than this are looked up in the memo only once they turn out
 * to hold a container (unless the visitor looks up every container), and are not remembered
 * if they hold none (unless the visitor asks): walking such a one again costs no more than
 * looking it up would have, and it cannot be part of a cycle.
 */
const MEMO_MIN_LENGTH = 16;

/** One open container. */
interface Frame {
  kind: number;
  container: object;
  /**
   * Its memo entry, made when its first child container is met (so that a path back to it is
   * seen as a cycle), or when it closes if it is long or the visitor asks.
   */
  seen: Seen | undefined;
  /** The counters before the container was visited. */
  nodesBefore: number;
  bytesBefore: number;
  /** Tallest child container finished so far (0 when none). */
  childHeight: number;
  /** Array length, number of keys, Set size, or twice the Map size. */
  length: number;
  /** Children started so far: the child in progress is `index - 1` (a Map's keys and values alternate). */
  index: number;
  keys: readonly (string | symbol)[] | undefined;
  iterator: Iterator<unknown> | undefined;
  /** The value half of the Map entry whose key was just visited. */
  pendingValue: unknown;
}

// Captured once, so a later change to a prototype cannot redirect the walk.
const mapEntries = Map.prototype.entries;
const setValues = Set.prototype.values;
const mapSize = Object.getOwnPropertyDescriptor(Map.prototype, 'size')!.get as (this: Map<unknown, unknown>) => number;
const setSize = Object.getOwnPropertyDescriptor(Set.prototype, 'size')!.get as (this: Set<unknown>) => number;

/**
 * One walk of one value. Make one per value: `new ValueWalk(visitor).run(value)`.
 *
 * The visitor may read and change {@link nodes} and {@link bytes} (its counters) and read
 * {@link depth} and the path accessors ({@link kindAt}, {@link childAt}, {@link keyAt}).
 */
export class ValueWalk {
  /** The visitor's count of items; saved per container and added again for a shared one. */
  nodes = 0;
  /** The visitor's count of bytes; saved per container and added again for a shared one. */
  bytes = 0;
  /** Containers open around the value being visited. Read only. */
  depth = 0;
  private stopped = false;
  private readonly stack: Frame[] = [];
  // the containers that hold a container, and the long ones; created when first needed
  private memo: Map<object, Seen> | undefined;

  constructor(private readonly visitor: WalkVisitor) {}

  /** End the walk after the current hook: {@link run} returns without walking further. */
  stop(): void {
    this.stopped = true;
  }

  /** The kind of the open container at `level` (0 is the outermost, `depth - 1` the innermost). */
  kindAt(level: number): ContainerKind {
    return this.stack[level]!.kind as ContainerKind;
  }

  /**
   * The child of the container at `level` that is in progress, -1 when none is yet (the
   * container is being entered). For a Map, `2i` is the key and `2i + 1` the value of entry `i`.
   */
  childAt(level: number): number {
    return this.stack[level]!.index - 1;
  }

  /** The key in progress in the object at `level`. */
  keyAt(level: number): string | symbol {
    const frame = this.stack[level]!;
    return frame.keys![frame.index - 1]!;
  }

  /** Walk `value` until every part is visited, a hook throws, or a hook calls {@link stop}. */
  run(value: unknown): this {
    const { stack, visitor } = this;
    this.visitValue(value);
    while (this.depth > 0 && !this.stopped) {
      const frame = stack[this.depth - 1]!;
      if (frame.index >= frame.length) {
        this.close(frame);
        continue;
      }
      const i = frame.index++;
      switch (frame.kind) {
        case ARRAY: {
          const array = frame.container as unknown[];
          const depth = this.depth;
          // stay on this array while its elements are scalars: most arrays are mostly scalars
          for (let j = i; ; j = frame.index++) {
            this.visitValue(visitor.element(array, j, this));
            if (this.depth !== depth || frame.index >= frame.length || this.stopped) break;
          }
          break;
        }
        case OBJECT:
          this.visitValue(visitor.property(frame.container, frame.keys![i]!, this));
          break;
        case MAP:
          if (i % 2 === 0) {
            const entry = frame.iterator!.next().value as [unknown, unknown];
            frame.pendingValue = entry[1];
            this.visitValue(entry[0]);
          } else {
            const entryValue = frame.pendingValue;
            frame.pendingValue = undefined;
            this.visitValue(entryValue);
          }
          break;
        default:
          this.visitValue(frame.iterator!.next().value);
      }
    }
    // drop references to the value, for a walk stopped early
    for (let level = 0; level < this.depth; level++) release(stack[level]!);
    return this;
  }

  /** Show one value to the visitor; open it if it is a container not walked before. */
  private visitValue(value: unknown): void {
    const nodesBefore = this.nodes;
    const bytesBefore = this.bytes;
    const kind = this.visitor.visit(value, this);
    if (kind === LEAF) return;
    const container = value as object;
    let keys: readonly (string | symbol)[] | undefined;
    let length: number;
    switch (kind) {
      case ARRAY:
        length = (container as unknown[]).length;
        break;
      case OBJECT:
        keys = this.visitor.keys(container);
        length = keys.length;
        break;
      case MAP:
        length = mapSize.call(container as Map<unknown, unknown>) * 2;
        break;
      case SET:
        length = setSize.call(container as Set<unknown>);
        break;
      default:
        length = 0;
    }
    // the enclosing container holds a container, so it must be in the memo
    if (this.depth > 0 && !this.settle()) return;
    if (length >= MEMO_MIN_LENGTH || this.visitor.lookUpEvery) {
      const seen = this.memo?.get(container);
      if (seen !== undefined) {
        if (seen.open) return this.visitor.cycle(this);
        return this.countAgain(seen, nodesBefore, bytesBefore);
      }
    }
    this.visitor.enter(kind, container, length, this);
    const iterator = kind === MAP ? mapEntries.call(container as Map<unknown, unknown>) : kind === SET ? setValues.call(container as Set<unknown>) : undefined;
    this.open(kind, container, length, keys, iterator, nodesBefore, bytesBefore);
  }

  /**
   * Make sure the innermost open container is in the memo, now that it has turned out to hold
   * a container. If it was there already, it was opened again without a look-up (it looked
   * short): still open means the value contains itself; closed means it was walked in full
   * before, so the partial walk is dropped and its totals count instead.
   *
   * @returns false when the innermost container was dropped that way (skip its children).
   */
  private settle(): boolean {
    const frame = this.stack[this.depth - 1]!;
    if (frame.seen !== undefined) return true;
    const seen = this.memo?.get(frame.container);
    if (seen === undefined) {
      this.remember(frame);
      return true;
    }
    const { nodesBefore, bytesBefore } = frame;
    release(frame);
    this.depth--;
    if (seen.open) this.visitor.cycle(this);
    else this.countAgain(seen, nodesBefore, bytesBefore);
    return false;
  }

  /** A container walked in full before counts again here, as it would be written out again here. */
  private countAgain(seen: Seen, nodesBefore: number, bytesBefore: number): void {
    this.nodes = nodesBefore + seen.nodes;
    this.bytes = bytesBefore + seen.bytes;
    if (this.depth > 0) {
      const parent = this.stack[this.depth - 1]!;
      if (parent.childHeight < seen.height) parent.childHeight = seen.height;
    }
    this.visitor.shared(seen.height, this);
  }

  private close(frame: Frame): void {
    const nodes = this.nodes - frame.nodesBefore;
    const keep = this.visitor.leave(frame.kind as ContainerKind, frame.container, nodes, this);
    const height = frame.childHeight + 1;
    const seen = frame.seen ?? (frame.length >= MEMO_MIN_LENGTH || keep ? this.remember(frame) : undefined);
    if (seen !== undefined) {
      seen.open = false;
      seen.nodes = nodes;
      seen.bytes = this.bytes - frame.bytesBefore;
      seen.height = height;
    }
    release(frame);
    this.depth--;
    if (this.depth > 0) {
      const parent = this.stack[this.depth - 1]!;
      if (parent.childHeight < height) parent.childHeight = height;
    }
  }

  /** Put an open container into the memo. */
  private remember(frame: Frame): Seen {
    const seen: Seen = { open: true, nodes: 0, bytes: 0, height: 0 };
    (this.memo ??= new Map()).set(frame.container, seen);
    frame.seen = seen;
    return seen;
  }

  private open(
    kind: number,
    container: object,
    length: number,
    keys: readonly (string | symbol)[] | undefined,
    iterator: Iterator<unknown> | undefined,
    nodesBefore: number,
    bytesBefore: number,
  ): void {
    const { stack, depth } = this;
    const frame = stack[depth];
    if (frame === undefined) {
      stack.push({ kind, container, seen: undefined, nodesBefore, bytesBefore, childHeight: 0, length, index: 0, keys, iterator, pendingValue: undefined });
    } else {
      // frames are reused: a deep walk allocates its stack once
      frame.kind = kind;
      frame.container = container;
      frame.seen = undefined;
      frame.nodesBefore = nodesBefore;
      frame.bytesBefore = bytesBefore;
      frame.childHeight = 0;
      frame.length = length;
      frame.index = 0;
      frame.keys = keys;
      frame.iterator = iterator;
    }
    this.depth = depth + 1;
  }
}

/** Drop a frame's references, so a reused or abandoned frame does not keep the value alive. */
function release(frame: Frame): void {
  frame.container = frame.keys = frame.iterator = frame.seen = frame.pendingValue = undefined as never;
}
