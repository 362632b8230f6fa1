// The one walk over nested values, on its own: the order it shows values in, the path in
// progress, shared parts counted again from the memo, cycles, stopping early, and nesting far
// past the call stack. The checks built on it are tested with their own messages elsewhere.
import test from 'ava';
import { ValueWalk, WalkKind, type ContainerKind, type WalkVisitor } from '../src/index.js';

/** Records every hook as a line; containers are arrays, plain objects, Maps and Sets. */
class Recorder implements WalkVisitor {
  readonly lookUpEvery: boolean;
  readonly log: string[] = [];
  cycles = 0;

  constructor(lookUpEvery = false) {
    this.lookUpEvery = lookUpEvery;
  }

  visit(value: unknown, walk: ValueWalk): WalkKind {
    walk.nodes++;
    if (Array.isArray(value)) return WalkKind.Array;
    if (value instanceof Map) return WalkKind.Map;
    if (value instanceof Set) return WalkKind.Set;
    if (value instanceof Date) return WalkKind.Opaque;
    if (typeof value === 'object' && value !== null) return WalkKind.Object;
    this.log.push(`scalar ${String(value)} at ${pathOf(walk)}`);
    return WalkKind.Leaf;
  }

  keys(object: object): readonly string[] {
    return Object.keys(object);
  }

  enter(kind: ContainerKind, _container: object, length: number, walk: ValueWalk): void {
    this.log.push(`enter ${kind} of ${length} at depth ${walk.depth}`);
  }

  element(array: readonly unknown[], index: number): unknown {
    return array[index];
  }

  property(object: object, key: string | symbol): unknown {
    return (object as Record<string | symbol, unknown>)[key];
  }

  leave(kind: ContainerKind, _container: object, nodes: number): boolean {
    this.log.push(`leave ${kind} (${nodes} nodes)`);
    return false;
  }

  shared(height: number, walk: ValueWalk): void {
    this.log.push(`shared of height ${height} at ${pathOf(walk)}, nodes now ${walk.nodes}`);
  }

  cycle(walk: ValueWalk): void {
    this.cycles++;
    this.log.push(`cycle at ${pathOf(walk)}`);
    walk.stop();
  }
}

function pathOf(walk: ValueWalk): string {
  let path = '$';
  for (let level = 0; level < walk.depth; level++) {
    const child = walk.childAt(level);
    const kind = walk.kindAt(level);
    if (kind === WalkKind.Object) path += `.${String(walk.keyAt(level))}`;
    else if (kind === WalkKind.Map) path += `{${child % 2 === 0 ? 'key' : 'value'} ${child >> 1}}`;
    else path += `[${child}]`;
  }
  return path;
}

test('the walk shows every value in order, with the path in progress', (t) => {
  const recorder = new Recorder();
  new ValueWalk(recorder).run({ a: [1, new Map([['k', true]])], d: new Date(0) });
  t.deepEqual(recorder.log, [
    `enter ${WalkKind.Object} of 2 at depth 0`,
    `enter ${WalkKind.Array} of 2 at depth 1`,
    'scalar 1 at $.a[0]',
    `enter ${WalkKind.Map} of 2 at depth 2`,
    'scalar k at $.a[1]{key 0}',
    'scalar true at $.a[1]{value 0}',
    `leave ${WalkKind.Map} (3 nodes)`,
    `leave ${WalkKind.Array} (5 nodes)`,
    `enter ${WalkKind.Opaque} of 0 at depth 1`,
    `leave ${WalkKind.Opaque} (1 nodes)`,
    `leave ${WalkKind.Object} (7 nodes)`,
  ]);
});

test('a shared container that holds a container is walked once and counted again at every place', (t) => {
  const part = [[1]];
  const recorder = new Recorder();
  const walk = new ValueWalk(recorder).run([part, part, part]);
  t.is(walk.nodes, 1 + 3 * 3);
  t.is(recorder.log.filter((line) => line.startsWith('shared')).length, 2);
  t.true(recorder.log.includes('shared of height 2 at $[1], nodes now 7'));
});

test('a short container of scalars is walked again; looking up every container counts it from the memo once remembered', (t) => {
  const part = [1, 2];
  const lazy = new Recorder();
  t.is(new ValueWalk(lazy).run([part, part]).nodes, 7);
  t.false(lazy.log.some((line) => line.startsWith('shared')));
  // remembered when the visitor asks (leave's answer) and looked up as it is met
  class Keeping extends Recorder {
    override leave(): boolean {
      return true;
    }
  }
  const eager = new Keeping(true);
  t.is(new ValueWalk(eager).run([part, part]).nodes, 7);
  t.true(eager.log.includes('shared of height 1 at $[1], nodes now 7'));
});

test('a value that contains itself is met as a cycle, with the path to where it comes back', (t) => {
  const looped: unknown[] = [1, { x: 2 }];
  (looped[1] as Record<string, unknown>)['back'] = looped;
  const recorder = new Recorder();
  new ValueWalk(recorder).run({ looped });
  t.is(recorder.cycles, 1);
  t.true(recorder.log.includes('cycle at $.looped[1].back'));
  // a long container is looked up before it is opened
  const long: unknown[] = Array.from({ length: 20 }, (_, i) => i);
  long.push(long);
  const again = new Recorder();
  new ValueWalk(again).run(long);
  t.true(again.log.includes('cycle at $[20]'));
});

test('stop ends the walk after the current value', (t) => {
  const seen: unknown[] = [];
  const stopper = new (class extends Recorder {
    override visit(value: unknown, walk: ValueWalk): WalkKind {
      if (value === 2) walk.stop();
      if (typeof value === 'number') seen.push(value);
      return super.visit(value, walk);
    }
  })();
  new ValueWalk(stopper).run([1, 2, 3, [4]]);
  t.deepEqual(seen, [1, 2]);
});

test('nesting far past the call stack is walked without recursion', (t) => {
  let value: unknown = 0;
  for (let i = 0; i < 200_000; i++) value = i % 2 === 0 ? [value] : { v: value };
  let deepest = 0;
  const visitor = new (class extends Recorder {
    override enter(_kind: ContainerKind, _container: object, _length: number, walk: ValueWalk): void {
      if (walk.depth + 1 > deepest) deepest = walk.depth + 1;
    }
    override leave(): boolean {
      return false;
    }
    override visit(v: unknown, walk: ValueWalk): WalkKind {
      walk.nodes++;
      return Array.isArray(v) ? WalkKind.Array : typeof v === 'object' ? WalkKind.Object : WalkKind.Leaf;
    }
  })();
  t.is(new ValueWalk(visitor).run(value).nodes, 200_001);
  t.is(deepest, 200_000);
});
