import { builtinKind, ValueWalk, WalkKind, type ContainerKind, type WalkVisitor } from '@strata/wire';

const header = (n: number): number => (n < 24 ? 1 : n < 0x100 ? 2 : n < 0x10000 ? 3 : n < 0x100000000 ? 5 : 9);

/**
 * The size of a transferable value in CBOR, as the wire sends it, computed without encoding.
 * Stops counting once past `cap`, so a huge result costs no more than the cap to measure.
 * Headers are counted at their exact CBOR width; tags for Set, Map, Date and bigint at 3 bytes.
 *
 * A container reachable along several paths is written out at each of them, so it counts at
 * each; it is measured once and its size remembered (by `@strata/wire`'s {@link ValueWalk}), so
 * the cost stays linear in the distinct containers however many paths there are. A value that
 * contains itself has no finite encoding: the result is `Infinity`.
 */
export function encodedSize(value: unknown, cap: number): number {
  return new Measure(cap).run(value).bytes;
}

/**
 * {@link encodedSize} of a value isolated-vm copied out of a guest, and the first object in it of
 * a kind outside the transferable set (`ArrayBuffer`, a boxed primitive…), by name. The copy rebuilds each
 * object by its brand, so a brand the guest hid behind another prototype shows here, in the same
 * walk that measures.
 */
export function measureCopy(value: unknown, cap: number): { readonly bytes: number; readonly outside: string | undefined } {
  return new Measure(cap).run(value);
}

/** The kind outside the set that {@link measureCopy} would name, without measuring strings (a host call's arguments have no size cap of their own here). */
export function kindOutsideCopy(value: unknown): string | undefined {
  return new Measure(Infinity, false).run(value).outside;
}

/** The visitor of one {@link encodedSize}: the walk's `bytes` are the size so far. */
class Measure implements WalkVisitor {
  readonly lookUpEvery = false;
  private cycled = false;
  private outside: string | undefined;

  constructor(
    private readonly cap: number,
    private readonly sizesStrings = true,
  ) {}

  run(value: unknown): { bytes: number; outside: string | undefined } {
    const walk = new ValueWalk(this).run(value);
    return { bytes: this.cycled ? Infinity : walk.bytes, outside: this.outside };
  }

  visit(v: unknown, walk: ValueWalk): WalkKind {
    switch (typeof v) {
      case 'undefined':
      case 'boolean':
        return this.add(walk, 1);
      case 'number':
        return this.add(walk, Number.isInteger(v) && Math.abs(v) < 2 ** 53 ? header(Math.abs(v)) : 9);
      case 'bigint':
        return this.add(walk, 3 + Math.ceil(v.toString(16).length / 2));
      case 'string':
        return this.add(walk, this.sizesStrings ? stringSize(v, this.cap) : 0);
    }
    if (v === null) return this.add(walk, 1);
    if (v instanceof Uint8Array) return this.add(walk, header(v.byteLength) + v.byteLength);
    if (v instanceof Date) return this.add(walk, 3 + 9);
    if (Array.isArray(v)) return WalkKind.Array;
    if (v instanceof Map) return WalkKind.Map;
    if (v instanceof Set) return WalkKind.Set;
    const proto: unknown = Object.getPrototypeOf(v);
    // a copy rebuilds only built-ins, so any other prototype is one
    if (proto !== Object.prototype && proto !== null) this.outside ??= builtinKind(v as object) ?? 'class instance';
    return WalkKind.Object;
  }

  keys(object: object): readonly string[] {
    return Object.keys(object);
  }

  enter(kind: ContainerKind, _container: object, length: number, walk: ValueWalk): void {
    if (kind === WalkKind.Map) this.add(walk, 3 + header(length / 2));
    else if (kind === WalkKind.Set) this.add(walk, 3 + header(length));
    else this.add(walk, header(length));
  }

  element(array: readonly unknown[], index: number): unknown {
    return array[index];
  }

  property(object: object, key: string | symbol, walk: ValueWalk): unknown {
    if (this.sizesStrings) this.add(walk, stringSize(key as string, this.cap));
    return (object as Record<string, unknown>)[key as string];
  }

  leave(): boolean {
    return false;
  }

  shared(_height: number, walk: ValueWalk): void {
    this.add(walk, 0);
  }

  cycle(walk: ValueWalk): void {
    this.cycled = true;
    walk.stop();
  }

  /** Count `bytes` more; past the cap the walk stops (the walk ends after the current value). */
  private add(walk: ValueWalk, bytes: number): WalkKind {
    walk.bytes += bytes;
    if (walk.bytes > this.cap) walk.stop();
    return WalkKind.Leaf;
  }
}

/** A text item: its header and UTF-8 bytes, counted without allocating. */
function stringSize(v: string, cap: number): number {
  // UTF-8 length without allocating: at most 3 bytes per UTF-16 unit.
  const bytes = v.length * 3 < 1024 ? Buffer.byteLength(v) : v.length > cap ? v.length : Buffer.byteLength(v);
  return header(bytes) + bytes;
}
