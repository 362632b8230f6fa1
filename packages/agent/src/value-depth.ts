/**
 * How deep a tool's answer nests, counted as the guest boundary counts it. A session checks this
 * before it journals an answer: an answer the boundary would refuse must fail as the tool's
 * failure (recorded, so a replay fails the same way), not as an error out of the runtime.
 *
 * A visitor of `@strata/wire`'s {@link ValueWalk}: iterative, so an answer nested past the call
 * stack is answered, not thrown; and a part shared along many paths is walked once.
 *
 * @module
 */

import { types } from 'node:util';
import { ValueWalk, WalkKind, type ContainerKind, type WalkVisitor } from '@strata/wire';

const { isMap, isSet } = types;

/** Whether `value` nests deeper than `limit` levels (arrays, objects, Map and Set entries), as the guest boundary counts them. */
export function deeperThan(value: unknown, limit: number): boolean {
  const visitor = new DepthCheck(limit);
  new ValueWalk(visitor).run(value);
  return visitor.deeper;
}

/**
 * Every object is a level: a Map's keys and values and a Set's members are its children, a
 * typed array or a Date has none, any other object has its enumerable own properties.
 */
class DepthCheck implements WalkVisitor {
  readonly lookUpEvery = false;
  deeper = false;

  constructor(private readonly limit: number) {}

  visit(v: unknown, walk: ValueWalk): WalkKind {
    if (v === null || typeof v !== 'object') return WalkKind.Leaf;
    if (v instanceof Map && !isMap(v)) return this.notIterable(v, walk);
    if (v instanceof Map) return WalkKind.Map;
    if (v instanceof Set && !isSet(v)) return this.notIterable(v, walk);
    if (v instanceof Set) return WalkKind.Set;
    if (ArrayBuffer.isView(v) || v instanceof Date) return WalkKind.Opaque;
    return WalkKind.Object;
  }

  keys(object: object): readonly string[] {
    return Object.keys(object);
  }

  enter(_kind: ContainerKind, _container: object, _length: number, walk: ValueWalk): void {
    this.reach(walk.depth + 1, walk);
  }

  element(array: readonly unknown[], index: number): unknown {
    return array[index];
  }

  property(object: object, key: string | symbol): unknown {
    return (object as Record<string | symbol, unknown>)[key];
  }

  leave(): boolean {
    return false;
  }

  shared(height: number, walk: ValueWalk): void {
    this.reach(walk.depth + height, walk);
  }

  /** A value that contains itself nests without end. */
  cycle(walk: ValueWalk): void {
    this.deeper = true;
    walk.stop();
  }

  /**
   * An object that inherits from `Map` or `Set` without being one is a level too, and iterating
   * it throws the `TypeError` it always has (the walk would read `size` first, which throws another).
   */
  private notIterable(v: object, walk: ValueWalk): WalkKind {
    this.reach(walk.depth + 1, walk);
    if (!this.deeper) (v as Iterable<unknown>)[Symbol.iterator]();
    return WalkKind.Leaf;
  }

  /** Some object sits `depth` levels deep. */
  private reach(depth: number, walk: ValueWalk): void {
    if (depth <= this.limit) return;
    this.deeper = true;
    walk.stop();
  }
}
