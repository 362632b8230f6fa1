import test from 'ava';
import { LAZY_GLOBALS } from '../src/index.js';
import { MODES } from './helpers/isolate.js';
import { checkCases as check, streamSandbox as sandbox, type StreamCase as Case } from './helpers/stream-cases.js';

// Conformance of the WHATWG Streams classes as the guest sees them, written from the Streams
// standard (https://streams.spec.whatwg.org/). Each case is the body of an async guest function
// and the value it must return; helpers in test/helpers/stream-cases.ts.

const STREAM_GLOBALS = LAZY_GLOBALS.filter((k) => !k.startsWith('URL'));

const READABLE: Case[] = [
  [
    'reads chunks in order, then done',
    `
    const rs = new ReadableStream({ start(c) { c.enqueue('a'); c.enqueue('b'); c.close(); } });
    const r = rs.getReader();
    return [rd(await r.read()), rd(await r.read()), rd(await r.read()), rd(await r.read())];`,
    [
      ['a', false],
      ['b', false],
      ['undefined', true],
      ['undefined', true],
    ],
  ],
  [
    'desiredSize is the high-water mark minus the queue; 0 once closed, null once errored',
    `
    let c;
    const rs = new ReadableStream({ start(x) { c = x; } }, { highWaterMark: 3 });
    const out = [c.desiredSize];
    c.enqueue('x'); out.push(c.desiredSize);
    c.enqueue('y'); out.push(c.desiredSize);
    const r = rs.getReader();
    await r.read(); out.push(c.desiredSize);
    c.close(); out.push(c.desiredSize);
    await r.read(); out.push(c.desiredSize);
    let e;
    new ReadableStream({ start(x) { e = x; } });
    e.error(new Error('x'));
    out.push(e.desiredSize);
    return out;`,
    [3, 2, 1, 2, 2, 0, null],
  ],
  [
    'pull is called only while the queue is below the high-water mark',
    `
    let pulls = 0;
    const rs = new ReadableStream({ pull(c) { pulls++; c.enqueue(pulls); } }, { highWaterMark: 2 });
    await tick();
    const filled = pulls;
    const r = rs.getReader();
    const first = (await r.read()).value;
    await tick();
    const refilled = pulls;
    await tick();
    return [filled, first, refilled, pulls];`,
    [2, 1, 3, 3],
  ],
  [
    'with a high-water mark of 0, pull waits for a read',
    `
    let pulls = 0;
    const rs = new ReadableStream({ pull(c) { pulls++; c.enqueue('p' + pulls); } }, { highWaterMark: 0 });
    await tick();
    const before = pulls;
    const value = (await rs.getReader().read()).value;
    await tick();
    return [before, value, pulls];`,
    [0, 'p1', 1],
  ],
  [
    'a pull returning a promise is not called again before it settles',
    `
    let pulls = 0;
    let release;
    new ReadableStream({
      pull(c) { pulls++; return new Promise((r) => { release = () => { c.enqueue(pulls); r(); }; }); },
    }, { highWaterMark: 5 });
    await tick();
    const a = pulls;
    release();
    await tick();
    return [a, pulls];`,
    [1, 2],
  ],
  [
    'CountQueuingStrategy and ByteLengthQueuingStrategy',
    `
    const c = new CountQueuingStrategy({ highWaterMark: 4 });
    const b = new ByteLengthQueuingStrategy({ highWaterMark: 16 });
    return [c.highWaterMark, c.size(), c.size('anything'), b.highWaterMark, b.size(new Uint8Array(10)), b.size({ byteLength: 7 }),
      Object.prototype.toString.call(c), Object.prototype.toString.call(b),
      thrown(() => new CountQueuingStrategy()), thrown(() => new ByteLengthQueuingStrategy({})),
      c.size === new CountQueuingStrategy({ highWaterMark: 1 }).size, c.size.name];`,
    [4, 1, 1, 16, 10, 7, '[object CountQueuingStrategy]', '[object ByteLengthQueuingStrategy]', 'TypeError', 'TypeError', true, 'size'],
  ],
  [
    "a strategy's size() weighs the queue; an invalid size errors the stream",
    `
    let c;
    new ReadableStream({ start(x) { c = x; } }, new ByteLengthQueuingStrategy({ highWaterMark: 16 }));
    c.enqueue(new Uint8Array(10));
    let d;
    new ReadableStream({ start(x) { d = x; } }, { highWaterMark: 10, size: (s) => s.length });
    d.enqueue('abcd');
    let e;
    const bad = new ReadableStream({ start(x) { e = x; } }, { size: () => -1 });
    const t = thrown(() => e.enqueue('x'));
    return [c.desiredSize, d.desiredSize, t, await rejected(bad.getReader().read()), thrown(() => new ReadableStream({}, { highWaterMark: -1 }))];`,
    [6, 6, 'RangeError', 'RangeError', 'RangeError'],
  ],
  [
    'cancel reaches the source with its reason, and closes the stream',
    `
    const seen = [];
    const rs = new ReadableStream({ start(c) { c.enqueue('a'); }, cancel(reason) { seen.push(reason); } });
    const result = await rs.cancel('why');
    const r = rs.getReader();
    return [seen, result === undefined, rd(await r.read()), rs.locked];`,
    [['why'], true, ['undefined', true], true],
  ],
  [
    'reader.cancel waits for the source; a locked stream cannot be cancelled directly',
    `
    const seen = [];
    const rs = new ReadableStream({ cancel(reason) { seen.push(reason); return new Promise((r) => setTimeout(r, 5)); } });
    const r = rs.getReader();
    const direct = await rejected(rs.cancel('no'));
    const p = r.cancel('yes');
    const before = await state(p);
    await p;
    return [direct, seen, before, await rejected(r.closed)];`,
    ['TypeError', ['yes'], 'pending', 'fulfilled'],
  ],
  [
    'controller.error rejects pending and later reads and the closed promise',
    `
    let c;
    const rs = new ReadableStream({ start(x) { c = x; } });
    const r = rs.getReader();
    const pending = r.read();
    c.error(new RangeError('boom'));
    return [await rejected(pending), await rejected(r.read()), await rejected(r.closed), c.desiredSize, thrown(() => c.enqueue('x')), thrown(() => c.close())];`,
    ['RangeError', 'RangeError', 'RangeError', null, 'TypeError', 'TypeError'],
  ],
  [
    'start throwing throws from the constructor; a rejected start or pull errors the stream',
    `
    const t = thrown(() => new ReadableStream({ start() { throw new SyntaxError('start'); } }));
    const a = new ReadableStream({ start() { return Promise.reject(new EvalError('start')); } });
    const b = new ReadableStream({ pull() { return Promise.reject(new URIError('pull')); } });
    return [t, await rejected(a.getReader().read()), await rejected(b.getReader().read())];`,
    ['SyntaxError', 'EvalError', 'URIError'],
  ],
  [
    'one reader at a time; releaseLock unlocks and invalidates the reader',
    `
    const rs = new ReadableStream({ start(c) { c.enqueue(1); } });
    const r = rs.getReader();
    const second = thrown(() => rs.getReader());
    const locked = rs.locked;
    r.releaseLock();
    const released = [rs.locked, await rejected(r.read()), await rejected(r.closed)];
    const r2 = rs.getReader();
    return [second, locked, released, (await r2.read()).value, thrown(() => new ReadableStreamDefaultReader(rs)), thrown(() => new ReadableStream().getReader({ mode: 'nope' }))];`,
    ['TypeError', true, [false, 'TypeError', 'TypeError'], 1, 'TypeError', 'TypeError'],
  ],
  [
    'releasing the lock rejects pending reads',
    `
    const r = new ReadableStream().getReader();
    const p = r.read();
    r.releaseLock();
    return await rejected(p);`,
    'TypeError',
  ],
  [
    'tee: both branches see every chunk; the source is cancelled once both are, with both reasons',
    `
    const reasons = [];
    const chunk = { n: 1 };
    const rs = new ReadableStream({ start(c) { c.enqueue('a'); c.enqueue(chunk); }, cancel(r) { reasons.push(r); } });
    const [x, y] = rs.tee();
    const rx = x.getReader();
    const ry = y.getReader();
    const got = [(await rx.read()).value, (await ry.read()).value, (await rx.read()).value === chunk, (await ry.read()).value === chunk];
    const first = rx.cancel('one');
    await tick();
    const afterOne = reasons.length;
    await ry.cancel('two');
    await first;
    return [got, rs.locked, afterOne, reasons];`,
    [['a', 'a', true, true], true, 0, [['one', 'two']]],
  ],
  [
    'tee: an error reaches both branches',
    `
    let c;
    const rs = new ReadableStream({ start(x) { c = x; } });
    const [x, y] = rs.tee();
    c.error(new TypeError('t'));
    return [await rejected(x.getReader().read()), await rejected(y.getReader().read())];`,
    ['TypeError', 'TypeError'],
  ],
  [
    'for await reads every chunk and releases the lock',
    `
    const rs = new ReadableStream({ start(c) { for (const v of [1, 2, 3]) c.enqueue(v); c.close(); } });
    const out = [];
    for await (const v of rs) out.push(v);
    return [out, rs.locked, ReadableStream.prototype[Symbol.asyncIterator] === ReadableStream.prototype.values];`,
    [[1, 2, 3], false, true],
  ],
  [
    'breaking out of for await cancels the stream and releases the lock',
    `
    const reasons = [];
    const rs = new ReadableStream({ pull(c) { c.enqueue('x'); }, cancel(r) { reasons.push(r === undefined ? 'undefined' : r); } });
    const seen = [];
    for await (const v of rs) { seen.push(v); break; }
    return [seen, reasons, rs.locked];`,
    [['x'], ['undefined'], false],
  ],
  [
    'values({ preventCancel: true }) releases the lock without cancelling',
    `
    const reasons = [];
    const rs = new ReadableStream({ start(c) { c.enqueue(1); c.enqueue(2); }, cancel(r) { reasons.push(r); } });
    for await (const v of rs.values({ preventCancel: true })) break;
    return [reasons, rs.locked, (await rs.getReader().read()).value];`,
    [[], false, 2],
  ],
  [
    'iterating an errored stream throws its error',
    `
    const rs = new ReadableStream({ start(c) { c.enqueue(1); c.error(new RangeError('r')); } });
    try {
      for await (const v of rs) return ['got', v];
    } catch (e) {
      return [e.name, rs.locked];
    }`,
    ['RangeError', false],
  ],
  [
    'ReadableStream.from takes iterables and async iterables',
    `
    async function* gen() { yield 'a'; yield 'b'; }
    return [await collect(ReadableStream.from(['x', 'y'])), await collect(ReadableStream.from(gen())),
      ReadableStream.from([]) instanceof ReadableStream, thrown(() => ReadableStream.from(5))];`,
    [['x', 'y'], ['a', 'b'], true, 'TypeError'],
  ],
];

const BYTES: Case[] = [
  [
    "a byte stream answers a BYOB read in the reader's buffer, which is transferred",
    `
    const rs = new ReadableStream({
      type: 'bytes',
      pull(c) { const v = c.byobRequest.view; v[0] = 7; v[1] = 8; c.byobRequest.respond(2); },
    });
    const r = rs.getReader({ mode: 'byob' });
    const buffer = new Uint8Array(4);
    const { value, done } = await r.read(buffer);
    return [Object.prototype.toString.call(r), r instanceof ReadableStreamBYOBReader, arr(value), value.byteLength, value.buffer.byteLength, done, buffer.byteLength];`,
    ['[object ReadableStreamBYOBReader]', true, [7, 8], 2, 4, false, 0],
  ],
  [
    'enqueued bytes fill BYOB reads; { min } waits for enough of them',
    `
    let c;
    const rs = new ReadableStream({ type: 'bytes', start(x) { c = x; } });
    c.enqueue(new Uint8Array([1, 2, 3]));
    const r = rs.getReader({ mode: 'byob' });
    const a = await r.read(new Uint8Array(2));
    const tooMany = await rejected(r.read(new Uint8Array(2), { min: 3 }));
    const p = r.read(new Uint8Array(4), { min: 3 });
    c.enqueue(new Uint8Array([4]));
    const early = await state(p);
    c.enqueue(new Uint8Array([5, 6]));
    return [arr(a.value), tooMany, early, arr((await p).value)];`,
    [[1, 2], 'RangeError', 'pending', [3, 4, 5, 6]],
  ],
  [
    'autoAllocateChunkSize gives default reads a byobRequest',
    `
    let req;
    const rs = new ReadableStream({ type: 'bytes', autoAllocateChunkSize: 16, pull(c) { req = c.byobRequest; req.view[0] = 42; req.respond(1); } });
    const { value } = await rs.getReader().read();
    return [Object.prototype.toString.call(req), req instanceof ReadableStreamBYOBRequest, value.constructor.name, arr(value), value.buffer.byteLength];`,
    ['[object ReadableStreamBYOBRequest]', true, 'Uint8Array', [42], 16],
  ],
  [
    'byte streams take only non-empty views; BYOB readers only byte streams',
    `
    let c;
    const bytes = new ReadableStream({ type: 'bytes', start(x) { c = x; } });
    return [
      thrown(() => new ReadableStream().getReader({ mode: 'byob' })),
      thrown(() => c.enqueue('text')),
      thrown(() => c.enqueue(new Uint8Array(0))),
      thrown(() => new ReadableStream({ type: 'bytes' }, { size: () => 1 })),
      thrown(() => new ReadableStream({ type: 'other' })),
      c instanceof ReadableByteStreamController,
      Object.prototype.toString.call(c),
      await rejected(bytes.getReader({ mode: 'byob' }).read(new Uint8Array(0))),
    ];`,
    ['TypeError', 'TypeError', 'TypeError', 'RangeError', 'TypeError', true, '[object ReadableByteStreamController]', 'TypeError'],
  ],
];

const PIPES: Case[] = [
  [
    'pipeTo moves every chunk, then closes the destination and unlocks both',
    `
    const written = [];
    let closed = false;
    const rs = ReadableStream.from(['a', 'b', 'c']);
    const ws = new WritableStream({ write(chunk) { written.push(chunk); }, close() { closed = true; } });
    const result = await rs.pipeTo(ws);
    return [written, closed, rs.locked, ws.locked, result === undefined];`,
    [['a', 'b', 'c'], true, false, false, true],
  ],
  [
    'preventClose leaves the destination open',
    `
    const written = [];
    const ws = new WritableStream({ write(c) { written.push(c); } });
    await ReadableStream.from([1]).pipeTo(ws, { preventClose: true });
    const w = ws.getWriter();
    await w.write(2);
    await w.close();
    return written;`,
    [1, 2],
  ],
  [
    'a source error aborts the destination, unless preventAbort',
    `
    const aborts = [];
    const failing = () => new ReadableStream({ start(c) { c.error(new RangeError('src')); } });
    const a = await rejected(failing().pipeTo(new WritableStream({ abort(r) { aborts.push('a:' + r.name); } })));
    const ws = new WritableStream({ abort(r) { aborts.push('b:' + r.name); } });
    const b = await rejected(failing().pipeTo(ws, { preventAbort: true }));
    return [a, b, aborts, ws.locked];`,
    ['RangeError', 'RangeError', ['a:RangeError'], false],
  ],
  [
    'a destination error cancels the source, unless preventCancel',
    `
    const cancels = [];
    const source = (tag) => new ReadableStream({ pull(c) { c.enqueue(1); }, cancel(r) { cancels.push(tag + ':' + r.name); } });
    const failing = () => new WritableStream({ write() { throw new URIError('dest'); } });
    const a = await rejected(source('a').pipeTo(failing()));
    const s = source('b');
    const b = await rejected(s.pipeTo(failing(), { preventCancel: true }));
    return [a, b, cancels, s.locked, (await s.getReader().read()).done];`,
    ['URIError', 'URIError', ['a:URIError'], false, false],
  ],
  [
    'an AbortSignal stops a pipe: the reason rejects it, aborts the destination, cancels the source',
    `
    const events = [];
    const controller = new AbortController();
    const rs = new ReadableStream({ pull() { return new Promise(() => {}); }, cancel(r) { events.push('cancel:' + r.name); } });
    const ws = new WritableStream({ abort(r) { events.push('abort:' + r.name); } });
    const p = rs.pipeTo(ws, { signal: controller.signal });
    await tick();
    const running = await state(p);
    controller.abort();
    const err = await p.catch((e) => e);
    return [running, err.name, err instanceof DOMException, err === controller.signal.reason, events.sort()];`,
    ['pending', 'AbortError', true, true, ['abort:AbortError', 'cancel:AbortError']],
  ],
  [
    'an aborted signal with preventAbort and preventCancel leaves both streams alone',
    `
    const events = [];
    const rs = new ReadableStream({ cancel() { events.push('cancel'); } });
    const ws = new WritableStream({ abort() { events.push('abort'); } });
    const err = await rs.pipeTo(ws, { signal: AbortSignal.abort('stop'), preventAbort: true, preventCancel: true }).catch((e) => e);
    return [err, events, rs.locked, ws.locked];`,
    ['stop', [], false, false],
  ],
  [
    'pipeTo and pipeThrough refuse locked streams and bad arguments',
    `
    const rs = new ReadableStream();
    rs.getReader();
    return [await rejected(rs.pipeTo(new WritableStream())), await rejected(new ReadableStream().pipeTo({})),
      await rejected(new ReadableStream().pipeTo(new WritableStream(), { signal: {} })), thrown(() => rs.pipeThrough(new TransformStream())),
      thrown(() => new ReadableStream().pipeThrough({ readable: new ReadableStream() }))];`,
    ['TypeError', 'TypeError', 'TypeError', 'TypeError', 'TypeError'],
  ],
  [
    'pipeThrough returns the readable side of the pair',
    `
    const upper = new TransformStream({ transform(chunk, c) { c.enqueue(chunk.toUpperCase()); } });
    const out = ReadableStream.from(['a', 'b']).pipeThrough(upper);
    return [out === upper.readable, await collect(out)];`,
    [true, ['A', 'B']],
  ],
];

const WRITABLE: Case[] = [
  [
    'writes reach the sink one at a time and in order; close waits for them',
    `
    const log = [];
    const ws = new WritableStream({
      start(c) { log.push('start:' + (c instanceof WritableStreamDefaultController)); },
      write(chunk) { log.push('write:' + chunk); return new Promise((r) => setTimeout(() => { log.push('done:' + chunk); r(); }, 10)); },
      close() { log.push('close'); },
    });
    const w = ws.getWriter();
    w.write('a');
    w.write('b');
    await w.close();
    return [log, await rejected(w.closed), Object.prototype.toString.call(w), w instanceof WritableStreamDefaultWriter];`,
    [['start:true', 'write:a', 'done:a', 'write:b', 'done:b', 'close'], 'fulfilled', '[object WritableStreamDefaultWriter]', true],
  ],
  [
    'back-pressure: desiredSize counts unfinished writes; ready waits below the high-water mark',
    `
    const pending = [];
    const ws = new WritableStream({ write() { return new Promise((r) => pending.push(r)); } }, new CountQueuingStrategy({ highWaterMark: 2 }));
    const w = ws.getWriter();
    await w.ready;
    const sizes = [w.desiredSize];
    w.write(1); sizes.push(w.desiredSize);
    w.write(2); sizes.push(w.desiredSize);
    const full = await state(w.ready);
    w.write(3); sizes.push(w.desiredSize);
    pending.shift()(); await tick(); sizes.push(w.desiredSize);
    const stillFull = await state(w.ready);
    pending.shift()(); await tick(); sizes.push(w.desiredSize);
    return [sizes, full, stillFull, await state(w.ready)];`,
    [[2, 1, 0, -1, 0, 1], 'pending', 'pending', 'fulfilled'],
  ],
  [
    'abort: the signal aborts at once, writes reject, the sink gets the reason',
    `
    let controller;
    const reasons = [];
    const ws = new WritableStream({
      start(c) { controller = c; },
      write(chunk, c) { return new Promise((_, reject) => c.signal.addEventListener('abort', () => reject(c.signal.reason))); },
      abort(r) { reasons.push(r); },
    });
    const w = ws.getWriter();
    const first = w.write('a');
    const second = w.write('b');
    await tick();
    const before = controller.signal.aborted;
    await w.abort('enough');
    return [before, controller.signal.aborted, controller.signal.reason, controller.signal instanceof AbortSignal,
      await rejected(first), await rejected(second), await rejected(w.closed), reasons];`,
    [false, true, 'enough', true, 'enough', 'enough', 'enough', ['enough']],
  ],
  [
    'a failing sink errors the stream',
    `
    const w = new WritableStream({ write() { throw new RangeError('sink'); } }).getWriter();
    const a = await rejected(w.write(1));
    return [a, await rejected(w.write(2)), await rejected(w.closed), await rejected(w.ready), w.desiredSize];`,
    ['RangeError', 'RangeError', 'RangeError', 'RangeError', null],
  ],
  [
    'one writer at a time; controllers are not constructible',
    `
    const ws = new WritableStream();
    const w = ws.getWriter();
    const second = thrown(() => ws.getWriter());
    w.releaseLock();
    return [second, ws.locked, await rejected(w.write('x')), ws.getWriter() instanceof WritableStreamDefaultWriter,
      thrown(() => new WritableStreamDefaultController()), await rejected(ws.abort())];`,
    ['TypeError', false, 'TypeError', true, 'TypeError', 'TypeError'],
  ],
];

const TRANSFORM: Case[] = [
  [
    'identity, multi-chunk and flushing transforms',
    `
    const id = new TransformStream();
    const w = id.writable.getWriter();
    w.write('x');
    w.close();
    const doubled = ReadableStream.from(['a', 'b']).pipeThrough(new TransformStream({
      transform(chunk, c) { c.enqueue(chunk); c.enqueue(chunk); },
      flush(c) { c.enqueue('end'); },
    }));
    return [await collect(id.readable), await collect(doubled)];`,
    [['x'], ['a', 'a', 'b', 'b', 'end']],
  ],
  [
    'back-pressure: a write waits for a read of the readable side',
    `
    const ts = new TransformStream();
    const w = ts.writable.getWriter();
    const start = w.desiredSize;
    const write = w.write('a');
    await tick();
    const blocked = [w.desiredSize, await state(w.ready), await state(write)];
    const value = (await ts.readable.getReader().read()).value;
    await tick();
    return [start, blocked, value, w.desiredSize, await state(w.ready), await state(write)];`,
    [1, [0, 'pending', 'pending'], 'a', 1, 'fulfilled', 'fulfilled'],
  ],
  [
    'the controller: desiredSize, enqueue, terminate',
    `
    let ctl;
    const ts = new TransformStream({ start(c) { ctl = c; } }, undefined, { highWaterMark: 2 });
    const sizes = [ctl.desiredSize];
    ctl.enqueue('x');
    sizes.push(ctl.desiredSize);
    ctl.terminate();
    const r = ts.readable.getReader();
    const out = [rd(await r.read()), rd(await r.read())];
    return [sizes, out, await rejected(ts.writable.getWriter().write('late')), ctl instanceof TransformStreamDefaultController,
      Object.prototype.toString.call(ctl)];`,
    [
      [2, 1],
      [
        ['x', false],
        ['undefined', true],
      ],
      'TypeError',
      true,
      '[object TransformStreamDefaultController]',
    ],
  ],
  [
    'controller.error errors both sides; cancelling the readable side reaches the transformer',
    `
    let ctl;
    const ts = new TransformStream({ start(c) { ctl = c; } });
    ctl.error(new EvalError('t'));
    const errored = [await rejected(ts.readable.getReader().read()), await rejected(ts.writable.getWriter().closed)];
    const seen = [];
    const ts2 = new TransformStream({ cancel(r) { seen.push(r); } });
    await ts2.readable.cancel('stop');
    return [errored, seen, await rejected(ts2.writable.getWriter().write('x'))];`,
    [['EvalError', 'EvalError'], ['stop'], 'stop'],
  ],
  [
    'a throwing transform errors both sides',
    `
    const ts = new TransformStream({ transform() { throw new SyntaxError('bad chunk'); } });
    const w = ts.writable.getWriter();
    // The transform runs once a read asks for a chunk (the readable side's high-water mark is 0).
    const read = rejected(ts.readable.getReader().read());
    const write = rejected(w.write('x'));
    return [await write, await read, await rejected(w.closed)];`,
    ['SyntaxError', 'SyntaxError', 'SyntaxError'],
  ],
];

const CLASSES: Case[] = [
  [
    'real names, class strings, instanceof; not callable, controllers not constructible',
    `
    let c;
    const rs = new ReadableStream({ start(x) { c = x; } });
    const names = ${JSON.stringify(STREAM_GLOBALS)};
    return [
      names.filter((n) => globalThis[n].name !== n),
      [rs, rs.getReader(), c, new WritableStream(), new TransformStream()].map((o) => Object.prototype.toString.call(o)),
      [rs instanceof ReadableStream, c instanceof ReadableStreamDefaultController, new TransformStream().readable instanceof ReadableStream, new TransformStream().writable instanceof WritableStream],
      thrown(() => new ReadableStreamDefaultController()), thrown(() => new ReadableStreamBYOBRequest()), thrown(() => ReadableStream()),
      thrown(() => ReadableStream.prototype.getReader.call({})), Object.keys(ReadableStream.prototype).sort(),
    ];`,
    [
      [],
      [
        '[object ReadableStream]',
        '[object ReadableStreamDefaultReader]',
        '[object ReadableStreamDefaultController]',
        '[object WritableStream]',
        '[object TransformStream]',
      ],
      [true, true, true, true],
      'TypeError',
      'TypeError',
      'TypeError',
      'TypeError',
      ['cancel', 'getReader', 'locked', 'pipeThrough', 'pipeTo', 'tee', 'values'],
    ],
  ],
  [
    'structuredClone refuses streams, readers and strategies',
    `
    return [thrown(() => structuredClone(new ReadableStream())), thrown(() => structuredClone(new WritableStream().getWriter())),
      thrown(() => structuredClone(new CountQueuingStrategy({ highWaterMark: 1 }))), thrown(() => structuredClone({ ok: 1 }))];`,
    ['DataCloneError', 'DataCloneError', 'DataCloneError', 'none'],
  ],
];

const BLOB: Case[] = [
  [
    'Blob.prototype.stream() gives Uint8Array chunks of the bytes',
    `
    const rs = new Blob(['hello, ', 'streams']).stream();
    const chunks = await collect(rs);
    const d = Object.getOwnPropertyDescriptor(Blob.prototype, 'stream');
    return [rs instanceof ReadableStream, chunks.map((c) => Object.prototype.toString.call(c)), new TextDecoder().decode(chunks[0]),
      [d.writable, d.enumerable, d.configurable], Blob.prototype.stream.name, thrown(() => Blob.prototype.stream.call({})), thrown(() => new Blob.prototype.stream())];`,
    [true, ['[object Uint8Array]'], 'hello, streams', [true, true, true], 'stream', 'TypeError', 'TypeError'],
  ],
  [
    'a large blob comes in chunks of at most 64 KiB',
    `
    const big = new Uint8Array(200000);
    for (let i = 0; i < big.length; i++) big[i] = i % 251;
    const chunks = await collect(new Blob([big]).stream());
    return [chunks.map((c) => c.length), concatBytes(chunks).every((v, i) => v === i % 251)];`,
    [[65536, 65536, 65536, 3392], true],
  ],
  [
    'a blob stream is a byte stream: BYOB reads, slices, an empty blob; chunks are copies',
    `
    const b = new Blob(['abcdef']);
    const r = b.stream().getReader({ mode: 'byob' });
    const a = await r.read(new Uint8Array(4));
    const c = await r.read(new Uint8Array(4));
    const d = await r.read(new Uint8Array(4));
    const empty = await new Blob([]).stream().getReader().read();
    const slice = await collect(b.slice(1, 3).stream());
    const first = (await b.stream().getReader().read()).value;
    first[0] = 0;
    return [arr(a.value), arr(c.value), d.done, rd(empty), slice.map(arr), await b.text()];`,
    [[97, 98, 99, 100], [101, 102], true, ['undefined', true], [[98, 99]], 'abcdef'],
  ],
  [
    'a blob stream pipes and tees like any other',
    `
    const [x, y] = new Blob(['tee']).stream().tee();
    const text = async (rs) => new TextDecoder().decode(concatBytes(await collect(rs)));
    return [await text(x), await text(y)];`,
    ['tee', 'tee'],
  ],
];

const SUITES: Record<string, Case[]> = {
  ReadableStream: READABLE,
  'byte streams': BYTES,
  'pipeTo and pipeThrough': PIPES,
  WritableStream: WRITABLE,
  TransformStream: TRANSFORM,
  classes: CLASSES,
  'Blob.prototype.stream': BLOB,
};

for (const [mode, options] of MODES) {
  for (const [suite, cases] of Object.entries(SUITES)) {
    test(`${suite}${mode}`, async (t) => {
      const s = await sandbox(options);
      try {
        await check(t, s, cases);
      } finally {
        s.dispose();
      }
    });
  }
}

const shape = (names: readonly string[]) =>
  `JSON.stringify(${JSON.stringify(names)}.map((k) => { const d = Object.getOwnPropertyDescriptor(globalThis, k); return [k, 'value' in d, d.writable, d.enumerable, d.configurable]; }))`;

test('the stream globals are accessors until first used, then data properties', async (t) => {
  t.is(STREAM_GLOBALS.length, 13);
  const urls = LAZY_GLOBALS.filter((k) => k.startsWith('URL'));
  const s = await sandbox();
  try {
    t.deepEqual(
      JSON.parse(s.value(shape(STREAM_GLOBALS))),
      STREAM_GLOBALS.map((k) => [k, false, null, false, true]),
    );
    t.is(s.value(`typeof CountQueuingStrategy`), 'function');
    t.deepEqual(
      JSON.parse(s.value(shape(STREAM_GLOBALS))),
      STREAM_GLOBALS.map((k) => [k, true, true, false, true]),
    );
    // The URL group is loaded on its own.
    t.deepEqual(
      JSON.parse(s.value(shape(urls))),
      urls.map((k) => [k, false, null, false, true]),
    );
  } finally {
    s.dispose();
  }
});

test('Blob.prototype.stream, the encoder streams and the compression streams load the streams bundle', async (t) => {
  for (const use of [
    `new Blob(['x']).stream()`,
    `new TextEncoderStream()`,
    `new TextDecoderStream()`,
    `new CompressionStream('gzip')`,
    `new DecompressionStream('deflate')`,
  ]) {
    const s = await sandbox();
    try {
      t.deepEqual(JSON.parse(s.value(shape(['ReadableStream'])))[0], ['ReadableStream', false, null, false, true], use);
      t.is(s.value(`(${use}).readable === undefined ? 'blob' : typeof (${use}).readable.getReader`), use.includes('Blob') ? 'blob' : 'function', use);
      t.deepEqual(
        JSON.parse(s.value(shape(STREAM_GLOBALS))),
        STREAM_GLOBALS.map((k) => [k, true, true, false, true]),
        use,
      );
    } finally {
      s.dispose();
    }
  }
});

test('a guest may replace or delete stream globals; the polyfills keep the originals', async (t) => {
  const s = await sandbox();
  try {
    const r = await s.run(`(async () => {
      globalThis.ReadableStream = 'mine';
      delete globalThis.WritableStream;
      const ts = new TransformStream();
      const blob = new Blob(['x']).stream();
      return [ReadableStream, typeof WritableStream, 'WritableStream' in globalThis, Object.prototype.toString.call(ts.readable),
        Object.prototype.toString.call(ts.writable), Object.prototype.toString.call(blob), arr((await blob.getReader().read()).value),
        Object.getOwnPropertyDescriptor(globalThis, 'ReadableStream').writable, Object.getOwnPropertyDescriptor(globalThis, 'CountQueuingStrategy').writable];
    })()`);
    t.deepEqual(r.value, ['mine', 'undefined', false, '[object ReadableStream]', '[object WritableStream]', '[object ReadableStream]', [120], true, true]);
  } finally {
    s.dispose();
  }
});

test('the streams run on the bindings of bootstrap time, whatever the guest replaced before', async (t) => {
  for (const [mode, options] of MODES) {
    const s = await sandbox(options);
    try {
      const r = await s.run(`(async () => {
        await null;
        const assign = Object.assign;
        const names = ['queueMicrotask', 'AbortController', 'AbortSignal', 'DOMException', 'structuredClone', 'Promise', 'Function', 'Error', 'TypeError'];
        const saved = Object.fromEntries(names.map((k) => [k, globalThis[k]]));
        const { AbortController: AC, AbortSignal: AS, DOMException: D } = saved;
        const trap = (name) => function () { throw new saved.Error('the guest ' + name); };
        for (const k of names) globalThis[k] = trap(k);
        try {
          const out = await collect(ReadableStream.from(['a', 'b']).pipeThrough(new TransformStream()));
          let signal;
          new WritableStream({ start(c) { signal = c.signal; } });
          const controller = new AC();
          const p = new ReadableStream().pipeTo(new WritableStream(), { signal: controller.signal });
          controller.abort();
          const err = await p.catch((e) => e);
          const r = new Blob(['ab']).stream().getReader({ mode: 'byob' });
          const view = (await r.read(new Uint8Array(8))).value;
          const bytes = [view[0], view[1], view.length];
          return [out, signal instanceof AS, err instanceof D, err.name, bytes];
        } finally {
          assign(globalThis, saved);
        }
      })()`);
      t.deepEqual(r.value, [['a', 'b'], true, true, 'AbortError', [97, 98, 2]], mode);
    } finally {
      s.dispose();
    }
  }
});

test('contexts load their own stream classes', async (t) => {
  const a = await sandbox();
  const b = await sandbox();
  try {
    a.value(`ReadableStream.prototype.marked = true; 0`);
    t.is(b.value(`new ReadableStream().marked`), undefined);
    t.is(a.value(`new ReadableStream().marked`), true);
  } finally {
    a.dispose();
    b.dispose();
  }
});
